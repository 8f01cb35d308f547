//! The C library boundary: thin, safe wrappers over the glibc routines the `libs` suite
//! measures (stdio streams and their buffering, the name-service lookups, the string, memory
//! and conversion routines, flock and fcntl record locks), and the one process-start hook it
//! needs (a shell on a terminal of its own).
//!
//! Like `sys`, this is a boundary: every `unsafe` block outside src/sys.rs lives here, each
//! with a `// SAFETY:` line. What the suite measures is the C library's own code, so nothing
//! here goes through Rust's std for the operation itself; the wrappers add only the call and
//! its error check (`#[inline]`), because benchmark hot loops call them.

use std::ffi::{c_char, c_int, CStr};
use std::io;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

extern "C" {
    fn getc(stream: *mut libc::FILE) -> c_int;
    fn putc(c: c_int, stream: *mut libc::FILE) -> c_int;
    fn gethostbyname(name: *const c_char) -> *mut libc::c_void;
    fn malloc_usable_size(ptr: *mut libc::c_void) -> libc::size_t;
}

/// How a stream buffers its output (setvbuf, or setbuf for a sized buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffering {
    /// What the C library chooses itself (st_blksize for a file, lines for a terminal).
    Default,
    /// A caller-supplied buffer of this many bytes, fully buffered (setbuf's BUFSIZ of 1985
    /// was 1024).
    Full(usize),
    /// Flushed at every newline (_IOLBF).
    Line,
    /// No buffer (_IONBF): stdio writes what each call gives it.
    Unbuffered,
}

/// A stdio stream over a descriptor (fdopen), closed (and flushed) by Drop.
pub struct Stream {
    file: NonNull<libc::FILE>,
    /// The buffer handed to setvbuf; it must outlive the stream, which Drop closes first.
    _buf: Vec<u8>,
}

impl Stream {
    /// fdopen(fd, mode) with `buffering` set before any I/O; the stream owns the descriptor.
    pub fn fdopen(fd: OwnedFd, mode: &CStr, buffering: Buffering) -> io::Result<Stream> {
        let raw = fd.into_raw_fd();
        // SAFETY: raw is an open descriptor we own; mode is NUL-terminated.
        let f = unsafe { libc::fdopen(raw, mode.as_ptr()) };
        let Some(file) = NonNull::new(f) else {
            let e = io::Error::last_os_error();
            // SAFETY: fdopen failed, so the descriptor is still ours to close.
            unsafe { libc::close(raw) };
            return Err(e);
        };
        let mut s = Stream {
            file,
            _buf: Vec::new(),
        };
        let (buf, mode, size) = match buffering {
            Buffering::Default => return Ok(s),
            Buffering::Full(n) => {
                s._buf = vec![0u8; n.max(1)];
                (s._buf.as_mut_ptr().cast(), libc::_IOFBF, n.max(1))
            }
            Buffering::Line => (std::ptr::null_mut(), libc::_IOLBF, 0),
            Buffering::Unbuffered => (std::ptr::null_mut(), libc::_IONBF, 0),
        };
        // SAFETY: a fresh stream with no I/O yet; buf is null or a buffer of `size` bytes
        // owned by the stream and freed only after fclose.
        if unsafe { libc::setvbuf(s.file.as_ptr(), buf, mode, size) } != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "setvbuf refused the buffering mode",
            ));
        }
        Ok(s)
    }

    /// getc(3): the next byte, None at end of file or on an error.
    #[inline]
    pub fn getc(&mut self) -> Option<u8> {
        // SAFETY: the stream is open for as long as self lives.
        let c = unsafe { getc(self.file.as_ptr()) };
        (c >= 0).then_some(c as u8)
    }

    /// fread(3) of up to `buf.len()` one-byte items: the bytes read.
    #[inline]
    pub fn fread(&mut self, buf: &mut [u8]) -> usize {
        // SAFETY: buf is valid for writes of its length; the stream is open.
        unsafe { libc::fread(buf.as_mut_ptr().cast(), 1, buf.len(), self.file.as_ptr()) }
    }

    /// putc(3) of one byte.
    #[inline]
    pub fn putc(&mut self, c: u8) -> io::Result<()> {
        // SAFETY: the stream is open.
        if unsafe { putc(c_int::from(c), self.file.as_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// fprintf(stream, "%s: %s %d: %s\n", ...): one formatted diagnostic line.
    #[inline]
    pub fn print_diagnostic(
        &mut self,
        prog: &CStr,
        what: &CStr,
        n: c_int,
        why: &CStr,
    ) -> io::Result<()> {
        // SAFETY: the format's conversions match the arguments (three NUL-terminated strings
        // and an int); the stream is open.
        let r = unsafe {
            libc::fprintf(
                self.file.as_ptr(),
                c"%s: %s %d: %s\n".as_ptr(),
                prog.as_ptr(),
                what.as_ptr(),
                n,
                why.as_ptr(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// fflush(3).
    pub fn flush(&mut self) -> io::Result<()> {
        // SAFETY: the stream is open.
        if unsafe { libc::fflush(self.file.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// fseek(stream, 0, SEEK_SET): back to the start (flushing pending output).
    #[inline]
    pub fn rewind(&mut self) -> io::Result<()> {
        // SAFETY: the stream is open.
        if unsafe { libc::fseek(self.file.as_ptr(), 0, libc::SEEK_SET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream is open and closed only here.
        unsafe { libc::fclose(self.file.as_ptr()) };
    }
}

/// snprintf of the diagnostic line of [`Stream::print_diagnostic`] into `buf`: the bytes
/// written (without the NUL), truncated to the buffer.
pub fn format_into(buf: &mut [u8], prog: &CStr, what: &CStr, n: c_int, why: &CStr) -> usize {
    // SAFETY: buf is valid for writes of its length; the conversions match the arguments.
    let r = unsafe {
        libc::snprintf(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%s: %s %d: %s\n".as_ptr(),
            prog.as_ptr(),
            what.as_ptr(),
            n,
            why.as_ptr(),
        )
    };
    (r.max(0) as usize).min(buf.len().saturating_sub(1))
}

/// getpwnam(3): the uid of user `name`, None when no module knows it.
#[inline]
pub fn getpwnam_uid(name: &CStr) -> Option<u32> {
    // SAFETY: name is NUL-terminated; the result points to static storage read at once,
    // before any other lookup can overwrite it.
    let p = unsafe { libc::getpwnam(name.as_ptr()) };
    // SAFETY: non-null results point to a valid passwd.
    (!p.is_null()).then(|| unsafe { (*p).pw_uid })
}

/// getpwuid(3): whether user `uid` exists.
#[inline]
pub fn getpwuid_found(uid: u32) -> bool {
    // SAFETY: getpwuid takes a number; the result is only compared with null.
    !unsafe { libc::getpwuid(uid) }.is_null()
}

/// gethostbyname(3): whether host `name` resolved.
#[inline]
pub fn gethostbyname_found(name: &CStr) -> bool {
    // SAFETY: name is NUL-terminated; the result is only compared with null.
    !unsafe { gethostbyname(name.as_ptr()) }.is_null()
}

/// memcpy(3) of all of `src` into the start of `dst` (which must be at least as long).
#[inline]
pub fn memcpy(dst: &mut [u8], src: &[u8]) {
    assert!(dst.len() >= src.len(), "memcpy: destination too short");
    // SAFETY: both ranges are valid for src.len() bytes and do not overlap (distinct borrows).
    unsafe { libc::memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.len()) };
}

/// strlen(3): the C library's scan for the NUL (CStr's own length is not the routine measured).
#[inline]
#[allow(clippy::strlen_on_c_strings)]
pub fn strlen(s: &CStr) -> usize {
    // SAFETY: s is NUL-terminated.
    unsafe { libc::strlen(s.as_ptr()) }
}

/// strcpy(3) of `src` into `dst`, which must hold it and its NUL.
#[inline]
pub fn strcpy(dst: &mut [u8], src: &CStr) {
    assert!(
        dst.len() > src.to_bytes().len(),
        "strcpy: destination too short"
    );
    // SAFETY: dst holds src and its NUL (checked); the buffers are distinct borrows.
    unsafe { libc::strcpy(dst.as_mut_ptr().cast(), src.as_ptr()) };
}

/// malloc(size), one byte written, free: false when malloc failed.
#[inline]
pub fn malloc_free(size: usize) -> bool {
    // SAFETY: malloc takes a size; the block is written within its first byte and freed once.
    unsafe {
        let p = libc::malloc(size.max(1));
        if p.is_null() {
            return false;
        }
        p.cast::<u8>().write_volatile(1);
        libc::free(p);
    }
    true
}

/// The bytes malloc actually reserves for a request of `size` (malloc_usable_size plus the
/// chunk header of one size_t), None when malloc failed.
pub fn malloc_reserved(size: usize) -> Option<usize> {
    // SAFETY: the block is measured and freed once.
    unsafe {
        let p = libc::malloc(size.max(1));
        if p.is_null() {
            return None;
        }
        let usable = malloc_usable_size(p);
        libc::free(p);
        Some(usable + std::mem::size_of::<usize>())
    }
}

/// atoi(3).
#[inline]
pub fn atoi(s: &CStr) -> c_int {
    // SAFETY: s is NUL-terminated.
    unsafe { libc::atoi(s.as_ptr()) }
}

/// strtod(3) of the whole string.
#[inline]
pub fn strtod(s: &CStr) -> f64 {
    // SAFETY: s is NUL-terminated; no end pointer is asked for.
    unsafe { libc::strtod(s.as_ptr(), std::ptr::null_mut()) }
}

/// snprintf(buf, len, "%d", n): the characters written.
#[inline]
pub fn format_int(buf: &mut [u8], n: c_int) -> usize {
    // SAFETY: buf is valid for writes of its length; %d takes an int.
    let r = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%d".as_ptr(), n) };
    r.max(0) as usize
}

/// snprintf(buf, len, "%f", x): the characters written.
#[inline]
pub fn format_double(buf: &mut [u8], x: f64) -> usize {
    // SAFETY: buf is valid for writes of its length; %f takes a double.
    let r = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%f".as_ptr(), x) };
    r.max(0) as usize
}

/// flock(2) through the C library: `op` is LOCK_EX, LOCK_UN, optionally with LOCK_NB.
#[inline]
pub fn flock(fd: RawFd, op: c_int) -> io::Result<()> {
    // SAFETY: flock takes a descriptor and a flag word.
    if unsafe { libc::flock(fd, op) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// fcntl(F_SETLKW or F_SETLK) of a whole-file record lock of `kind` (F_WRLCK, F_UNLCK).
#[inline]
pub fn record_lock(fd: RawFd, kind: c_int, wait: bool) -> io::Result<()> {
    // SAFETY: flock is plain old data; all-zero is a whole-file range from offset 0.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    let cmd = if wait { libc::F_SETLKW } else { libc::F_SETLK };
    // SAFETY: a valid pointer to an initialized struct flock.
    if unsafe { libc::fcntl(fd, cmd, &l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `cmd` start its program as a session leader whose controlling terminal is its
/// standard input (setsid, then ioctl TIOCSCTTY), as a login shell on a terminal is.
pub fn on_own_terminal(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the child between fork and exec and calls only setsid and
    // ioctl, both async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Makes `cmd`'s program get SIGKILL when the thread that started it dies (prctl
/// PR_SET_PDEATHSIG), so that a worker of a killed sysperf, or a daemon a worker starts (the
/// libs suite's private nscd), cannot outlive it, whoever kills it. Set between fork and exec:
/// asked for later (in the program), a parent killed in between would leave it running for
/// good (a killed `trace csw --iterations 100000000` left its pair spinning). A parent that
/// died before the request is seen by the parent pid having changed: the program is not run.
pub fn dies_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook runs in the child between fork and exec and calls only prctl and
    // getppid, which are async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// One login record as the C library's utmp file holds it (`struct utmpx`, USER_PROCESS):
/// the bytes `who FILE` reads, in this machine's layout. For the commands suite's fixed
/// input to `who`. Names longer than their fields are cut.
pub fn utmp_record(user: &str, line: &str, id: &str, pid: i32, login_s: i32) -> Vec<u8> {
    // SAFETY: utmpx is plain old data (integers and byte arrays); all zeros is a valid value.
    let mut u: libc::utmpx = unsafe { std::mem::zeroed() };
    u.ut_type = libc::USER_PROCESS;
    u.ut_pid = pid;
    let copy = |dst: &mut [c_char], s: &str| {
        for (d, b) in dst.iter_mut().zip(s.bytes()) {
            *d = b as c_char;
        }
    };
    copy(&mut u.ut_user, user);
    copy(&mut u.ut_line, line);
    copy(&mut u.ut_id, id);
    u.ut_tv.tv_sec = login_s as _;
    let size = std::mem::size_of::<libc::utmpx>();
    // SAFETY: `u` is a live, fully initialized (zeroed, then set) value of `size` bytes; the
    // slice is read at once, while `u` lives.
    unsafe { std::slice::from_raw_parts((&u as *const libc::utmpx).cast::<u8>(), size) }.to_vec()
}
