//! The remote-login suite (`sysperf run --suite login`): the 4.2BSD paper's §3.1.2 "Network
//! servers" (Leffler, Karels, McKusick, *Measuring and Improving the Performance of Berkeley
//! UNIX*), which printed no measurement, only the claim that a remote login costs more than a
//! local one ([`QUOTE`]). Here one keystroke echoed by a screen editor is timed through a
//! remote login and through its local equivalent, with the number of concurrent sessions as
//! the load, and the derived figures put a number on "more overhead": the remote/local ratio
//! of CPU per character (the paper's "roughly triple the load") and of wall time.
//!
//! A session is set up before the clock, all of its processes forked by the worker (so that it
//! can reap each and count its CPU time), every one on the worker's CPU unless `--placement
//! free`:
//! - `login.local`: the user (a process writing a key into a pseudo-terminal's master side and
//!   waiting for its echo there, the local terminal) and the editor on the slave side, in raw
//!   mode as a screen editor puts its terminal, reading a character and writing it back: 2
//!   processes.
//! - `login.remote`: the user speaks TCP over loopback (TCP_NODELAY, as interactive clients
//!   set it) to a server in rlogind's role, which relays between the connection and a pty
//!   master with poll(2) (rlogind's select loop), and the same editor on the slave: 3
//!   processes, the shape of sysperf's issue #45.
//! - `login.rlogin`: 4.2BSD's own shape, which the paper counts: the user types into a local
//!   pty (raw, the "local hardware terminal handler"), rlogin is two processes (4.2BSD's
//!   rlogin forks a reader: one copies terminal to network, the other network to terminal),
//!   then rlogind, pty and editor as above. The echo goes through four processes (rlogin's
//!   two, rlogind, the editor) and two terminal handlers: 5 processes with the user.
//!
//! One operation is one character typed and its echo read back, in every session at once: the
//! worker starts all users with one close(2) of a pipe they wait on, and the timed region ends
//! when each has reported its last echo; a point's y is that wall time over the characters
//! (iterations x sessions). When the clock has stopped the worker hangs up (closes the pipe the
//! users wait on), each session's processes end in turn (the user exits, rlogind reads end of
//! file, the editor's pty hangs up), report what they received and sent and their own usage
//! from when they were ready (set up, about to wait for their first input) to the report, and
//! are reaped (`reap_unwaited`). Those usages are the trial's CPU time beside the worker's:
//! the derived CPU per character counts every process of every session, without their fork,
//! setup and exit, which a short trial would otherwise charge to its few characters (a quick
//! run's local point showed 30 page faults a character that way). The trial fails unless
//! every process received and sent exactly one byte per keystroke, and every echo was the key.
//!
//! Where today differs: one machine plays both ends, so "network traffic" is loopback TCP (its
//! protocol processing, in softirq context, is charged to whichever process runs then), and a
//! pty's data crosses to the other side in a kernel worker (flush_to_ldisc) whose CPU no
//! process's rusage shows (see the tty suite). The editor does not take the pty as its
//! controlling terminal: setsid(2) would take it out of the worker's process group, which the
//! harness kills as one on a timeout, and in raw mode (no ISIG) the controlling terminal plays
//! no part in the echo.
//!
//! Not here: the daemons' other costs the section names (one resident daemon per service:
//! `net.inetd` and the net suite's memory notes; routing and status updates).

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, Usage, YKind};
use crate::suite::bbn::{kill_and_reap, spawn};
use crate::suite::net::tcp_pair;
use crate::suite::tty::{cpu_ns_per_op, pty_with};
use crate::sys::{self, Pid};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// §3.1.2's words, as the paper printed them.
pub const QUOTE: &str = "\"Remote logins and shells incur more overhead than their local \
     equivalents. For example, a remote login uses three processes and a pseudo-terminal \
     handler in addition to the local hardware terminal handler. When using a screen editor, \
     sending and echoing a single character involves four processes on two machines. The \
     additional processes, context switching, network traffic, and terminal handler overhead \
     can roughly triple the load presented by one local terminal user.\"";

/// The paper's "roughly triple", for the derived ratios' formulas.
const PAPER_RATIO: &str = "the paper: \"can roughly triple the load presented by one local \
     terminal user\" (about 3)";

/// The most sessions a point may ask for (each holds up to 5 processes and 6 descriptors).
pub const MAX_SESSIONS: usize = 64;
/// How long the sessions may take to end after the hang-up before the trial fails.
const HANGUP_MS: i32 = 10_000;
/// The keys the user types, in turn: printable, so that nothing in raw mode treats them
/// specially (and a wrong echo is visible).
const KEYS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

/// Which login a point's sessions are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// User and editor on one pty.
    Local,
    /// User on TCP, rlogind, editor.
    Remote,
    /// User on a local pty, rlogin's writer and reader, rlogind, editor (4.2BSD's shape).
    Rlogin,
}

/// What a process of a session does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Types a key, waits for its echo.
    User,
    /// Relays between the connection and the pty master (rlogind).
    Rlogind,
    /// Reads a character from the pty slave and writes it back (a screen editor's echo).
    Editor,
    /// 4.2BSD rlogin's parent: local terminal to network.
    RloginWriter,
    /// 4.2BSD rlogin's child: network to local terminal.
    RloginReader,
}

impl Role {
    const ALL: [Role; 5] = [
        Role::User,
        Role::Rlogind,
        Role::Editor,
        Role::RloginWriter,
        Role::RloginReader,
    ];

    fn code(self) -> u64 {
        Role::ALL.iter().position(|r| *r == self).unwrap_or(0) as u64
    }

    fn of(code: u64) -> Option<Role> {
        Role::ALL.get(code as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Rlogind => "rlogind",
            Role::Editor => "editor",
            Role::RloginWriter => "rlogin writer",
            Role::RloginReader => "rlogin reader",
        }
    }

    /// The process's name (comm, at most 15 bytes).
    pub fn comm(self) -> &'static str {
        match self {
            Role::User => "sysperf:user",
            Role::Rlogind => "sysperf:rlogind",
            Role::Editor => "sysperf:editor",
            Role::RloginWriter => "sysperf:rlog-wr",
            Role::RloginReader => "sysperf:rlog-rd",
        }
    }
}

impl Kind {
    /// The processes of one session.
    pub fn roles(self) -> &'static [Role] {
        match self {
            Kind::Local => &[Role::Editor, Role::User],
            Kind::Remote => &[Role::Editor, Role::Rlogind, Role::User],
            Kind::Rlogin => &[
                Role::Editor,
                Role::Rlogind,
                Role::RloginWriter,
                Role::RloginReader,
                Role::User,
            ],
        }
    }
}

/// How a process of a session ended (its exit code, and the code in its report).
const FAULT_IO: u64 = 1;
/// An echo that was not the key typed.
const FAULT_ECHO: u64 = 2;
/// The other side closed before the user's last key was echoed.
const FAULT_EOF: u64 = 3;
/// The start pipe gave something other than end of file.
const FAULT_GO: u64 = 4;

fn fault_name(code: u64) -> &'static str {
    match code {
        0 => "no fault",
        FAULT_IO => "a read or write failed",
        FAULT_ECHO => "an echo was not the key typed",
        FAULT_EOF => "the other side closed before the last echo",
        FAULT_GO => "the start signal was not end of file",
        _ => "unknown fault",
    }
}

/// What one process of a session reported when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub session: u64,
    pub role: Role,
    /// Bytes it read: keys (rlogind, editor, rlogin's writer) or echoes (user, rlogin's reader).
    pub received: u64,
    /// Bytes it wrote on.
    pub sent: u64,
    /// 0, or one of the faults.
    pub code: u64,
    /// Its own usage from when it was ready (set up, about to wait for its first input) to
    /// its report: the session's work, without its fork, setup and exit.
    pub usage: Usage,
}

/// A report record: session, role, received, sent, code and the six fields of the usage;
/// one write(2) of less than PIPE_BUF, so that records from many processes never interleave.
const RECORD: usize = 11 * 8;

#[derive(Debug, Default, Clone, Copy)]
struct Count {
    received: u64,
    sent: u64,
    /// The process's usage when it was ready (each is single-threaded: the thread's is the
    /// process's).
    ready: Usage,
}

impl Count {
    fn ready() -> Count {
        Count {
            ready: sys::usage_thread(),
            ..Count::default()
        }
    }
}

/// Writes all of `buf`; a fault code otherwise.
fn put(fd: RawFd, buf: &[u8]) -> Result<(), u64> {
    let mut off = 0;
    while off < buf.len() {
        match sys::write(fd, &buf[off..]) {
            Ok(0) => return Err(FAULT_EOF),
            Ok(k) => off += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(FAULT_IO),
        }
    }
    Ok(())
}

/// One read; 0 at end of file, which on a pty is also EIO (the other side closed).
fn get(fd: RawFd, buf: &mut [u8]) -> Result<usize, u64> {
    loop {
        match sys::read(fd, buf) {
            Ok(k) => return Ok(k),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
            Err(_) => return Err(FAULT_IO),
        }
    }
}

/// Sends this process's record to the worker and gives its exit code.
fn report(to: RawFd, session: u64, role: Role, c: Count, code: u64) -> i32 {
    let u = sys::usage_thread().since(&c.ready);
    let mut rec = [0u8; RECORD];
    for (i, v) in [
        session,
        role.code(),
        c.received,
        c.sent,
        code,
        u.user_ns,
        u.sys_ns,
        u.minflt,
        u.majflt,
        u.nvcsw,
        u.nivcsw,
    ]
    .iter()
    .enumerate()
    {
        rec[i * 8..i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    match put(to, &rec) {
        Ok(()) => code as i32,
        Err(f) => f as i32,
    }
}

fn parse(rec: &[u8; RECORD]) -> Option<Tally> {
    let f = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[i * 8..i * 8 + 8]);
        u64::from_ne_bytes(b)
    };
    Some(Tally {
        session: f(0),
        role: Role::of(f(1))?,
        received: f(2),
        sent: f(3),
        code: f(4),
        usage: Usage {
            user_ns: f(5),
            sys_ns: f(6),
            minflt: f(7),
            majflt: f(8),
            nvcsw: f(9),
            nivcsw: f(10),
        },
    })
}

/// The user: waits for the start (end of file on `go`), types `n` keys into `term` one at a
/// time, each after the echo of the one before, and checks every echo.
fn type_keys(go: RawFd, term: RawFd, n: u64, c: &mut Count) -> Result<(), u64> {
    let mut b = [0u8; 1];
    if get(go, &mut b)? != 0 {
        return Err(FAULT_GO);
    }
    for i in 0..n {
        let key = KEYS[(i % KEYS.len() as u64) as usize];
        put(term, &[key])?;
        c.sent += 1;
        if get(term, &mut b)? == 0 {
            return Err(FAULT_EOF);
        }
        c.received += 1;
        if b[0] != key {
            return Err(FAULT_ECHO);
        }
    }
    Ok(())
}

/// Copies `from` to `to` until end of file on `from`: one way of rlogin, and the editor's
/// echo (from the pty slave back to it, until the pty hangs up).
fn relay(from: RawFd, to: RawFd, c: &mut Count) -> Result<(), u64> {
    let mut buf = [0u8; 256];
    loop {
        let k = get(from, &mut buf)?;
        if k == 0 {
            return Ok(());
        }
        c.received += k as u64;
        put(to, &buf[..k])?;
        c.sent += k as u64;
    }
}

/// rlogind: waits on the connection and the pty master at once (4.2BSD's select, poll here)
/// and copies whichever is ready to the other, until the connection ends; the pty ending
/// first (the editor gone) is a fault.
fn rlogind(sock: RawFd, master: RawFd, c: &mut Count) -> Result<(), u64> {
    let mut buf = [0u8; 256];
    let mut fds = [sock, master].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    loop {
        match sys::poll_wait(&mut fds, -1) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(FAULT_IO),
        }
        if fds[0].revents != 0 {
            let k = get(sock, &mut buf)?;
            if k == 0 {
                return Ok(());
            }
            c.received += k as u64;
            put(master, &buf[..k])?;
        }
        if fds[1].revents != 0 {
            let k = get(master, &mut buf)?;
            if k == 0 {
                return Err(FAULT_EOF);
            }
            put(sock, &buf[..k])?;
            c.sent += k as u64;
        }
    }
}

fn raw(t: &mut libc::termios) {
    sys::cfmakeraw(t);
    t.c_cc[libc::VMIN] = 1;
    t.c_cc[libc::VTIME] = 0;
}

fn nodelay(s: &TcpStream) -> Result<(), BenchError> {
    s.set_nodelay(true).map_err(BenchError::sys("TCP_NODELAY"))
}

/// One point: `sessions` logins of one kind, each typing `iterations` keys.
pub struct Login {
    kind: Kind,
    sessions: usize,
    iterations: u64,
    /// The write end of the pipe the users wait on: closing it starts them all.
    start: Option<OwnedFd>,
    /// The write end of the pipe the users wait on after their last key: closing it hangs up.
    stop: Option<OwnedFd>,
    /// The read end of the pipe every process reports on.
    report: Option<OwnedFd>,
    /// Every process of every session, in the order forked.
    pub children: Vec<Pid>,
    /// A pidfd of every process with its session and role: one that ends before the
    /// hang-up fails the trial at once, instead of leaving the others waiting.
    pidfds: Vec<(OwnedFd, u64, Role)>,
    /// What the processes reported, in the order received.
    pub tallies: Vec<Tally>,
}

impl Login {
    pub fn new(kind: Kind, sessions: usize) -> Login {
        Login {
            kind,
            sessions,
            iterations: 0,
            start: None,
            stop: None,
            report: None,
            children: Vec::new(),
            pidfds: Vec::new(),
            tallies: Vec::new(),
        }
    }

    fn report_fd(&self) -> Result<RawFd, BenchError> {
        self.report
            .as_ref()
            .map(|f| f.as_raw_fd())
            .ok_or_else(|| BenchError::Protocol("the sessions are not set up".into()))
    }

    /// Forks the processes of session `s`; each keeps only its own descriptors of `mine`
    /// (closing the rest, and the worker's ends of the control pipes in `shared`).
    fn open_session(
        &mut self,
        ctx: &Ctx,
        s: u64,
        pipes: [RawFd; 3],
        shared: &[RawFd],
    ) -> Result<(), BenchError> {
        let [go, stop, rep] = pipes;
        let n = self.iterations;
        let (master, slave) = pty_with(raw)?;
        // 4.2BSD's shape has a second pty, the user's local terminal, which rlogin puts in
        // raw mode too.
        let local = match self.kind {
            Kind::Rlogin => Some(pty_with(raw)?),
            _ => None,
        };
        let conn = match self.kind {
            Kind::Local => None,
            _ => {
                let (c, s) = tcp_pair().map_err(BenchError::sys("TCP connection"))?;
                nodelay(&c)?;
                nodelay(&s)?;
                Some((c, s))
            }
        };
        let mut all: Vec<RawFd> = vec![master.as_raw_fd(), slave.as_raw_fd()];
        if let Some((m, sl)) = &local {
            all.extend([m.as_raw_fd(), sl.as_raw_fd()]);
        }
        if let Some((c, sv)) = &conn {
            all.extend([c.as_raw_fd(), sv.as_raw_fd()]);
        }
        all.extend(shared);
        all.extend(self.pidfds.iter().map(|f| f.0.as_raw_fd()));
        let keep_only = |keep: &[RawFd]| sys::close_all_but(keep, &all);
        for &role in self.kind.roles() {
            let body = || -> i32 {
                let mut c;
                let r = match role {
                    Role::Editor => {
                        keep_only(&[slave.as_raw_fd(), rep]);
                        c = Count::ready();
                        relay(slave.as_raw_fd(), slave.as_raw_fd(), &mut c)
                    }
                    Role::Rlogind => {
                        let Some((_, sv)) = &conn else {
                            return FAULT_IO as i32;
                        };
                        keep_only(&[sv.as_raw_fd(), master.as_raw_fd(), rep]);
                        c = Count::ready();
                        rlogind(sv.as_raw_fd(), master.as_raw_fd(), &mut c)
                    }
                    Role::RloginWriter | Role::RloginReader => {
                        let (Some((cl, _)), Some((_, lslave))) = (&conn, &local) else {
                            return FAULT_IO as i32;
                        };
                        keep_only(&[cl.as_raw_fd(), lslave.as_raw_fd(), rep]);
                        c = Count::ready();
                        if role == Role::RloginWriter {
                            let r = relay(lslave.as_raw_fd(), cl.as_raw_fd(), &mut c);
                            // The reader holds the connection too: end it for rlogind.
                            let _ = cl.shutdown(Shutdown::Write);
                            r
                        } else {
                            relay(cl.as_raw_fd(), lslave.as_raw_fd(), &mut c)
                        }
                    }
                    Role::User => {
                        let term = match (&local, &conn) {
                            (Some((lmaster, _)), _) => lmaster.as_raw_fd(),
                            (None, Some((cl, _))) => cl.as_raw_fd(),
                            (None, None) => master.as_raw_fd(),
                        };
                        keep_only(&[term, go, stop, rep]);
                        c = Count::ready();
                        let r = type_keys(go, term, n, &mut c);
                        let code = report(rep, s, role, c, r.err().unwrap_or(0));
                        if code == 0 {
                            // Hold the session open until the worker hangs up.
                            let mut b = [0u8; 1];
                            if !matches!(get(stop, &mut b), Ok(0)) {
                                return FAULT_GO as i32;
                            }
                        }
                        return code;
                    }
                };
                report(rep, s, role, c, r.err().unwrap_or(0))
            };
            let pid = spawn(ctx, role.comm(), None, body)?;
            self.children.push(pid);
            let fd = sys::pidfd_open(pid).map_err(BenchError::sys("pidfd_open"))?;
            self.pidfds.push((fd, s, role));
        }
        // The worker keeps none of the session's descriptors: closing them here is what
        // lets each end see the other go.
        Ok(())
    }

    /// Reads one record (None at end of file: every process has closed the pipe).
    fn read_record(&self) -> Result<Option<Tally>, BenchError> {
        let fd = self.report_fd()?;
        let mut rec = [0u8; RECORD];
        let mut got = 0;
        while got < RECORD {
            match sys::read(fd, &mut rec[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(BenchError::Protocol("a torn report record".into())),
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BenchError::sys("read of the reports")(e)),
            }
        }
        parse(&rec)
            .map(Some)
            .ok_or_else(|| BenchError::Protocol("a report record names no role".into()))
    }

    fn fault(t: &Tally) -> BenchError {
        BenchError::Protocol(format!(
            "session {}: the {} ended ({}) after receiving {} and sending {} bytes",
            t.session,
            t.role.name(),
            if t.code == 0 {
                "before the hang-up"
            } else {
                fault_name(t.code)
            },
            t.received,
            t.sent
        ))
    }

    /// Every process of every session reported once, ended normally, and received and sent
    /// one byte per key typed.
    fn check(&self) -> Result<(), BenchError> {
        for s in 0..self.sessions as u64 {
            for &role in self.kind.roles() {
                let mine: Vec<&Tally> = self
                    .tallies
                    .iter()
                    .filter(|t| t.session == s && t.role == role)
                    .collect();
                let [t] = mine[..] else {
                    return Err(BenchError::Protocol(format!(
                        "session {s}: {} reports from the {}, expected 1",
                        mine.len(),
                        role.name()
                    )));
                };
                if t.code != 0 {
                    return Err(Self::fault(t));
                }
                if t.received != self.iterations || t.sent != self.iterations {
                    return Err(BenchError::Protocol(format!(
                        "session {s}: the {} received {} and sent {} bytes for {} keys",
                        role.name(),
                        t.received,
                        t.sent,
                        self.iterations
                    )));
                }
            }
        }
        Ok(())
    }
}

impl Benchmark for Login {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        if self.sessions == 0 || self.sessions > MAX_SESSIONS {
            return Err(BenchError::Protocol(format!(
                "{} sessions is outside 1..={MAX_SESSIONS}",
                self.sessions
            )));
        }
        self.iterations = iterations;
        let (go_r, go_w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let (stop_r, stop_w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let (rep_r, rep_w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let pipes = [go_r.as_raw_fd(), stop_r.as_raw_fd(), rep_w.as_raw_fd()];
        let shared = [
            go_r.as_raw_fd(),
            go_w.as_raw_fd(),
            stop_r.as_raw_fd(),
            stop_w.as_raw_fd(),
            rep_r.as_raw_fd(),
            rep_w.as_raw_fd(),
        ];
        self.start = Some(go_w);
        self.stop = Some(stop_w);
        self.report = Some(rep_r);
        for s in 0..self.sessions as u64 {
            self.open_session(ctx, s, pipes, &shared)?;
        }
        // Only the children hold these ends now: the users see end of file on the start and
        // stop pipes when the worker closes its write ends, the worker sees end of file on the
        // reports when every process has ended.
        drop((go_r, stop_r, rep_w));
        Ok(())
    }

    fn run(&mut self, _iterations: u64) -> Result<(), BenchError> {
        let report = self.report_fd()?;
        if self.start.take().is_none() {
            return Err(BenchError::Protocol("the sessions are not set up".into()));
        }
        let mut fds: Vec<libc::pollfd> = std::iter::once(report)
            .chain(self.pidfds.iter().map(|f| f.0.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut done = 0;
        while done < self.sessions {
            match sys::poll_wait(&mut fds, -1) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BenchError::sys("poll")(e)),
            }
            if fds[0].revents != 0 {
                let t = self.read_record()?.ok_or_else(|| {
                    BenchError::Protocol("every session ended before its last echo".into())
                })?;
                self.tallies.push(t);
                if t.role != Role::User || t.code != 0 {
                    // A process that reports before the hang-up has failed.
                    return Err(Self::fault(&t));
                }
                done += 1;
                // Records first: a user that failed reported before it exited.
                continue;
            }
            if let Some(i) = fds[1..].iter().position(|p| p.revents != 0) {
                let (_, s, role) = &self.pidfds[i];
                return Err(BenchError::Protocol(format!(
                    "session {s}: the {} ended before the hang-up, without a report",
                    role.name()
                )));
            }
        }
        Ok(())
    }

    fn reap_unwaited(&mut self) -> Result<Usage, BenchError> {
        if self.report.is_none() {
            return Ok(Usage::default());
        }
        // Hang up: the users exit, and each session's other processes see it in turn.
        self.stop = None;
        let want = self.sessions * self.kind.roles().len();
        let report = self.report_fd()?;
        while self.tallies.len() < want {
            if !sys::poll_readable(report, HANGUP_MS).map_err(BenchError::sys("poll"))? {
                return Err(BenchError::Protocol(format!(
                    "the sessions did not end within {} s of the hang-up",
                    HANGUP_MS / 1000
                )));
            }
            match self.read_record()? {
                Some(t) => self.tallies.push(t),
                None => break,
            }
        }
        self.check()?;
        // One at a time off the list, so that after one that ended wrongly teardown still
        // finds the others. Their lifetime usage (wait4's) holds their fork, setup and exit,
        // which a short trial would charge to its few characters: the trial's is what each
        // did from ready to its report.
        while let Some(&pid) = self.children.first() {
            let ended = crate::bench::ipc::reap(pid);
            self.children.remove(0);
            ended?;
        }
        let total = self
            .tallies
            .iter()
            .fold(Usage::default(), |a, t| a.plus(&t.usage));
        self.pidfds.clear();
        self.report = None;
        Ok(total)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        kill_and_reap(&mut self.children);
        self.pidfds.clear();
        self.start = None;
        self.stop = None;
        self.report = None;
        Ok(())
    }
}

impl Drop for Login {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

const SESSIONS: &[u64] = &[1, 2, 4, 8, 16];
const SESSIONS_QUICK: &[u64] = &[1, 4];

fn points(quick: bool) -> Vec<Point> {
    (if quick { SESSIONS_QUICK } else { SESSIONS })
        .iter()
        .map(|&n| Point {
            ops_per_iteration: n,
            ..Point::new(n as f64, n)
        })
        .collect()
}

const FIGURE: &str = "login.echo";
const FIGURE_TITLE: &str = "§3.1.2: one keystroke echoed by a screen editor, remote login \
     against local, against concurrent sessions (wall ns per character)";

const fn spec(
    id: &'static str,
    curve: &'static str,
    paper: &'static str,
    today: &'static str,
    make: fn(u64) -> Box<dyn Benchmark>,
) -> SeriesSpec {
    SeriesSpec {
        id,
        figure: FIGURE,
        figure_title: FIGURE_TITLE,
        curve,
        paper,
        today,
        x: Axis {
            name: "concurrent sessions",
            unit: "sessions",
            log: true,
        },
        y: YKind::CostNs,
        unit: "character",
        shape: Shape::Single,
        points,
        make,
        paper_points: &[],
        paper_system: None,
        printed: None,
    }
}

pub static LOCAL: SeriesSpec = spec(
    "login.local",
    "local (user on a pty, editor): 2 processes",
    "§3.1.2: the \"local equivalent\": a screen editor on the \"local hardware terminal \
     handler\" (no time printed)",
    "the user writes a key into a pty master and reads its echo there; the editor, raw mode \
     on the slave, reads it and writes it back; y = wall ns per echoed character over all \
     sessions",
    |n| Box::new(Login::new(Kind::Local, n as usize)),
);

pub static REMOTE: SeriesSpec = spec(
    "login.remote",
    "remote (user on TCP, rlogind, editor): 3 processes",
    "§3.1.2: \"a remote login uses three processes and a pseudo-terminal handler\" (no time \
     printed)",
    "the user writes a key to a loopback TCP connection (TCP_NODELAY); rlogind's role polls \
     the connection and a pty master and copies each way; the editor on the slave echoes; \
     y = wall ns per echoed character over all sessions",
    |n| Box::new(Login::new(Kind::Remote, n as usize)),
);

pub static RLOGIN: SeriesSpec = spec(
    "login.rlogin",
    "4.2BSD rlogin (local pty, rlogin's 2, rlogind, editor): 5 processes",
    "§3.1.2: \"sending and echoing a single character involves four processes on two \
     machines\" (rlogin's two, rlogind, the editor; no time printed)",
    "the user types into a local raw pty; rlogin's writer copies it to loopback TCP and its \
     reader copies the echo back to the pty (4.2BSD's rlogin forks into these two); rlogind \
     and the editor as in login.remote; y = wall ns per echoed character over all sessions",
    |n| Box::new(Login::new(Kind::Rlogin, n as usize)),
);

fn series() -> Vec<&'static SeriesSpec> {
    vec![&LOCAL, &REMOTE, &RLOGIN]
}

fn preflight() -> Result<Vec<String>, String> {
    sys::open_pty().map_err(|e| format!("cannot open a pseudo-terminal: {e}"))?;
    Ok(vec![
        "login CPU per character: user+sys of every process of every session from when it \
         was ready to its report after the last echo or the hang-up (its fork, setup and exit \
         left out) and the worker's in the timed region, over the characters echoed; the kworker that moves pty data (flush_to_ldisc) is in no \
         process's rusage, loopback TCP's softirq work in whichever process it interrupted"
            .into(),
    ])
}

/// For every number of sessions: CPU per character of each kind, and the remote/local ratios
/// of CPU (the paper's "load") and of wall time.
fn derive(all: &[Series]) -> Vec<Derived> {
    let find = |id: &str| all.iter().find(|s| s.id == id);
    let mut out = Vec::new();
    let Some(local) = find(LOCAL.id) else {
        return out;
    };
    for p in &local.points {
        let x = p.x;
        let n = format!(
            "{} session{}",
            super::fmt_x(x),
            if x == 1.0 { "" } else { "s" }
        );
        let Some(l_cpu) = cpu_ns_per_op(local, x) else {
            continue;
        };
        out.push(Derived {
            na: None,
            name: format!("login CPU per character, local ({n})"),
            value: l_cpu,
            unit: "ns".into(),
            formula: "user+sys of the users and editors and the worker / characters echoed".into(),
        });
        for (remote, what) in [(REMOTE.id, "remote"), (RLOGIN.id, "rlogin")] {
            let Some(r) = find(remote) else {
                continue;
            };
            let Some(r_cpu) = cpu_ns_per_op(r, x) else {
                continue;
            };
            out.push(Derived {
                na: None,
                name: format!("login CPU per character, {what} ({n})"),
                value: r_cpu,
                unit: "ns".into(),
                formula: format!(
                    "user+sys of every process of the {what} sessions and the worker / \
                     characters echoed"
                ),
            });
            out.push(Derived {
                na: (l_cpu <= 0.0).then(|| "no CPU time was charged to the local sessions".into()),
                name: format!("login {what}/local CPU per character ({n})"),
                value: r_cpu / l_cpu,
                unit: "ratio".into(),
                formula: format!("{r_cpu:.0} ns / {l_cpu:.0} ns; {PAPER_RATIO}"),
            });
            let wall = |s: &Series| {
                s.points
                    .iter()
                    .find(|q| q.x == x)
                    .and_then(|q| q.y.as_ref())
                    .map(|e| e.median)
            };
            if let (Some(rw), Some(lw)) = (wall(r), wall(local)) {
                out.push(Derived {
                    na: (lw <= 0.0).then(|| "the local wall time is 0".into()),
                    name: format!("login {what}/local wall per character ({n})"),
                    value: rw / lw,
                    unit: "ratio".into(),
                    formula: format!("{rw:.0} ns / {lw:.0} ns (medians)"),
                });
            }
        }
    }
    out
}

pub static SUITE: Suite = Suite {
    name: "login",
    title: "Remote login against local: a keystroke echoed by a screen editor, against sessions",
    paper: "Leffler, Karels, McKusick, Measuring and Improving the Performance of Berkeley \
            UNIX (4.2BSD), §3.1.2 Network servers: \"Remote logins and shells incur more \
            overhead than their local equivalents. For example, a remote login uses three \
            processes and a pseudo-terminal handler in addition to the local hardware terminal \
            handler. When using a screen editor, sending and echoing a single character \
            involves four processes on two machines. The additional processes, context \
            switching, network traffic, and terminal handler overhead can roughly triple the \
            load presented by one local terminal user.\"",
    series,
    preflight,
    derive,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::ipc::my_children;

    /// One test's sessions at a time: a child forked by one test thread would inherit the
    /// descriptors another thread has open at that moment until it closes them.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// The process names and descriptors of the worker's children, from /proc.
    fn comm(pid: Pid) -> String {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Waits until child `pid` has named itself and sleeps (in its first read or poll, its
    /// descriptors closed), for at most 5 s.
    fn settled(pid: Pid) {
        for _ in 0..500 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let state = stat.rsplit(") ").next().unwrap().chars().next();
            if comm(pid).starts_with("sysperf:") && state == Some('S') {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("child {pid} did not settle");
    }

    fn fds(pid: Pid) -> Vec<String> {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
            .map(|p| p.display().to_string())
            .collect()
    }

    fn run_point(kind: Kind, sessions: usize, n: u64) -> (Login, Usage) {
        let _one = SERIAL.lock();
        let mut b = Login::new(kind, sessions);
        b.setup(&Ctx::default(), n).unwrap();
        b.run(n).unwrap();
        let usage = b.reap_unwaited().unwrap();
        (b, usage)
    }

    #[test]
    fn a_session_is_three_processes_remote_two_local_five_as_42bsd() {
        for (kind, procs) in [(Kind::Remote, 3), (Kind::Local, 2), (Kind::Rlogin, 5)] {
            for sessions in [1, 3] {
                let _one = SERIAL.lock();
                let mut b = Login::new(kind, sessions);
                b.setup(&Ctx::default(), 10).unwrap();
                let mut kids = my_children();
                kids.sort();
                let mut mine = b.children.clone();
                mine.sort();
                assert_eq!(kids, mine, "{kind:?}");
                assert_eq!(kids.len(), procs * sessions, "{kind:?} x{sessions}");
                kids.iter().for_each(|&p| settled(p));
                let mut names: Vec<String> = kids.iter().map(|&p| comm(p)).collect();
                names.sort();
                let mut want: Vec<String> = (0..sessions)
                    .flat_map(|_| kind.roles().iter().map(|r| r.comm().to_string()))
                    .collect();
                want.sort();
                assert_eq!(names, want, "{kind:?}");
                // Each holds the terminal or connection of its role, and no other's.
                for &pid in &kids {
                    let f = fds(pid);
                    let has = |what: &str| f.iter().filter(|l| l.contains(what)).count();
                    match comm(pid).as_str() {
                        "sysperf:editor" => {
                            assert_eq!((has("/dev/pts/"), has("socket:")), (1, 0), "{f:?}")
                        }
                        "sysperf:rlogind" => {
                            assert_eq!((has("/dev/ptmx"), has("socket:")), (1, 1), "{f:?}")
                        }
                        "sysperf:rlog-wr" | "sysperf:rlog-rd" => {
                            assert_eq!((has("/dev/pts/"), has("socket:")), (1, 1), "{f:?}")
                        }
                        "sysperf:user" => {
                            let want = if kind == Kind::Remote { (0, 1) } else { (1, 0) };
                            assert_eq!((has("/dev/ptmx"), has("socket:")), want, "{f:?}")
                        }
                        other => panic!("unexpected child {other}"),
                    }
                }
                b.run(10).unwrap();
                b.reap_unwaited().unwrap();
                b.teardown().unwrap();
                assert!(my_children().is_empty(), "{:?}", my_children());
            }
        }
    }

    #[test]
    fn every_process_receives_and_sends_one_byte_per_key() {
        let n = 300;
        for kind in [Kind::Local, Kind::Remote, Kind::Rlogin] {
            let (mut b, usage) = run_point(kind, 2, n);
            assert_eq!(b.tallies.len(), 2 * kind.roles().len(), "{kind:?}");
            for t in &b.tallies {
                assert_eq!((t.received, t.sent, t.code), (n, n, 0), "{kind:?} {t:?}");
            }
            // The sessions' CPU came back with them: their processes blocked on every key.
            assert!(usage.cpu_ns() > 0 && usage.nvcsw >= n, "{kind:?} {usage:?}");
            assert!(b.children.is_empty());
            b.teardown().unwrap();
            assert!(my_children().is_empty(), "{kind:?}: {:?}", my_children());
        }
    }

    #[test]
    fn a_wrong_count_or_fault_fails_the_check() {
        let (mut b, _) = run_point(Kind::Remote, 1, 20);
        assert!(b.check().is_ok());
        b.tallies[0].received -= 1;
        let e = b.check().unwrap_err().to_string();
        assert!(e.contains("received 19"), "{e}");
        b.tallies[0].received += 1;
        b.tallies[1].code = FAULT_ECHO;
        let e = b.check().unwrap_err().to_string();
        assert!(e.contains("not the key typed"), "{e}");
        b.tallies.pop();
        assert!(b.check().is_err());
        b.teardown().unwrap();
    }

    #[test]
    fn a_dead_process_fails_the_trial_and_teardown_leaves_no_child() {
        for (kind, victim) in [
            (Kind::Remote, "sysperf:editor"),
            (Kind::Remote, "sysperf:rlogind"),
            (Kind::Remote, "sysperf:user"),
            (Kind::Local, "sysperf:editor"),
            (Kind::Rlogin, "sysperf:rlog-rd"),
        ] {
            let _one = SERIAL.lock();
            let mut b = Login::new(kind, 2);
            b.setup(&Ctx::default(), 1000).unwrap();
            b.children.iter().for_each(|&p| settled(p));
            let pid = *b.children.iter().find(|&&p| comm(p) == victim).unwrap();
            sys::kill(pid, libc::SIGKILL).unwrap();
            let e = b.run(1000).and_then(|_| b.reap_unwaited().map(|_| ()));
            assert!(e.is_err(), "{kind:?} without its {victim}");
            b.teardown().unwrap();
            assert!(my_children().is_empty(), "{kind:?}: {:?}", my_children());
        }
        // Never set up: nothing to reap, no error.
        let mut b = Login::new(Kind::Local, 1);
        assert_eq!(b.reap_unwaited().unwrap(), Usage::default());
        assert!(b.run(1).is_err());
        assert!(Login::new(Kind::Local, 0)
            .setup(&Ctx::default(), 1)
            .is_err());
        assert!(Login::new(Kind::Local, MAX_SESSIONS + 1)
            .setup(&Ctx::default(), 1)
            .is_err());
    }

    #[test]
    fn records_round_trip() {
        let (r, w) = sys::pipe().unwrap();
        let c = Count {
            received: 7,
            sent: 9,
            ready: sys::usage_thread(),
        };
        assert_eq!(report(w.as_raw_fd(), 3, Role::RloginReader, c, 0), 0);
        let mut rec = [0u8; RECORD];
        assert_eq!(sys::read(r.as_raw_fd(), &mut rec).unwrap(), RECORD);
        let t = parse(&rec).unwrap();
        assert_eq!(
            t,
            Tally {
                session: 3,
                role: Role::RloginReader,
                received: 7,
                sent: 9,
                code: 0,
                usage: t.usage,
            }
        );
        // The usage since ready: this thread's, a moment's.
        assert!(t.usage.user_ns + t.usage.sys_ns < 1_000_000_000, "{t:?}");
        for role in Role::ALL {
            assert_eq!(Role::of(role.code()), Some(role));
            assert!(role.comm().len() <= 15, "{}", role.comm());
        }
    }

    #[test]
    fn the_help_quotes_the_paper() {
        let q = QUOTE.trim_matches('"');
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        // `list --suites` prints the suite's paper: the quote is in it, word for word.
        assert!(flat(SUITE.paper).contains(&flat(q)), "{}", SUITE.paper);
        assert!(REMOTE.paper.contains("three processes"));
        assert!(RLOGIN.paper.contains("four processes on two"));
    }
}
