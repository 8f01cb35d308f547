//! The long-haul link of `net.longhaul` (§3.2.7): a network namespace `sysperf-PID` joined to
//! the worker's own namespace by a veth pair (`spPIDa` here, `spPIDb` there), the link's MTU
//! clamped (so the MSS follows) and its sending side shaped by a token bucket (tc tbf). It is
//! made with `ip` and `tc` (iproute2) in setup, outside the timed region, and removed when
//! dropped; deleting the namespace deletes both ends of the veth. A worker killed outright
//! leaves them behind: [`sweep_stale`] (the next run's tidy) removes those whose pid is dead.
//!
//! The kernel here may lack netem (CONFIG_NET_SCH_NETEM): delay and loss are then not
//! measured, never faked; [`netem_note`] says so in the run's notes.

use crate::sys;
use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::Command;

/// The namespaces' prefix; the pid follows.
pub const NS_PREFIX: &str = crate::harness::janitor::NETNS_PREFIX;

/// One shaping of the link: its MTU and the token bucket's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shaping {
    pub mtu: u32,
    pub mbit: u32,
}

/// The shapings measured, and their labels (quick: the first two).
pub const SHAPINGS: [(Shaping, &str); 6] = [
    (
        Shaping {
            mtu: 1500,
            mbit: 100,
        },
        "100Mbit mtu1500",
    ),
    (
        Shaping {
            mtu: 576,
            mbit: 100,
        },
        "100Mbit mtu576",
    ),
    (
        Shaping {
            mtu: 1500,
            mbit: 10,
        },
        "10Mbit mtu1500",
    ),
    (Shaping { mtu: 576, mbit: 10 }, "10Mbit mtu576"),
    (Shaping { mtu: 1500, mbit: 1 }, "1Mbit mtu1500"),
    (Shaping { mtu: 576, mbit: 1 }, "1Mbit mtu576"),
];

/// The namespace and the two veth ends of process `pid` (interface names are at most 15
/// characters: `sp` + 7 digits + 1).
pub fn names(pid: u32) -> (String, String, String) {
    crate::harness::janitor::link_names(pid)
}

/// The two addresses of a pid's /30 in 10.0.0.0/8, so that links of concurrent processes do
/// not share a subnet (pids are below 2^22).
fn addresses(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = (10u32 << 24) | ((pid & 0x3f_ffff) << 2);
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// Runs one `ip`/`tc` command; its stderr is the error.
fn run(prog: &str, args: &[&str]) -> io::Result<()> {
    let out = Command::new(prog).args(args).output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run {prog} ({e}); install iproute2"),
        )
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{prog} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// A shaped veth link into a namespace of this process; removed on drop.
pub struct Link {
    ns: String,
    there: Ipv4Addr,
}

impl Link {
    /// Makes the namespace, the veth pair, the addresses, the MTU and the token bucket.
    pub fn new(shape: Shaping) -> io::Result<Link> {
        let pid = std::process::id();
        let (ns, a, b) = names(pid);
        let (here, there) = addresses(pid);
        // A link of this pid left by an earlier benchmark of the same worker.
        let _ = run("ip", &["link", "del", &a]);
        let _ = run("ip", &["netns", "del", &ns]);
        run("ip", &["netns", "add", &ns])?;
        let link = Link { ns, there };
        let mtu = shape.mtu.to_string();
        let rate = format!("{}mbit", shape.mbit);
        let ns = link.ns.as_str();
        let (here_c, there_c) = (format!("{here}/30"), format!("{there}/30"));
        run(
            "ip",
            &[
                "link", "add", &a, "type", "veth", "peer", "name", &b, "netns", ns,
            ],
        )?;
        run("ip", &["addr", "add", &here_c, "dev", &a])?;
        run("ip", &["link", "set", &a, "mtu", &mtu, "up"])?;
        run("ip", &["-n", ns, "addr", "add", &there_c, "dev", &b])?;
        run("ip", &["-n", ns, "link", "set", &b, "mtu", &mtu, "up"])?;
        run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
        // The data flows from here to there: shape this end's egress.
        run(
            "tc",
            &[
                "qdisc", "add", "dev", &a, "root", "tbf", "rate", &rate, "burst", "32kbit",
                "latency", "400ms",
            ],
        )?;
        Ok(link)
    }

    /// A TCP connection across the link: the listener and the accepted end live in the
    /// namespace, the connecting end here.
    pub fn tcp_pair(&self) -> io::Result<(TcpStream, TcpStream)> {
        let home = File::open("/proc/thread-self/ns/net")?;
        let ns = File::open(format!("/run/netns/{}", self.ns))?;
        sys::enter_net_namespace(&ns)?;
        let listener = TcpListener::bind((self.there, 0));
        sys::enter_net_namespace(&home)?;
        let listener = listener?;
        let client = TcpStream::connect(listener.local_addr()?)?;
        let (server, _) = listener.accept()?;
        Ok((client, server))
    }

    /// The interface of this side, for its counters.
    pub fn here(&self) -> String {
        names(std::process::id()).1
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The veth first: deleting it is synchronous and takes both ends, where a deleted
        // namespace's devices go with it only later, when the kernel cleans the namespace up.
        let _ = run("ip", &["link", "del", &self.here()]);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

/// Removes the link and namespace of the worker `pid`, which was just killed and reaped
/// (Ctrl-C, a timeout): it could not remove them itself. Returns what it removed. (The
/// harness's janitor does it, since the harness sits below the suites.)
pub fn remove_owned_by(pid: u32) -> Vec<String> {
    crate::harness::janitor::remove_links_owned_by(pid)
}

/// The pids whose long-haul namespaces or veth ends are here.
fn owners() -> Vec<u32> {
    let list = |dir: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let mut pids: Vec<u32> = list("/run/netns")
        .iter()
        .filter_map(|n| n.strip_prefix(NS_PREFIX)?.parse().ok())
        .chain(list("/sys/class/net").iter().filter_map(|n| {
            let p = n.strip_prefix("sp")?;
            p.strip_suffix('a')
                .or_else(|| p.strip_suffix('b'))?
                .parse()
                .ok()
        }))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Removes the namespaces and veth links of sysperf processes that are gone (killed
/// outright); returns their names. Needs root; as another user it finds nothing to remove.
pub fn sweep_stale() -> Vec<String> {
    if !sys::is_root() {
        return Vec::new();
    }
    owners()
        .into_iter()
        .filter(|&p| crate::harness::janitor::owner_gone(p as sys::Pid))
        .flat_map(remove_owned_by)
        .collect()
}

/// A link is named after its process: one thread at a time may have one (the suite's preflight
/// tries one for its notes while, in the library's tests, other threads make theirs).
pub(crate) static ONE_LINK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What the run's notes say of the long haul: skipped as non-root, and whether netem's delay
/// and loss can be measured (tried once on a link of this process's own).
pub fn netem_note() -> String {
    if !sys::is_root() {
        return "net.longhaul skipped: it needs root (network namespaces, veth, tc); run \
                sysperf as root to measure it"
            .into();
    }
    let _one = ONE_LINK.lock().unwrap_or_else(|e| e.into_inner());
    let tried = Link::new(SHAPINGS[0].0).and_then(|_link| {
        let a = names(std::process::id()).1;
        run(
            "tc",
            &[
                "qdisc", "replace", "dev", &a, "root", "netem", "delay", "50ms", "loss", "0.1%",
            ],
        )
    });
    match tried {
        Ok(()) => "net.longhaul: netem is available, but the delay and loss points (50 ms, \
                   0.1%) are not measured yet"
            .into(),
        Err(e) => format!(
            "net.longhaul: delay and loss points (50 ms, 0.1%) skipped: this kernel has no \
             netem (CONFIG_NET_SCH_NETEM not set; tc said: {e}); only rate and MTU are shaped"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_an_interface_and_addresses_do_not_collide() {
        let (ns, a, b) = names(4_194_303);
        assert!(ns.starts_with("sysperf-"));
        assert!(a.len() <= 15 && b.len() <= 15, "{a} {b}");
        assert_ne!(addresses(1), addresses(2));
        assert_eq!(addresses(1).0, Ipv4Addr::new(10, 0, 0, 5));
    }

    /// The clamped MTU shows in the MSS of a connection across the link (root only).
    #[test]
    fn the_mtu_clamp_shows_in_the_mss() {
        if !sys::is_root() {
            println!("skipped: needs root for a network namespace");
            return;
        }
        let _one = ONE_LINK.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen = Vec::new();
        for mtu in [576, 1500] {
            let link = Link::new(Shaping { mtu, mbit: 100 }).unwrap();
            let (c, _s) = link.tcp_pair().unwrap();
            let mss = sys::get_sock_int(
                std::os::fd::AsRawFd::as_raw_fd(&c),
                libc::IPPROTO_TCP,
                libc::TCP_MAXSEG,
            )
            .unwrap();
            // IPv4 and TCP headers are 40 bytes; timestamps may take 12 more.
            assert!(
                mss <= mtu as i32 - 40 && mss >= mtu as i32 - 60,
                "{mtu}: {mss}"
            );
            seen.push(mss);
        }
        assert!(seen[0] < seen[1]);
        let (ns, a, _) = names(std::process::id());
        assert!(!std::path::Path::new(&format!("/run/netns/{ns}")).exists());
        assert!(!std::path::Path::new(&format!("/sys/class/net/{a}")).exists());
    }

    /// The bytes written cross the veth: its counters grow by at least that much, and by
    /// no more than the headers of a segment per MSS on top (root only).
    #[test]
    fn the_link_carries_the_bytes_written() {
        use std::io::{Read, Write};
        if !sys::is_root() {
            println!("skipped: needs root for a network namespace");
            return;
        }
        let _one = ONE_LINK.lock().unwrap_or_else(|e| e.into_inner());
        let link = Link::new(Shaping {
            mtu: 1500,
            mbit: 100,
        })
        .unwrap();
        let tx = || -> u64 {
            std::fs::read_to_string(format!(
                "/sys/class/net/{}/statistics/tx_bytes",
                link.here()
            ))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
        };
        let (mut c, mut s) = link.tcp_pair().unwrap();
        let before = tx();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got.len() as u64
        });
        let n = 1u64 << 20;
        c.write_all(&vec![7u8; n as usize]).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(reader.join().unwrap(), n);
        let sent = tx() - before;
        // Ethernet + IP + TCP with timestamps: under 100 bytes a segment of at least 500.
        assert!(
            sent >= n && sent <= n + n / 500 * 100 + 4096,
            "{sent} for {n}"
        );
    }
}
