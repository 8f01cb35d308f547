//! The long-haul link of `net.longhaul` (§3.2.7): a network namespace `sysperf-PID-TAG` joined to
//! the worker's own namespace, the link's MTU clamped (so the MSS follows) and its sending
//! side shaped by a token bucket (tc tbf). It is made with `ip` and `tc` (iproute2) in setup,
//! outside the timed region, and removed when dropped. Both are found by `crate::programs`'
//! rule (absolute, trusted directories of PATH), which says why not netlink.
//!
//! A shaping without delay or loss is a veth pair (`spPID.TAGa` here, `spPID.TAGb` there);
//! deleting the namespace deletes both ends. TAG is 16 random bits of the process's
//! ([`crate::harness::janitor::link_tag`]): the names are the run's own even where its pid
//! is not. A shaping with a round-trip delay or a loss rate is a
//! delay line instead: two TUN devices (`spPID.TAGc` here, `spPID.TAGd` made inside the namespace)
//! and a relay thread of the worker's, named `sysperf-delay`, that moves every IP packet from
//! one device's descriptor to the other's, holding it for half the configured round trip
//! each way (so the figure is the round trip added to the link's own) and dropping the
//! configured fraction, in both directions, by a seeded PRNG ([`Relay`] counts what it
//! dropped). The packets cross the kernel's TCP stack on both ends (congestion control,
//! retransmission and MSS are the kernel's); tbf shapes the TUN device's egress as it shapes
//! the veth's. This does not need netem (CONFIG_NET_SCH_NETEM), which this kernel may lack;
//! [`netem_note`] says in the run's notes which was used. The relay's CPU time is the
//! worker's (it is a thread of it): the throughput and the round trip, not the CPU time, are
//! what these points measure.
//!
//! The TUN devices are not persistent: they go when the relay's descriptors close (on drop,
//! or when the worker dies, SIGKILL included). A worker killed outright leaves its namespace
//! and veth behind: [`sweep_stale`] (the next run's tidy) removes those whose pid is dead.

use crate::sys;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One shaping of the link: its MTU, the token bucket's rate, and the delay line's added
/// round trip and loss rate (parts per million; both 0: a plain veth, no delay line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shaping {
    pub mtu: u32,
    pub mbit: u32,
    pub rtt_ms: u32,
    pub loss_ppm: u32,
}

impl Shaping {
    /// Rate and MTU only: a veth pair.
    pub const fn rate(mbit: u32, mtu: u32) -> Shaping {
        Shaping {
            mtu,
            mbit,
            rtt_ms: 0,
            loss_ppm: 0,
        }
    }

    /// The same, with a round trip of `rtt_ms` added and `loss_ppm` per million packets lost.
    pub const fn delayed(self, rtt_ms: u32, loss_ppm: u32) -> Shaping {
        Shaping {
            rtt_ms,
            loss_ppm,
            ..self
        }
    }

    /// Whether the link is a delay line (TUN and a relay) rather than a veth pair.
    pub fn is_delay_line(&self) -> bool {
        self.rtt_ms > 0 || self.loss_ppm > 0
    }
}

/// The shapings measured, and their labels (quick: the first two; the delay-line ones last,
/// measured only where /dev/net/tun is).
pub const SHAPINGS: [(Shaping, &str); 8] = [
    (Shaping::rate(100, 1500), "100Mbit mtu1500"),
    (Shaping::rate(100, 576), "100Mbit mtu576"),
    (Shaping::rate(10, 1500), "10Mbit mtu1500"),
    (Shaping::rate(10, 576), "10Mbit mtu576"),
    (Shaping::rate(1, 1500), "1Mbit mtu1500"),
    (Shaping::rate(1, 576), "1Mbit mtu576"),
    (
        Shaping::rate(10, 1500).delayed(50, 0),
        "10Mbit mtu1500 rtt50ms",
    ),
    (
        Shaping::rate(10, 1500).delayed(50, 1000),
        "10Mbit mtu1500 rtt50ms loss0.1%",
    ),
];

/// How many of [`SHAPINGS`] are measured here: the veth ones, and the delay-line ones if
/// this system has TUN devices.
pub fn shapings_here() -> usize {
    let veth = SHAPINGS.iter().filter(|s| !s.0.is_delay_line()).count();
    if tun_available() {
        SHAPINGS.len()
    } else {
        veth
    }
}

/// Whether TUN devices can be made (the delay line needs them).
pub fn tun_available() -> bool {
    std::path::Path::new("/dev/net/tun").exists()
}

/// The namespace and the two veth ends of process `pid` (of this process's tag).
pub fn names(pid: u32) -> (String, String, String) {
    crate::harness::janitor::link_names(pid, crate::harness::janitor::link_tag())
}

/// The two TUN devices of process `pid` (of this process's tag).
pub fn tun_names(pid: u32) -> (String, String) {
    crate::harness::janitor::tun_names(pid, crate::harness::janitor::link_tag())
}

/// The two addresses of a pid's /30 in 10.0.0.0/8, so that links of concurrent processes do
/// not share a subnet (pids are below 2^22).
fn addresses(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = (10u32 << 24) | ((pid & 0x3f_ffff) << 2);
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// Runs one `ip`/`tc` command; its stderr is the error.
fn run(prog: &str, args: &[&str]) -> io::Result<()> {
    let out = crate::programs::command(prog)
        .and_then(|mut c| c.args(args).output())
        .map_err(|e| {
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

/// A shaped link into a namespace of this process (a veth pair, or a delay line over TUN);
/// removed on drop.
pub struct Link {
    ns: String,
    there: Ipv4Addr,
    /// The interface on this side: the veth end or the TUN device.
    here_dev: String,
    /// The delay line's relay, if the shaping has a delay or a loss.
    relay: Option<Relay>,
}

impl Link {
    /// Makes the namespace, the veth pair or the TUN devices and their relay, the addresses,
    /// the MTU and the token bucket.
    pub fn new(shape: Shaping) -> io::Result<Link> {
        let pid = std::process::id();
        let (ns, a, b) = names(pid);
        let (c, d) = tun_names(pid);
        let (here, there) = addresses(pid);
        // A link of this process left by an earlier benchmark of it (the names are its own).
        let _ = run("ip", &["link", "del", &a]);
        let _ = run("ip", &["link", "del", &c]);
        let _ = run("ip", &["netns", "del", &ns]);
        run("ip", &["netns", "add", &ns])?;
        let (here_dev, there_dev) = if shape.is_delay_line() {
            (c, d)
        } else {
            (a, b)
        };
        let mut link = Link {
            ns,
            there,
            here_dev,
            relay: None,
        };
        let ns = link.ns.as_str();
        let (here_dev, there_dev) = (link.here_dev.as_str(), there_dev.as_str());
        if shape.is_delay_line() {
            let near = File::from(sys::open_tun(here_dev)?);
            let far = File::from(link.in_namespace(|| sys::open_tun(there_dev))??);
            link.relay = Some(Relay::start(near, far, shape)?);
        } else {
            run(
                "ip",
                &[
                    "link", "add", here_dev, "type", "veth", "peer", "name", there_dev, "netns", ns,
                ],
            )?;
        }
        let mtu = shape.mtu.to_string();
        let rate = format!("{}mbit", shape.mbit);
        let (here_c, there_c) = (format!("{here}/30"), format!("{there}/30"));
        run("ip", &["addr", "add", &here_c, "dev", here_dev])?;
        run("ip", &["link", "set", here_dev, "mtu", &mtu, "up"])?;
        run("ip", &["-n", ns, "addr", "add", &there_c, "dev", there_dev])?;
        run(
            "ip",
            &["-n", ns, "link", "set", there_dev, "mtu", &mtu, "up"],
        )?;
        run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
        // The data flows from here to there: shape this end's egress.
        run(
            "tc",
            &[
                "qdisc", "add", "dev", here_dev, "root", "tbf", "rate", &rate, "burst", "32kbit",
                "latency", "400ms",
            ],
        )?;
        Ok(link)
    }

    /// Runs `f` on this thread inside the link's namespace (sockets and TUN devices made
    /// there belong to it), then returns to the thread's own.
    fn in_namespace<T>(&self, f: impl FnOnce() -> T) -> io::Result<T> {
        let home = File::open("/proc/thread-self/ns/net")?;
        let ns = File::open(format!("/run/netns/{}", self.ns))?;
        sys::enter_net_namespace(&ns)?;
        let out = f();
        sys::enter_net_namespace(&home)?;
        Ok(out)
    }

    /// A TCP connection across the link: the listener and the accepted end live in the
    /// namespace, the connecting end here.
    pub fn tcp_pair(&self) -> io::Result<(TcpStream, TcpStream)> {
        let listener = self.in_namespace(|| TcpListener::bind((self.there, 0)))??;
        let client = TcpStream::connect(listener.local_addr()?)?;
        let server = crate::suite::net::accept_from(&listener, client.local_addr()?)?;
        Ok((client, server))
    }

    /// A UDP socket here connected to one in the namespace (the delay line's loss test).
    pub fn udp_pair(&self) -> io::Result<(std::net::UdpSocket, std::net::UdpSocket)> {
        let far = self.in_namespace(|| std::net::UdpSocket::bind((self.there, 0)))??;
        let near = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        near.connect(far.local_addr()?)?;
        Ok((near, far))
    }

    /// The interface of this side, for its counters.
    pub fn here(&self) -> String {
        self.here_dev.clone()
    }

    /// What the delay line's relay has moved and dropped so far (None on a veth link).
    pub fn relay_counts(&self) -> Option<RelayCounts> {
        self.relay.as_ref().map(Relay::counts)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The relay first: closing its descriptors removes both TUN devices.
        self.relay = None;
        // The veth: deleting it is synchronous and takes both ends, where a deleted
        // namespace's devices go with it only later, when the kernel cleans the namespace up.
        if std::path::Path::new(&format!("/sys/class/net/{}", self.here_dev)).exists() {
            let _ = run("ip", &["link", "del", &self.here_dev]);
        }
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

/// What a delay line's relay counted: packets read (both ways), dropped by the loss rate,
/// dropped because its queue was full, and refused by the device written to (a device not up
/// yet refuses the IPv6 chatter of the other, which comes up first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayCounts {
    pub packets: u64,
    pub dropped: u64,
    pub overflowed: u64,
    pub refused: u64,
}

/// The packets a direction holds at most (far above a 100 Mbit/s link's 25 ms).
const RELAY_QUEUE: usize = 8192;
/// How long the relay waits at most before it looks at its stop flag.
const RELAY_TICK_MS: u64 = 10;
/// The loss PRNG's seed: the same decisions for the same sequence of packets.
pub const LOSS_SEED: u64 = 0x5359_5350_4552_4621;

/// The delay line's relay: a thread `sysperf-delay` moving packets between the two TUN
/// descriptors; stopped and joined on drop (which closes the descriptors).
struct Relay {
    stop: Arc<AtomicBool>,
    counts: Arc<[AtomicU64; 4]>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    fn start(near: File, far: File, shape: Shaping) -> io::Result<Relay> {
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
        let (s, c) = (stop.clone(), counts.clone());
        let half = Duration::from_micros(u64::from(shape.rtt_ms) * 500);
        let thread = std::thread::Builder::new()
            .name("sysperf-delay".into())
            .spawn(move || {
                sys::set_process_name("sysperf-delay");
                relay([near, far], half, shape.loss_ppm, &s, &c);
            })?;
        Ok(Relay {
            stop,
            counts,
            thread: Some(thread),
        })
    }

    fn counts(&self) -> RelayCounts {
        let [p, d, o, r] = &*self.counts;
        RelayCounts {
            packets: p.load(Ordering::Relaxed),
            dropped: d.load(Ordering::Relaxed),
            overflowed: o.load(Ordering::Relaxed),
            refused: r.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether the next packet is lost: xorshift64 over `state`, below `ppm` in a million.
fn lost(state: &mut u64, ppm: u32) -> bool {
    if ppm == 0 {
        return false;
    }
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x % 1_000_000 < u64::from(ppm)
}

/// The relay's loop: packets read from `ends[i]` are written to the other end `half` later,
/// less those `lost` drops; counts go to `counts` (packets, dropped, overflowed, refused).
fn relay(
    ends: [File; 2],
    half: Duration,
    loss_ppm: u32,
    stop: &AtomicBool,
    counts: &[AtomicU64; 4],
) {
    let mut queues: [VecDeque<(Instant, Vec<u8>)>; 2] = Default::default();
    let mut rng = LOSS_SEED;
    let mut buf = vec![0u8; 1 << 16];
    let add = |i: usize| counts[i].fetch_add(1, Ordering::Relaxed);
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        for (i, q) in queues.iter_mut().enumerate() {
            while q.front().is_some_and(|p| p.0 <= now) {
                let Some((_, packet)) = q.pop_front() else {
                    break;
                };
                if (&ends[1 - i]).write(&packet).is_err() {
                    add(3);
                }
            }
        }
        // Sleep until the next packet is due (rounded up: never early) or a packet comes.
        let tick = Duration::from_millis(RELAY_TICK_MS);
        let wait = queues
            .iter()
            .filter_map(|q| q.front().map(|p| p.0.saturating_duration_since(now)))
            .min()
            .unwrap_or(tick)
            .min(tick);
        let mut fds = ends.each_ref().map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let ms = wait.as_micros().div_ceil(1000) as i32;
        if sys::poll_wait(&mut fds, ms).is_err() {
            continue;
        }
        for (i, fd) in fds.iter().enumerate() {
            if fd.revents == 0 {
                continue;
            }
            // Everything the device holds now; a packet's delay counts from its reading.
            while let Ok(n) = (&ends[i]).read(&mut buf) {
                if n == 0 {
                    break;
                }
                add(0);
                if lost(&mut rng, loss_ppm) {
                    add(1);
                } else if queues[i].len() >= RELAY_QUEUE {
                    add(2);
                } else {
                    queues[i].push_back((Instant::now() + half, buf[..n].to_vec()));
                }
            }
        }
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
        .chain(list("/sys/class/net").iter())
        .filter_map(|n| crate::harness::janitor::link_owner(n))
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
        .filter(|&p| {
            // The namespace's file has the time it was made; a lone link has none.
            let ns = std::fs::metadata(format!("/run/netns/{}", names(p).0));
            crate::harness::janitor::owner_gone(
                p as sys::Pid,
                crate::harness::janitor::made_of(&ns),
            )
        })
        .flat_map(remove_owned_by)
        .collect()
}

/// What the run's notes say of the long haul: skipped as non-root, and how its delay and
/// loss points are made: by sysperf's delay line over TUN, whether or not netem is available
/// (tried once on a link of this process's own, so that the notes say which was not used).
pub fn netem_note() -> String {
    if !sys::is_root() {
        return "net.longhaul skipped: it needs root (network namespaces, veth, tc); run \
                sysperf as root to measure it"
            .into();
    }
    let delayed: Vec<&str> = SHAPINGS
        .iter()
        .filter(|s| s.0.is_delay_line())
        .map(|s| s.1)
        .collect();
    let points = delayed.join("\", \"");
    if !tun_available() {
        return format!(
            "net.longhaul: the delay and loss points (\"{points}\") skipped: no /dev/net/tun \
             (CONFIG_TUN) for sysperf's delay line; only rate and MTU are shaped"
        );
    }
    let tried = Link::new(SHAPINGS[0].0).and_then(|link| {
        run(
            "tc",
            &[
                "qdisc",
                "replace",
                "dev",
                &link.here(),
                "root",
                "netem",
                "delay",
                "50ms",
                "loss",
                "0.1%",
            ],
        )
    });
    let netem = match tried {
        Ok(()) => "netem is available but not used".to_string(),
        Err(e) => format!(
            "this kernel has no netem (CONFIG_NET_SCH_NETEM not set; tc said: {e}), which is \
             not needed"
        ),
    };
    format!(
        "net.longhaul: the delay and loss points (\"{points}\") go through sysperf's \
         user-space delay line over TUN, not netem: a relay thread holds every packet for half \
         the round trip each way and drops the loss fraction in both directions by a PRNG \
         seeded with {LOSS_SEED:#x}; {netem}"
    )
}

/// The link is named after the process: one test at a time makes it (the net suite's preflight,
/// which tries netem on one, included).
#[cfg(test)]
pub(crate) static ONE_LINK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

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
            let link = Link::new(Shaping::rate(100, mtu)).unwrap();
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
        let link = Link::new(Shaping::rate(100, 1500)).unwrap();
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

    #[test]
    fn the_loss_prng_drops_about_its_fraction_and_none_at_zero() {
        let mut rng = LOSS_SEED;
        let n = 1_000_000;
        let lost_of = |rng: &mut u64, ppm| (0..n).filter(|_| lost(rng, ppm)).count();
        let d = lost_of(&mut rng, 1000);
        assert!((800..=1200).contains(&d), "{d} of {n} at 0.1%");
        assert_eq!(lost_of(&mut rng, 0), 0);
        // Seeded: the same decisions again.
        let (mut a, mut b) = (LOSS_SEED, LOSS_SEED);
        assert_eq!(lost_of(&mut a, 50_000), lost_of(&mut b, 50_000));
    }

    #[test]
    fn only_delay_and_loss_make_a_delay_line_and_its_points_come_last() {
        assert!(!Shaping::rate(10, 1500).is_delay_line());
        assert!(Shaping::rate(10, 1500).delayed(50, 0).is_delay_line());
        assert!(Shaping::rate(10, 1500).delayed(0, 1000).is_delay_line());
        let first = SHAPINGS.iter().position(|s| s.0.is_delay_line()).unwrap();
        assert!(first >= 2 && SHAPINGS[first..].iter().all(|s| s.0.is_delay_line()));
        assert_eq!(SHAPINGS[7].0, Shaping::rate(10, 1500).delayed(50, 1000));
        assert_eq!(SHAPINGS[7].1, "10Mbit mtu1500 rtt50ms loss0.1%");
        let (c, d) = tun_names(4_194_303);
        assert!(c.len() <= 15 && d.len() <= 15, "{c} {d}");
    }

    /// Whether a thread of this process is the relay.
    fn relay_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "sysperf-delay")
            })
            .count()
    }

    /// Everything of this process's delay line: its namespace and TUN devices.
    fn delay_line_left() -> Vec<String> {
        let (ns, _, _) = names(std::process::id());
        let (c, _) = tun_names(std::process::id());
        [format!("/run/netns/{ns}"), format!("/sys/class/net/{c}")]
            .into_iter()
            .filter(|p| std::path::Path::new(p).exists())
            .collect()
    }

    /// As root with /dev/net/tun, the lock of the link tests; else `None` (skipped).
    fn delay_line_test() -> Option<std::sync::MutexGuard<'static, ()>> {
        if !sys::is_root() || !tun_available() {
            println!("skipped: needs root and /dev/net/tun for a delay line");
            return None;
        }
        Some(ONE_LINK.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A one-byte round trip across a 50 ms delay line takes at least the delay (a bound, not
    /// a timing), and after drop nothing of it is left: namespace, devices, relay (root only).
    #[test]
    fn the_delay_line_adds_its_round_trip_and_leaves_nothing() {
        use std::io::{Read, Write};
        let Some(_one) = delay_line_test() else {
            return;
        };
        let rtt = 50;
        let link = Link::new(Shaping::rate(100, 1500).delayed(rtt, 0)).unwrap();
        assert_eq!(relay_threads(), 1);
        let (tun, _) = tun_names(std::process::id());
        assert_eq!(link.here(), tun);
        let (mut c, mut s) = link.tcp_pair().unwrap();
        c.set_nodelay(true).unwrap();
        s.set_nodelay(true).unwrap();
        let echo = std::thread::spawn(move || {
            let mut b = [0u8; 1];
            while s.read_exact(&mut b).is_ok() {
                s.write_all(&b).unwrap();
            }
        });
        let mut least = Duration::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            c.write_all(b"x").unwrap();
            c.read_exact(&mut [0u8; 1]).unwrap();
            least = least.min(t.elapsed());
        }
        drop(c);
        echo.join().unwrap();
        assert!(
            least >= Duration::from_millis(u64::from(rtt) * 9 / 10),
            "a round trip took {least:?} across a {rtt} ms delay line"
        );
        let counts = link.relay_counts().unwrap();
        // The handshake and five exchanges, each way.
        assert!(counts.packets >= 10, "{counts:?}");
        assert_eq!(counts.dropped, 0);
        drop(link);
        assert_eq!(delay_line_left(), Vec::<String>::new());
        assert_eq!(relay_threads(), 0);
    }

    /// The relay drops about its loss rate of the packets it reads (counted, wide bounds), and
    /// TCP across it still delivers every byte written (root only).
    #[test]
    fn the_delay_line_loses_its_fraction_and_tcp_recovers() {
        use std::io::{Read, Write};
        let Some(_one) = delay_line_test() else {
            return;
        };
        // 10% lost, so that a few thousand packets make a count far from zero.
        let link = Link::new(Shaping::rate(100, 1500).delayed(2, 100_000)).unwrap();
        let (near, far) = link.udp_pair().unwrap();
        let n = 3000u64;
        // Read as they come (the socket's buffer holds a few hundred), until 300 ms of quiet.
        far.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = 0u64;
            while far.recv(&mut [0u8; 512]).is_ok() {
                got += 1;
            }
            got
        });
        for i in 0..n {
            near.send(&[1u8; 200]).unwrap();
            // Paced, so that the device's own queue (500 packets) never overflows.
            if i % 50 == 49 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let got = reader.join().unwrap();
        let counts = link.relay_counts().unwrap();
        assert!(counts.packets >= n, "{counts:?}");
        let share = counts.dropped as f64 / counts.packets as f64;
        assert!((0.05..=0.15).contains(&share), "{counts:?}");
        assert_eq!(counts.overflowed, 0, "{counts:?}");
        assert!(
            got < n && got + counts.dropped >= n,
            "{got} of {n}: {counts:?}"
        );
        // TCP: every byte, retransmitted where lost.
        let (mut c, mut s) = link.tcp_pair().unwrap();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            s.read_to_end(&mut all).unwrap();
            all
        });
        let sent: Vec<u8> = (0..256u32 << 10).map(|i| (i % 251) as u8).collect();
        c.write_all(&sent).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(reader.join().unwrap() == sent, "the stream arrived changed");
        assert!(link.relay_counts().unwrap().dropped > counts.dropped);
    }
}
