//! Not a benchmark: the paper-sized process that `forks*` and `execs*` fork from, and the
//! private directory their programs run from.
//!
//! Fork copies the forking process's page tables and mappings, so its cost grows with that
//! process's size. The paper forked from a small C program; a Rust worker is megabytes and
//! dozens of mappings. So the fork and exec tests run the appendix's `forks` and `execs`
//! programs themselves, compiled by the build from `csrc/forker.c` into a freestanding static
//! executable of a few KiB, carried inside sysperf, written into a private directory (0700,
//! under the temporary directory) and exec'd by name in setup. It waits on a pipe: each
//! `run` sends the count, the program does that many operations and answers with its own
//! rusage and its reaped children's over them, which the harness then reports as the test
//! process's and the children's (see [`Helper`]). One pipe exchange per trial is timed with
//! the operations (a few microseconds against a trial of at least 0.1 s). The process is
//! named by its file ("forks", "execs"), as the paper's were.
//!
//! The directory also holds the exec tests' job ("nulljob", "bigjob") under the run script's
//! name, so that an exec looks the name up as the paper's `execv(argv[3], argv)` did. It is
//! removed when the benchmark is dropped; one left by a killed worker is removed by the next
//! worker with the same pid.
//!
//! The cspeed suite's C-speed program (csrc/cspeed_main.c) speaks the same protocol
//! (csrc/sys.h, which both programs include) and is started the same way
//! ([`Forker::start_program`]); its answer counts the passes whose self-check failed.

use super::{Ctx, Helper};
use crate::error::BenchError;
use crate::model::Usage;
use crate::sys::{self, Fork, Pid};
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

/// The appendix's forks/execs program (csrc/forker.c).
pub(crate) static FORKER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/forker"));

/// Words of the program's answer to a count: its own usage (6), its children's (6), and the
/// number of children that ended wrongly.
const ANSWER_WORDS: usize = 13;

/// A directory of this worker's own holding programs to exec by name.
pub(crate) struct ProgramDir {
    path: PathBuf,
    /// The directory, open for lookups relative to it.
    pub dir: OwnedFd,
}

impl ProgramDir {
    pub(crate) fn new() -> Result<ProgramDir, BenchError> {
        let path = crate::safedir::scratch_dir(&std::env::temp_dir(), "exec")
            .map_err(BenchError::sys("mkdir (scratch directory)"))?;
        let d = ProgramDir {
            dir: File::open(&path)
                .map(OwnedFd::from)
                .map_err(BenchError::sys("open"))?,
            path,
        };
        if sys::noexec(&d.path).map_err(BenchError::sys("statvfs"))? {
            return Err(BenchError::Protocol(format!(
                "{} is on a file system mounted noexec, so the paper's programs cannot run from \
                 it; set TMPDIR to a directory where programs may run",
                d.path.display()
            )));
        }
        Ok(d)
    }

    /// Writes `bytes` as the executable `name`, closed before anything execs it (a file open
    /// for writing cannot be exec'd).
    pub(crate) fn add(&self, name: &str, bytes: &[u8]) -> Result<(), BenchError> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.path.join(name))
            .map_err(BenchError::sys("create"))?;
        f.write_all(bytes).map_err(BenchError::sys("write"))
    }
}

impl Drop for ProgramDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Arguments or environment as C strings, for an exec.
pub(crate) fn cstrings(v: &[String]) -> Result<Vec<CString>, BenchError> {
    v.iter()
        .map(|s| CString::new(s.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| BenchError::Protocol("NUL in an argument".into()))
}

/// The NULL-terminated array of pointers an exec takes; valid while `v` lives.
pub(crate) fn ptrs(v: &[CString]) -> Vec<*const libc::c_char> {
    v.iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// The running forks/execs program (or another helper program that speaks its protocol,
/// csrc/sys.h: the C-speed program), waiting for counts.
pub(crate) struct Forker {
    /// What the answer's last word counts, for the error when it is not 0.
    wrong: &'static str,
    pid: Option<Pid>,
    cmd: Option<File>,
    answers: File,
    size: (u64, u64, u64),
    last: Option<Helper>,
    _dir: ProgramDir,
}

impl Forker {
    /// Starts the program as `argv[0]` ("forks" or "execs") with `argv` and `env`, with `job`
    /// beside it for execs, and waits until it has grown its heap (argv[2] bytes).
    pub(crate) fn start(
        ctx: &Ctx,
        argv: &[String],
        env: &[String],
        job: Option<(&str, &[u8])>,
    ) -> Result<Forker, BenchError> {
        Forker::start_program(
            ctx,
            FORKER,
            "children that ended wrongly (a failed exec exits 127)",
            argv,
            env,
            job,
        )
    }

    /// Starts `image`, a program of csrc/ speaking the forks/execs program's protocol
    /// (csrc/sys.h), as [`Forker::start`] does; `wrong` says what its answer's last word
    /// counts.
    pub(crate) fn start_program(
        ctx: &Ctx,
        image: &[u8],
        wrong: &'static str,
        argv: &[String],
        env: &[String],
        job: Option<(&str, &[u8])>,
    ) -> Result<Forker, BenchError> {
        let program = argv
            .first()
            .ok_or_else(|| BenchError::Protocol("forker: no program name".into()))?;
        let dir = ProgramDir::new()?;
        dir.add(program, image)?;
        if let Some((name, bytes)) = job {
            dir.add(name, bytes)?;
        }
        let (argv_c, env_c) = (cstrings(argv)?, cstrings(env)?);
        let name = CString::new(program.as_str())
            .map_err(|_| BenchError::Protocol("NUL in a program name".into()))?;
        let (argv_p, env_p) = (ptrs(&argv_c), ptrs(&env_c));
        let (cmd_r, cmd_w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let (ans_r, ans_w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        // Relative to the working directory, which the child makes the program directory
        // first (its descriptor may be one of the numbers the pipes are moved to).
        let img = sys::ExecImage {
            fd: libc::AT_FDCWD,
            name: &name,
            argv: &argv_p,
            envp: &env_p,
        };
        let pid = match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                // The program reads counts on 3 and answers on 4, and runs in the directory,
                // where execs looks its job up by name.
                let cwd = sys::fchdir(dir.dir.as_raw_fd());
                let placed =
                    sys::place_fds_for_exec(&[(cmd_r.as_raw_fd(), 3), (ans_w.as_raw_fd(), 4)]);
                if cwd.is_ok() && placed.is_ok() {
                    let _ = sys::exec_image(&img);
                }
                sys::exit_now(127)
            }
            Fork::Parent(pid) => pid,
        };
        drop((cmd_r, ans_w));
        let mut f = Forker {
            wrong,
            pid: Some(pid),
            cmd: Some(File::from(cmd_w)),
            answers: File::from(ans_r),
            size: (0, 0, 0),
            last: None,
            _dir: dir,
        };
        let mut ready = [0u8; 8];
        f.answers.read_exact(&mut ready).map_err(|_| {
            BenchError::Protocol(format!("the {program} program did not start: {}", f.end()))
        })?;
        f.size = sys::process_size(&pid.to_string());
        Ok(f)
    }

    /// Has the program do `n` operations and keeps its answer for [`Forker::helper`].
    pub(crate) fn run(&mut self, n: u64) -> Result<(), BenchError> {
        let cmd = self
            .cmd
            .as_mut()
            .ok_or_else(|| BenchError::Protocol("forker: no setup".into()))?;
        cmd.write_all(&n.to_le_bytes())
            .map_err(BenchError::sys("write"))?;
        let mut buf = [0u8; ANSWER_WORDS * 8];
        if self.answers.read_exact(&mut buf).is_err() {
            return Err(BenchError::Protocol(format!(
                "the helper program gave no answer: {}",
                self.end()
            )));
        }
        let w: Vec<u64> = buf
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        if w[12] != 0 {
            return Err(BenchError::Protocol(format!(
                "{} of {n} operations of the helper program went wrong: {}",
                w[12], self.wrong
            )));
        }
        let usage = |u: &[u64]| Usage {
            user_ns: u[0],
            sys_ns: u[1],
            minflt: u[2],
            majflt: u[3],
            nvcsw: u[4],
            nivcsw: u[5],
        };
        self.last = Some(Helper {
            own: usage(&w[0..6]),
            children: usage(&w[6..12]),
            rss_bytes: self.size.0,
            rss_anon_bytes: self.size.1,
            maps: self.size.2,
        });
        Ok(())
    }

    /// The answer to the last count, once.
    pub(crate) fn helper(&mut self) -> Option<Helper> {
        self.last.take()
    }

    /// Ends the program and says how it ended. Closing its pipe ends it: it reads end of file
    /// and exits, always the same way (a SIGKILL racing that exit would make its system calls
    /// differ from run to run, which `trace` counts). Were it stuck, the harness's timeout
    /// kills the worker's whole process group, this program with it.
    fn end(&mut self) -> String {
        self.cmd = None;
        let Some(pid) = self.pid.take() else {
            return "already ended".into();
        };
        match sys::wait_child(pid) {
            Ok(127) => "its exec failed (exit 127)".into(),
            Ok(c) => format!("it ended with status {c}"),
            Err(e) => format!("waiting for it failed: {e}"),
        }
    }
}

impl Drop for Forker {
    fn drop(&mut self) {
        self.end();
    }
}
