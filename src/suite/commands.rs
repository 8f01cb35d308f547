//! The `commands` suite: the everyday utilities Feder timed (J. Feder, "The Evolution of UNIX
//! System Performance", 1984, §5.2 "Commands"): `cat`, `who` and `nroff`, each run as a user
//! runs it, on a fixed input that sysperf writes, against the size of that input.
//!
//! The paper gives no times, only what changed: "a modest effort recently resulted in a factor
//! of three improvement to the `cat` command, and a factor of two improvement to the `who`
//! command", and `nroff`, "owing to its prominence in overall CPU consumption at many
//! installations, has been the most discussed command", for which "there are substitutes ...
//! that are several times faster". So each curve is today's cost of one run against the input
//! size, from which a reader sees what the command spends per byte, per login and per line.
//!
//! One operation is one run of the command: fork, exec of the program found by sysperf's one
//! rule for external programs (`crate::programs`), its work, its exit, and the wait,
//! with standard input from /dev/null, standard output to /dev/null (nothing is formatted for a
//! terminal), and a fixed environment (`PATH=/usr/bin:/bin`, `LC_ALL=C`, `HOME=/`). The inputs,
//! written in setup into a private scratch directory (removed in teardown, and by the janitor if
//! the worker is killed), are:
//! - `cat FILE`: a text file of x bytes (lines of words from a fixed list);
//! - `who FILE`: a login-records file (the C library's utmp format, USER_PROCESS entries) of x
//!   logins, so that who reads the same records on every machine instead of the system's;
//! - `nroff FILE`: a document of x lines of text filled into paragraphs (`.sp` between them, a
//!   `.ce` title), no macro package. Today's nroff is groff's: a shell script that runs groff,
//!   which runs troff and the grotty output driver, so one run is four processes.
//!
//! The series' CPU columns are the command's processes (reaped inside the timed region), as
//! csh's time would have charged them.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::YKind;
use crate::programs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub static SUITE: Suite = Suite {
    name: "commands",
    title: "Everyday commands on fixed inputs: cat, who, nroff",
    paper: "Feder, The Evolution of UNIX System Performance (1984), §5.2 Commands",
    series: || vec![&CAT, &WHO, &NROFF],
    preflight,
    derive: super::no_derived,
};

/// The commands, their program names and what they read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utility {
    Cat,
    Who,
    Nroff,
}

impl Utility {
    pub fn program(self) -> &'static str {
        match self {
            Utility::Cat => "cat",
            Utility::Who => "who",
            Utility::Nroff => "nroff",
        }
    }

    /// The input of size `x` (bytes, logins or lines) as the command reads it.
    pub fn input(self, x: u64) -> Vec<u8> {
        match self {
            Utility::Cat => text_bytes(x as usize),
            Utility::Who => logins(x as usize),
            Utility::Nroff => document(x as usize),
        }
    }
}

const WORDS: [&str; 16] = [
    "the",
    "system",
    "performance",
    "of",
    "kernel",
    "pipe",
    "process",
    "buffer",
    "cache",
    "file",
    "name",
    "translation",
    "benchmark",
    "time",
    "user",
    "measure",
];

/// Lines of words from [`WORDS`], `n` bytes in all (the last line cut to fit).
pub fn text_bytes(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 80);
    let mut i = 0usize;
    while out.len() < n {
        let mut line = String::new();
        while line.len() < 60 {
            line.push_str(WORDS[i % WORDS.len()]);
            line.push(' ');
            i = i.wrapping_mul(7).wrapping_add(3) % 1009;
        }
        line.push('\n');
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(n);
    out
}

/// `n` login records (user `userK` on `pts/K`, logged in at a fixed time).
pub fn logins(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|k| {
            crate::clib::utmp_record(
                &format!("user{k}"),
                &format!("pts/{k}"),
                &format!("{:04}", k % 10_000),
                1000 + k as i32,
                441_763_200, // 1984-01-01
            )
        })
        .collect()
}

/// A roff document of `n` lines in all: a centred title, then paragraphs of seven lines of
/// text each, separated by `.sp`.
pub fn document(n: usize) -> Vec<u8> {
    let mut lines: Vec<String> = vec![
        ".ce".into(),
        "The Evolution of UNIX System Performance".into(),
    ];
    let text = String::from_utf8(text_bytes(n * 61)).unwrap_or_default();
    let mut words = text.lines();
    let mut in_paragraph = 0;
    while lines.len() < n {
        if in_paragraph == 0 || in_paragraph == 7 {
            lines.push(".sp".into());
            in_paragraph = 0;
        } else {
            lines.push(words.next().unwrap_or("the").trim_end().to_string());
        }
        in_paragraph += 1;
    }
    lines.truncate(n);
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

/// One run of the command per operation.
struct Run {
    utility: Utility,
    x: u64,
    program: Option<PathBuf>,
    dir: Option<PathBuf>,
}

impl Run {
    fn file(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join("input"))
    }
}

impl Benchmark for Run {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let program = programs::find(self.utility.program())
            .map_err(|e| BenchError::Protocol(e.to_string()))?;
        self.program = Some(program);
        let dir = crate::harness::janitor::scratch_dir(&std::env::temp_dir(), "commands")
            .map_err(BenchError::sys("mkdir (scratch directory)"))?;
        self.dir = Some(dir);
        let file = self.file().unwrap_or_default();
        std::fs::write(&file, self.utility.input(self.x))
            .map_err(BenchError::sys("writing the input"))?;
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let (Some(program), Some(file)) = (&self.program, self.file()) else {
            return Err(BenchError::Protocol("run before setup".into()));
        };
        for _ in 0..iterations {
            let status = command(program, &file)
                .map_err(BenchError::sys("running the command"))?
                .status()
                .map_err(BenchError::sys("running the command"))?;
            if !status.success() {
                return Err(BenchError::Protocol(format!(
                    "{} {} ended with {status}",
                    program.display(),
                    file.display()
                )));
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        Ok(())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// The command as one operation runs it: `program FILE` (an absolute path found by the rule),
/// input and output /dev/null, the fixed environment.
pub fn command(program: &Path, file: &Path) -> std::io::Result<Command> {
    let mut c = programs::at(program)?;
    c.arg(file)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("HOME", "/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Ok(c)
}

fn make(utility: Utility, x: u64) -> Box<dyn Benchmark> {
    Box::new(Run {
        utility,
        x,
        program: None,
        dir: None,
    })
}

fn points(xs: &[u64]) -> Vec<Point> {
    xs.iter().map(|&x| Point::new(x as f64, x)).collect()
}

pub static CAT: SeriesSpec = SeriesSpec {
    printed: None,
    id: "commands.cat",
    figure: "commands.cat",
    figure_title: "cat of a text file (Feder §5.2)",
    curve: "cat FILE > /dev/null",
    paper: "§5.2: \"a modest effort recently resulted in a factor of three improvement to the \
            cat command\" (System V Release 2); no times printed",
    today: "one run of cat (found in PATH) on a text file of x bytes, output to /dev/null",
    x: Axis {
        name: "file size",
        unit: "bytes",
        log: true,
    },
    y: YKind::CostNs,
    unit: "run",
    shape: Shape::Single,
    points: |quick| {
        points(if quick {
            &[65_536]
        } else {
            &[4_096, 65_536, 1 << 20, 16 << 20]
        })
    },
    make: |x| make(Utility::Cat, x),
    paper_points: &[],
    paper_system: None,
};

pub static WHO: SeriesSpec = SeriesSpec {
    printed: None,
    id: "commands.who",
    figure: "commands.who",
    figure_title: "who of a login-records file (Feder §5.2)",
    curve: "who FILE > /dev/null",
    paper: "§5.2: \"a factor of two improvement to the who command\" (System V Release 2); no \
            times printed",
    today: "one run of who (found in PATH) on a utmp file of x USER_PROCESS records, output to \
            /dev/null",
    x: Axis {
        name: "logins",
        unit: "records",
        log: true,
    },
    y: YKind::CostNs,
    unit: "run",
    shape: Shape::Single,
    points: |quick| points(if quick { &[16] } else { &[1, 16, 256, 4_096] }),
    make: |x| make(Utility::Who, x),
    paper_points: &[],
    paper_system: None,
};

pub static NROFF: SeriesSpec = SeriesSpec {
    printed: None,
    id: "commands.nroff",
    figure: "commands.nroff",
    figure_title: "nroff of a document (Feder §5.2; today's nroff is groff's)",
    curve: "nroff FILE > /dev/null",
    paper: "§5.2: nroff, \"owing to its prominence in overall CPU consumption at many \
            installations, has been the most discussed command\"; no times printed",
    today: "one run of nroff (groff's script: groff, troff, grotty) on a document of x lines \
            of filled text, output to /dev/null",
    x: Axis {
        name: "document",
        unit: "lines",
        log: true,
    },
    y: YKind::CostNs,
    unit: "run",
    shape: Shape::Single,
    points: |quick| points(if quick { &[100] } else { &[100, 1_000, 10_000] }),
    make: |x| make(Utility::Nroff, x),
    paper_points: &[],
    paper_system: None,
};

/// Which commands are here, and where; the suite runs without the ones that are not (their
/// points fail with the reason).
fn preflight() -> Result<Vec<String>, String> {
    let found: Vec<String> = [Utility::Cat, Utility::Who, Utility::Nroff]
        .iter()
        .map(|u| match programs::find(u.program()) {
            Ok(p) => format!("{}={}", u.program(), p.display()),
            Err(e) => e.to_string(),
        })
        .collect();
    Ok(vec![format!(
        "commands run by absolute path: {} (environment PATH=/usr/bin:/bin LC_ALL=C HOME=/)",
        found.join(" ")
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_have_their_size() {
        assert_eq!(text_bytes(65_536).len(), 65_536);
        assert!(text_bytes(100)
            .iter()
            .all(|&b| b == b'\n' || b == b' ' || b.is_ascii_lowercase()));
        let size = logins(1).len();
        assert_eq!(logins(16).len(), 16 * size);
        let doc = String::from_utf8(document(100)).unwrap();
        assert_eq!(doc.lines().count(), 100, "{doc}");
        assert!(doc.starts_with(".ce\n"));
    }

    /// The commands read the inputs as meant: who lists every login, cat copies every byte,
    /// nroff fills the paragraphs.
    #[test]
    fn the_commands_read_the_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let run = |u: Utility, x: u64| {
            let Ok(program) = programs::find(u.program()) else {
                println!("skipped: no {}", u.program());
                return None;
            };
            let file = dir.path().join(u.program());
            std::fs::write(&file, u.input(x)).unwrap();
            let out = command(&program, &file)
                .unwrap()
                .stdout(Stdio::piped())
                .output()
                .unwrap();
            assert!(out.status.success(), "{u:?}: {out:?}");
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        if let Some(out) = run(Utility::Who, 16) {
            assert_eq!(out.lines().count(), 16, "{out}");
            assert!(out.contains("user15") && out.contains("pts/15"), "{out}");
        }
        if let Some(out) = run(Utility::Cat, 10_000) {
            assert_eq!(out.len(), 10_000);
        }
        if let Some(out) = run(Utility::Nroff, 100) {
            assert!(
                out.contains("The Evolution of UNIX System Performance"),
                "{out}"
            );
            // Filled: the 84 lines of text (98 less 14 .sp) come out as other lines.
            let text = out.lines().filter(|l| l.len() > 40).count();
            assert!(text > 10 && text != 84, "{text} lines: {out}");
        }
    }
}
