//! The `libs` suite's shell prompts (§4.2.6, csh's "up to twenty system calls per prompt"): an
//! interactive shell (bash, dash, tcsh, csh) runs on a pseudo-terminal of its own, as a
//! session leader with the pty as its controlling terminal; one operation is an empty command
//! (a newline typed on the master side) and the shell's next prompt read back. The prompt is
//! a marker ("@sp> ") that the echo of what is typed never contains.
//!
//! The system calls per prompt are counted by tracing the shell (raw_syscalls through
//! tracefs, filtered to its pid: [`count_syscalls_per_prompt`]), as root.

use crate::bench::{Benchmark, Ctx};
use crate::error::BenchError;
use crate::sys;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Stdio};
use std::time::Duration;

/// The shells, in the order of the series' points: name and the arguments of an interactive
/// shell that reads no start-up file.
pub const SHELLS: [(&str, &[&str]); 4] = [
    ("bash", &["--norc", "--noprofile", "-i"]),
    ("dash", &["-i"]),
    ("tcsh", &["-f", "-i"]),
    ("csh", &["-f", "-i"]),
];

/// The prompt every shell is given.
pub const PROMPT: &[u8] = b"@sp> ";

/// How long a shell may take to print its first prompt, and each next one.
const STARTUP_MS: i32 = 60_000;
const PROMPT_MS: i32 = 10_000;

/// The absolute path of shell `name`, if installed (found by `crate::programs`' rule).
pub fn shell_path(name: &str) -> Option<std::path::PathBuf> {
    crate::programs::find(name).ok()
}

/// An interactive shell on a pty.
pub struct Shell {
    pub child: Child,
    master: OwnedFd,
    seen: Vec<u8>,
}

impl Shell {
    /// Starts shell `index` of [`SHELLS`] and waits for its first prompt.
    pub fn start(index: usize) -> Result<Shell, BenchError> {
        let (name, args) = SHELLS
            .get(index)
            .copied()
            .ok_or_else(|| BenchError::Protocol(format!("no shell number {index}")))?;
        let path = shell_path(name).ok_or_else(|| {
            BenchError::Protocol(format!("{name} is not installed (apt-get install {name})"))
        })?;
        let (master, slave) = sys::open_pty().map_err(BenchError::sys("posix_openpt"))?;
        let dup = |fd: &OwnedFd| fd.try_clone().map_err(BenchError::sys("dup"));
        let mut cmd = crate::programs::at(&path).map_err(BenchError::sys("exec (shell)"))?;
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", "/")
            .env("TERM", "dumb")
            .env("PS1", std::str::from_utf8(PROMPT).unwrap_or("@sp> "))
            .stdin(Stdio::from(dup(&slave)?))
            .stdout(Stdio::from(dup(&slave)?))
            .stderr(Stdio::from(slave));
        crate::clib::on_own_terminal(&mut cmd);
        let child = cmd.spawn().map_err(BenchError::sys("exec (shell)"))?;
        let mut sh = Shell {
            child,
            master,
            seen: Vec::new(),
        };
        if name.ends_with("csh") {
            // csh has no PS1; the quotes split the marker so that its echo is not a prompt.
            sh.send(b"set prompt='@s''p> '\n")?;
        }
        // csh prints the marker once, after the command (its default prompt first). Start-up
        // may be slow: csh closes every descriptor up to RLIMIT_NOFILE one by one.
        sh.wait_prompt(STARTUP_MS)?;
        Ok(sh)
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), BenchError> {
        let n = sys::write(self.master.as_raw_fd(), bytes).map_err(BenchError::sys("write"))?;
        if n != bytes.len() {
            return Err(BenchError::Protocol("short write to the pty".into()));
        }
        Ok(())
    }

    /// Reads the master until the prompt marker arrives; fails when nothing arrives for
    /// `timeout_ms` (a poll timeout, so that no clock is read).
    pub fn wait_prompt(&mut self, timeout_ms: i32) -> Result<(), BenchError> {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(at) = self.seen.windows(PROMPT.len()).position(|w| w == PROMPT) {
                self.seen.drain(..at + PROMPT.len());
                return Ok(());
            }
            if !sys::poll_readable(self.master.as_raw_fd(), timeout_ms)
                .map_err(BenchError::sys("poll"))?
            {
                return Err(BenchError::Protocol(format!(
                    "the shell printed no prompt for {} s (it printed {:?})",
                    timeout_ms / 1000,
                    String::from_utf8_lossy(&self.seen)
                )));
            }
            let n =
                sys::read(self.master.as_raw_fd(), &mut buf).map_err(BenchError::sys("read"))?;
            if n == 0 {
                return Err(BenchError::Protocol("the shell closed its terminal".into()));
            }
            self.seen.extend_from_slice(&buf[..n]);
        }
    }

    /// One empty command and its prompt.
    #[inline]
    pub fn prompt(&mut self) -> Result<(), BenchError> {
        self.send(b"\n")?;
        self.wait_prompt(PROMPT_MS)
    }

    /// Asks the shell to exit, then kills it if it has not, and reaps it.
    pub fn stop(mut self) {
        let _ = self.send(b"exit\n");
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Prompt {
    index: usize,
    shell: Option<Shell>,
}

impl Prompt {
    pub fn new(index: usize) -> Prompt {
        Prompt { index, shell: None }
    }
}

impl Benchmark for Prompt {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.shell = Some(Shell::start(self.index)?);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let Some(sh) = &mut self.shell else {
            return Err(BenchError::Protocol("prompt: not set up".into()));
        };
        for _ in 0..iterations {
            sh.prompt()?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(sh) = self.shell.take() {
            sh.stop();
        }
        Ok(())
    }
}

/// The system calls shell `index` of [`SHELLS`] makes per empty command, by tracing it
/// (raw_syscalls:sys_enter in a tracefs instance of our own, filtered to the shell's pid):
/// the events of `2k` prompts less those of `k`, over `k`, so that start-up cancels. Needs
/// root and tracefs; Err says why not.
pub fn count_syscalls_per_prompt(index: usize, k: u64) -> Result<f64, String> {
    use crate::trace::tracefs;
    tracefs::look(|fs| -> Result<f64, String> {
        let name = format!("{}{}-libs", tracefs::PREFIX, sys::getpid());
        let inst = tracefs::Instance::create(fs, &name).map_err(|e| e.to_string())?;
        let mut sh = Shell::start(index).map_err(|e| e.to_string())?;
        let pid = sh.child.id();
        let result = (|| -> Result<f64, String> {
            let err = |e: std::io::Error| e.to_string();
            inst.write("set_event_pid", &pid.to_string()).map_err(err)?;
            inst.enable("raw_syscalls:sys_enter").map_err(err)?;
            let mut count = |n: u64| -> Result<u64, String> {
                inst.clear().map_err(err)?;
                inst.on(true).map_err(err)?;
                for _ in 0..n {
                    sh.prompt().map_err(|e| e.to_string())?;
                }
                inst.on(false).map_err(err)?;
                if inst.lost_events() > 0 {
                    return Err("the trace lost events".into());
                }
                let text = inst.read("trace").map_err(err)?;
                Ok(text.lines().filter(|l| !l.starts_with('#')).count() as u64)
            };
            let (a, b) = (count(k)?, count(2 * k)?);
            Ok(b.saturating_sub(a) as f64 / k as f64)
        })();
        sh.stop();
        result
    })
    .unwrap_or_else(|| Err("tracefs is not available (needs root)".into()))
}
