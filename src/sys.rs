//! The system-call boundary: thin, safe wrappers over the libc calls sysperf needs.
//!
//! Every `unsafe` block of the project lives here, each with a `// SAFETY:` line. The wrappers
//! add no work beyond the call and its error check, because benchmark hot loops call them
//! (`#[inline]`); they are not a general-purpose POSIX binding.

use crate::model::Usage;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub type Pid = libc::pid_t;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A count or -1 with errno, as ssize_t and long calls return.
fn cvt_long(r: i64) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn timeval_ns(t: libc::timeval) -> u64 {
    (t.tv_sec as u64) * 1_000_000_000 + (t.tv_usec as u64) * 1_000
}

/// Converts a kernel rusage record into the model's integer units.
pub fn usage_of(r: &libc::rusage) -> Usage {
    Usage {
        user_ns: timeval_ns(r.ru_utime),
        sys_ns: timeval_ns(r.ru_stime),
        minflt: r.ru_minflt as u64,
        majflt: r.ru_majflt as u64,
        nvcsw: r.ru_nvcsw as u64,
        nivcsw: r.ru_nivcsw as u64,
    }
}

fn getrusage(who: libc::c_int) -> Usage {
    // SAFETY: rusage is plain old data; getrusage only writes into the struct we own.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid `who` constant and a valid pointer; cannot fail with these arguments.
    unsafe { libc::getrusage(who, &mut r) };
    usage_of(&r)
}

/// Resource usage of this process plus every child it has reaped, as time(1) accounts it.
pub fn usage_self_and_children() -> Usage {
    getrusage(libc::RUSAGE_SELF).plus(&getrusage(libc::RUSAGE_CHILDREN))
}

/// Resource usage of the calling thread alone (RUSAGE_THREAD): its CPU time and how often
/// other tasks took its CPU (involuntary switches).
pub fn usage_thread() -> Usage {
    getrusage(libc::RUSAGE_THREAD)
}

/// Resource usage of the children this process has reaped (and theirs), alone.
pub fn usage_children() -> Usage {
    getrusage(libc::RUSAGE_CHILDREN)
}

/// Resident set size, its anonymous part (bytes), and the number of mappings of the process
/// `pid` ("self" for this one), from /proc/PID/statm, status and maps; 0 for what is unreadable.
pub fn process_size(pid: &str) -> (u64, u64, u64) {
    let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).ok();
    let rss = read("statm")
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * page_size() as u64)
        .unwrap_or(0);
    let anon = read("status").and_then(|s| parse_rss_anon(&s)).unwrap_or(0);
    let maps = read("maps").map(|s| s.lines().count() as u64).unwrap_or(0);
    (rss, anon, maps)
}

/// "RssAnon:    1234 kB" from /proc/PID/status, in bytes.
pub fn parse_rss_anon(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CLOCK_MONOTONIC in nanoseconds. Only the harness reads clocks.
#[inline]
pub fn monotonic_ns() -> u64 {
    // SAFETY: timespec is plain old data written by the call.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: CLOCK_MONOTONIC is always available; the pointer is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// sync(2): asks the kernel to write every dirty page out. `run --settle` calls it before it
/// waits for writeback to end.
pub fn sync_filesystems() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// The real getpid system call, never a cached library value.
#[inline]
pub fn getpid_syscall() -> Pid {
    // SAFETY: SYS_getpid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getpid) as Pid }
}

pub fn getpid() -> Pid {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// The calling thread's id.
pub fn gettid() -> Pid {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Whether the effective user is root (whose perf and kallsyms access no sysctl restricts).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Pins the calling thread (and children forked after it) to `cpus`.
pub fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bitmask; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: c < CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the set is valid for its size.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// CPUs this process may run on.
pub fn get_affinity() -> io::Result<Vec<u32>> {
    // SAFETY: zeroed cpu_set_t is valid; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the set pointer and size are valid.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    let mut v = Vec::new();
    for c in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: c < CPU_SETSIZE.
        if unsafe { libc::CPU_ISSET(c, &set) } {
            v.push(c as u32);
        }
    }
    Ok(v)
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no arguments.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// Names the calling process (comm, at most 15 bytes), so top, ps and traces show it.
pub fn set_process_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: buf is a NUL-terminated 16-byte buffer as PR_SET_NAME requires.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// The process that made this one with [`fork`] (0: none, this process was exec'd), set in
/// the child only.
static FORKED_BY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Asks the kernel to send `sig` to this process when its parent dies, so no benchmark
/// process outlives a killed sysperf. A child of [`fork`] whose parent died before the
/// request (no signal will come for it) exits at once.
pub fn set_parent_death_signal(sig: libc::c_int) {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) };
    let by = FORKED_BY.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: getppid has no arguments and cannot fail.
    if by != 0 && unsafe { libc::getppid() } != by {
        exit_now(1);
    }
}

/// Makes this process the reaper of orphaned descendants, so grandchildren of a killed
/// worker come back to us to be reaped instead of to init.
/// Raised once a command has its own handling of SIGINT, SIGTERM and SIGHUP (the engine's stop
/// flag, which stops workers and keeps what finished); until then [`exit_on_signals`] ends the
/// process at once.
pub static SIGNALS_HANDLED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// From the first instruction of `main`: SIGINT, SIGTERM and SIGHUP end sysperf with a one-line
/// message and exit code 128 + the signal (130, 143, 129), as a shell reports such a death,
/// until [`SIGNALS_HANDLED`] is raised. No moment of a command is left to the default action,
/// which dies without a word.
pub fn exit_on_signals() -> io::Result<()> {
    use std::sync::atomic::Ordering;
    for (sig, msg) in [
        (libc::SIGINT, &b"sysperf: interrupted\n"[..]),
        (libc::SIGTERM, &b"sysperf: terminated\n"[..]),
        (libc::SIGHUP, &b"sysperf: hung up\n"[..]),
    ] {
        // SAFETY: the action is async-signal-safe: an atomic load, write(2) of a static
        // buffer and _exit(2); it allocates nothing and takes no lock.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if !SIGNALS_HANDLED.load(Ordering::SeqCst) {
                    libc::write(2, msg.as_ptr().cast(), msg.len());
                    libc::_exit(128 + sig);
                }
            })
        }?;
    }
    Ok(())
}

/// Whether this process may write `path` (access(2) with the real ids, which for sysperf are
/// its effective ones: it is never set-uid).
pub fn may_write(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(p) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path that outlives the call.
    unsafe { libc::access(p.as_ptr(), libc::W_OK) == 0 }
}

pub fn set_child_subreaper() {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes a boolean.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
}

pub enum Fork {
    Child,
    Parent(Pid),
}

/// fork(2). Only for worker processes, which are single-threaded; the child must restrict
/// itself to async-signal-safe calls (the benchmarks' children only make system calls).
pub fn fork() -> io::Result<Fork> {
    let parent = std::process::id() as i32;
    // SAFETY: the worker is single-threaded, so the child's copy of memory is consistent.
    let pid = cvt(unsafe { libc::fork() })?;
    Ok(if pid == 0 {
        // Only in the child: the parent, which may call set_parent_death_signal itself
        // later (a test process running a worker in place), is no child of its own.
        FORKED_BY.store(parent, std::sync::atomic::Ordering::Relaxed);
        Fork::Child
    } else {
        Fork::Parent(pid)
    })
}

/// _exit(2): leaves without running destructors or atexit handlers (a forked child must not).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and is async-signal-safe.
    unsafe { libc::_exit(code) }
}

/// wait4 for one child: returns (pid, raw status, rusage of the child).
pub fn wait4(pid: Pid, nohang: bool) -> io::Result<(Pid, libc::c_int, Usage)> {
    let mut status = 0;
    // SAFETY: rusage is plain old data filled by the kernel.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if nohang { libc::WNOHANG } else { 0 };
    loop {
        // SAFETY: valid pointers to our locals.
        let got = unsafe { libc::wait4(pid, &mut status, flags, &mut r) };
        if got < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok((got, status, usage_of(&r)));
    }
}

/// waitpid for a benchmark child; returns its exit code (or 128+signal).
#[inline]
pub fn wait_child(pid: Pid) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: valid pointer to a local.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            break;
        }
        if got < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
    }
    Ok(exit_code(status))
}

/// Decodes a wait status into an exit code, 128+N for death by signal N.
pub fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        -1
    }
}

/// Reaps every already-dead child without blocking (orphans handed to us as subreaper). Any
/// child: a process that also starts children of its own elsewhere (a test binary's other
/// threads) must not call it while those run.
pub fn reap_zombies() {
    loop {
        let mut status = 0;
        // SAFETY: valid pointer; WNOHANG never blocks.
        let got = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if got <= 0 {
            break;
        }
    }
}

/// Waits for every child in process group `pgid` to exit (as subreaper, orphaned
/// grandchildren of a worker are our children). Call after SIGKILLing the group, so that
/// nothing of it is still alive when this returns.
pub fn reap_group(pgid: Pid) {
    loop {
        let mut status = 0;
        // SAFETY: valid pointer to a local; -pgid waits for any child in that group.
        let got = unsafe { libc::waitpid(-pgid, &mut status, 0) };
        if got < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break; // ECHILD: none left
        }
    }
}

pub fn kill(pid: Pid, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes plain integers.
    cvt(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

/// A pipe as (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: the kernel just gave us these two descriptors; nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Closes descriptor `fd` in a forked child that will leave with [`exit_now`], whose
/// `OwnedFd`s (the parent's, copied by fork) are never dropped: so that a ring's child keeps
/// only its own two pipe ends, and a closed end upstream reaches it as end of file.
pub fn close_in_child(fd: &impl AsRawFd) {
    // SAFETY: close takes a plain integer; the OwnedFd that names it is never used or
    // dropped again in this process, which exits without running destructors.
    unsafe { libc::close(fd.as_raw_fd()) };
}

/// In a forked child that will leave with [`exit_now`]: closes every descriptor above 2 but
/// those in `keep` (close_range(2) over the gaps between them), so that the child holds no
/// end it does not use, whatever the parent had open (another thread's pipes, in a test
/// process). Falls back to closing `known` one by one where close_range is missing (before
/// Linux 5.9). Makes system calls only, as a child of a multi-threaded parent must.
pub fn close_all_but(keep: &[RawFd], known: &[RawFd]) {
    // A fixed array: a forked child of a multi-threaded parent must not allocate. More to
    // keep than it holds is closed the slow way, never by ranges that would take some kept.
    let mut kept = [0 as RawFd; 16];
    let n = keep.len();
    if n > kept.len() {
        for fd in known.iter().filter(|fd| !keep.contains(fd)) {
            close_in_child(fd);
        }
        return;
    }
    kept[..n].copy_from_slice(keep);
    kept[..n].sort_unstable();
    let mut from: u32 = 3;
    let mut ok = true;
    for &k in kept[..n].iter().chain(std::iter::once(&RawFd::MAX)) {
        let k = k as u32;
        if k < from {
            continue;
        }
        if k > from {
            // SAFETY: close_range takes plain integers; the descriptors it closes are never
            // used again in this process, which exits without running destructors.
            ok &= unsafe { libc::syscall(libc::SYS_close_range, from, k - 1, 0) } == 0;
        }
        from = k.saturating_add(1);
    }
    if !ok {
        for fd in known.iter().filter(|fd| !keep.contains(fd)) {
            close_in_child(fd);
        }
    }
}

/// Sets the capacity of the pipe `fd` belongs to (F_SETPIPE_SZ) and returns what the kernel
/// made it (at least `bytes`, rounded up to a power of two of pages).
pub fn set_pipe_size(fd: &impl AsRawFd, bytes: usize) -> io::Result<usize> {
    let want = libc::c_int::try_from(bytes).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: F_SETPIPE_SZ takes an int and only resizes the pipe's buffer.
    let got = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, want) })?;
    Ok(got as usize)
}

/// A connected pair of Unix-domain datagram sockets, close-on-exec.
pub fn dgram_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(libc::SOCK_DGRAM)
}

/// A connected pair of Unix-domain stream sockets, close-on-exec.
pub fn stream_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(libc::SOCK_STREAM)
}

fn unix_pair(kind: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    cvt(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            kind | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    // SAFETY: the kernel just gave us these two descriptors; nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// write(2) once; returns bytes written.
#[inline]
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// read(2) once; returns bytes read (0 at end of file).
#[inline]
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A pseudo-terminal pair as (master, slave), both close-on-exec and neither becoming the
/// controlling terminal: posix_openpt, grantpt, unlockpt, ptsname_r, open of the slave.
pub fn open_pty() -> io::Result<(OwnedFd, OwnedFd)> {
    // SAFETY: posix_openpt takes open flags and returns a new descriptor or -1.
    let m = cvt(unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) })?;
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    let master = unsafe { OwnedFd::from_raw_fd(m) };
    // SAFETY: grantpt and unlockpt take a master descriptor we own.
    cvt(unsafe { libc::grantpt(master.as_raw_fd()) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::unlockpt(master.as_raw_fd()) })?;
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: name is valid for writes of its length; ptsname_r NUL-terminates on success.
    let r = unsafe { libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    // SAFETY: name holds the NUL-terminated slave path written by ptsname_r.
    let s = cvt(unsafe {
        libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    Ok((master, unsafe { OwnedFd::from_raw_fd(s) }))
}

/// The terminal attributes of `fd` (tcgetattr).
pub fn tcgetattr(fd: RawFd) -> io::Result<libc::termios> {
    // SAFETY: termios is plain old data filled by the call.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a local.
    cvt(unsafe { libc::tcgetattr(fd, &mut t) })?;
    Ok(t)
}

/// Sets the terminal attributes of `fd` at once (tcsetattr TCSANOW).
pub fn tcsetattr(fd: RawFd, t: &libc::termios) -> io::Result<()> {
    // SAFETY: valid pointer to an initialized termios.
    cvt(unsafe { libc::tcsetattr(fd, libc::TCSANOW, t) })?;
    Ok(())
}

/// cfmakeraw: no input or output processing, no echo, non-canonical, 8-bit characters.
pub fn cfmakeraw(t: &mut libc::termios) {
    // SAFETY: valid pointer to an initialized termios; the call only edits its flags.
    unsafe { libc::cfmakeraw(t) };
}

/// Installs `handler` for `sig` with sigaction (no SA_RESTART, no SA_RESETHAND: the handler
/// stays installed, which 4.2BSD's signal() did not guarantee).
pub fn set_handler(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) -> io::Result<()> {
    // SAFETY: sigaction is plain old data; zeroed means empty mask, no flags.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler as usize;
    // SAFETY: the handler is an extern "C" fn that only makes async-signal-safe calls.
    cvt(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    Ok(())
}

/// Restores the default disposition of `sig`.
pub fn default_handler(sig: libc::c_int) {
    // SAFETY: zeroed sigaction with SIG_DFL (0).
    let sa: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a valid struct.
    unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
}

/// A signal mask containing `sig` only.
pub fn sigset_of(sig: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset_t is plain old data; sigemptyset initializes it.
    let mut s: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe {
        libc::sigemptyset(&mut s);
        libc::sigaddset(&mut s, sig);
    }
    s
}

/// The empty signal mask.
pub fn sigset_empty() -> libc::sigset_t {
    // SAFETY: as above.
    let mut s: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::sigemptyset(&mut s) };
    s
}

/// Blocks (`true`) or unblocks the signals in `set` for the calling thread.
pub fn sigmask(block: bool, set: &libc::sigset_t) -> io::Result<()> {
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: valid pointer; old mask not requested.
    cvt(unsafe { libc::sigprocmask(how, set, std::ptr::null_mut()) })?;
    Ok(())
}

/// sigsuspend(2) with `mask`: today's sigpause. Returns after a handler ran.
#[inline]
pub fn sigsuspend(mask: &libc::sigset_t) {
    // SAFETY: valid pointer; sigsuspend always returns -1/EINTR after a handler.
    unsafe { libc::sigsuspend(mask) };
}

/// A memory mapping: anonymous private (zero-fill on demand, like sbrk'd memory) or of a
/// file, shared.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        Mapping::new(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
    }

    fn new(len: usize, flags: libc::c_int, fd: RawFd) -> io::Result<Mapping> {
        // SAFETY: a fresh mapping at an address of the kernel's choosing (of `fd` when it is
        // a descriptor; the mapping stays valid after it is closed).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// A shared, readable and writable mapping of the first `len` bytes of the file open on
    /// `fd` (opened read-write): its pages are the file's page-cache pages, so the kernel can
    /// evict clean ones and read them back from the disk on the next touch.
    pub fn shared_file(fd: RawFd, len: usize) -> io::Result<Mapping> {
        Mapping::new(len, libc::MAP_SHARED, fd)
    }

    /// Loads the byte at `offset` with a volatile read, so the touch (and its page fault)
    /// cannot be optimized away, and the page stays clean.
    #[inline]
    pub fn peek(&self, offset: usize) -> u8 {
        assert!(offset < self.len, "peek beyond the mapping");
        // SAFETY: offset is within the mapping, which is readable.
        unsafe { self.ptr.add(offset).read_volatile() }
    }

    pub fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is exactly our mapping.
        cvt(unsafe { libc::madvise(self.ptr.cast(), self.len, advice) })?;
        Ok(())
    }

    /// Stores `value` at byte `offset` with a volatile write, so the touch (and its page
    /// fault) cannot be optimized away.
    #[inline]
    pub fn touch(&self, offset: usize, value: u8) {
        assert!(offset < self.len, "touch beyond the mapping");
        // SAFETY: offset is within the mapping, which is readable and writable.
        unsafe { self.ptr.add(offset).write_volatile(value) };
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapping as 32-bit words (the memory suite's bandwidth loops: lmbench's `bw_mem`
    /// works on `int`s). Anonymous memory reads as zeros until written.
    pub fn words_mut(&mut self) -> &mut [u32] {
        // SAFETY: the mapping is page-aligned (so aligned for u32), readable and writable,
        // owned by self for the borrow's life, and len / 4 words fit in it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u32>(), self.len / 4) }
    }

    /// Stores in the word at byte `at` the address of byte `to`: one link of a pointer chain
    /// for [`Mapping::chase`] (lmbench's `*(char **)&addr[at] = &addr[to]`).
    pub fn link(&self, at: usize, to: usize) {
        let w = std::mem::size_of::<usize>();
        assert!(
            at.is_multiple_of(w) && at + w <= self.len && to + w <= self.len,
            "link outside the mapping"
        );
        // SAFETY: `at` is word-aligned and the word lies inside the writable mapping.
        unsafe {
            self.ptr
                .add(at)
                .cast::<usize>()
                .write_volatile(self.ptr as usize + to)
        };
    }

    /// Follows the chain [`Mapping::link`] built for `loads` loads from byte `from`, each load
    /// taking its address from the one before (lmbench `lat_mem_rd`'s `p = (char **)*p`), and
    /// returns the byte offset it stopped at, so that the next call continues from there. The
    /// loads are volatile, so none is removed; each address is checked against the mapping
    /// (a compare beside the load, off its dependency chain) so that a chain another link broke
    /// stops with a panic instead of reading outside it.
    #[inline(never)]
    pub fn chase(&self, from: usize, loads: u64) -> usize {
        let base = self.ptr as usize;
        let last = self.len.saturating_sub(std::mem::size_of::<usize>());
        let mut p = base + from;
        for _ in 0..loads {
            assert!(
                p.wrapping_sub(base) <= last && p.is_multiple_of(std::mem::size_of::<usize>()),
                "pointer chain leaves the mapping"
            );
            // SAFETY: p was just checked to be an aligned word inside the readable mapping.
            p = unsafe { (p as *const usize).read_volatile() };
        }
        p.wrapping_sub(base)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own the mapping and nothing borrows it past drop.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// posix_fadvise(POSIX_FADV_DONTNEED) over `len` bytes from `offset` (0: to the end): drops
/// the file's clean page-cache pages in that range.
pub fn fadvise_dontneed(fd: RawFd, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain integer arguments; posix_fadvise returns the error number itself.
    let r = unsafe {
        libc::posix_fadvise(
            fd,
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// The file-system type (statfs f_type magic) of the file system holding `path`.
pub fn fs_type(path: &std::path::Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statfs is plain old data; zeroed is a valid value for it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer, both outliving the call.
    cvt(unsafe { libc::statfs(p.as_ptr(), &mut st) })?;
    Ok(st.f_type as i64)
}

/// Grows the heap with sbrk(2) by `len` bytes and stores a byte every `stride` bytes, as the
/// forks and execs programs do ("sbrk(size), fault pages"). Returns the old break.
pub fn sbrk_and_touch(len: usize, stride: usize) -> io::Result<usize> {
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: growing the break by len; glibc's malloc tolerates a foreign sbrk (it treats the
    // heap as non-contiguous from then on).
    let p = unsafe { libc::sbrk(len as libc::intptr_t) };
    if p as isize == -1 {
        return Err(io::Error::last_os_error());
    }
    let base = p as *mut u8;
    let mut i = 0;
    while i < len {
        // SAFETY: [base, base+len) was just added to the heap and is writable.
        unsafe { base.add(i).write_volatile(i as u8) };
        i += stride;
    }
    Ok(p as usize)
}

/// An empty in-memory file (memfd, close-on-exec): scratch that leaves nothing on disk and
/// goes away with its last descriptor.
pub fn memfd(name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; flags are valid.
    let fd = cvt(unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: the kernel just gave us this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An in-memory executable file (memfd), so exec benchmarks need nothing on disk.
pub fn memfd_executable(name: &CStr, bytes: &[u8]) -> io::Result<OwnedFd> {
    let owned = memfd(name)?;
    let mut off = 0;
    while off < bytes.len() {
        off += write(owned.as_raw_fd(), &bytes[off..])?;
    }
    // SAFETY: fchmod on our own descriptor.
    cvt(unsafe { libc::fchmod(owned.as_raw_fd(), 0o755) })?;
    Ok(owned)
}

/// Runs `img`: execveat(fd, name, argv, envp), the file `name` looked up relative to the
/// directory `fd` (a path lookup, as execv of a relative name), or with an empty name and
/// AT_EMPTY_PATH the file behind `fd` itself. Returns only on failure.
#[inline]
pub fn exec_image(img: &ExecImage) -> io::Error {
    debug_assert!(img.argv.last().is_some_and(|p| p.is_null()));
    debug_assert!(img.envp.last().is_some_and(|p| p.is_null()));
    let flags = if img.name.is_empty() {
        libc::AT_EMPTY_PATH
    } else {
        0
    };
    // SAFETY: argv and envp are NULL-terminated arrays of valid C strings kept alive by the
    // caller, and name is NUL-terminated.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            img.fd,
            img.name.as_ptr(),
            img.argv.as_ptr(),
            img.envp.as_ptr(),
            flags,
        )
    };
    io::Error::last_os_error()
}

/// In a forked child before exec: makes each `(from, to)` descriptor available as `to`,
/// inherited across exec (no FD_CLOEXEC). Every `from` is first copied above the targets, so
/// a target that happens to be another pair's source is not lost.
pub fn place_fds_for_exec(pairs: &[(RawFd, RawFd)]) -> io::Result<()> {
    let above = pairs.iter().map(|p| p.1).max().unwrap_or(0) + 1;
    let mut high = Vec::with_capacity(pairs.len());
    for &(from, _) in pairs {
        // SAFETY: F_DUPFD_CLOEXEC takes a descriptor and a lowest new number.
        high.push(cvt(unsafe {
            libc::fcntl(from, libc::F_DUPFD_CLOEXEC, above)
        })?);
    }
    for (&h, &(_, to)) in high.iter().zip(pairs) {
        // SAFETY: dup2 of a descriptor we hold; the copy it makes has FD_CLOEXEC clear.
        cvt(unsafe { libc::dup2(h, to) })?;
    }
    Ok(())
}

/// fchdir(2): makes the directory `fd` the working directory.
pub fn fchdir(fd: RawFd) -> io::Result<()> {
    // SAFETY: fchdir takes a descriptor.
    cvt(unsafe { libc::fchdir(fd) }).map(|_| ())
}

/// Whether the file system holding `path` is mounted noexec (no program there may run).
pub fn noexec(path: &std::path::Path) -> io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: statvfs is plain old data written by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated and st is a valid out pointer.
    cvt(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    Ok(st.f_flag & libc::ST_NOEXEC != 0)
}

/// What a child needs to exec: the executable's descriptor and NULL-terminated argv/envp.
pub struct ExecImage<'a> {
    /// A directory to look `name` up in, or (with an empty name) the executable itself.
    pub fd: RawFd,
    pub name: &'a CStr,
    pub argv: &'a [*const libc::c_char],
    pub envp: &'a [*const libc::c_char],
}

/// A pidfd for `pid` (Linux 5.3+), pollable for the child's exit.
pub fn pidfd_open(pid: Pid) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A timerfd on the monotonic clock (close-on-exec), armed to expire every `period_ns` from
/// `period_ns` from now: each expiry is a high-resolution timer interrupt on the CPU that
/// armed it (or last read it), and a read(2) of its 8-byte count waits for the next.
pub fn timerfd_periodic(period_ns: u64) -> io::Result<OwnedFd> {
    // SAFETY: timerfd_create takes a clock id and flags.
    let fd = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) })?;
    // SAFETY: the kernel just gave us this descriptor.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let every = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: every,
        it_value: every,
    };
    // SAFETY: a valid descriptor and itimerspec; the old value is not asked for.
    cvt(unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) })?;
    Ok(owned)
}

/// Waits up to `timeout_ms` for `fd` to become readable; Ok(true) if it did.
pub fn poll_readable(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(r > 0)
}

/// The effective user id of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf with a valid name.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Ticks per second of /proc/stat's CPU counters.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf with a valid name.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Raises this process's soft limit on open descriptors to its hard limit (as a shell's
/// `ulimit -n unlimited` would, within what the administrator allows); returns the new soft
/// limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills one rlimit record we own.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) })?;
    if r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: setrlimit reads one valid rlimit record.
        cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) })?;
    }
    Ok(r.rlim_cur)
}

/// fstatat(2): the name lookup of stat(2) (`follow`) or lstat(2) relative to the directory
/// behind `dir`, so that a benchmark's path has exactly the components it chose.
#[inline]
pub fn stat_at(dir: RawFd, path: &CStr, follow: bool) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value of this plain C record.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    // SAFETY: path is NUL-terminated and st is a valid stat record we own.
    cvt(unsafe { libc::fstatat(dir, path.as_ptr(), &mut st, flags) })?;
    Ok(st)
}

/// creat(2) of a new name in the directory behind `dir` (openat with O_CREAT | O_EXCL, mode
/// 0600, close-on-exec).
#[inline]
pub fn create_at(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC;
    // SAFETY: name is NUL-terminated; the mode argument is read because of O_CREAT.
    let fd = cvt(unsafe { libc::openat(dir, name.as_ptr(), flags, 0o600 as libc::c_uint) })?;
    // SAFETY: the kernel just gave us this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// link(2): a new name `new` in the directory behind `dir` for the file `old` there.
#[inline]
pub fn link_at(dir: RawFd, old: &CStr, new: &CStr) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    cvt(unsafe { libc::linkat(dir, old.as_ptr(), dir, new.as_ptr(), 0) }).map(drop)
}

/// unlink(2) of a name in the directory behind `dir`.
#[inline]
pub fn unlink_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), 0) }).map(drop)
}

/// The user name of `uid` from the user database, looked up through the C library's NSS
/// (getpwuid_r, as ls -l does); `None` when the database has no such user.
pub fn user_name(uid: u32) -> io::Result<Option<String>> {
    Ok(user_entry(uid)?.map(|(name, _)| name))
}

/// A user's primary group id from the user database (getpwuid_r); `None` when there is no
/// such user.
pub fn user_gid(uid: u32) -> io::Result<Option<u32>> {
    Ok(user_entry(uid)?.map(|(_, gid)| gid))
}

/// The name and primary group id of `uid` (getpwuid_r); `None` when there is no such user.
fn user_entry(uid: u32) -> io::Result<Option<(String, u32)>> {
    // SAFETY: an all-zero passwd is a valid value (null pointers, zero ids).
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: every pointer is to memory we own, buf.len() bytes at buf; on success `found`
    // points to pw, whose strings live in buf.
    let r = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    if found.is_null() || pw.pw_name.is_null() {
        return Ok(None);
    }
    // SAFETY: pw_name is a NUL-terminated string inside buf, which is still alive.
    let name = unsafe { CStr::from_ptr(pw.pw_name) }
        .to_string_lossy()
        .into_owned();
    Ok(Some((name, pw.pw_gid)))
}

/// The group name of `gid` from the group database (getgrgid_r through NSS, as ls -l does);
/// `None` when the database has no such group.
pub fn group_name(gid: u32) -> io::Result<Option<String>> {
    // SAFETY: an all-zero group is a valid value (null pointers, zero ids).
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: as in user_name: every pointer is to memory we own.
    let r = unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), buf.len(), &mut found) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    if found.is_null() || gr.gr_name.is_null() {
        return Ok(None);
    }
    // SAFETY: gr_name is a NUL-terminated string inside buf, which is still alive.
    Ok(Some(
        unsafe { CStr::from_ptr(gr.gr_name) }
            .to_string_lossy()
            .into_owned(),
    ))
}

/// An unlinked read-write file in `dir`: O_TMPFILE, so it never has a name and vanishes with
/// the process however it ends; else a named file (the pid and a random number: concurrent
/// benchmarks of one process, and a pid's earlier owner, never collide) removed right after it
/// is opened.
pub fn unlinked_file(dir: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir);
    if let Ok(f) = tmp {
        return Ok(f);
    }
    let mut rnd = [0u8; 8];
    random_bytes(&mut rnd)?;
    let path = dir.join(format!(
        "sysperf-{}-{:x}",
        std::process::id(),
        u64::from_ne_bytes(rnd)
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}

/// Fills `buf` from the kernel's random source (run ids).
pub fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: buf[off..] is valid for writes.
        let n = unsafe { libc::getrandom(buf[off..].as_mut_ptr().cast(), buf.len() - off, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        off += n as usize;
    }
    Ok(())
}

/// Moves this process into a mount namespace of its own, in which mounts made afterwards are
/// seen by this process and its children only and vanish with them (however they end), and
/// no mount event propagates back to the rest of the system (the tree is made a slave of its
/// origin). Needs CAP_SYS_ADMIN. Call while single-threaded: it affects the calling thread.
pub fn private_mount_namespace() -> io::Result<()> {
    // SAFETY: unshare takes a flag word.
    cvt(unsafe { libc::unshare(libc::CLONE_NEWNS) })?;
    // SAFETY: a propagation change on "/": no source, type or data (null pointers allowed).
    cvt(unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        )
    })?;
    Ok(())
}

/// mount -t `fstype` nodev `target`, for pseudo file systems without a device (tracefs).
pub fn mount_pseudo(fstype: &CStr, target: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let t = std::ffi::CString::new(target.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: all strings are NUL-terminated and outlive the call; no data.
    cvt(unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            t.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    })?;
    Ok(())
}

/// A read-only overlay on the directory `target` (in this mount namespace): the files of
/// `upper` over those of `target` itself (`mount -t overlay -o ro,lowerdir=UPPER:TARGET`).
/// A mount on a directory stays when another namespace replaces a file in it, where a bind
/// mount on that file is detached (the kernel lazily unmounts mounts on unlinked dentries).
pub fn overlay_mount(upper: &std::path::Path, target: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    // In lowerdir, ':' separates layers and ',' options: escaped with a backslash.
    let escape = |p: &std::path::Path| {
        let mut v = Vec::new();
        for &b in p.as_os_str().as_bytes() {
            if matches!(b, b'\\' | b':' | b',') {
                v.push(b'\\');
            }
            v.push(b);
        }
        v
    };
    let mut opts = b"lowerdir=".to_vec();
    opts.extend(escape(upper));
    opts.push(b':');
    opts.extend(escape(target));
    let c = |b: Vec<u8>| {
        std::ffi::CString::new(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    };
    let (t, o) = (c(target.as_os_str().as_bytes().to_vec())?, c(opts)?);
    // SAFETY: all strings are NUL-terminated and outlive the call; the data is a C string.
    cvt(unsafe {
        libc::mount(
            c"overlay".as_ptr(),
            t.as_ptr(),
            c"overlay".as_ptr(),
            libc::MS_RDONLY,
            o.as_ptr().cast(),
        )
    })?;
    Ok(())
}

/// mount --bind `source` `target`: `target` (a file or a directory) shows `source` from now on,
/// in this mount namespace.
pub fn bind_mount(source: &std::path::Path, target: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    };
    let (s, t) = (c(source)?, c(target)?);
    // SAFETY: both paths are NUL-terminated and outlive the call; no type or data.
    cvt(unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    })?;
    Ok(())
}

/// Detaches the mount at `target` (umount2 with MNT_DETACH).
pub fn unmount(target: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let t = std::ffi::CString::new(target.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::umount2(t.as_ptr(), libc::MNT_DETACH) })?;
    Ok(())
}

/// mkfifo(3): creates a named pipe (the BBN suite's "ports") with permission bits `mode`.
pub fn mkfifo(path: &std::path::Path, mode: libc::mode_t) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::mkfifo(p.as_ptr(), mode) })?;
    Ok(())
}

/// setsockopt(2) of an int option (SO_SNDBUF, TCP_NODELAY, TCP_QUICKACK, TCP_CORK, ...).
pub fn set_sock_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: value lives across the call and its size is passed with it.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// shutdown(2) of a socket's receiving side. On a listening socket (Unix or TCP), accept(2)
/// on it, here or in a child that shares it, then fails with EINVAL once no connection is
/// queued, and new connections are refused: how the net suite's connection tests end their
/// server.
pub fn shutdown_read(fd: RawFd) -> io::Result<()> {
    // SAFETY: shutdown takes plain integers.
    cvt(unsafe { libc::shutdown(fd, libc::SHUT_RD) })?;
    Ok(())
}

/// getsockopt(2) of an int option.
pub fn get_sock_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len are valid for writes and len holds value's size.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(value)
}

/// fstat(2)'s st_blksize: the I/O size the kernel suggests for a descriptor.
pub fn blksize(fd: RawFd) -> io::Result<u64> {
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: st is valid for writes.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st.st_blksize as u64)
}

// ---------------------------------------------------------------------------------------
// perf_event_open(2): the counters of `run --observe` and the sampler of `profile`.

/// Constants of linux/perf_event.h that sysperf uses (libc does not carry them).
pub mod perf {
    pub const TYPE_HARDWARE: u32 = 0;
    pub const TYPE_SOFTWARE: u32 = 1;
    pub const HW_CPU_CYCLES: u64 = 0;
    pub const HW_INSTRUCTIONS: u64 = 1;
    pub const SW_CPU_CLOCK: u64 = 0;
    pub const SW_TASK_CLOCK: u64 = 1;
    pub const SW_PAGE_FAULTS: u64 = 2;
    pub const SW_CONTEXT_SWITCHES: u64 = 3;
    pub const SW_CPU_MIGRATIONS: u64 = 4;
    pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const SAMPLE_IP: u64 = 1 << 0;
    pub const SAMPLE_TID: u64 = 1 << 1;
    pub const SAMPLE_TIME: u64 = 1 << 2;
    pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
    pub const SAMPLE_PERIOD: u64 = 1 << 8;
    // Bits of the attribute's flag word, in the order of the C bitfield.
    pub const FLAG_DISABLED: u64 = 1 << 0;
    pub const FLAG_INHERIT: u64 = 1 << 1;
    pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
    pub const FLAG_EXCLUDE_IDLE: u64 = 1 << 7;
    pub const FLAG_MMAP: u64 = 1 << 8;
    pub const FLAG_COMM: u64 = 1 << 9;
    pub const FLAG_TASK: u64 = 1 << 13;
    pub const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const FLAG_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const FLAG_COMM_EXEC: u64 = 1 << 24;
    pub const FLAG_USE_CLOCKID: u64 = 1 << 25;
}

/// `struct perf_event_attr` up to `sig_data` (PERF_ATTR_SIZE_VER7, 128 bytes), with the C
/// bitfield as one flag word (see [`perf`]). Unused fields stay zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfEventAttr {
    pub kind: u32,
    pub size: u32,
    pub config: u64,
    /// sample_period, or sample_freq when the freq flag is set.
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    pub reserved_3: u32,
    pub sig_data: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 128);

impl PerfEventAttr {
    pub fn new(kind: u32, config: u64) -> PerfEventAttr {
        PerfEventAttr {
            kind,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            ..PerfEventAttr::default()
        }
    }
}

/// perf_event_open(attr, pid, cpu, -1, FD_CLOEXEC): pid 0 is the caller, cpu -1 any CPU.
pub fn perf_event_open(attr: &PerfEventAttr, pid: Pid, cpu: i32) -> io::Result<OwnedFd> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
    // SAFETY: attr points to a valid, fully initialized perf_event_attr whose size field
    // matches its layout; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Enables (or disables) every perf event this process opened, and their inherited copies in
/// its children, in one system call (prctl PR_TASK_PERF_EVENTS_ENABLE/DISABLE).
#[inline]
pub fn perf_events_enable_own(enable: bool) {
    const PR_TASK_PERF_EVENTS_DISABLE: libc::c_int = 31;
    const PR_TASK_PERF_EVENTS_ENABLE: libc::c_int = 32;
    let op = if enable {
        PR_TASK_PERF_EVENTS_ENABLE
    } else {
        PR_TASK_PERF_EVENTS_DISABLE
    };
    // SAFETY: these prctl operations take no pointers and cannot fail.
    unsafe { libc::prctl(op, 0 as libc::c_ulong, 0 as libc::c_ulong, 0, 0) };
}

/// Reads a counter opened with read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING:
/// [value, time enabled ns, time running ns].
pub fn perf_read_counter(fd: RawFd) -> io::Result<[u64; 3]> {
    let mut b = [0u8; 24];
    let n = read(fd, &mut b)?;
    if n != b.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("perf counter read returned {n} bytes, expected 24"),
        ));
    }
    let at = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    Ok([at(0), at(1), at(2)])
}

/// The ring buffer of a sampling perf event: one metadata page and `2^k` data pages mapped
/// shared, read by [`PerfRing::drain`]. Unmapped on drop (the descriptor is the caller's).
pub struct PerfRing {
    base: *mut u8,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
}

// The metadata page's control words (struct perf_event_mmap_page).
const RING_DATA_HEAD: usize = 1024;
const RING_DATA_TAIL: usize = 1032;
const RING_DATA_OFFSET: usize = 1040;
const RING_DATA_SIZE: usize = 1048;

impl PerfRing {
    /// Maps `data_pages` (a power of two) data pages of the event behind `fd`.
    pub fn map(fd: RawFd, data_pages: usize) -> io::Result<PerfRing> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "perf ring buffer pages must be a power of two",
            ));
        }
        let page = page_size();
        let map_len = page * (1 + data_pages);
        // SAFETY: a fresh shared mapping of the perf event's buffer at an address of the
        // kernel's choosing; PROT_WRITE lets us publish data_tail so the kernel never
        // overwrites records we have not read.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = p as *mut u8;
        // SAFETY: the metadata page is mapped and these u64 fields are 8-byte aligned
        // within it; kernels older than 4.1 leave them zero.
        let (off, size) = unsafe {
            (
                (base.add(RING_DATA_OFFSET) as *const u64).read_volatile() as usize,
                (base.add(RING_DATA_SIZE) as *const u64).read_volatile() as usize,
            )
        };
        let (data_offset, data_size) = if size == 0 {
            (page, page * data_pages)
        } else {
            (off, size)
        };
        Ok(PerfRing {
            base,
            map_len,
            data_offset,
            data_size,
        })
    }

    /// Appends every complete record written since the last drain to `out` (records that
    /// wrap around the end of the buffer come out contiguous) and releases that space to
    /// the kernel. Returns the number of bytes appended.
    pub fn drain(&mut self, out: &mut Vec<u8>) -> usize {
        use std::sync::atomic::{AtomicU64, Ordering};
        // SAFETY: data_head and data_tail are naturally aligned u64 words of the mapped
        // metadata page, shared with the kernel, which is what atomics are for.
        let (head_word, tail_word) = unsafe {
            (
                &*(self.base.add(RING_DATA_HEAD) as *const AtomicU64),
                &*(self.base.add(RING_DATA_TAIL) as *const AtomicU64),
            )
        };
        // Acquire: the records up to head are visible once head is.
        let head = head_word.load(Ordering::Acquire);
        let tail = tail_word.load(Ordering::Relaxed);
        let len = head.wrapping_sub(tail) as usize;
        if len == 0 || len > self.data_size {
            return 0;
        }
        let start = (tail as usize) % self.data_size;
        let first = len.min(self.data_size - start);
        // SAFETY: [data_offset, data_offset + data_size) is the mapped data area; start +
        // first <= data_size and len - first < data_size, so both slices stay inside it.
        let (a, b) = unsafe {
            let data = self.base.add(self.data_offset);
            (
                std::slice::from_raw_parts(data.add(start), first),
                std::slice::from_raw_parts(data, len - first),
            )
        };
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        // Release: our reads of the records complete before the kernel may reuse the space.
        tail_word.store(head, Ordering::Release);
        len
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: we own the mapping and no slice into it outlives drain().
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

// ---------------------------------------------------------------------------------------
// Descriptor sets and resource limits: the scaling suite's select/poll/epoll and its
// process-table sizes.

/// An eventfd with counter `init`, close-on-exec: one descriptor per object, readable exactly
/// when its counter is above zero.
pub fn eventfd(init: u32) -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes an integer and a flag word.
    let fd = cvt(unsafe { libc::eventfd(init, libc::EFD_CLOEXEC) })?;
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The soft RLIMIT_NPROC (u64::MAX when unlimited).
pub fn nproc_limit() -> io::Result<u64> {
    // SAFETY: rlimit is plain old data written by the call.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: valid resource and pointer.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) })?;
    Ok(if r.rlim_cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        r.rlim_cur as u64
    })
}

/// A select(2) read set; only descriptors below FD_SETSIZE fit.
#[derive(Clone, Copy)]
pub struct FdSet {
    set: libc::fd_set,
    nfds: RawFd,
}

impl FdSet {
    pub fn new() -> FdSet {
        // SAFETY: fd_set is a plain bit array; FD_ZERO initializes it.
        let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to our set.
        unsafe { libc::FD_ZERO(&mut set) };
        FdSet { set, nfds: 0 }
    }

    /// Adds `fd`; fails for a descriptor select cannot take (negative or >= FD_SETSIZE).
    pub fn insert(&mut self, fd: RawFd) -> io::Result<()> {
        if fd < 0 || fd as usize >= libc::FD_SETSIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "descriptor {fd} does not fit select's FD_SETSIZE ({})",
                    libc::FD_SETSIZE
                ),
            ));
        }
        // SAFETY: 0 <= fd < FD_SETSIZE, checked above; valid pointer.
        unsafe { libc::FD_SET(fd, &mut self.set) };
        self.nfds = self.nfds.max(fd + 1);
        Ok(())
    }
}

impl Default for FdSet {
    fn default() -> FdSet {
        FdSet::new()
    }
}

/// select(2) for reading on `set` with a zero timeout (a poll, never a sleep); the set is
/// rewritten with the ready descriptors. Returns how many are ready.
#[inline]
pub fn select_read_now(set: &mut FdSet) -> io::Result<usize> {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: a valid read set covering nfds descriptors, no write or except sets, and a
    // valid timeout.
    let n = cvt(unsafe {
        libc::select(
            set.nfds,
            &mut set.set,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut tv,
        )
    })?;
    Ok(n as usize)
}

/// poll(2) over `fds`, waiting up to `timeout_ms` (-1: until one has an event); returns how
/// many have events.
pub fn poll_wait(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: the slice is valid for fds.len() pollfd structures.
    let n = cvt(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) })?;
    Ok(n as usize)
}

/// poll(2) over `fds` with a zero timeout; returns how many have events.
#[inline]
pub fn poll_now(fds: &mut [libc::pollfd]) -> io::Result<usize> {
    // SAFETY: the slice is valid for fds.len() pollfd structures.
    let n = cvt(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) })?;
    Ok(n as usize)
}

/// An epoll instance (level-triggered interest in readability).
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes a flag word.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Registers `fd` for readability; `fd` comes back in the event's data.
    pub fn add_readable(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: valid epoll and target descriptors and a valid event.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// epoll_wait with a zero timeout into `events`; returns how many are ready.
    #[inline]
    pub fn wait_now(&self, events: &mut [libc::epoll_event]) -> io::Result<usize> {
        let max = events.len().min(libc::c_int::MAX as usize) as libc::c_int;
        // SAFETY: events is valid for `max` entries.
        let n = cvt(unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), max, 0) })?;
        Ok(n as usize)
    }
}

/// openat(dir, path, flags | O_CLOEXEC): opens `path` relative to the directory `dir`, so a
/// one-component name costs one lookup (Feder's open/close of "file" in the current directory).
pub fn open_at(dir: RawFd, path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated and outlives the call; `dir` is the caller's descriptor.
    let fd = cvt(unsafe { libc::openat(dir, path.as_ptr(), flags | libc::O_CLOEXEC) })?;
    // SAFETY: openat just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// faccessat(dir, path, F_OK): a path search that returns no data (Feder's "search path" rows
/// use access(2)).
pub fn access_at(dir: RawFd, path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and outlives the call; `dir` is the caller's descriptor.
    cvt(unsafe { libc::faccessat(dir, path.as_ptr(), libc::F_OK, 0) })?;
    Ok(())
}

/// send(2) once on a socket, no flags; returns bytes sent.
#[inline]
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), 0) };
    cvt_long(n as i64)
}

/// recv(2) once on a socket, no flags; returns bytes received.
#[inline]
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid and writable for buf.len() bytes.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    cvt_long(n as i64)
}

impl Mapping {
    /// The mapping's first address (as /proc/self/maps shows it).
    pub fn address(&self) -> usize {
        self.ptr as usize
    }

    /// A shared mapping of the first `len` bytes of the file open on `fd` (read-write) whose
    /// pages are all mapped by mmap itself (MAP_POPULATE): no touch faults afterwards.
    pub fn shared_file_populated(fd: RawFd, len: usize) -> io::Result<Mapping> {
        Mapping::new(len, libc::MAP_SHARED | libc::MAP_POPULATE, fd)
    }
}

/// FUTEX_WAIT_PRIVATE on `word` while it holds `expected`: returns when woken, at once when
/// the word already differs (EAGAIN) or on a signal (EINTR); the caller re-checks the word.
#[inline]
pub fn futex_wait(word: &std::sync::atomic::AtomicU32, expected: u32) -> io::Result<()> {
    match futex_wait_raw(word, expected) {
        Err(e) if !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) => Err(e),
        _ => Ok(()),
    }
}

/// FUTEX_WAKE_PRIVATE of up to one waiter on `word`; returns how many were woken.
#[inline]
pub fn futex_wake(word: &std::sync::atomic::AtomicU32) -> io::Result<usize> {
    futex_wake_n(word, 1)
}

/// FUTEX_WAIT_PRIVATE with the kernel's answer as it is (EAGAIN when the word differs from
/// `expected`, EINTR on a signal), for the benchmarks that check what each call did (perf
/// bench's futex tests, whose hash test wants EAGAIN every time).
#[inline]
pub fn futex_wait_raw(word: &std::sync::atomic::AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: word is a live, aligned u32 for the whole call; no timeout pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
    cvt_long(r).map(|_| ())
}

/// FUTEX_WAKE_PRIVATE of up to `n` waiters on `word`; returns how many were woken.
#[inline]
pub fn futex_wake_n(word: &std::sync::atomic::AtomicU32, n: u32) -> io::Result<usize> {
    let n = n.min(i32::MAX as u32);
    // SAFETY: word is a live, aligned u32; FUTEX_WAKE only reads its address.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    };
    cvt_long(r)
}

/// FUTEX_CMP_REQUEUE_PRIVATE: while `from` holds `expected`, wakes up to `nr_wake` of its
/// waiters and moves up to `nr_requeue` others to wait on `to`; returns how many it woke or
/// moved.
#[inline]
pub fn futex_cmp_requeue(
    from: &std::sync::atomic::AtomicU32,
    expected: u32,
    to: &std::sync::atomic::AtomicU32,
    nr_wake: u32,
    nr_requeue: u32,
) -> io::Result<usize> {
    // SAFETY: both words are live, aligned u32s; the fourth argument of FUTEX_CMP_REQUEUE is
    // a count passed in the timeout's place, as futex(2) documents.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            from.as_ptr(),
            libc::FUTEX_CMP_REQUEUE | libc::FUTEX_PRIVATE_FLAG,
            nr_wake,
            nr_requeue as libc::c_ulong,
            to.as_ptr(),
            expected,
        )
    };
    cvt_long(r)
}

/// FUTEX_LOCK_PI_PRIVATE on `word` (its owner's tid once taken), blocking while another
/// thread holds it.
#[inline]
pub fn futex_lock_pi(word: &std::sync::atomic::AtomicU32) -> io::Result<()> {
    // SAFETY: word is a live, aligned u32; no timeout pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_LOCK_PI | libc::FUTEX_PRIVATE_FLAG,
            0,
            std::ptr::null::<libc::timespec>(),
        )
    };
    cvt_long(r).map(|_| ())
}

/// FUTEX_UNLOCK_PI_PRIVATE on `word`, which the calling thread holds.
#[inline]
pub fn futex_unlock_pi(word: &std::sync::atomic::AtomicU32) -> io::Result<()> {
    // SAFETY: word is a live, aligned u32.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_UNLOCK_PI | libc::FUTEX_PRIVATE_FLAG,
        )
    };
    cvt_long(r).map(|_| ())
}

/// Whether thread `tid` of this process sleeps in futex(2) on `word`: its state is S and
/// /proc/self/task/TID/syscall names futex with `word` as its first argument.
pub fn thread_waits_on_futex(tid: Pid, word: &std::sync::atomic::AtomicU32) -> io::Result<bool> {
    let task = format!("/proc/self/task/{tid}");
    let stat = std::fs::read_to_string(format!("{task}/stat"))?;
    // The state follows the command name, which is in parentheses and may hold anything.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    if state != Some("S") {
        return Ok(false);
    }
    let call = std::fs::read_to_string(format!("{task}/syscall"))?;
    Ok(parse_syscall_line(&call) == Some((libc::SYS_futex, word.as_ptr() as u64)))
}

/// The system call number and first argument of a /proc/PID/syscall line ("202 0x7f... ..."),
/// None when the task runs or sleeps outside a system call.
fn parse_syscall_line(line: &str) -> Option<(libc::c_long, u64)> {
    let mut f = line.split_whitespace();
    let nr: libc::c_long = f.next()?.parse().ok()?;
    let arg0 = u64::from_str_radix(f.next()?.trim_start_matches("0x"), 16).ok()?;
    (nr >= 0).then_some((nr, arg0))
}

/// sched_yield(2).
#[inline]
pub fn sched_yield() {
    // SAFETY: no arguments; it cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// Installs a seccomp filter that allows every system call (`sysperf ab --switch seccomp`):
/// what a filter costs per system call, with nothing denied. Sets no_new_privs first, as an
/// unprivileged process must; children inherit both.
pub fn seccomp_allow_all() -> io::Result<()> {
    seccomp_arg_checks(0)
}

/// Installs a seccomp filter that loads the system call's first argument and compares it,
/// `checks` times, then allows the call (`sysperf ab --switch seccomp-checks=N`, a planted
/// slowdown of every system call): because it reads an argument, the kernel cannot cache its
/// verdict, so each call pays for the 2 x `checks` + 1 instructions. 0 is the allow-all
/// filter. At most 2047 checks (the kernel's 4096 instructions).
pub fn seccomp_arg_checks(checks: u32) -> io::Result<()> {
    if checks > 2047 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a seccomp filter holds at most 4096 instructions (2047 checks)",
        ));
    }
    // offsetof(struct seccomp_data, args[0]).
    const ARG0: u32 = 16;
    let insn = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let mut prog: Vec<libc::sock_filter> = (0..checks)
        .flat_map(|i| {
            [
                insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, ARG0),
                // Both branches go on to the next check: the comparison is work, not a decision.
                insn(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0x5EC0_0000 + i),
            ]
        })
        .collect();
    prog.push(insn(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes a boolean.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fprog points at `prog`, which lives until the call returns (the kernel copies
    // it); its length is `prog.len()`, at most 4095.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &fprog as *const libc::sock_fprog as libc::c_ulong,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling task's speculative store bypass control (prctl PR_GET_SPECULATION_CTRL): the
/// PR_SPEC_* bits, 0 when the CPU is not affected.
pub fn store_bypass_ctrl() -> io::Result<u32> {
    // SAFETY: PR_GET_SPECULATION_CTRL takes a constant and returns bits.
    let r = unsafe {
        libc::prctl(
            libc::PR_GET_SPECULATION_CTRL,
            libc::PR_SPEC_STORE_BYPASS as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as u32)
}

/// Disables speculative store bypass for the calling task and the children it forks (prctl
/// PR_SET_SPECULATION_CTRL, PR_SPEC_STORE_BYPASS, PR_SPEC_DISABLE): `ab --switch speculation`.
pub fn disable_store_bypass() -> io::Result<()> {
    // SAFETY: PR_SET_SPECULATION_CTRL takes constants only.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SPECULATION_CTRL,
            libc::PR_SPEC_STORE_BYPASS as libc::c_ulong,
            libc::PR_SPEC_DISABLE as libc::c_ulong,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// setns(2) into the network namespace `ns` (an open /run/netns/NAME or /proc/…/ns/net):
/// sockets made afterwards by this thread belong to it.
pub fn enter_net_namespace(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: setns only reads the descriptor and the flag.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// The size of an interface name with its NUL (IFNAMSIZ).
const IFNAMSIZ: usize = 16;

/// struct ifreq as TUNSETIFF reads it: the name and the flags (the rest of the union unused).
#[repr(C)]
struct IfReqFlags {
    name: [u8; IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// A TUN device named `name` (IFF_TUN | IFF_NO_PI: bare IP packets, no header), made in the
/// network namespace of the calling thread; the returned descriptor (non-blocking,
/// close-on-exec) reads the packets the kernel sends through the device and writes packets
/// it receives. The device is not persistent: it goes when the last copy of the descriptor
/// is closed.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name:?} must be 1 to 15 bytes"),
        ));
    }
    // SAFETY: a NUL-terminated path and flags.
    let fd = cvt(unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: the kernel just gave us this descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReqFlags {
        name: [0; IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes one struct ifreq (40 bytes, as IfReqFlags), which
    // lives until the call returns.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut req) })?;
    Ok(fd)
}

/// fstat(2) of a descriptor (O_PATH ones included).
pub fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value of this plain C record.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid stat record we own; fd is the caller's descriptor.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// openat(2) with a mode (for O_CREAT) and O_CLOEXEC added: `path` relative to `dir`.
pub fn open_at_mode(
    dir: RawFd,
    path: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    // SAFETY: path is NUL-terminated; the mode argument is read only with O_CREAT/O_TMPFILE.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            path.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: openat just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// mkdirat(2): a new directory `name` in the directory behind `dir`.
pub fn mkdir_at(dir: RawFd, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: name is NUL-terminated and outlives the call.
    cvt(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) }).map(drop)
}

/// renameat(2) of `from` to `to`, both in the directory behind `dir`.
pub fn rename_at(dir: RawFd, from: &CStr, to: &CStr) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    cvt(unsafe { libc::renameat(dir, from.as_ptr(), dir, to.as_ptr()) }).map(drop)
}

/// readlinkat(2): the text of the symbolic link `name` in the directory behind `dir`.
pub fn readlink_at(dir: RawFd, name: &CStr) -> io::Result<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    let mut buf = vec![0u8; 4096];
    // SAFETY: buf is valid for buf.len() bytes; name is NUL-terminated.
    let n = unsafe { libc::readlinkat(dir, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = cvt_long(n as i64)?;
    if n >= buf.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(std::ffi::OsString::from_vec(buf))
}

/// Clears O_NONBLOCK on a descriptor that was opened with it (to open a FIFO without waiting
/// for a reader), so that writes wait as usual.
pub fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL takes no argument.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL takes the new flags as an int.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) }).map(drop)
}

/// The member names the group database lists for `gid` (getgrgid_r; users whose primary
/// group it is are not listed there); `None` when there is no such group.
pub fn group_members(gid: u32) -> io::Result<Option<Vec<String>>> {
    // SAFETY: an all-zero group is a valid value (null pointers, zero ids).
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    let mut buf = vec![0 as libc::c_char; 65536];
    // SAFETY: as in group_name: every pointer is to memory we own.
    let r = unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), buf.len(), &mut found) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    if found.is_null() {
        return Ok(None);
    }
    let mut out = Vec::new();
    let mut at = gr.gr_mem;
    // SAFETY: gr_mem is a NULL-terminated array of NUL-terminated strings inside buf, which
    // is still alive; we stop at the NULL.
    unsafe {
        while !at.is_null() && !(*at).is_null() {
            out.push(CStr::from_ptr(*at).to_string_lossy().into_owned());
            at = at.add(1);
        }
    }
    Ok(Some(out))
}

/// Who holds a lock on the bytes `[start, start + len)` (len 0: to the end) of the open file
/// `fd` that conflicts with a lock of kind `write` (else read) this process would take: the
/// holder's pid when the kernel knows it (a process's lockf/fcntl lock), `Some(-1)` for an
/// open-file-description lock (whose holder the kernel does not name), `None` when nothing
/// conflicts. Asked with F_OFD_GETLK, so this process's own locks conflict too.
pub fn lock_holder(fd: RawFd, start: i64, len: i64, write: bool) -> io::Result<Option<Pid>> {
    // SAFETY: an all-zero flock is a valid value of this plain C record.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = if write { libc::F_WRLCK } else { libc::F_RDLCK } as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    // SAFETY: F_OFD_GETLK reads and writes one flock record we own (l_pid must be 0).
    cvt(unsafe { libc::fcntl(fd, libc::F_OFD_GETLK, &mut fl) })?;
    if fl.l_type == libc::F_UNLCK as libc::c_short {
        return Ok(None);
    }
    Ok(Some(fl.l_pid))
}

/// CLOCK_BOOTTIME and CLOCK_REALTIME read together, in ns: the time since boot (suspend
/// included, the clock of /proc/PID/stat's start times) and the wall clock of file times.
pub fn boot_and_wall_ns() -> (u64, i128) {
    let read = |clock| {
        // SAFETY: an all-zero timespec is valid; clock_gettime fills it.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: a valid clock id and a timespec we own.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    };
    let boot = read(libc::CLOCK_BOOTTIME);
    let wall = read(libc::CLOCK_REALTIME);
    (boot.max(0) as u64, wall)
}

// ---------------------------------------------------------------------------------------------
// Swap areas, loop devices and block-device mounts (root): the paging suite's zram swap, the
// file-system suites' loop-mounted file systems.

fn c_path(p: &std::path::Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// swapon(2) of the swap area on `device`, at priority `prio` (0..=32767).
pub fn swapon(device: &std::path::Path, prio: i32) -> io::Result<()> {
    const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
    let d = c_path(device)?;
    let flags = SWAP_FLAG_PREFER | (prio.clamp(0, 0x7fff) as libc::c_int);
    // SAFETY: a NUL-terminated path that outlives the call, and a flag word.
    cvt(unsafe { libc::swapon(d.as_ptr(), flags) })?;
    Ok(())
}

/// swapoff(2) of the swap area on `device`: its pages come back into memory first.
pub fn swapoff(device: &std::path::Path) -> io::Result<()> {
    let d = c_path(device)?;
    // SAFETY: a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::swapoff(d.as_ptr()) })?;
    Ok(())
}

/// mount(2) of the file system `fstype` on the block device `source` at `target`, with
/// `flags` (MS_*) and the file system's `options` ("" for none).
pub fn mount_device(
    source: &std::path::Path,
    target: &std::path::Path,
    fstype: &CStr,
    flags: libc::c_ulong,
    options: &str,
) -> io::Result<()> {
    let (s, t) = (c_path(source)?, c_path(target)?);
    let o = std::ffi::CString::new(options)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: every string is NUL-terminated and outlives the call; the data is a C string.
    cvt(unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            fstype.as_ptr(),
            flags,
            o.as_ptr().cast(),
        )
    })?;
    Ok(())
}

/// A loop device backed by `backing` (read-write), with LO_FLAGS_AUTOCLEAR: the kernel
/// detaches it, and lets the backing file go, when its last opener closes it (this
/// descriptor, a mount of it), however the process that made it ends. With `direct_io` the
/// device reads and writes its backing file with direct I/O (LO_FLAGS_DIRECT_IO), so that no
/// second page cache (the backing file's) stands between a read and the disk. Returns the open
/// device and its path (/dev/loopN).
pub fn loop_attach(
    backing: &std::fs::File,
    direct_io: bool,
) -> io::Result<(std::fs::File, std::path::PathBuf)> {
    use std::os::fd::AsRawFd;
    const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
    const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
    const LO_FLAGS_AUTOCLEAR: u32 = 4;
    const LO_FLAGS_DIRECT_IO: u32 = 16;
    let flags = LO_FLAGS_AUTOCLEAR | if direct_io { LO_FLAGS_DIRECT_IO } else { 0 };
    let ctl = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")?;
    // A device taken between GET_FREE and CONFIGURE by someone else answers EBUSY: try again.
    for _ in 0..8 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
        let n = cvt(unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE) })?;
        let path = std::path::PathBuf::from(format!("/dev/loop{n}"));
        let dev = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)?;
        // struct loop_config { u32 fd; u32 block_size; struct loop_info64 info; u64 reserved[8]; }
        // with loop_info64's lo_flags at byte 52 of it (after lo_device 8, lo_inode 8,
        // lo_rdevice 8, lo_offset 8, lo_sizelimit 8, lo_number 4, lo_encrypt_type 4,
        // lo_encrypt_key_size 4).
        let mut config = [0u8; 8 + 232 + 64];
        config[0..4].copy_from_slice(&(backing.as_raw_fd() as u32).to_ne_bytes());
        config[8 + 52..8 + 56].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: LOOP_CONFIGURE reads a struct loop_config, which `config` holds (304 bytes:
        // 8 + sizeof(struct loop_info64) 232 + 64 reserved), alive for the call.
        match cvt(unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE, config.as_ptr()) }) {
            Ok(_) => return Ok((dev, path)),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free loop device stayed free"))
}

/// syncfs(2): writes the file system that `fd` is on back to its device.
pub fn syncfs(fd: RawFd) -> io::Result<()> {
    // SAFETY: syncfs takes a descriptor.
    cvt(unsafe { libc::syncfs(fd) })?;
    Ok(())
}

/// The block size of the file system `path` is on (statfs's f_bsize).
pub fn fs_block_size(path: &std::path::Path) -> io::Result<u64> {
    let p = c_path(path)?;
    // SAFETY: statfs is plain old data filled by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a pointer to a local, both alive for the call.
    cvt(unsafe { libc::statfs(p.as_ptr(), &mut st) })?;
    Ok(st.f_bsize as u64)
}

/// Lowers the calling process's scheduling priority to `nice` (setpriority(PRIO_PROCESS, 0)).
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority takes plain integers; 0 names the calling process.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_syscall_lines_give_the_call_and_its_first_argument() {
        assert_eq!(
            parse_syscall_line("202 0x7ffc10 0x80 0x0 0x0 0x0 0x0 0x7ffc00 0x7f00\n"),
            Some((202, 0x7ffc10))
        );
        assert_eq!(parse_syscall_line("running\n"), None);
        assert_eq!(parse_syscall_line("-1 0x7ffc00 0x7f00\n"), None);
    }

    #[test]
    fn a_thread_blocked_on_a_futex_is_seen_there_and_a_wake_frees_it() {
        use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
        use std::sync::Arc;
        let word = Arc::new(AtomicU32::new(0));
        let tid = Arc::new(AtomicI32::new(0));
        let (w, t) = (word.clone(), tid.clone());
        let h = std::thread::spawn(move || {
            t.store(gettid(), Ordering::Release);
            futex_wait_raw(&w, 0)
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let id = tid.load(Ordering::Acquire);
            if id != 0 && thread_waits_on_futex(id, &word).unwrap() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never blocked");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(futex_wake_n(&word, 5).unwrap(), 1);
        h.join().unwrap().unwrap();
        // A word that differs: EAGAIN at once, which futex_wait_raw reports.
        let e = futex_wait_raw(&word, 7).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        // A PI lock taken holds the owner's tid, and is free again after the unlock.
        futex_lock_pi(&word).unwrap();
        assert_eq!(word.load(Ordering::Relaxed) as Pid & 0x3fff_ffff, gettid());
        futex_unlock_pi(&word).unwrap();
        assert_eq!(word.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_forked_child_whose_parent_died_before_it_asked_for_the_signal_exits() {
        use std::os::fd::AsRawFd;
        let (rx, tx) = pipe().unwrap();
        match fork().unwrap() {
            // A: makes B and exits at once, before B asks for its parent-death signal.
            Fork::Child => {
                if let Ok(Fork::Child) = fork() {
                    // B: waits until A is gone, then asks; it must not get past the request.
                    let a = FORKED_BY.load(std::sync::atomic::Ordering::Relaxed);
                    // SAFETY: getppid and usleep are async-signal-safe and take no pointers.
                    while unsafe { libc::getppid() } == a {
                        unsafe { libc::usleep(1000) };
                    }
                    set_parent_death_signal(libc::SIGKILL);
                    let _ = write(tx.as_raw_fd(), b"!");
                }
                exit_now(0);
            }
            Fork::Parent(a) => {
                drop(tx);
                wait4(a, false).unwrap();
                // End of file once B has exited: it wrote nothing.
                let mut b = [0u8; 1];
                assert_eq!(read(rx.as_raw_fd(), &mut b).unwrap(), 0);
            }
        }
    }

    #[test]
    fn parses_anonymous_rss_and_measures_this_process() {
        assert_eq!(
            parse_rss_anon("VmRSS:\t 5000 kB\nRssAnon:\t  1204 kB\n"),
            Some(1204 * 1024)
        );
        assert_eq!(parse_rss_anon("VmRSS: 5 kB\n"), None);
        let (rss, anon, maps) = process_size("self");
        assert!(rss > 0 && anon > 0 && anon <= rss && maps > 0);
        assert_eq!(process_size("no-such-process"), (0, 0, 0));
    }

    #[test]
    fn getpid_syscall_matches_library() {
        assert_eq!(getpid_syscall(), getpid());
    }

    #[test]
    fn pipe_round_trip() {
        let (r, w) = pipe().unwrap();
        assert_eq!(write(w.as_raw_fd(), b"abcd").unwrap(), 4);
        let mut b = [0u8; 4];
        assert_eq!(read(r.as_raw_fd(), &mut b).unwrap(), 4);
        assert_eq!(&b, b"abcd");
    }

    #[test]
    fn touching_a_fresh_mapping_faults_each_page() {
        let ps = page_size();
        let m = Mapping::anonymous(64 * ps).unwrap();
        m.advise(libc::MADV_NOHUGEPAGE).unwrap();
        let before = getrusage(libc::RUSAGE_THREAD).minflt;
        for i in 0..64 {
            m.touch(i * ps, 1);
        }
        let after = getrusage(libc::RUSAGE_THREAD).minflt;
        assert!(after - before >= 64, "{} faults", after - before);
    }

    #[test]
    fn affinity_round_trip() {
        let cpus = get_affinity().unwrap();
        assert!(!cpus.is_empty());
    }

    #[test]
    fn exit_code_decodes_status() {
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(9), 137);
    }

    #[test]
    fn a_tun_name_longer_than_an_interface_name_is_refused_before_the_kernel() {
        for bad in ["", "sp1234567890123c", "a\0b"] {
            let e = open_tun(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}: {e}");
        }
    }
}
