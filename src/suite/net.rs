//! The network suite (`sysperf run --suite net`): what Leffler, Karels and McKusick's 4.2BSD
//! paper (*Measuring and Improving the Performance of Berkeley UNIX*) said of networking, on
//! today's stack: §3.2.7 (throughput anomalies at arbitrary TCP message sizes [Cabrera]),
//! §4.1.7 (socket buffer sizes, st_blksize of sockets, Nagle's small-packet policy and
//! delayed acknowledgement, "CPU contention degrades substantially the throughput") and
//! §4.2.4 (one inetd that forks and execs a server per connection instead of a dozen resident
//! daemons).
//!
//! Every series is two of sysperf's own processes: the worker (the client, or the writer) and
//! a server it forks in setup, which the placement puts on the same CPU or another
//! (`--placement same|spread`), as the other two-process tests. Endpoints are made before the
//! fork and all traffic stays on loopback (127.0.0.1, or Unix-domain sockets, the listening
//! ones in the abstract namespace so that nothing is left on disk). The server counts what it
//! receives and exits 0 only when it got exactly the bytes (or connections) the trial sent
//! (`net.connect`'s: at least the client's connections, those past them another process's,
//! counted for an `intruded` warning, #41); it is reaped inside the timed region, so a short
//! count fails the trial and the server's CPU time belongs to the trial.
//!
//! - `net.rtt-*`: round trip of N bytes (the client sends N, the server echoes N) over TCP
//!   (TCP_NODELAY, as `netperf -t TCP_RR -- -D`), UDP (connected, and unconnected with
//!   sendto/recvfrom, a route lookup per datagram), Unix stream and Unix datagram sockets;
//! - `net.stream-*`: one-way stream of writes of one size (Cabrera's sweep) on a dense grid
//!   from 1 B to 1 MiB, the reader reading 64 KiB (or the write size, if larger) at a time
//!   as iperf3 does; the derived figures give the system time per byte (writer and reader)
//!   and mark the anomalies, points whose throughput is below both neighbours';
//! - `net.nagle`: a request of an 8-byte header and a 120-byte body written with two write(2)s,
//!   a 128-byte answer, under Nagle's algorithm and the peer's delayed ACK, and with
//!   TCP_NODELAY, TCP_QUICKACK (set by the server before each read) or TCP_CORK;
//! - `net.sockbuf*`: TCP throughput of 64 KiB writes against SO_SNDBUF/SO_RCVBUF, and with the
//!   kernel's autotuning; the run's notes record st_blksize of sockets and a pipe;
//! - `net.connect`, `net.inetd`: connect+accept+close over TCP and Unix sockets; a one-byte
//!   echo served by a resident server against one fork+exec of `cat` per connection;
//! - `net.contention`: TCP throughput alone and with a CPU hog on the receiver's CPU.
//!
//! - `net.softirq`: the TCP stream again, every trial counting NET_RX/NET_TX softirqs and the
//!   CPUs' softirq time (system-wide, /proc) against the reader's own system time (its
//!   rusage, reaped inside the timed region): the share of protocol processing charged to no
//!   process (§3.2.7); the figures are derived ([`protocol_time`]).
//!
//! - the run's notes: the memory (RSS and PSS, /proc/PID/smaps_rollup) of a dozen sleeping
//!   resident daemons against one inetd-style server listening for all their services
//!   (§4.2.4), each a fresh `sysperf __daemon` process ([`server_memory`]).
//!
//! - `net.longhaul`, `net.longhaul-rtt`: TCP throughput and a one-byte round trip across a
//!   veth pair into a network namespace of the worker's own, its MTU clamped and its rate
//!   shaped by tbf ([`longhaul`]); root only. The points with a round-trip delay and a
//!   loss rate (50 ms, 0.1 %) cross two TUN devices instead, joined by sysperf's user-space
//!   delay line (a relay thread of the worker's), not netem, which this kernel may lack.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Placement, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, TrialKind, YKind};
use crate::suite::bbn::{kill_and_reap, spawn};
use crate::sys::{self, Pid};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener, UnixStream};

pub mod longhaul;

/// The reader's buffer in the streams (iperf3 reads as much with `-l 64K`); a larger write
/// is read with a buffer of its size.
const READ_CHUNK: usize = 64 << 10;
/// The largest UDP payload over IPv4 (65535 - 20 - 8).
pub const UDP_MAX: u64 = 65507;
/// The write size of the socket-buffer and contention streams.
const BULK_WRITE: u64 = 64 << 10;
/// The program inetd execs per connection: the echo service (found by `crate::programs`'
/// rule in setup, and run by that absolute path).
pub const CAT: &str = "cat";

/// How the server's exit status reads to the parent.
const FAULT_IO: i32 = 1;
const FAULT_COUNT: i32 = 2;

/// The transports of the latency and stream sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
    /// UDP on unconnected sockets: sendto(2) with the peer's address and recvfrom(2), a route
    /// lookup per datagram (what §4.1.7's route caching saved; what sockperf does).
    UdpTo,
    Unix,
    UnixDgram,
}

/// One end of a connected socket pair.
pub enum End {
    Tcp(TcpStream),
    Udp(UdpSocket),
    UdpTo(UdpSocket, std::net::SocketAddr),
    Unix(UnixStream),
    UnixDgram(UnixDatagram),
}

fn short(what: &str, n: usize, want: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("short {what}: {n} of {want} bytes"),
    )
}

impl End {
    /// Sends `buf` whole: a stream writes it (one write(2) unless the kernel takes less), a
    /// datagram socket sends it as one datagram.
    pub fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        let n = match self {
            End::Tcp(s) => return s.write_all(buf),
            End::Unix(s) => return s.write_all(buf),
            End::Udp(s) => s.send(buf)?,
            End::UdpTo(s, to) => s.send_to(buf, *to)?,
            End::UnixDgram(s) => s.send(buf)?,
        };
        if n != buf.len() {
            return Err(short("send", n, buf.len()));
        }
        Ok(())
    }

    /// Receives exactly `buf.len()` bytes: a stream loops on short reads, a datagram must be
    /// exactly that long.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let n = match self {
            End::Tcp(s) => return s.read_exact(buf),
            End::Unix(s) => return s.read_exact(buf),
            End::Udp(s) => s.recv(buf)?,
            End::UdpTo(s, _) => s.recv_from(buf)?.0,
            End::UnixDgram(s) => s.recv(buf)?,
        };
        if n != buf.len() {
            return Err(short("datagram", n, buf.len()));
        }
        Ok(())
    }

    /// One read(2) of whatever is there (streams); 0 at end of file.
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            End::Tcp(s) => s.read(buf),
            End::Unix(s) => s.read(buf),
            End::Udp(s) => s.recv(buf),
            End::UdpTo(s, _) => s.recv_from(buf).map(|r| r.0),
            End::UnixDgram(s) => s.recv(buf),
        }
    }

    /// Ends a stream's writing side: the reader sees end of file even where another process
    /// still holds a copy of this descriptor (a child forked meanwhile).
    fn finish(&self) -> io::Result<()> {
        match self {
            End::Tcp(s) => s.shutdown(Shutdown::Write),
            End::Unix(s) => s.shutdown(Shutdown::Write),
            End::Udp(_) | End::UdpTo(..) | End::UnixDgram(_) => Ok(()),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            End::Tcp(s) => s.as_raw_fd(),
            End::Udp(s) | End::UdpTo(s, _) => s.as_raw_fd(),
            End::Unix(s) => s.as_raw_fd(),
            End::UnixDgram(s) => s.as_raw_fd(),
        }
    }
}

/// A connected TCP pair over loopback: (connecting end, accepted end).
pub fn tcp_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let a = TcpStream::connect(listener.local_addr()?)?;
    let b = accept_from(&listener, a.local_addr()?)?;
    Ok((a, b))
}

/// The connection `listener` accepts from `peer`: any other, made first to the listener's
/// port by another local process (ports are listed in /proc/net/tcp), is closed, so that a
/// benchmark never talks to a stranger (nor waits for its own connection behind one).
pub fn accept_from(listener: &TcpListener, peer: std::net::SocketAddr) -> io::Result<TcpStream> {
    loop {
        let (s, from) = listener.accept()?;
        if from == peer {
            return Ok(s);
        }
    }
}

/// A connected pair of `proto` sockets: (client's end, server's end), default options.
pub fn pair(proto: Proto) -> io::Result<(End, End)> {
    Ok(match proto {
        Proto::Tcp => {
            let (a, b) = tcp_pair()?;
            (End::Tcp(a), End::Tcp(b))
        }
        Proto::Udp => {
            let a = UdpSocket::bind("127.0.0.1:0")?;
            let b = UdpSocket::bind("127.0.0.1:0")?;
            a.connect(b.local_addr()?)?;
            b.connect(a.local_addr()?)?;
            (End::Udp(a), End::Udp(b))
        }
        Proto::UdpTo => {
            let a = UdpSocket::bind("127.0.0.1:0")?;
            let b = UdpSocket::bind("127.0.0.1:0")?;
            let (to_b, to_a) = (b.local_addr()?, a.local_addr()?);
            (End::UdpTo(a, to_b), End::UdpTo(b, to_a))
        }
        Proto::Unix => {
            let (a, b) = UnixStream::pair()?;
            (End::Unix(a), End::Unix(b))
        }
        Proto::UnixDgram => {
            let (a, b) = UnixDatagram::pair()?;
            (End::UnixDgram(a), End::UnixDgram(b))
        }
    })
}

/// The server's exit status from an io result.
fn status(r: io::Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => FAULT_COUNT,
        Err(_) => FAULT_IO,
    }
}

/// The processes a trial forked (its server, a hog): killed and reaped by teardown, and on
/// drop if the trial failed before.
#[derive(Default)]
struct Children(Vec<Pid>);

impl Children {
    /// Reaps the server (inside the timed region) and names its failure.
    fn reap(&mut self) -> Result<(), BenchError> {
        let pid = self
            .0
            .pop()
            .ok_or_else(|| BenchError::Protocol("no server".into()))?;
        match sys::wait_child(pid).map_err(BenchError::sys("waitpid"))? {
            0 => Ok(()),
            FAULT_COUNT => Err(BenchError::Protocol(
                "server: it did not receive exactly the bytes or connections sent".into(),
            )),
            FAULT_IO => Err(BenchError::Protocol("server: a socket call failed".into())),
            c => Err(BenchError::Protocol(format!("server exited with {c}"))),
        }
    }

    fn stop(&mut self) {
        kill_and_reap(&mut self.0);
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

fn no_channel() -> BenchError {
    BenchError::Protocol("no socket".into())
}

// ---------------------------------------------------------------------------------------
// Round trips.

/// The client sends `size` bytes, the server echoes them: one round trip per operation.
pub struct RoundTrip {
    proto: Proto,
    size: usize,
    buf: Vec<u8>,
    client: Option<End>,
    server: Children,
    /// Across a shaped veth link into a namespace (`net.longhaul-rtt`) instead of loopback.
    shaping: Option<longhaul::Shaping>,
    link: Option<longhaul::Link>,
}

impl RoundTrip {
    /// The same round trip over TCP across a long-haul link of this shaping.
    pub fn across(self, shaping: longhaul::Shaping) -> RoundTrip {
        RoundTrip {
            shaping: Some(shaping),
            ..self
        }
    }

    pub fn new(proto: Proto, size: u64) -> RoundTrip {
        let max = if matches!(proto, Proto::Udp | Proto::UdpTo) {
            UDP_MAX
        } else {
            1 << 16
        };
        RoundTrip {
            proto,
            size: size.clamp(1, max) as usize,
            buf: Vec::new(),
            client: None,
            server: Children::default(),
            shaping: None,
            link: None,
        }
    }
}

/// The echo server: `n` messages of `size`, each sent back.
fn echo(end: &mut End, buf: &mut [u8], n: u64) -> io::Result<()> {
    for _ in 0..n {
        end.recv(buf)?;
        end.send(buf)?;
    }
    Ok(())
}

impl Benchmark for RoundTrip {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let (client, mut server) = match self.shaping {
            Some(shaping) => across(shaping, &mut self.link)?,
            None => pair(self.proto).map_err(BenchError::sys("socket pair"))?,
        };
        // A message above the MSS leaves a short last segment, which Nagle's algorithm would
        // hold until the first is acknowledged: a round trip sends at once, as netperf's
        // TCP_RR with -D and sockperf do.
        for end in [&client, &server] {
            if let End::Tcp(s) = end {
                s.set_nodelay(true)
                    .map_err(BenchError::sys("TCP_NODELAY"))?;
            }
        }
        self.buf = vec![0x6e; self.size];
        let buf = &mut self.buf;
        let pid = spawn(ctx, "sysperf:echo", None, || {
            status(echo(&mut server, buf, iterations))
        })?;
        self.server.0.push(pid);
        drop(server);
        self.client = Some(client);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let c = self.client.as_mut().ok_or_else(no_channel)?;
        for _ in 0..iterations {
            c.send(&self.buf).map_err(BenchError::sys("send"))?;
            c.recv(&mut self.buf).map_err(BenchError::sys("recv"))?;
        }
        self.server.reap()
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.client = None;
        self.server.stop();
        self.link = None;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// One-way streams.

/// What else a stream's trial does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Plain: the default buffers.
    Plain,
    /// SO_SNDBUF on the writer and SO_RCVBUF on the reader set to this many bytes.
    Buffers(u32),
    /// A process spinning on the reader's CPU for the whole trial.
    Hog,
}

/// The writer writes `iterations` writes of `size`; the reader reads everything in large
/// reads, counts it and exits 0 only at end of file after exactly `iterations * size` bytes.
pub struct Stream {
    proto: Proto,
    size: usize,
    kind: StreamKind,
    buf: Vec<u8>,
    client: Option<End>,
    server: Children,
    hog: Children,
    /// Every trial takes the /proc counters (softirqs and their time): `net.softirq`.
    counters: bool,
    /// Across a shaped veth link into a namespace (`net.longhaul`) instead of loopback.
    shaping: Option<longhaul::Shaping>,
    link: Option<longhaul::Link>,
}

impl Stream {
    /// The same stream, its trials counted (see [`Benchmark::counted`]).
    pub fn with_counters(self) -> Stream {
        Stream {
            counters: true,
            ..self
        }
    }

    pub fn new(proto: Proto, size: u64, kind: StreamKind) -> Stream {
        Stream {
            proto,
            size: size.clamp(1, 1 << 20) as usize,
            kind,
            buf: Vec::new(),
            client: None,
            server: Children::default(),
            hog: Children::default(),
            counters: false,
            shaping: None,
            link: None,
        }
    }

    /// The same stream over TCP across a long-haul link of this shaping.
    pub fn across(self, shaping: longhaul::Shaping) -> Stream {
        Stream {
            shaping: Some(shaping),
            ..self
        }
    }
}

/// A TCP pair across a new long-haul link, the link kept in `keep` until teardown.
fn across(
    shaping: longhaul::Shaping,
    keep: &mut Option<longhaul::Link>,
) -> Result<(End, End), BenchError> {
    let link = longhaul::Link::new(shaping).map_err(BenchError::sys("long-haul link"))?;
    let (c, s) = link
        .tcp_pair()
        .map_err(BenchError::sys("connect across the long-haul link"))?;
    *keep = Some(link);
    Ok((End::Tcp(c), End::Tcp(s)))
}

/// The stream's reader: counts bytes to end of file.
pub fn drain(end: &mut End, buf: &mut [u8], want: u64) -> io::Result<()> {
    let mut got = 0u64;
    loop {
        let n = end.read_some(buf)?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    if got != want {
        return Err(short("stream", got as usize, want as usize));
    }
    Ok(())
}

fn set_buffers(end: &End, bytes: u32, opt: libc::c_int) -> Result<(), BenchError> {
    sys::set_sock_int(end.fd(), libc::SOL_SOCKET, opt, bytes as i32)
        .map_err(BenchError::sys("setsockopt SO_SNDBUF/SO_RCVBUF"))
}

impl Benchmark for Stream {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let (client, mut server) = match self.shaping {
            Some(shaping) => across(shaping, &mut self.link)?,
            None => pair(self.proto).map_err(BenchError::sys("socket pair"))?,
        };
        if let StreamKind::Buffers(b) = self.kind {
            set_buffers(&client, b, libc::SO_SNDBUF)?;
            set_buffers(&server, b, libc::SO_RCVBUF)?;
        }
        if self.kind == StreamKind::Hog {
            // On the reader's CPU: the child's when spread, else where the worker is.
            let cpu = match ctx.placement {
                Placement::ChildOn(c) => Some(vec![c]),
                Placement::Inherit => None,
            };
            let pid = spawn(ctx, "sysperf:hog", cpu.as_deref(), || {
                let mut i = 0u64;
                loop {
                    i = std::hint::black_box(i.wrapping_add(1));
                }
            })?;
            self.hog.0.push(pid);
        }
        self.buf = vec![0x73; self.size.max(READ_CHUNK)];
        let want = iterations * self.size as u64;
        let buf = &mut self.buf;
        let mut client = Some(client);
        let writer = &mut client;
        let pid = spawn(ctx, "sysperf:reader", None, || {
            drop(writer.take());
            status(drain(&mut server, buf, want))
        })?;
        self.server.0.push(pid);
        drop(server);
        self.client = client;
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let mut c = self.client.take().ok_or_else(no_channel)?;
        let block = &self.buf[..self.size];
        for _ in 0..iterations {
            c.send(block).map_err(BenchError::sys("write"))?;
        }
        // End of file tells the reader the stream is over.
        c.finish().map_err(BenchError::sys("shutdown"))?;
        drop(c);
        self.server.reap()
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.client = None;
        self.server.stop();
        self.hog.stop();
        self.link = None;
        Ok(())
    }

    fn counted(&self) -> bool {
        self.counters
    }
}

// ---------------------------------------------------------------------------------------
// Nagle and delayed acknowledgement.

/// Header and body of the split request, and the answer.
pub const NAGLE_HEADER: usize = 8;
pub const NAGLE_BODY: usize = 120;
pub const NAGLE_ANSWER: usize = 128;

/// The socket options of one `net.nagle` point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Small {
    /// Nagle on, the server's ACKs delayed: the defaults.
    Nagle,
    NoDelay,
    QuickAck,
    Cork,
}

pub const SMALL: [(Small, &str); 4] = [
    (Small::Nagle, "nagle"),
    (Small::NoDelay, "nodelay"),
    (Small::QuickAck, "quickack"),
    (Small::Cork, "cork"),
];

pub struct Exchange {
    mode: Small,
    req: Vec<u8>,
    answer: Vec<u8>,
    client: Option<TcpStream>,
    server: Children,
}

fn tcp_int(s: &TcpStream, opt: libc::c_int, v: i32) -> io::Result<()> {
    sys::set_sock_int(s.as_raw_fd(), libc::IPPROTO_TCP, opt, v)
}

/// The request/response server: reads the header, then the body, answers.
fn answer(s: &mut TcpStream, n: u64, quickack: bool) -> io::Result<()> {
    let mut req = [0u8; NAGLE_HEADER + NAGLE_BODY];
    let ans = [0x61u8; NAGLE_ANSWER];
    for _ in 0..n {
        let (head, body) = req.split_at_mut(NAGLE_HEADER);
        for part in [head, body] {
            if quickack {
                // Not sticky: the kernel may fall back to delayed ACKs after any read.
                tcp_int(s, libc::TCP_QUICKACK, 1)?;
            }
            s.read_exact(part)?;
        }
        s.write_all(&ans)?;
    }
    Ok(())
}

impl Exchange {
    pub fn new(mode: Small) -> Exchange {
        Exchange {
            mode,
            req: Vec::new(),
            answer: Vec::new(),
            client: None,
            server: Children::default(),
        }
    }
}

impl Benchmark for Exchange {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let (client, mut server) = tcp_pair().map_err(BenchError::sys("tcp pair"))?;
        if self.mode == Small::NoDelay {
            client
                .set_nodelay(true)
                .map_err(BenchError::sys("TCP_NODELAY"))?;
        }
        self.req = vec![0x71; NAGLE_HEADER + NAGLE_BODY];
        self.req[..NAGLE_HEADER].copy_from_slice(&(NAGLE_BODY as u64).to_le_bytes());
        self.answer = vec![0; NAGLE_ANSWER];
        let quickack = self.mode == Small::QuickAck;
        let pid = spawn(ctx, "sysperf:answer", None, || {
            status(answer(&mut server, iterations, quickack))
        })?;
        self.server.0.push(pid);
        drop(server);
        self.client = Some(client);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let cork = self.mode == Small::Cork;
        let c = self.client.as_mut().ok_or_else(no_channel)?;
        let (head, body) = self.req.split_at(NAGLE_HEADER);
        for _ in 0..iterations {
            if cork {
                tcp_int(c, libc::TCP_CORK, 1).map_err(BenchError::sys("TCP_CORK"))?;
            }
            c.write_all(head).map_err(BenchError::sys("write"))?;
            c.write_all(body).map_err(BenchError::sys("write"))?;
            if cork {
                tcp_int(c, libc::TCP_CORK, 0).map_err(BenchError::sys("TCP_CORK"))?;
            }
            c.read_exact(&mut self.answer)
                .map_err(BenchError::sys("read"))?;
        }
        self.server.reap()
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.client = None;
        self.server.stop();
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Connections.

/// What one connection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conn {
    /// connect, accept, both close (the server first), over TCP loopback.
    Tcp,
    /// The same over a Unix stream socket in the abstract namespace.
    Unix,
    /// One byte echoed by the resident server, then closed.
    Resident,
    /// One byte echoed by `cat`, which the server forks and execs per connection.
    Inetd,
}

pub const CONNECT: [(Conn, &str); 2] = [(Conn::Tcp, "tcp"), (Conn::Unix, "unix")];
pub const INETD: [(Conn, &str); 2] = [(Conn::Resident, "resident"), (Conn::Inetd, "inetd")];

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    fn fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }
}

pub struct Connect {
    conn: Conn,
    listener: Option<Listener>,
    server: Children,
    /// `net.connect`: where the server says how many connections were not the client's.
    tally: Option<std::fs::File>,
}

impl Connect {
    pub fn new(conn: Conn) -> Connect {
        Connect {
            conn,
            listener: None,
            server: Children::default(),
            tally: None,
        }
    }

    /// `net.connect` (TCP and Unix): each connection is connect, accept and close, and the
    /// server takes connections until the client shuts its listener ([`serve_until_shut`]).
    fn plain(&self) -> bool {
        matches!(self.conn, Conn::Tcp | Conn::Unix)
    }
}

/// A Unix stream listener at an abstract address (nothing on disk): `sysperf-PID-net-` and
/// 96 random bits, another random name when one is taken. Any process in the network
/// namespace may bind any abstract name (there are no permissions on them), so a name
/// another process can predict could be bound first and refuse the benchmark its listener.
fn abstract_listener() -> io::Result<UnixListener> {
    let pid = sys::getpid();
    let names = std::iter::repeat_with(|| {
        let mut r = [0u8; 12];
        sys::random_bytes(&mut r)?;
        let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("sysperf-{pid}-net-{hex}").into_bytes())
    });
    listen_at_first_free(names.take(16))
}

/// A listener at the first of the abstract `names` that no other socket has (EADDRINUSE:
/// the next); the last error when none is free.
fn listen_at_first_free(
    names: impl Iterator<Item = io::Result<Vec<u8>>>,
) -> io::Result<UnixListener> {
    let mut last = io::Error::other("no abstract name to try");
    for name in names {
        match UnixListener::bind_addr(&SocketAddr::from_abstract_name(name?)?) {
            Ok(l) => return Ok(l),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The server of `net.connect`: accepts and closes connections until the client, done with
/// its `n`, shuts the listener down ([`sys::shutdown_read`]: accept then fails with EINVAL).
/// The listener's address is no secret (an abstract name is listed in /proc/net/unix, a port
/// in /proc/net/tcp), and a server that stopped after `n` accepts had served another
/// process's connection in place of the client's last, which then waited for an accept until
/// the trial timed out (#41). Every connection past the client's `n` is another process's:
/// their number is returned. A connection costs what it did (an accept and a close, no
/// check of its peer); the shutdown is one call per trial.
fn serve_until_shut(l: &Listener, n: u64) -> io::Result<u64> {
    let mut accepted = 0u64;
    loop {
        let got = match l {
            Listener::Unix(l) => l.accept().map(drop),
            Listener::Tcp(l) => l.accept().map(drop),
        };
        match got {
            Ok(()) => accepted += 1,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
            // A signal, or a connection reset before it was accepted: none of the client's.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    accepted.checked_sub(n).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{accepted} of {n} connections"),
        )
    })
}

/// The server of the connection tests but `net.connect`: `n` connections, each served as
/// `conn` says (inetd's by the program at `cat`).
fn serve(l: &Listener, conn: Conn, n: u64, cat: &std::path::Path) -> io::Result<()> {
    for _ in 0..n {
        match l {
            Listener::Unix(l) => drop(l.accept()?),
            Listener::Tcp(l) => {
                let (mut s, _) = l.accept()?;
                match conn {
                    Conn::Resident => {
                        let mut b = [0u8; 1];
                        s.read_exact(&mut b)?;
                        s.write_all(&b)?;
                        // The client's close.
                        if s.read(&mut b)? != 0 {
                            return Err(short("close", 1, 0));
                        }
                    }
                    Conn::Inetd => {
                        let fd: OwnedFd = s.into();
                        let out = fd.try_clone()?;
                        let st = crate::programs::at(cat)?
                            .stdin(fd)
                            .stdout(out)
                            .stderr(std::process::Stdio::null())
                            .status()?;
                        if !st.success() {
                            return Err(io::Error::other("cat failed"));
                        }
                    }
                    Conn::Tcp | Conn::Unix => drop(s),
                }
            }
        }
    }
    Ok(())
}

impl Benchmark for Connect {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let l = match self.conn {
            Conn::Unix => {
                Listener::Unix(abstract_listener().map_err(BenchError::sys("bind unix"))?)
            }
            _ => Listener::Tcp(
                TcpListener::bind("127.0.0.1:0").map_err(BenchError::sys("bind tcp"))?,
            ),
        };
        let conn = self.conn;
        let lr = &l;
        // Resolved here, in setup: the server runs the same cat for every connection.
        let cat = match conn {
            Conn::Inetd => {
                crate::programs::find(CAT).map_err(|e| BenchError::sys("find cat")(e.into()))?
            }
            _ => std::path::PathBuf::new(),
        };
        let (tally, told) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let mut told = std::fs::File::from(told);
        let plain = self.plain();
        // The parent's end of `told` goes with the closure, when spawn returns.
        let pid = spawn(ctx, "sysperf:server", None, move || {
            if plain {
                let strangers = serve_until_shut(lr, iterations);
                status(strangers.and_then(|n| told.write_all(&n.to_le_bytes())))
            } else {
                status(serve(lr, conn, iterations, &cat))
            }
        })?;
        self.server.0.push(pid);
        self.listener = Some(l);
        self.tally = Some(std::fs::File::from(tally));
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let l = self.listener.as_ref().ok_or_else(no_channel)?;
        let mut b = [0u8; 1];
        match l {
            Listener::Unix(ul) => {
                let addr = ul.local_addr().map_err(BenchError::sys("unix address"))?;
                for _ in 0..iterations {
                    let mut s =
                        UnixStream::connect_addr(&addr).map_err(BenchError::sys("connect"))?;
                    // End of file: the server accepted and closed.
                    s.read(&mut b).map_err(BenchError::sys("read"))?;
                }
            }
            Listener::Tcp(l) => {
                let addr = l.local_addr().map_err(BenchError::sys("getsockname"))?;
                for _ in 0..iterations {
                    let mut s = TcpStream::connect(addr).map_err(BenchError::sys("connect"))?;
                    if matches!(self.conn, Conn::Resident | Conn::Inetd) {
                        s.write_all(b"e").map_err(BenchError::sys("write"))?;
                        s.read_exact(&mut b).map_err(BenchError::sys("read"))?;
                        s.shutdown(Shutdown::Write)
                            .map_err(BenchError::sys("shutdown"))?;
                    }
                    s.read(&mut b).map_err(BenchError::sys("read"))?;
                }
            }
        }
        if self.plain() {
            // The client's connections are all served: the server's accept ends.
            sys::shutdown_read(l.fd()).map_err(BenchError::sys("shutdown"))?;
        }
        self.server.reap()
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.listener = None;
        self.server.stop();
        Ok(())
    }

    /// Read after teardown, when the server is gone whatever happened: its count, else
    /// nothing (the pipe's end of file).
    fn intrusions(&mut self) -> u64 {
        let mut n = [0u8; 8];
        match self.tally.take().map(|mut t| t.read_exact(&mut n)) {
            Some(Ok(())) => u64::from_le_bytes(n),
            _ => 0,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The series.

/// Powers of two from 1 B to 64 KiB and the awkward sizes between them (one under a page,
/// one over, an Ethernet segment's payload, loopback's MSS and so on).
pub fn latency_sizes(quick: bool, max: u64) -> Vec<u64> {
    if quick {
        return vec![1, 1024.min(max), max.min(1 << 16)];
    }
    let mut v: Vec<u64> = (0..=16).map(|k| 1u64 << k).collect();
    v.extend([
        100, 1000, 1448, 1460, 4095, 4097, 9000, 32769, 65483, UDP_MAX,
    ]);
    finish(v, max)
}

fn finish(mut v: Vec<u64>, max: u64) -> Vec<u64> {
    v.retain(|&s| s >= 1 && s <= max);
    v.push(max);
    v.sort_unstable();
    v.dedup();
    v
}

/// Cabrera's sweep: eight sizes per octave from 1 B to 1 MiB (so sizes that are not powers of
/// two, where the anomalies were), and sizes on either side of the page, the MSS and 64 KiB.
pub fn stream_sizes(quick: bool) -> Vec<u64> {
    if quick {
        return vec![64, 4096, 1 << 20];
    }
    let mut v = Vec::new();
    for k in 0..20u32 {
        for j in 0..8 {
            v.push(((1u64 << k) as f64 * 2f64.powf(j as f64 / 8.0)).round() as u64);
        }
    }
    v.extend([1448, 4095, 4097, 8191, 8193, 65483, 65535, 65537]);
    finish(v, 1 << 20)
}

fn size_point(size: u64, bytes: bool) -> Point {
    Point {
        bytes_per_op: if bytes { size as f64 } else { 0.0 },
        ..Point::new(size as f64, size)
    }
}

fn rtt_points(quick: bool, max: u64) -> Vec<Point> {
    latency_sizes(quick, max)
        .into_iter()
        .map(|s| size_point(s, false))
        .collect()
}

fn stream_points(quick: bool) -> Vec<Point> {
    stream_sizes(quick)
        .into_iter()
        .map(|s| size_point(s, true))
        .collect()
}

/// Categorical points: x is the index, the label the name.
fn labelled(names: &[&str], bytes: f64) -> Vec<Point> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| Point {
            label: Some(n.to_string()),
            bytes_per_op: bytes,
            ..Point::new(i as f64, i as u64)
        })
        .collect()
}

/// Socket buffer sizes: 4 KiB to 4 MiB by powers of four (quick: 3 of them).
pub fn buffer_sizes(quick: bool) -> Vec<u64> {
    if quick {
        return vec![4 << 10, 256 << 10];
    }
    (0..=10).map(|k| 4096u64 << k).collect()
}

const SIZE_AXIS: Axis = Axis {
    name: "message size",
    unit: "bytes",
    log: true,
};
const WRITE_AXIS: Axis = Axis {
    name: "write size",
    unit: "bytes",
    log: true,
};
const CASE_AXIS: Axis = Axis {
    name: "case",
    unit: "",
    log: false,
};

const LATENCY: (&str, &str) = (
    "net.latency",
    "Round trip against message size over loopback (4.2BSD paper §3.2.7)",
);
const STREAMS: (&str, &str) = (
    "net.stream",
    "Stream throughput against write size, Cabrera's sweep (4.2BSD paper §3.2.7)",
);
const BUFFERS: (&str, &str) = (
    "net.sockbuf",
    "TCP throughput against socket buffer size (4.2BSD paper §4.1.7)",
);

const PAPER_RTT: &str = "protocol processing cost per message (§3.2.7)";
const PAPER_STREAM: &str = "TCP throughput anomalies \"for some arbitrary sizes\" of messages \
                            [Cabrera84/85] (§3.2.7)";

/// What the series have in common.
struct Curve {
    id: &'static str,
    figure: (&'static str, &'static str),
    curve: &'static str,
    paper: &'static str,
    today: &'static str,
    x: Axis,
    y: YKind,
    unit: &'static str,
    points: fn(bool) -> Vec<Point>,
    make: fn(u64) -> Box<dyn Benchmark>,
}

const fn series_of(c: Curve) -> SeriesSpec {
    SeriesSpec {
        id: c.id,
        figure: c.figure.0,
        figure_title: c.figure.1,
        curve: c.curve,
        paper: c.paper,
        today: c.today,
        x: c.x,
        y: c.y,
        unit: c.unit,
        shape: Shape::Pair,
        points: c.points,
        make: c.make,
        paper_points: &[],
        paper_system: None,
        printed: None,
    }
}

/// A curve of the latency figure.
const fn rtt(
    id: &'static str,
    curve: &'static str,
    today: &'static str,
    points: fn(bool) -> Vec<Point>,
    make: fn(u64) -> Box<dyn Benchmark>,
) -> SeriesSpec {
    series_of(Curve {
        id,
        figure: LATENCY,
        curve,
        paper: PAPER_RTT,
        today,
        x: SIZE_AXIS,
        y: YKind::CostNs,
        unit: "round trip",
        points,
        make,
    })
}

/// A curve of Cabrera's sweep.
const fn stream(
    id: &'static str,
    curve: &'static str,
    today: &'static str,
    make: fn(u64) -> Box<dyn Benchmark>,
) -> SeriesSpec {
    series_of(Curve {
        id,
        figure: STREAMS,
        curve,
        paper: PAPER_STREAM,
        today,
        x: WRITE_AXIS,
        y: YKind::BytesPerSec,
        unit: "write",
        points: stream_points,
        make,
    })
}

pub static RTT_TCP: SeriesSpec = rtt(
    "net.rtt-tcp",
    "TCP",
    "TCP over 127.0.0.1 with TCP_NODELAY: the client writes N bytes, the server reads \
            them whole and writes them back",
    |q| rtt_points(q, 1 << 16),
    |s| Box::new(RoundTrip::new(Proto::Tcp, s)),
);

pub static RTT_UDP: SeriesSpec = rtt(
    "net.rtt-udp",
    "UDP",
    "UDP over 127.0.0.1, connected sockets: one datagram of N bytes each way (N up to \
            65507, the largest IPv4 UDP payload)",
    |q| rtt_points(q, UDP_MAX),
    |s| Box::new(RoundTrip::new(Proto::Udp, s)),
);

pub static RTT_UDP_TO: SeriesSpec = rtt(
    "net.rtt-udp-sendto",
    "UDP, unconnected",
    "UDP over 127.0.0.1 on unconnected sockets: sendto(2) with the address and recvfrom(2), \
     so the kernel looks the route up for every datagram",
    |q| rtt_points(q, UDP_MAX),
    |s| Box::new(RoundTrip::new(Proto::UdpTo, s)),
);

pub static RTT_UNIX: SeriesSpec = rtt(
    "net.rtt-unix",
    "Unix stream",
    "socketpair(AF_UNIX, SOCK_STREAM): N bytes each way",
    |q| rtt_points(q, 1 << 16),
    |s| Box::new(RoundTrip::new(Proto::Unix, s)),
);

pub static RTT_UNIX_DGRAM: SeriesSpec = rtt(
    "net.rtt-unixdg",
    "Unix datagram",
    "socketpair(AF_UNIX, SOCK_DGRAM): one datagram of N bytes each way",
    |q| rtt_points(q, 1 << 16),
    |s| Box::new(RoundTrip::new(Proto::UnixDgram, s)),
);

pub static STREAM_TCP: SeriesSpec = stream(
    "net.stream-tcp",
    "TCP",
    "TCP over 127.0.0.1: write(2)s of one size, the reader reads 64 KiB (or the write size) \
     at a time and counts every byte; derived: system time per byte and the anomalies",
    |s| Box::new(Stream::new(Proto::Tcp, s, StreamKind::Plain)),
);

pub static STREAM_UNIX: SeriesSpec = stream(
    "net.stream-unix",
    "Unix stream",
    "socketpair(AF_UNIX, SOCK_STREAM): write(2)s of one size, the reader reads 64 KiB (or \
     the write size) at a time and counts every byte",
    |s| Box::new(Stream::new(Proto::Unix, s, StreamKind::Plain)),
);

pub static NAGLE: SeriesSpec = series_of(Curve {
    id: "net.nagle",
    figure: (
        "net.nagle",
        "Split request and answer: Nagle's algorithm and delayed ACK (4.2BSD paper §4.1.7)",
    ),
    curve: "TCP exchange",
    paper: "Nagle's small-packet policy and delayed acknowledgement (§4.1.7)",
    today: "TCP over 127.0.0.1: an 8-byte header and a 120-byte body in two write(2)s, a \
            128-byte answer; defaults (nagle), TCP_NODELAY, TCP_QUICKACK on the server, \
            TCP_CORK around the two writes",
    x: CASE_AXIS,
    y: YKind::CostNs,
    unit: "exchange",
    points: |_| labelled(&SMALL.map(|s| s.1), 0.0),
    make: |i| Box::new(Exchange::new(SMALL[(i as usize).min(SMALL.len() - 1)].0)),
});

fn buffer_points(quick: bool) -> Vec<Point> {
    buffer_sizes(quick)
        .into_iter()
        .map(|b| Point {
            bytes_per_op: BULK_WRITE as f64,
            ..Point::new(b as f64, b)
        })
        .collect()
}

pub static SOCKBUF: SeriesSpec = series_of(Curve {
    id: "net.sockbuf",
    figure: BUFFERS,
    curve: "SO_SNDBUF = SO_RCVBUF",
    paper: "socket buffer sizes and TCP throughput (§4.1.7)",
    today: "TCP over 127.0.0.1, 64 KiB write(2)s; SO_SNDBUF on the writer and SO_RCVBUF on the \
            reader set to x (the kernel doubles it for its bookkeeping)",
    x: Axis {
        name: "socket buffer",
        unit: "bytes",
        log: true,
    },
    y: YKind::BytesPerSec,
    unit: "write",
    points: buffer_points,
    make: |b| {
        Box::new(Stream::new(
            Proto::Tcp,
            BULK_WRITE,
            StreamKind::Buffers(b.min(i32::MAX as u64 / 2) as u32),
        ))
    },
});

/// The autotuned point sits at the kernel's initial receive buffer (tcp_rmem's default).
fn auto_points(_quick: bool) -> Vec<Point> {
    let initial = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(131_072);
    vec![Point {
        label: Some("auto".into()),
        bytes_per_op: BULK_WRITE as f64,
        ..Point::new(initial as f64, 0)
    }]
}

pub static SOCKBUF_AUTO: SeriesSpec = series_of(Curve {
    id: "net.sockbuf-auto",
    figure: BUFFERS,
    curve: "autotuned",
    paper: "socket buffer sizes and TCP throughput (§4.1.7)",
    today: "TCP over 127.0.0.1, 64 KiB write(2)s, buffers left to the kernel's autotuning \
            (drawn at tcp_rmem's initial size)",
    x: Axis {
        name: "socket buffer",
        unit: "bytes",
        log: true,
    },
    y: YKind::BytesPerSec,
    unit: "write",
    points: auto_points,
    make: |_| Box::new(Stream::new(Proto::Tcp, BULK_WRITE, StreamKind::Plain)),
});

pub static CONNECTS: SeriesSpec = series_of(Curve {
    id: "net.connect",
    figure: (
        "net.connect",
        "Connection cost: connect, accept and close (4.2BSD paper §4.2.4)",
    ),
    curve: "connect+accept+close",
    paper: "the cost of setting up a connection, which inetd pays per service request (§4.2.4)",
    today: "TCP over 127.0.0.1 and a Unix stream socket in the abstract namespace: connect(2), \
            the server's accept(2) and close(2), the client reads end of file and closes",
    x: CASE_AXIS,
    y: YKind::CostNs,
    unit: "connection",
    points: |_| labelled(&CONNECT.map(|c| c.1), 0.0),
    make: |i| Box::new(Connect::new(CONNECT[(i as usize).min(1)].0)),
});

pub static INETD_SERIES: SeriesSpec = series_of(Curve {
    id: "net.inetd",
    figure: (
        "net.inetd",
        "One echo per connection: resident server against inetd's fork+exec (4.2BSD paper \
         §4.2.4)",
    ),
    curve: "echo service",
    paper: "inetd forks and execs a server per connection instead of a dozen sleeping \
            daemons (§4.2.4)",
    today: "TCP over 127.0.0.1: connect, one byte echoed, close; served by the resident server \
            itself, or by cat that the server forks and execs per connection (as inetd's \
            nowait services)",
    x: CASE_AXIS,
    y: YKind::CostNs,
    unit: "connection",
    points: |_| labelled(&INETD.map(|c| c.1), 0.0),
    make: |i| Box::new(Connect::new(INETD[(i as usize).min(1)].0)),
});

pub static CONTENTION: SeriesSpec = series_of(Curve {
    id: "net.contention",
    figure: (
        "net.contention",
        "TCP throughput with a CPU hog on the receiver's CPU (4.2BSD paper §4.1.7)",
    ),
    curve: "TCP, 64 KiB writes",
    paper: "\"CPU contention degrades substantially the throughput\" (§4.1.7)",
    today: "TCP over 127.0.0.1, 64 KiB write(2)s, alone and with a process spinning on the \
            reader's CPU for the whole trial",
    x: CASE_AXIS,
    y: YKind::BytesPerSec,
    unit: "write",
    points: |_| labelled(&["alone", "hog"], BULK_WRITE as f64),
    make: |i| {
        let kind = if i == 0 {
            StreamKind::Plain
        } else {
            StreamKind::Hog
        };
        Box::new(Stream::new(Proto::Tcp, BULK_WRITE, kind))
    },
});

/// The write sizes of `net.softirq`: a small, a middling, a loopback-MTU-sized and a large
/// write (quick: the 64 KiB one).
pub fn softirq_sizes(quick: bool) -> Vec<u64> {
    if quick {
        vec![1 << 16]
    } else {
        vec![1 << 10, 1 << 13, 1 << 16, 1 << 18]
    }
}

pub static SOFTIRQ: SeriesSpec = series_of(Curve {
    id: "net.softirq",
    figure: (
        "net.softirq",
        "Where protocol time goes: softirq time against the receiver's system time (4.2BSD \
         paper §3.2.7)",
    ),
    curve: "TCP stream",
    paper: "protocol processing runs in software interrupts, so its system time is not charged \
            to the process that receives the data (§3.2.7)",
    today: "TCP over 127.0.0.1, write(2)s of one size as net.stream-tcp; every trial counts \
            NET_RX/NET_TX softirqs (/proc/softirqs) and the CPUs' softirq time (/proc/stat) \
            against the reader's own system time (its rusage); derived: the share of the two \
            that is softirq time, charged to no process",
    x: WRITE_AXIS,
    y: YKind::BytesPerSec,
    unit: "write",
    points: |q| {
        softirq_sizes(q)
            .into_iter()
            .map(|s| size_point(s, true))
            .collect()
    },
    make: |s| Box::new(Stream::new(Proto::Tcp, s, StreamKind::Plain).with_counters()),
});

/// The long-haul write size: 16 KiB, a fraction of a second at 1 Mbit/s.
const LONGHAUL_WRITE: u64 = 16 << 10;
/// The long-haul round trip's message: one byte each way.
const LONGHAUL_MESSAGE: u64 = 1;

/// The shapings of the long haul: none as non-root (the run's notes say it was skipped).
fn longhaul_points(quick: bool, bytes: f64) -> Vec<Point> {
    if !sys::is_root() {
        return Vec::new();
    }
    let n = if quick { 2 } else { longhaul::shapings_here() };
    labelled(&longhaul::SHAPINGS.map(|s| s.1)[..n], bytes)
}

const LONGHAUL_FIGURE: (&str, &str) = (
    "net.longhaul",
    "TCP across a shaped veth link into a network namespace: rate and MTU (4.2BSD paper §3.2.7)",
);
const LONGHAUL_PAPER: &str = "long-haul networks: what congestion control and segment size do \
                              to TCP (§3.2.7)";

pub static LONGHAUL: SeriesSpec = series_of(Curve {
    id: "net.longhaul",
    figure: LONGHAUL_FIGURE,
    curve: "TCP stream, 16 KiB writes",
    paper: LONGHAUL_PAPER,
    today: "TCP from the worker's namespace into a namespace of its own across a veth pair, \
            the link's MTU clamped (576 or 1500: the MSS follows) and its egress shaped by tc \
            tbf (1, 10, 100 Mbit/s); made with ip/tc outside the timed region; root only; \
            the delay and loss points (10 Mbit/s, 50 ms round trip, with and without 0.1 % \
            loss) cross two TUN devices joined by sysperf's delay line, not netem",
    x: CASE_AXIS,
    y: YKind::BytesPerSec,
    unit: "write",
    points: |q| longhaul_points(q, LONGHAUL_WRITE as f64),
    make: |i| {
        let s = longhaul::SHAPINGS[(i as usize).min(longhaul::SHAPINGS.len() - 1)].0;
        Box::new(Stream::new(Proto::Tcp, LONGHAUL_WRITE, StreamKind::Plain).across(s))
    },
});

pub static LONGHAUL_RTT: SeriesSpec = series_of(Curve {
    id: "net.longhaul-rtt",
    figure: (
        "net.longhaul-rtt",
        "TCP round trip across a shaped veth link into a network namespace (4.2BSD paper \
         §3.2.7)",
    ),
    curve: "TCP round trip, 1 byte",
    paper: LONGHAUL_PAPER,
    today: "a one-byte TCP round trip (TCP_NODELAY) across the link of net.longhaul, of each \
            shaping",
    x: CASE_AXIS,
    y: YKind::CostNs,
    unit: "round trip",
    points: |q| longhaul_points(q, 0.0),
    make: |i| {
        let s = longhaul::SHAPINGS[(i as usize).min(longhaul::SHAPINGS.len() - 1)].0;
        Box::new(RoundTrip::new(Proto::Tcp, LONGHAUL_MESSAGE).across(s))
    },
});

fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &RTT_TCP,
        &RTT_UDP,
        &RTT_UDP_TO,
        &RTT_UNIX,
        &RTT_UNIX_DGRAM,
        &STREAM_TCP,
        &STREAM_UNIX,
        &NAGLE,
        &SOCKBUF,
        &SOCKBUF_AUTO,
        &CONNECTS,
        &INETD_SERIES,
        &CONTENTION,
        &SOFTIRQ,
        &LONGHAUL,
        &LONGHAUL_RTT,
    ]
}

// ---------------------------------------------------------------------------------------
// §4.2.4: a dozen sleeping daemons against one inetd, in memory.

/// The daemons of the memory table: "a dozen sleeping daemons" (§4.2.4).
pub const DAEMONS: usize = 12;
/// The most listeners one `__daemon` takes.
const MAX_LISTENERS: usize = 256;

/// `sysperf __daemon N`: a resident server of sysperf's own, a fresh exec like any daemon:
/// it listens on N TCP ports of 127.0.0.1, says `ready` on stdout, then sleeps in poll(2)
/// and accepts and closes whatever connects, until it is killed (or its parent dies). One
/// listener is a daemon of one service; N is an inetd listening for N services.
pub fn daemon_main(listeners: &str) -> i32 {
    sys::set_parent_death_signal(libc::SIGKILL);
    let Some(n) = listeners
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_LISTENERS).contains(n))
    else {
        eprintln!("sysperf __daemon: expected a number of listeners, 1 to {MAX_LISTENERS}");
        return 2;
    };
    let bound: io::Result<Vec<TcpListener>> =
        (0..n).map(|_| TcpListener::bind("127.0.0.1:0")).collect();
    let Ok(ls) = bound else {
        return 1;
    };
    let mut fds: Vec<libc::pollfd> = ls
        .iter()
        .map(|l| libc::pollfd {
            fd: l.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if writeln!(io::stdout().lock(), "ready").is_err() {
        return 1;
    }
    loop {
        if sys::poll_wait(&mut fds, -1).is_err() {
            continue;
        }
        for (p, l) in fds.iter_mut().zip(&ls) {
            if p.revents != 0 {
                drop(l.accept());
                p.revents = 0;
            }
        }
    }
}

/// One row of the memory table: how many processes, and their resident and proportional
/// memory in all (KiB, /proc/PID/smaps_rollup).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerMemory {
    pub processes: usize,
    pub listeners: usize,
    pub rss_kib: u64,
    pub pss_kib: u64,
}

/// Starts `sysperf __daemon` processes from `exe` (one per entry of `listeners`, each with
/// that many listeners), waits until each is ready (listening, about to sleep), and sums their
/// memory; they are killed and reaped before it returns, on every path.
pub fn server_memory(exe: &std::path::Path, listeners: &[usize]) -> io::Result<ServerMemory> {
    struct Reap(Vec<std::process::Child>);
    impl Drop for Reap {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let mut kids = Reap(Vec::new());
    for n in listeners {
        kids.0.push(
            crate::programs::at(exe)?
                .args(["__daemon", &n.to_string()])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()?,
        );
    }
    let mut total = ServerMemory {
        processes: listeners.len(),
        listeners: listeners.iter().sum(),
        rss_kib: 0,
        pss_kib: 0,
    };
    // Every one ready first: the PSS of each shares the binary's pages with all the others.
    for c in &mut kids.0 {
        let mut line = String::new();
        let out = c
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        io::BufRead::read_line(&mut io::BufReader::new(out), &mut line)?;
        if line.trim() != "ready" {
            return Err(io::Error::other("a daemon did not start listening"));
        }
    }
    for c in &kids.0 {
        let (rss, pss) = crate::procfs::smaps_rollup(c.id())?;
        total.rss_kib += rss;
        total.pss_kib += pss;
    }
    Ok(total)
}

/// The memory table as the run's notes: `DAEMONS` resident daemons, one service each, against
/// one inetd-style server listening for all of them (§4.2.4).
fn memory_notes() -> Vec<String> {
    // In the library's unit tests this process is the test harness, not sysperf: started as
    // `__daemon 1` it would take both words for test-name filters and run every test whose
    // name holds a "1" until it was killed, leaving their temporary directories (and any
    // setting such a test had switched) behind. The integration tests measure the table
    // with the real binary (tests/it/suite_net.rs).
    if cfg!(test) {
        return vec![
            "sleeping servers' memory not measured: this process is the unit-test harness, not sysperf".into(),
        ];
    }
    let table = std::env::current_exe().and_then(|exe| {
        Ok((
            server_memory(&exe, &[1; DAEMONS])?,
            server_memory(&exe, &[DAEMONS])?,
        ))
    });
    let (daemons, inetd) = match table {
        Ok(t) => t,
        Err(e) => return vec![format!("sleeping servers' memory not measured: {e}")],
    };
    let row = |cells: [&str; 5]| {
        format!(
            "  {:<40} {:>9} {:>8} {:>9} {:>9}",
            cells[0], cells[1], cells[2], cells[3], cells[4]
        )
    };
    let of = |what: &str, m: &ServerMemory| {
        let n = [m.processes, m.listeners].map(|v| v.to_string());
        let kib = [m.rss_kib, m.pss_kib].map(|v| v.to_string());
        row([what, &n[0], &n[1], &kib[0], &kib[1]])
    };
    vec![
        "sleeping servers' memory (§4.2.4), from /proc/PID/smaps_rollup, all processes together:"
            .into(),
        row(["", "processes", "services", "RSS KiB", "PSS KiB"]),
        of(
            &format!("{DAEMONS} resident daemons, one service each"),
            &daemons,
        ),
        of("one inetd-style server for all of them", &inetd),
    ]
}

/// st_blksize of a TCP socket, a Unix stream socket and a pipe (§4.1.7: 4.3BSD made stdio
/// size its buffers by it), and what the connection tests need.
fn preflight() -> Result<Vec<String>, String> {
    let (tcp, _) = tcp_pair().map_err(|e| {
        format!("cannot connect over 127.0.0.1 ({e}); bring the loopback interface up")
    })?;
    let (unix, _) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    let (pipe_r, _) = sys::pipe().map_err(|e| format!("pipe: {e}"))?;
    let blk = |fd: RawFd| {
        sys::blksize(fd)
            .map(|b| b.to_string())
            .unwrap_or_else(|e| e.to_string())
    };
    let mut notes = vec![format!(
        "st_blksize: TCP socket {}, Unix stream socket {}, pipe {}",
        blk(tcp.as_raw_fd()),
        blk(unix.as_raw_fd()),
        blk(pipe_r.as_raw_fd())
    )];
    for f in ["tcp_rmem", "tcp_wmem"] {
        if let Ok(t) = std::fs::read_to_string(format!("/proc/sys/net/ipv4/{f}")) {
            notes.push(format!(
                "{f}: {}",
                t.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    notes.extend(memory_notes());
    notes.push(longhaul::netem_note());
    if let Err(e) = crate::programs::find(CAT) {
        return Err(format!(
            "{e} (net.inetd execs cat per connection; it is in coreutils)"
        ));
    }
    Ok(notes)
}

/// System time (writer and reader) per byte of every point of the streams, and the anomalies:
/// points whose median throughput is more than 10% below both neighbours'.
pub fn derive(series: &[Series]) -> Vec<Derived> {
    let mut out = Vec::new();
    for s in series.iter().filter(|s| s.id == SOFTIRQ.id) {
        out.extend(protocol_time(s));
    }
    for s in series {
        if s.id != STREAM_TCP.id && s.id != STREAM_UNIX.id {
            continue;
        }
        for p in &s.points {
            let per_byte: Vec<f64> = p
                .result
                .trials
                .iter()
                .filter(|t| t.kind == TrialKind::Measured && t.error.is_none())
                .filter(|t| t.iterations > 0 && p.bytes_per_op > 0.0)
                .map(|t| {
                    let bytes = t.iterations as f64
                        * p.result.ops_per_iteration.max(1) as f64
                        * p.bytes_per_op;
                    t.usage.sys_ns as f64 / bytes
                })
                .collect();
            if let Ok(e) = crate::stats::estimate(&per_byte) {
                out.push(Derived {
                    na: None,
                    name: format!("{}.sys-per-byte@{}", s.id, super::fmt_x(p.x)),
                    value: e.median,
                    unit: "ns per byte".into(),
                    formula: "system time of writer and reader / bytes moved (median of trials)"
                        .into(),
                });
            }
        }
        let ys: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|p| Some((p.x, p.y.as_ref()?.median)))
            .collect();
        for (x, drop) in anomalies(&ys) {
            out.push(Derived {
                na: None,
                name: format!("{}.anomaly@{}", s.id, super::fmt_x(x)),
                value: drop * 100.0,
                unit: "% below the lower neighbour".into(),
                formula: "1 - y / min(y of the sizes either side), where both are > 10% higher"
                    .into(),
            });
        }
    }
    out
}

/// `net.softirq`'s figures per point, over all its counted trials together (the /proc/stat
/// softirq time and the reader's rusage both come in clock ticks, too coarse for one trial):
/// softirq time and the receiver's own system time per byte, the share of their sum that is
/// softirq time (charged to no process: §3.2.7), and NET_RX softirqs per MiB.
pub fn protocol_time(s: &Series) -> Vec<Derived> {
    let mut out = Vec::new();
    for p in &s.points {
        // Sums of softirq ns, receiver sys ns, NET_RX and bytes over the counted trials.
        let mut sum = [0f64; 4];
        for t in p
            .result
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured && t.error.is_none())
        {
            let (Some(c), Some(child)) = (&t.counters, &t.children) else {
                continue;
            };
            let (Some(soft), Some(rx)) = (c.softirq_time_ns, c.net_rx_softirqs) else {
                continue;
            };
            let bytes =
                t.iterations as f64 * p.result.ops_per_iteration.max(1) as f64 * p.bytes_per_op;
            for (k, v) in [soft as f64, child.sys_ns as f64, rx as f64, bytes]
                .into_iter()
                .enumerate()
            {
                sum[k] += v;
            }
        }
        let [soft, recv, rx, bytes] = sum;
        if bytes <= 0.0 {
            continue;
        }
        let x = super::fmt_x(p.x);
        let mut put = |name: &str, value: f64, unit: &str, formula: &str| {
            out.push(Derived {
                na: None,
                name: format!("{}.{name}@{x}", s.id),
                value,
                unit: unit.into(),
                formula: formula.into(),
            })
        };
        put(
            "softirq-ns-per-byte",
            soft / bytes,
            "ns per byte",
            "/proc/stat softirq time of all CPUs / bytes moved (all counted trials)",
        );
        put(
            "receiver-sys-ns-per-byte",
            recv / bytes,
            "ns per byte",
            "the reader's own system time (rusage) / bytes moved (all counted trials)",
        );
        if soft + recv > 0.0 {
            put(
                "uncharged-pct",
                100.0 * soft / (soft + recv),
                "% of softirq + receiver system time",
                "100 x softirq time / (softirq time + the reader's system time): protocol \
                 time charged to no process (all counted trials)",
            );
        }
        put(
            "net-rx-per-mib",
            rx * (1u64 << 20) as f64 / bytes,
            "NET_RX softirqs per MiB",
            "/proc/softirqs NET_RX raised on all CPUs / MiB moved (all counted trials)",
        );
    }
    out
}

/// Points (x, y) whose y is more than 10% below both neighbours', with the drop against the
/// lower of the two.
pub fn anomalies(ys: &[(f64, f64)]) -> Vec<(f64, f64)> {
    ys.windows(3)
        .filter_map(|w| {
            let lower = w[0].1.min(w[2].1);
            (lower > 0.0 && w[1].1 < 0.9 * lower).then(|| (w[1].0, 1.0 - w[1].1 / lower))
        })
        .collect()
}

pub static SUITE: Suite = Suite {
    name: "net",
    title: "Sockets: latency, stream throughput, Nagle, buffers, connections, contention",
    paper: "Leffler, Karels, McKusick, Measuring and Improving the Performance of Berkeley \
            UNIX (4.2BSD): §3.2.7 (protocol processing, Cabrera's anomalies), §4.1.7 (socket \
            buffers, st_blksize, Nagle and delayed ACK, CPU contention), §4.2.4 (inetd)",
    series,
    preflight,
    derive,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The net suite's notes in a unit test start no copy of this process: the harness would
    /// read `__daemon 1` as test filters, run every test with a "1" in its name and be
    /// killed midway, which left 4-12 of their temporary directories in /tmp per test run.
    #[test]
    fn the_memory_notes_start_no_copy_of_the_test_harness() {
        let notes = memory_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("unit-test harness"), "{notes:?}");
    }

    /// The names a process could predict before #29: this pid's, numbered from 0. Taken by
    /// another process, they made net.connect@unix fail ("bind unix: Address already in use").
    #[test]
    fn connect_unix_listens_although_the_predictable_abstract_names_are_taken() {
        let pid = sys::getpid();
        let taken: Vec<UnixListener> = (0..256)
            .filter_map(|n| {
                let a = SocketAddr::from_abstract_name(format!("sysperf-{pid}-net-{n}")).ok()?;
                UnixListener::bind_addr(&a).ok()
            })
            .collect();
        assert!(!taken.is_empty());
        let mut b = Connect::new(Conn::Unix);
        b.setup(&Ctx::default(), 3).unwrap();
        b.run(3).unwrap();
        b.teardown().unwrap();
        let l = abstract_listener().unwrap();
        let name = l.local_addr().unwrap().as_abstract_name().unwrap().to_vec();
        let prefix = format!("sysperf-{pid}-net-");
        assert!(name.starts_with(prefix.as_bytes()), "{name:?}");
        assert_eq!(name.len(), prefix.len() + 24, "{name:?}");
    }

    #[test]
    fn a_taken_abstract_name_is_passed_over_for_the_next() {
        let name = |s: &str| format!("sysperf-test-{}-{s}", sys::getpid()).into_bytes();
        let _taken =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(name("a")).unwrap()).unwrap();
        let l = listen_at_first_free([Ok(name("a")), Ok(name("b"))].into_iter()).unwrap();
        let bound = l.local_addr().unwrap();
        assert_eq!(bound.as_abstract_name(), Some(&name("b")[..]));
        let e = listen_at_first_free([Ok(name("a"))].into_iter()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }

    /// A stranger that connects to the listener's port first is not the pair's other end.
    #[test]
    fn a_connection_made_first_by_another_is_not_accepted_as_ours() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let stranger = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let got = accept_from(&listener, ours.local_addr().unwrap()).unwrap();
        assert_eq!(got.peer_addr().unwrap(), ours.local_addr().unwrap());
        assert_ne!(got.peer_addr().unwrap(), stranger.local_addr().unwrap());
    }

    #[test]
    fn every_transport_carries_a_message_whole_both_ways() {
        for proto in [
            Proto::Tcp,
            Proto::Udp,
            Proto::UdpTo,
            Proto::Unix,
            Proto::UnixDgram,
        ] {
            let (mut a, mut b) = pair(proto).unwrap();
            let msg: Vec<u8> = (0..4097u32).map(|i| i as u8).collect();
            a.send(&msg).unwrap();
            let mut got = vec![0; msg.len()];
            b.recv(&mut got).unwrap();
            assert_eq!(got, msg, "{proto:?}");
            b.send(&got[..7]).unwrap();
            let mut seven = [0u8; 7];
            a.recv(&mut seven).unwrap();
            assert_eq!(&seven, &msg[..7], "{proto:?}");
        }
    }

    #[test]
    fn a_short_datagram_or_stream_is_an_error_not_a_pass() {
        let (mut a, mut b) = pair(Proto::UnixDgram).unwrap();
        a.send(&[1, 2, 3]).unwrap();
        let mut four = [0u8; 4];
        let e = b.recv(&mut four).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(status(Err(e)), FAULT_COUNT);
        // The stream's reader counts to end of file: one byte short or over fails.
        for (sent, want) in [(99usize, 100u64), (101, 100), (100, 100)] {
            let (mut a, mut b) = pair(Proto::Unix).unwrap();
            a.send(&vec![0; sent]).unwrap();
            drop(a);
            let r = drain(&mut b, &mut [0; 64], want);
            assert_eq!(r.is_ok(), sent as u64 == want, "{sent} of {want}");
        }
    }

    #[test]
    fn benchmarks_run_in_process() {
        let ctx = Ctx::default();
        let mut all: Vec<Box<dyn Benchmark>> = vec![
            Box::new(RoundTrip::new(Proto::Tcp, 100)),
            Box::new(RoundTrip::new(Proto::Udp, 1 << 16)),
            Box::new(Stream::new(Proto::Unix, 3000, StreamKind::Buffers(8192))),
            Box::new(Exchange::new(Small::Cork)),
            Box::new(Connect::new(Conn::Unix)),
            Box::new(Connect::new(Conn::Resident)),
        ];
        for b in &mut all {
            b.setup(&ctx, 5).unwrap();
            b.run(5).unwrap();
            b.teardown().unwrap();
        }
    }

    #[test]
    fn sweeps_are_dense_and_within_bounds() {
        let s = stream_sizes(false);
        assert_eq!((s[0], *s.last().unwrap()), (1, 1 << 20));
        assert!(s.len() > 100, "{}", s.len());
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.contains(&4095) && s.contains(&4097) && s.contains(&1448));
        let l = latency_sizes(false, UDP_MAX);
        assert_eq!(*l.last().unwrap(), UDP_MAX);
        assert!(l.contains(&1460) && l.contains(&32768));
        assert_eq!(*latency_sizes(false, 1 << 16).last().unwrap(), 1 << 16);
        assert_eq!(latency_sizes(true, UDP_MAX), vec![1, 1024, UDP_MAX]);
    }

    #[test]
    fn anomalies_are_drops_against_both_neighbours() {
        let ys = [
            (1.0, 10.0),
            (2.0, 5.0),
            (3.0, 10.0),
            (4.0, 9.5),
            (5.0, 12.0),
        ];
        let a = anomalies(&ys);
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(a[0].0, 2.0);
        assert!((a[0].1 - 0.5).abs() < 1e-9);
        assert!(anomalies(&ys[..2]).is_empty());
    }

    #[test]
    fn the_suite_is_registered_with_its_series() {
        let s = super::super::find_suite("net").unwrap();
        assert!((s.series)().len() >= 7);
        assert!(super::super::find_series("net.nagle").is_some());
        // As root the preflight makes a long-haul link of this process's, as the link tests do.
        let _one = longhaul::ONE_LINK.lock().unwrap_or_else(|e| e.into_inner());
        let notes = preflight().unwrap();
        assert!(notes[0].starts_with("st_blksize: TCP socket "), "{notes:?}");
    }
}
