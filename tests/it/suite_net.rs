//! The network suite (round trips, Cabrera's stream sweep, Nagle, socket buffers, connections,
//! contention): the stored series have their planned shape, and each benchmark really moves
//! what it claims, counted from outside the worker.
//!
//! - `run --suite net --quick` stores every series with a point each, the derived system time
//!   per byte of the streams, and st_blksize in the run's notes;
//! - the loopback interface's byte and packet counters (/proc/net/dev) and UDP's datagram
//!   counters (/proc/net/snmp) grow by at least what a worker's trial says it moved;
//! - strace: a split request is two send(2)s per exchange (and TCP_CORK around them), the
//!   inetd model execs `cat` once per connection, a round trip is one send and one receive
//!   on each side, TCP_NODELAY is set for round trips and not for streams;
//! - Ctrl-C in the middle of the suite leaves no process behind;
//! - another process's connections to `net.connect`'s Unix listener (its name is listed in
//!   /proc/net/unix) are counted as such, and the trial ends (#41).
//!
//! - the long haul (root): its bytes cross its veth (the interface counters), nothing of it
//!   (namespace, veth) is left after a trial, after Ctrl-C, or after a SIGKILL and the next
//!   sysperf's tidy; across the delay line (TUN), a round trip takes at least its 50 ms, a
//!   lossy stream delivers every byte, and a killed worker's TUN devices go with it.
//!
//! Counters are system-wide, so only lower bounds are checked; nothing depends on speed.

use crate::support as common;

use common::*;

use serde_json::Value;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::Command;
use std::time::{Duration, Instant};
use sysperf::harness::janitor;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sysperf")
}

/// Runs one worker trial of a series point; fails unless it succeeded.
fn worker(id: &str, param: u64, iterations: u64) -> Value {
    let out = Command::new(exe())
        .args(["__worker", &point_request(id, param, iterations)])
        .output()
        .unwrap();
    let v = json_of(&out.stdout);
    assert!(out.status.success() && v["error"].is_null(), "{id}: {v}");
    v
}

/// (rx bytes, rx packets) of the loopback interface, from /proc/net/dev.
fn lo_rx() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/net/dev").unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("lo:"))
        .expect("no lo in /proc/net/dev");
    let f: Vec<u64> = line
        .split_once(':')
        .unwrap()
        .1
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (f[0], f[1])
}

/// A field of a protocol's line in /proc/net/snmp ("Udp", "InDatagrams").
fn snmp(proto: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let prefix = format!("{proto}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    let names: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let values: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let i = names.iter().position(|n| *n == field).unwrap();
    values[i].parse().unwrap()
}

#[test]
fn quick_run_stores_every_series_with_a_point() {
    // As root its long haul makes namespaces: not while a long-haul test looks for new ones.
    let _one = root().then(|| LONG_HAUL.lock().unwrap_or_else(|e| e.into_inner()));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let v = success_json(
        sysperf(&db)
            .args(["run", "--suite", "net", "--quick", "--json", "--db"])
            .arg(&db),
    );
    let series = v["series"].as_array().expect("series");
    let ids: Vec<&str> = series.iter().map(|s| s["id"].as_str().unwrap()).collect();
    // The long haul is measured only as root.
    let long_haul = if root() { 2 } else { 0 };
    assert_eq!(
        ids[ids.len() - long_haul..],
        ["net.longhaul", "net.longhaul-rtt"][..long_haul]
    );
    let ids = &ids[..ids.len() - long_haul];
    assert_eq!(
        ids,
        [
            "net.rtt-tcp",
            "net.rtt-udp",
            "net.rtt-udp-sendto",
            "net.rtt-unix",
            "net.rtt-unixdg",
            "net.stream-tcp",
            "net.stream-unix",
            "net.nagle",
            "net.sockbuf",
            "net.sockbuf-auto",
            "net.connect",
            "net.inetd",
            "net.contention",
            "net.softirq",
        ]
    );
    for s in series {
        let points = s["points"].as_array().unwrap();
        assert!(!points.is_empty(), "{}", s["id"]);
        for p in points {
            assert!(p["result"]["error"].is_null(), "{}: {p}", s["id"]);
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{}: {p}", s["id"]);
        }
    }
    assert_eq!(xs_of(series_of(&v, "net.rtt-udp")), [1.0, 1024.0, 65507.0]);
    assert_eq!(xs_of(series_of(&v, "net.nagle")).len(), 4);
    let derived = derived_names(&v);
    for size in [64, 4096, 1048576] {
        for id in ["net.stream-tcp", "net.stream-unix"] {
            let name = format!("{id}.sys-per-byte@{size}");
            assert!(derived.contains(&name.as_str()), "{name}: {derived:?}");
        }
    }
    // Where protocol time goes: every trial counted, the figures derived.
    for name in [
        "net.softirq.softirq-ns-per-byte@65536",
        "net.softirq.receiver-sys-ns-per-byte@65536",
        "net.softirq.net-rx-per-mib@65536",
    ] {
        assert!(derived.contains(&name), "{name}: {derived:?}");
    }
    for t in series_of(&v, "net.softirq")["points"][0]["result"]["trials"]
        .as_array()
        .unwrap()
    {
        let c = &t["counters"];
        assert!(
            c["net_rx_softirqs"].is_u64() && c["softirq_time_ns"].is_u64(),
            "{t}"
        );
    }
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for want in [
        "net: st_blksize: TCP socket ",
        "net:   12 resident daemons, one service each",
    ] {
        assert!(
            notes.iter().any(|n| n.starts_with(want)),
            "{want}: {notes:?}"
        );
    }
    // The notes say how the delay and loss points are made: the delay line, not netem.
    if root() && std::path::Path::new("/dev/net/tun").exists() {
        assert!(
            notes.iter().any(
                |n| n.starts_with("net: net.longhaul: the delay and loss points")
                    && n.contains("delay line over TUN, not netem")
            ),
            "{notes:?}"
        );
    }
    // Listed with the others.
    let out = sysperf(&db).args(["list", "--suites"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("net.stream-tcp") && text.contains("net.inetd"),
        "{text}"
    );
}

#[test]
fn streams_and_round_trips_cross_the_loopback_interface() {
    // TCP: 200 writes of 64 KiB, all of it through lo (the reader counted it, or the trial
    // would have failed).
    let (b0, _) = lo_rx();
    worker("net.stream-tcp", 65536, 200);
    let (b1, _) = lo_rx();
    assert!(b1 - b0 >= 200 * 65536, "{} bytes on lo", b1 - b0);
    // Round trips: each is a packet each way at least.
    let (_, p0) = lo_rx();
    worker("net.rtt-tcp", 100, 300);
    let (_, p1) = lo_rx();
    assert!(p1 - p0 >= 600, "{} packets on lo", p1 - p0);
    // UDP: exactly one datagram each way per round trip, all of them received.
    let (u0, e0) = (snmp("Udp", "InDatagrams"), snmp("Udp", "InErrors"));
    worker("net.rtt-udp", 1000, 400);
    let (u1, e1) = (snmp("Udp", "InDatagrams"), snmp("Udp", "InErrors"));
    assert!(u1 - u0 >= 800, "{} datagrams", u1 - u0);
    assert_eq!(e1, e0, "UDP receive errors during the trial");
    // The connections: one SYN per connection at least, counted by TCP itself.
    let o0 = snmp("Tcp", "ActiveOpens");
    worker("net.connect", 0, 100);
    worker("net.inetd", 1, 20);
    let o1 = snmp("Tcp", "ActiveOpens");
    assert!(o1 - o0 >= 120, "{} active opens", o1 - o0);
    // Unix sockets do not touch lo, but their reader still counts every byte.
    worker("net.stream-unix", 3000, 100);
    worker("net.sockbuf", 65536, 50);
    worker("net.contention", 1, 50);
}

#[test]
fn softirq_counters_move_with_the_bytes_sent() {
    // 20 writes of 64 KiB against 2,000: the NET_RX softirqs the trial counted grow with the
    // bytes, and at least one per 64 KiB segment's worth is not demanded (the kernel batches
    // packets per softirq), only far more than the small trial's.
    let count = |iterations: u64| {
        let (b0, _) = lo_rx();
        let r = worker("net.softirq", 65536, iterations);
        let (b1, _) = lo_rx();
        assert!(b1 - b0 >= iterations * 65536, "{} bytes on lo", b1 - b0);
        let c = &r["counters"];
        assert!(c["softirq_time_ns"].is_u64(), "{r}");
        assert!(r["children"]["sys_ns"].is_u64(), "the reader's rusage: {r}");
        c["net_rx_softirqs"].as_u64().unwrap()
    };
    let small = count(20);
    let big = count(2000);
    assert!(small >= 1, "{small} NET_RX for 1.25 MiB");
    assert!(
        big >= 200 && big > 5 * small,
        "{big} NET_RX for 125 MiB, {small} for 1.25 MiB"
    );
    // A stream that does not ask for counters takes none (as before, without --observe).
    let r = worker("net.stream-tcp", 65536, 20);
    assert!(r["counters"].is_null(), "{r}");
}

/// Live `sysperf __daemon` processes whose parent is this test process.
fn my_daemons() -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .collect::<Vec<_>>();
            let ours = after.get(2) == Some(&me.as_str()) && after.first() != Some(&"Z");
            (ours && cmd.split(|&b| b == 0).any(|a| a == b"__daemon"))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn a_dozen_daemons_take_more_memory_than_one_inetd_and_none_is_left() {
    use sysperf::suite::net::{server_memory, DAEMONS};
    let exe = std::path::Path::new(exe());
    let daemons = server_memory(exe, &[1; DAEMONS]).unwrap();
    let inetd = server_memory(exe, &[DAEMONS]).unwrap();
    assert_eq!((daemons.processes, daemons.listeners), (DAEMONS, DAEMONS));
    assert_eq!((inetd.processes, inetd.listeners), (1, DAEMONS));
    assert!(
        inetd.pss_kib > 0 && inetd.pss_kib <= inetd.rss_kib,
        "{inetd:?}"
    );
    // Twelve processes hold twelve copies of what is resident in one.
    assert!(daemons.rss_kib > 6 * inetd.rss_kib, "{daemons:?} {inetd:?}");
    assert!(daemons.pss_kib > inetd.pss_kib, "{daemons:?} {inetd:?}");
    assert!(my_daemons().is_empty(), "left behind: {:?}", my_daemons());
}

#[test]
fn a_split_request_is_two_writes_and_inetd_execs_per_connection() {
    if !strace_available() {
        return;
    }
    let n = 30;
    // cork: TCP_CORK on, header, body, TCP_CORK off, per exchange, in the client.
    let traces = strace_point(&["-e", "trace=sendto,setsockopt"], "net.nagle", 3, n);
    let client = traces
        .iter()
        .find(|t| t.contains("TCP_CORK"))
        .expect("no TCP_CORK");
    let corks = client
        .lines()
        .filter(|l| l.starts_with("setsockopt(") && l.contains("TCP_CORK"))
        .count();
    assert_eq!(corks as u64, 2 * n, "{client}");
    let splits = client
        .lines()
        .filter(|l| l.starts_with("sendto(") && (l.ends_with(") = 8") || l.ends_with(") = 120")))
        .count();
    assert_eq!(splits as u64, 2 * n, "{client}");
    // The server answers each exchange once.
    assert!(traces.iter().any(|t| t
        .lines()
        .filter(|l| l.starts_with("sendto(") && l.ends_with(") = 128"))
        .count() as u64
        == n));
    // inetd: one execve of cat (by the absolute path sysperf::programs finds) per
    // connection; the resident server execs nothing.
    let cat = format!(
        "execve(\"{}\"",
        sysperf::programs::find("cat").unwrap().display()
    );
    let execs = |param| {
        strace_point(&["-e", "trace=execve"], "net.inetd", param, n)
            .iter()
            .map(|t| {
                t.lines()
                    .filter(|l| l.starts_with(&cat) && l.ends_with("= 0"))
                    .count()
            })
            .sum::<usize>()
    };
    assert_eq!(execs(1) as u64, n);
    assert_eq!(execs(0), 0);
    // TCP_NODELAY on both ends of a round trip (as sockperf and netperf -D), never on a
    // stream (iperf3 leaves Nagle on: a 64 KiB write's short last segment waits to merge).
    let nodelay = |id, param| {
        strace_point(&["-e", "trace=setsockopt"], id, param, 5)
            .concat()
            .matches("TCP_NODELAY, [1]")
            .count()
    };
    assert_eq!(nodelay("net.rtt-tcp", 64), 2);
    assert_eq!(nodelay("net.stream-tcp", 65536), 0);
    // A Unix datagram round trip: one datagram sent (write) and one received (recvfrom) on
    // each side per trip.
    let traces = strace_point(&["-e", "trace=write,recvfrom"], "net.rtt-unixdg", 512, n);
    let sides: Vec<(usize, usize)> = traces
        .iter()
        .map(|t| {
            let of = |call: &str| {
                t.lines()
                    .filter(|l| l.starts_with(call) && l.ends_with(") = 512"))
                    .count()
            };
            (of("write("), of("recvfrom("))
        })
        .filter(|c| *c != (0, 0))
        .collect();
    assert_eq!(sides, [(n as usize, n as usize); 2], "{traces:?}");
}

/// Ctrl-C as a terminal sends it; the run must end with 130.
fn interrupt_and_wait(child: std::process::Child) {
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn interrupting_the_suite_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let tag = unique_tag("net-interrupt");
    let child = spawn_tagged(&db, &tag, &["run", "--suite", "net.stream-tcp", "--json"]);
    // Wait for a reader (the worker's forked server), then interrupt as a terminal would.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !leftover_workers(&tag)
        .iter()
        .any(|p| p.ends_with("sysperf:reader"))
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt_and_wait(child);
    std::thread::sleep(Duration::from_millis(200));
    assert_nothing_left(&tag);
}

// ---------------------------------------------------------------------------------------
// The long haul (root only): a veth pair into a network namespace, named after the worker.

/// Whether the tests run as root (the long haul needs it).
fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// One long-haul test at a time: the Ctrl-C test looks for any new namespace.
static LONG_HAUL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// As root, the lock of the long-haul tests; as another user, `None` (the test is skipped).
fn long_haul_test() -> Option<std::sync::MutexGuard<'static, ()>> {
    if !root() {
        println!("skipped: the long haul needs root");
        return None;
    }
    Some(LONG_HAUL.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The long-haul namespaces (`sysperf-PID-TAG`), veth ends (`spPID.TAGa`, `spPID.TAGb`) and
/// the delay line's TUN devices (`spPID.TAGc`, `spPID.TAGd`) here now.
fn long_haul_left() -> Vec<String> {
    ["/run/netns", "/sys/class/net"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| janitor::link_owner(n).is_some())
        .collect()
}

/// What of a pid's long haul is left.
fn long_haul_of(pid: u32) -> Vec<String> {
    long_haul_left()
        .into_iter()
        .filter(|n| janitor::link_owner(n) == Some(pid))
        .collect()
}

/// The interface of worker `pid` on this side whose name ends with `end` (`a`: the veth,
/// `c`: the TUN device), once it is up.
fn device_of(pid: u32, end: char) -> Option<String> {
    std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(end) && janitor::link_owner(n) == Some(pid))
}

/// The next sysperf's tidy (`doctor`) removes what the killed worker `pid` left.
fn tidied_by_the_next_run(pid: u32) {
    let dir = tempfile::tempdir().unwrap();
    let out = sysperf(&dir.path().join("s.db"))
        .arg("doctor")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "doctor: {err}");
    assert_eq!(long_haul_of(pid), Vec::<String>::new());
}

/// The most bytes the interface of `child` ending with `end` (see [`device_of`]) had sent
/// (its tx_bytes) while `child` ran, read every 2 ms until it exits.
fn sent_while_running(child: &mut std::process::Child, end: char) -> u64 {
    let pid = child.id();
    let mut dev = None;
    let mut seen = 0u64;
    while child.try_wait().unwrap().is_none() {
        if dev.is_none() {
            dev = device_of(pid, end);
        }
        if let Some(n) = dev
            .as_ref()
            .and_then(|d| {
                std::fs::read_to_string(format!("/sys/class/net/{d}/statistics/tx_bytes")).ok()
            })
            .and_then(|t| t.trim().parse().ok())
        {
            seen = seen.max(n);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    seen
}

/// A worker trial of a series point, its report read from stdout.
fn spawn_worker(id: &str, param: u64, iterations: u64) -> std::process::Child {
    Command::new(exe())
        .args(["__worker", &point_request(id, param, iterations)])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The report of a worker trial; fails unless it succeeded.
fn finished(child: std::process::Child) -> Value {
    let out = child.wait_with_output().unwrap();
    let v = json_of(&out.stdout);
    assert!(out.status.success() && v["error"].is_null(), "{v}");
    v
}

/// #41 item 7: `net.connect@unix` listens at a random abstract name, which /proc/net/unix
/// lists for every user. A connection made to it by another process during a trial was
/// accepted as one of the client's, and the client's last then waited for an accept until
/// the trial timed out. Now the trial ends as it should, counting the strangers.
#[test]
fn a_strangers_connections_to_net_connect_are_counted_and_the_trial_ends() {
    let mut child = spawn_worker("net.connect", 1, 100_000);
    let listed = format!("@sysperf-{}-net-", child.id());
    let mut name = None;
    wait_until("the worker's listener in /proc/net/unix", || {
        let table = std::fs::read_to_string("/proc/net/unix").unwrap();
        name = table
            .lines()
            .filter_map(|l| l.split_whitespace().nth(7))
            .find(|n| n.starts_with(&listed))
            .map(|n| n[1..].to_string());
        name.is_some()
    });
    let at = SocketAddr::from_abstract_name(name.unwrap()).unwrap();
    let strangers: Vec<UnixStream> = (0..3)
        .filter_map(|_| UnixStream::connect_addr(&at).ok())
        .collect();
    assert!(!strangers.is_empty(), "could not connect to the listener");
    let deadline = Instant::now() + Duration::from_secs(40);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the trial never ended: a stranger's connection was served as the client's");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let v = finished(child);
    assert_eq!(v["intrusions"], strangers.len(), "{v}");
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_long_haul_crosses_its_veth_and_leaves_nothing() {
    let Some(_one) = long_haul_test() else {
        return;
    };
    // 10 Mbit/s, 1500 bytes (point 2): 100 writes of 16 KiB take more than a second, so the
    // veth's counters are seen moving while the worker runs.
    let (param, iterations, write) = (2, 100u64, 16u64 << 10);
    let mut child = spawn_worker("net.longhaul", param, iterations);
    let pid = child.id();
    let seen = sent_while_running(&mut child, 'a');
    finished(child);
    let claimed = iterations * write;
    // The bytes went across the veth, not over loopback, and no more than the stream and
    // its headers (under 100 bytes a segment of at least 500).
    assert!(seen > 0, "nothing crossed the veth of {pid}");
    assert!(seen <= claimed + claimed / 5 + 4096, "{seen} for {claimed}");
    assert_eq!(long_haul_of(pid), Vec::<String>::new());
}

#[test]
fn a_killed_long_haul_is_removed_by_the_next_run() {
    let Some(_one) = long_haul_test() else {
        return;
    };
    // 1 Mbit/s (point 4): 1000 writes of 16 KiB would take minutes; killed once its link is up.
    let mut child = spawn_worker("net.longhaul", 4, 1000);
    let pid = child.id();
    wait_until("the worker's link is up", || device_of(pid, 'a').is_some());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!long_haul_of(pid).is_empty(), "SIGKILL left nothing?");
    tidied_by_the_next_run(pid);
}

#[test]
fn interrupting_the_long_haul_leaves_no_namespace_or_link() {
    let Some(_one) = long_haul_test() else {
        return;
    };
    let before = long_haul_left();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let tag = unique_tag("net-longhaul");
    let child = spawn_tagged(&db, &tag, &["run", "--suite", "net.longhaul", "--json"]);
    // A worker's link, not the one the preflight tries netem on (named after sysperf itself).
    let engine_pid = child.id();
    wait_until("a worker's link is up", || {
        long_haul_left().iter().any(|n| {
            n.ends_with('a') && janitor::link_owner(n) != Some(engine_pid) && !before.contains(n)
        })
    });
    interrupt_and_wait(child);
    // Left behind means owned by a process that is gone: a live owner's link is another test's
    // run in progress (the quick-run and suite tests make links as root too).
    let owner_gone = |n: &String| {
        janitor::link_owner(n)
            .is_some_and(|p| janitor::owner_gone(p as sysperf::sys::Pid, janitor::Made::Unknown))
    };
    let after: Vec<String> = long_haul_left()
        .into_iter()
        .filter(|n| !before.contains(n) && owner_gone(n))
        .collect();
    assert_eq!(after, Vec::<String>::new(), "sysperf was pid {engine_pid}");
    assert_nothing_left(&tag);
}

/// The delay line's points (full run): 6 is "10Mbit mtu1500 rtt50ms", 7 adds 0.1% loss.
const RTT50: u64 = 6;
const RTT50_LOSS: u64 = 7;

/// As root with /dev/net/tun, the lock of the long-haul tests; else `None` (skipped).
fn delay_line_test() -> Option<std::sync::MutexGuard<'static, ()>> {
    if !std::path::Path::new("/dev/net/tun").exists() {
        println!("skipped: the delay line needs /dev/net/tun");
        return None;
    }
    long_haul_test()
}

/// Whether the worker `pid`'s delay line has its TUN device here.
fn tun_up(pid: u32) -> bool {
    device_of(pid, 'c').is_some()
}

#[test]
fn a_round_trip_across_the_delay_line_takes_its_delay_and_leaves_nothing() {
    let Some(_one) = delay_line_test() else {
        return;
    };
    // Four one-byte round trips across a 50 ms delay line: the timed region holds at least
    // four times the delay (a bound on what is measured, not a timing target).
    let iterations = 4;
    let child = spawn_worker("net.longhaul-rtt", RTT50, iterations);
    let pid = child.id();
    let v = finished(child);
    assert_eq!(long_haul_of(pid), Vec::<String>::new());
    let wall = v["wall_ns"].as_u64().unwrap();
    assert!(
        wall >= iterations * 45_000_000,
        "{iterations} round trips across a 50 ms delay line in {wall} ns"
    );
}

#[test]
fn a_lossy_stream_delivers_every_byte_across_the_delay_line() {
    let Some(_one) = delay_line_test() else {
        return;
    };
    // 20 writes of 16 KiB through 0.1% loss: the reader exits 0 only with every byte, and
    // the bytes cross the worker's TUN device (its counters, read while it runs).
    let (iterations, write) = (20u64, 16u64 << 10);
    let mut child = spawn_worker("net.longhaul", RTT50_LOSS, iterations);
    let pid = child.id();
    let seen = sent_while_running(&mut child, 'c');
    finished(child);
    // IP and TCP headers, no link header, and a few retransmissions: a fifth more at most.
    let claimed = iterations * write;
    assert!(seen > 0, "nothing crossed the TUN device of {pid}");
    assert!(seen <= claimed + claimed / 5 + 4096, "{seen} for {claimed}");
    assert_eq!(long_haul_of(pid), Vec::<String>::new());
}

#[test]
fn a_killed_delay_line_is_removed_by_the_next_run() {
    let Some(_one) = delay_line_test() else {
        return;
    };
    // 10000 writes of 16 KiB at 10 Mbit/s would take minutes; killed once its line is up.
    let mut child = spawn_worker("net.longhaul", RTT50, 10_000);
    let pid = child.id();
    wait_until("the worker's delay line is up", || tun_up(pid));
    child.kill().unwrap();
    child.wait().unwrap();
    // The relay died with the worker: its TUN devices go with their descriptors (the
    // reader's copies die with it, by its parent-death signal).
    wait_until("the TUN device goes", || !tun_up(pid));
    let left = long_haul_of(pid);
    assert!(
        left.len() == 1 && left[0].starts_with(&format!("sysperf-{pid}-")),
        "{left:?}: only the namespace should be left"
    );
    tidied_by_the_next_run(pid);
}
