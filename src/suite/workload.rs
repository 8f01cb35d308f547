//! `--suite workload`: the time-sharing work-load benchmark, throughput in processes per hour
//! against the number of scripts run at once (Feder, *The Evolution of UNIX System
//! Performance*, 1984, §VI, Fig. 8 and Table IV).
//!
//! The paper ran "increasing numbers of scripts consisting of UNIX system and editor commands
//! in parallel", each script's commands "permuted ... so as to avoid synchronization effects",
//! commands and editor input "read from files", and plotted processes per hour against the
//! number of scripts; Table IV gives each machine's peak. Here setup writes, in a fresh
//! directory under the system's temporary directory, the inputs (a small C program, a text of
//! about 10 KB and a changed copy of it, a sed script, an awk program, an ed script) and one
//! shell script per concurrent script. A script is a file that `sh` reads; it runs
//! program-development commands (cc, grep, sort, sed, awk, diff, wc, ls, cat, ed: sysperf's
//! choice, since the paper names only their kinds, "UNIX system and editor commands"), each once, in an order shuffled by a generator seeded with the script's index
//! (script k always gets the same order, and different scripts different orders). Each
//! script works in its own subdirectory, and every command's output goes to a file there.
//! One iteration of `run` forks the N shells at once and waits for all of them, so their
//! children's CPU time lands in the trial.
//!
//! What counts as a process: the script's shell plus one per command it runs (the processes
//! a user's session creates). The passes `cc` runs for one compile (cc1, as, collect2, ld)
//! are part of that one command's work, not processes of their own; the paper does not say
//! how its count treated them.
//!
//! Only commands present on this machine are used (found, as the shell is, by
//! `crate::programs`' rule: PATH's absolute directories that only root or this user can
//! write, and run by their absolute path); preflight records which were used, the path of
//! each, which were absent (without a C compiler the compile step is skipped) and the PATH
//! entries it did not search (relative or empty ones, which would name another directory from
//! each script's working directory, and directories other users can write). A command that fails makes its script fail and the trial fail
//! with an error naming the command and showing its stderr, so a broken environment fails
//! loudly instead of measuring less work.
//!
//! Where today differs: the 1984 machines had one CPU, little memory and slow disks, so several
//! scripts were needed to keep the CPU busy while others waited for I/O; here the inputs sit
//! in the page cache and outputs are written behind, so the curve shows how the scheduler and
//! the CPUs the worker may use share the load. The harness's placement decides those CPUs:
//! by default the worker, and so every script, is pinned to one CPU (a uniprocessor, like the
//! paper's machines); `--placement free` lets the scheduler use them all. Today's commands
//! (GNU coreutils, gcc) also do far more work per process than 1984's. The paper printed
//! Fig. 8 only as a chart, so this series carries no paper points; Table IV's peaks and its
//! percent change since System III (data/reference/figures.tsv) are quoted beside the derived
//! peak.
//!
//! The directory is removed by teardown and by Drop; a worker killed before either leaves it
//! behind, so setup also removes the directories of workers that are no longer alive.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, YKind};
use crate::programs;
use crate::sys::{self, Fork};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub static SUITE: Suite = Suite {
    name: "workload",
    title: "Time-sharing work-load: throughput against load",
    paper: "Feder, The Evolution of UNIX System Performance (1984), §VI, Fig. 8 and Table IV",
    series: || vec![&THROUGHPUT],
    preflight,
    derive,
};

pub static THROUGHPUT: SeriesSpec = SeriesSpec {
    id: "workload.throughput",
    figure: "workload.fig8",
    figure_title: "Performance on time-sharing benchmark (Feder Fig. 8)",
    curve: "processes per hour",
    paper: "Fig. 8 / Table IV: scripts of UNIX system and editor commands, permuted per script, \
            run 1, 2, ... at once; throughput in processes/hour against the number of scripts",
    today: "N shell scripts at once, each sh reading a permuted list of cc, grep, sort, sed, \
            awk, diff, wc, ls, cat, ed commands (sysperf's choice of system and editor commands; \
            those present) from a file; one process = the shell or one command",
    x: Axis {
        name: "concurrent scripts",
        unit: "scripts",
        log: true,
    },
    y: YKind::PerHour,
    unit: "process",
    shape: Shape::Single,
    points,
    make,
    paper_points: &[],
    paper_system: None,
    printed: None,
};

/// The parameter's bit that asks for the short command list (`--quick`); the low bits are
/// the number of scripts.
const SHORT: u64 = 1 << 32;

/// Loads of the full sweep: past this 2-core machine's knee, to show whether throughput falls.
const FULL_LOADS: &[u64] = &[1, 2, 4, 8, 16, 32];

/// Scripts one trial runs at least (iterations of a light load repeat the round), so that a
/// trial at one script is not a single short round.
const SCRIPTS_PER_TRIAL: u64 = 4;

fn points(quick: bool) -> Vec<Point> {
    let steps = present(&steps_for(quick), &programs::search_path());
    let per_script = processes_per_script(steps.len());
    let loads: &[u64] = if quick { &[1, 2] } else { FULL_LOADS };
    loads
        .iter()
        .map(|&n| Point {
            ops_per_iteration: n * per_script,
            iterations: Some(if quick {
                1
            } else {
                SCRIPTS_PER_TRIAL.div_ceil(n).max(1)
            }),
            ..Point::new(n as f64, n | if quick { SHORT } else { 0 })
        })
        .collect()
}

fn make(param: u64) -> Box<dyn Benchmark> {
    Box::new(Workload::new(
        (param & (SHORT - 1)).max(1) as usize,
        param & SHORT != 0,
        programs::search_path(),
    ))
}

/// The script's shell and one process per command it runs.
pub fn processes_per_script(commands: usize) -> u64 {
    1 + commands as u64
}

/// The shell every script is run by (found by `crate::programs::find`).
pub const SHELL: &str = "sh";

/// One command of a script: the program (found on PATH), its arguments, what it reads on
/// standard input, the file its standard output goes to, and the exit status that means it
/// did its work (diff says 1 when the files differ, which they do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub program: &'static str,
    pub args: &'static str,
    pub stdin: Option<&'static str>,
    pub stdout: &'static str,
    pub status: i32,
}

const fn step(program: &'static str, args: &'static str, stdout: &'static str) -> Step {
    Step {
        program,
        args,
        stdin: None,
        stdout,
        status: 0,
    }
}

/// The program-development mix, in a canonical order that each script permutes. Paths are
/// relative to the script's own directory; the shared inputs are in its parent.
pub const STEPS: &[Step] = &[
    step("cc", "-O -o prog ../main.c", "cc.out"),
    step("grep", "-n -e struct ../text.txt", "grep.out"),
    step("sort", "../text.txt", "sort.out"),
    step("sed", "-f ../edit.sed ../text.txt", "sed.out"),
    step("awk", "-f ../count.awk ../text.txt", "awk.out"),
    Step {
        status: 1,
        ..step("diff", "../text.txt ../text2.txt", "diff.out")
    },
    step("wc", "../text.txt ../main.c", "wc.out"),
    step("ls", "-l ..", "ls.out"),
    step("cat", "../main.c ../text.txt", "cat.out"),
    Step {
        stdin: Some("../edit.ed"),
        ..step("ed", "-s ../main.c", "ed.out")
    },
];

/// The short list `--quick` uses: cheap commands only, no compile.
const SHORT_STEPS: &[&str] = &["cat", "grep", "sort", "wc", "sed"];

fn steps_for(short: bool) -> Vec<Step> {
    STEPS
        .iter()
        .filter(|s| !short || SHORT_STEPS.contains(&s.program))
        .copied()
        .collect()
}

/// The steps whose program is present on `path`, with the full path each runs.
pub fn present(steps: &[Step], path: &str) -> Vec<(Step, PathBuf)> {
    steps
        .iter()
        .filter_map(|s| programs::locate(s.program, path).map(|p| (*s, p)))
        .collect()
}

/// Which commands of the full mix this machine has, as preflight records them.
pub fn command_notes(path: &str) -> Result<Vec<String>, String> {
    let shell = programs::find(SHELL).map_err(|e| format!("{e}: the scripts cannot run"))?;
    let shell = shell.display();
    let found = present(STEPS, path);
    if found.is_empty() {
        return Err(format!(
            "none of the commands is in an absolute directory of PATH ({path})"
        ));
    }
    let used: Vec<&str> = found.iter().map(|(s, _)| s.program).collect();
    let mut notes = vec![format!(
        "used: {} (run by {shell}; {} processes per script)",
        used.join(", "),
        processes_per_script(found.len())
    )];
    let absent: Vec<&str> = STEPS
        .iter()
        .map(|s| s.program)
        .filter(|p| !used.contains(p))
        .collect();
    if !absent.is_empty() {
        let cc = if absent.contains(&"cc") {
            " (no C compiler: the compile step is skipped)"
        } else {
            ""
        };
        notes.push(format!("absent: {}{cc}", absent.join(", ")));
    }
    let paths: Vec<String> = found
        .iter()
        .map(|(s, p)| format!("{}={}", s.program, p.display()))
        .collect();
    notes.push(format!(
        "commands run by absolute path: {}",
        paths.join(" ")
    ));
    let skipped = programs::unsearched_text(path);
    if !skipped.is_empty() {
        notes.push(format!("PATH entries not searched: {skipped}"));
    }
    Ok(notes)
}

fn preflight() -> Result<Vec<String>, String> {
    command_notes(&programs::search_path())
}

/// The peak of the curve (the paper's Table IV figure) and how far throughput has fallen at
/// the heaviest load measured (Fig. 8's droop).
fn derive(series: &[Series]) -> Vec<Derived> {
    let Some(s) = series.iter().find(|s| s.id == THROUGHPUT.id) else {
        return Vec::new();
    };
    let measured: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| p.y.as_ref().map(|y| (p.x, y.median)))
        .collect();
    let Some(&(peak_x, peak_y)) = measured.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Vec::new();
    };
    // Table IV (data/reference/figures.tsv): the peaks, their change since System III (the
    // table prints "na" for the 3B20S and the VAX-11/750), and §VI's users per throughput.
    use crate::papers::beside;
    let paper = format!(
        "{}; change since System III: {} (na for the others); {}",
        beside("feder.table4.throughput"),
        beside("feder.table4.change_pct"),
        beside("feder.table4.users")
    );
    let mut out = vec![Derived {
        na: None,
        name: format!(
            "workload peak throughput, processes/hour, at {} scripts",
            super::fmt_x(peak_x)
        ),
        value: peak_y,
        unit: "processes/hour".into(),
        formula: format!(
            "max over loads of the median processes/hour = {peak_y:.0} at {} scripts; \
             Feder Table IV peaks (System V): {paper}",
            super::fmt_x(peak_x)
        ),
    }];
    if let Some(&(last_x, last_y)) = measured.iter().max_by(|a, b| a.0.total_cmp(&b.0)) {
        if last_x > peak_x {
            out.push(Derived {
                na: None,
                name: format!(
                    "workload throughput at {} scripts, % of peak",
                    super::fmt_x(last_x)
                ),
                value: 100.0 * last_y / peak_y,
                unit: "%".into(),
                formula: format!(
                    "{last_y:.0} / {peak_y:.0} processes/hour (heaviest load / peak at {} scripts)",
                    super::fmt_x(peak_x)
                ),
            });
        }
    }
    out
}

/// A small deterministic generator (xorshift64*), enough to shuffle and to make text.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so that neighbouring seeds start far apart.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The order script `k` runs `n` commands in: a Fisher-Yates shuffle seeded with `k`.
pub fn permutation(k: usize, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = Rng::new(k as u64);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order
}

/// The C program the scripts compile: counts words of a built-in text and prints one line.
pub const MAIN_C: &str = r#"/* sysperf workload: the program the scripts compile. */
#include <stdio.h>
#include <string.h>

struct word {
	char text[32];
	int count;
};

static struct word table[64];
static int nwords;

static struct word *lookup(const char *s)
{
	int i;

	for (i = 0; i < nwords; i++)
		if (strcmp(table[i].text, s) == 0)
			return &table[i];
	if (nwords == 64)
		return NULL;
	strncpy(table[nwords].text, s, sizeof table[nwords].text - 1);
	return &table[nwords++];
}

int main(void)
{
	static const char *text[] = {
		"the", "kernel", "runs", "the", "workload", "and", "the",
		"shell", "runs", "the", "commands", "of", "the", "script",
	};
	struct word *w, *top = NULL;
	size_t i;

	for (i = 0; i < sizeof text / sizeof text[0]; i++) {
		w = lookup(text[i]);
		if (w != NULL && ++w->count > (top ? top->count : 0))
			top = w;
	}
	printf("sysperf workload: %d distinct words, most frequent '%s' (%d)\n",
	    nwords, top ? top->text : "", top ? top->count : 0);
	return 0;
}
"#;

/// What the compiled program prints.
pub const PROGRAM_OUTPUT: &str = "sysperf workload: 9 distinct words, most frequent 'the' (5)\n";

/// The sed edit: a substitution and a deletion.
pub const EDIT_SED: &str = "s/kernel/KERNEL/g\n/^buffer /d\n";

/// The awk program: lines, words, and lines that start with "struct".
pub const COUNT_AWK: &str =
    "{ words += NF; if ($1 == \"struct\") s++ }\nEND { printf \"%d lines %d words %d struct\\n\", NR, words, s }\n";

/// The ed script: insert a comment before main, rename a word everywhere, write a copy (the
/// shared main.c stays as it is).
pub const EDIT_ED: &str =
    "/^int main/i\n/* edited by ed */\n.\n,s/workload/work-load/g\nw ed.c\nq\n";

const WORDS: &[&str] = &[
    "the", "kernel", "buffer", "inode", "process", "file", "pipe", "signal", "table", "cache",
    "struct", "read", "write", "fork", "exec", "shell", "user", "system", "disk", "block",
];

/// The text the commands read: 160 lines of words, every seventh starting with "struct".
pub fn text() -> String {
    let mut rng = Rng::new(1984);
    let mut s = String::new();
    for line in 0..160 {
        let n = 6 + rng.below(7);
        let mut words: Vec<&str> = (0..n).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        if line % 7 == 0 {
            words[0] = "struct";
        } else if words[0] == "struct" {
            words[0] = "union";
        }
        s.push_str(&words.join(" "));
        s.push('\n');
    }
    s
}

/// The text with every tenth line changed, for diff.
pub fn text2() -> String {
    text()
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 10 == 5 {
                format!("{l} (revised)\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// Quotes a path for the shell.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// The shell script of script `k`: the steps in its permuted order, each run as
/// `program args > out || fail name status`, so the first failing command stops the script
/// and leaves its name in the file `failed`; stderr of everything goes to `errors`.
pub fn script(k: usize, steps: &[(Step, PathBuf)]) -> String {
    let order = permutation(k, steps.len());
    let names: Vec<&str> = order.iter().map(|&i| steps[i].0.program).collect();
    let mut s = format!(
        "# sysperf workload script {k}: {}\nexec 2>>errors\nfail() {{ echo \"$1 failed (exit status $2)\" > failed; exit 1; }}\n",
        names.join(" ")
    );
    for &i in &order {
        let (st, path) = &steps[i];
        let stdin = st.stdin.map(|f| format!(" < {f}")).unwrap_or_default();
        let cmd = format!("{} {}{stdin} > {}", quote(path), st.args, st.stdout);
        if st.status == 0 {
            s.push_str(&format!("{cmd} || fail {} $?\n", st.program));
        } else {
            s.push_str(&format!(
                "{{ {cmd}; r=$?; test $r -eq {want}; }} || fail {} \"$r, expected {want}\"\n",
                st.program,
                want = st.status
            ));
        }
    }
    s.push_str("exit 0\n");
    s
}

/// A directory removed with everything in it when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, BenchError> {
        let dir = crate::harness::janitor::scratch_dir(&std::env::temp_dir(), "workload")
            .map_err(BenchError::sys("mkdir (workload directory)"))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Removes the directories of workers that died before their teardown (killed on timeout).
fn write(path: &Path, text: &str) -> Result<(), BenchError> {
    fs::write(path, text).map_err(BenchError::sys("write (workload input)"))
}

/// `scripts` copies of the work-load, run at once by one iteration.
pub struct Workload {
    scripts: usize,
    short: bool,
    path: String,
    ctx: Option<Ctx>,
    dir: Option<TempDir>,
    steps: Vec<(Step, PathBuf)>,
    /// The scripts' shell, found in setup.
    shell: PathBuf,
}

impl Workload {
    /// `path` is where the commands are looked for (PATH, or another list in tests).
    pub fn new(scripts: usize, short: bool, path: String) -> Workload {
        Workload {
            scripts,
            short,
            path,
            ctx: None,
            dir: None,
            steps: Vec::new(),
            shell: PathBuf::new(),
        }
    }

    /// The working directory (between setup and teardown).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.0.as_path())
    }

    /// The commands the scripts run, in canonical order.
    pub fn commands(&self) -> Vec<&'static str> {
        self.steps.iter().map(|(s, _)| s.program).collect()
    }

    fn script_dir(&self, dir: &Path, k: usize) -> PathBuf {
        dir.join(format!("s{k}"))
    }

    /// Forks the shell of script `k`: it dies with the worker and stays in its process
    /// group, so the harness's kill on timeout reaches the commands too.
    fn start(&self, ctx: &Ctx, dir: &Path, k: usize) -> Result<sys::Pid, BenchError> {
        let sdir = self.script_dir(dir, k);
        let forked = sys::fork();
        match forked.map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                if let Ok(mut cmd) = programs::at(&self.shell) {
                    let _ = cmd
                        .arg("script")
                        .current_dir(&sdir)
                        .env("LC_ALL", "C")
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .exec();
                }
                sys::exit_now(127)
            }
            Fork::Parent(pid) => Ok(pid),
        }
    }

    /// Why script `k` failed, from what it left in its directory.
    fn failure(&self, dir: &Path, k: usize, code: i32) -> BenchError {
        let sdir = self.script_dir(dir, k);
        let read = |f: &str| fs::read_to_string(sdir.join(f)).unwrap_or_default();
        let errors = read("errors");
        let tail: Vec<&str> = errors.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let what = match read("failed").trim() {
            "" if code == 127 => format!("{} could not be started", self.shell.display()),
            "" => format!("the script exited with status {code}"),
            f => format!("command {f}"),
        };
        BenchError::Protocol(format!(
            "workload script {k} in {}: {what}; stderr: {}",
            sdir.display(),
            if tail.is_empty() {
                "(empty)".to_string()
            } else {
                tail.join(" | ")
            }
        ))
    }
}

impl Benchmark for Workload {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        self.steps = present(&steps_for(self.short), &self.path);
        self.shell = programs::find(SHELL).map_err(|e| BenchError::Protocol(e.to_string()))?;
        if self.steps.is_empty() {
            return Err(BenchError::Protocol(format!(
                "workload: none of the commands ({}) is on the search path {}",
                STEPS
                    .iter()
                    .map(|s| s.program)
                    .collect::<Vec<_>>()
                    .join(", "),
                self.path
            )));
        }
        let dir = TempDir::new()?;
        let d = dir.0.clone();
        self.dir = Some(dir);
        write(&d.join("main.c"), MAIN_C)?;
        write(&d.join("text.txt"), &text())?;
        write(&d.join("text2.txt"), &text2())?;
        write(&d.join("edit.sed"), EDIT_SED)?;
        write(&d.join("count.awk"), COUNT_AWK)?;
        write(&d.join("edit.ed"), EDIT_ED)?;
        for k in 0..self.scripts {
            let sdir = self.script_dir(&d, k);
            fs::create_dir(&sdir).map_err(BenchError::sys("mkdir (script directory)"))?;
            write(&sdir.join("script"), &script(k, &self.steps))?;
        }
        self.ctx = Some(ctx.clone());
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let (Some(ctx), Some(dir)) = (self.ctx.as_ref(), self.dir()) else {
            return Err(BenchError::Protocol("workload: no setup".into()));
        };
        for _ in 0..iterations {
            let mut pids = Vec::with_capacity(self.scripts);
            let mut first_error = None;
            for k in 0..self.scripts {
                match self.start(ctx, dir, k) {
                    Ok(pid) => pids.push((k, pid)),
                    Err(e) => {
                        first_error = Some(e);
                        break;
                    }
                }
            }
            // Every shell started is reaped, even when another failed to start.
            for (k, pid) in pids {
                let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"));
                let err = match code {
                    Ok(0) => None,
                    Ok(c) => Some(self.failure(dir, k, c)),
                    Err(e) => Some(e),
                };
                if first_error.is_none() {
                    first_error = err;
                }
            }
            if let Some(e) = first_error {
                return Err(e);
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(dir) = self.dir.take() {
            // Drop would try again and ignore a failure; teardown reports it.
            fs::remove_dir_all(&dir.0).map_err(BenchError::sys("rm -r (workload directory)"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::programs::{locate, search_path};
    use std::collections::HashMap;

    /// A search path holding only the named commands (links to the real ones, or to
    /// `stand_in` under the command's name), for the absent-command and failure tests.
    fn only(names: &[&str], stand_in: Option<(&str, &str)>) -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        for n in names {
            let real = locate(n, &search_path()).unwrap_or_else(|| panic!("{n} not installed"));
            std::os::unix::fs::symlink(real, d.path().join(n)).unwrap();
        }
        if let Some((name, target)) = stand_in {
            let real = locate(target, &search_path()).unwrap();
            std::os::unix::fs::symlink(real, d.path().join(name)).unwrap();
        }
        let p = d.path().display().to_string();
        (d, p)
    }

    fn read(dir: &Path, f: &str) -> String {
        fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(f).display()))
    }

    #[test]
    fn scripts_really_run_their_commands_and_leave_their_outputs() {
        let mut w = Workload::new(2, false, search_path());
        w.setup(&Ctx::default(), 1).unwrap();
        w.run(1).unwrap();
        let dir = w.dir().unwrap().to_path_buf();
        let used = w.commands();
        let text = text();
        for k in 0..2 {
            let s = dir.join(format!("s{k}"));
            let has = |c: &str| used.contains(&c);
            if has("sort") {
                let mut want: Vec<&str> = text.lines().collect();
                want.sort_unstable(); // byte order, as sort in the C locale
                assert_eq!(read(&s, "sort.out").lines().collect::<Vec<_>>(), want);
            }
            if has("grep") {
                let want: Vec<String> = text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| l.contains("struct"))
                    .map(|(i, l)| format!("{}:{l}", i + 1))
                    .collect();
                assert!(want.len() >= 20, "the text has struct lines");
                assert_eq!(read(&s, "grep.out").lines().collect::<Vec<_>>(), want);
            }
            if has("awk") {
                let words: usize = text.lines().map(|l| l.split_whitespace().count()).sum();
                let structs = text.lines().filter(|l| l.starts_with("struct ")).count();
                assert_eq!(
                    read(&s, "awk.out"),
                    format!("160 lines {words} words {structs} struct\n")
                );
            }
            if has("sed") {
                let out = read(&s, "sed.out");
                let deleted = text.lines().filter(|l| l.starts_with("buffer ")).count();
                assert!(!out.contains("kernel") && out.contains("KERNEL"));
                assert_eq!(out.lines().count(), 160 - deleted);
            }
            if has("diff") {
                let out = read(&s, "diff.out");
                assert_eq!(out.matches("(revised)").count(), 16, "{out}");
            }
            if has("wc") {
                let out = read(&s, "wc.out");
                let bytes = text.len().to_string();
                assert!(out.contains(&bytes) && out.contains("total"), "{out}");
            }
            if has("cat") {
                assert_eq!(read(&s, "cat.out"), format!("{MAIN_C}{text}"));
            }
            if has("ls") {
                let out = read(&s, "ls.out");
                for e in ["main.c", "text.txt", "s0", "s1"] {
                    assert!(out.contains(e), "{out}");
                }
            }
            if has("ed") {
                let out = read(&s, "ed.c");
                assert!(out.contains("work-load") && !out.contains("workload"));
                assert!(out.contains("/* edited by ed */\nint main"));
            }
            if has("cc") {
                let out = programs::at(&s.join("prog")).unwrap().output().unwrap();
                assert!(out.status.success());
                assert_eq!(String::from_utf8_lossy(&out.stdout), PROGRAM_OUTPUT);
            }
            // Every command ran (its output file exists), in the script's own order.
            for (st, _) in &w.steps {
                assert!(s.join(st.stdout).exists(), "{} did not run", st.program);
            }
            assert!(!s.join("failed").exists());
        }
        if std::env::var("CI").is_ok() {
            assert_eq!(used.len(), STEPS.len(), "CI installs every command");
        }
        w.teardown().unwrap();
        assert!(!dir.exists(), "teardown removes {}", dir.display());
    }

    #[test]
    fn each_script_has_its_own_fixed_order() {
        let steps = present(STEPS, &search_path());
        let n = steps.len();
        let orders: Vec<Vec<usize>> = (0..8).map(|k| permutation(k, n)).collect();
        for (k, o) in orders.iter().enumerate() {
            assert_eq!(
                o,
                &permutation(k, n),
                "script {k} always gets the same order"
            );
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "a permutation");
            // The script file runs the commands in that order.
            let body = script(k, &steps);
            let pos: Vec<usize> = o
                .iter()
                .map(|&i| body.find(&format!("> {}", steps[i].0.stdout)).unwrap())
                .collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "{body}");
        }
        let distinct: std::collections::HashSet<&Vec<usize>> = orders.iter().collect();
        assert!(
            distinct.len() >= 7,
            "scripts are permuted differently: {orders:?}"
        );
    }

    #[test]
    fn relative_and_empty_path_entries_are_not_searched_and_are_named() {
        let (d, abs) = only(&["grep", "sort"], None);
        // A relative entry and an empty one (the current directory), before the absolute one.
        let rel = d.path().file_name().unwrap().to_str().unwrap().to_string();
        let path = format!("{rel}::{abs}");
        let notes = command_notes(&path).unwrap();
        let last = notes.last().unwrap();
        assert_eq!(
            last,
            &format!(
                "PATH entries not searched: \"{rel}\" (relative), \"\" (empty: the current \
                 directory)"
            )
        );
        let cmds = notes
            .iter()
            .find(|n| n.starts_with("commands run by absolute path: "))
            .unwrap();
        assert_eq!(
            cmds,
            &format!("commands run by absolute path: grep={abs}/grep sort={abs}/sort")
        );
        for (_, p) in present(STEPS, &path) {
            assert!(p.is_absolute(), "{}", p.display());
        }
        // Only relative entries: nothing is searched.
        let none = command_notes(".:bin");
        assert!(none.unwrap_err().contains("absolute directory of PATH"));
    }

    #[test]
    fn absent_commands_are_skipped_and_reported() {
        let (_d, path) = only(&["grep", "sort", "wc", "cat"], None);
        let notes = command_notes(&path).unwrap();
        assert!(
            notes[0].starts_with("used: grep, sort, wc, cat "),
            "{notes:?}"
        );
        assert!(notes[0].contains("5 processes per script"), "{notes:?}");
        assert_eq!(
            notes[1],
            "absent: cc, sed, awk, diff, ls, ed (no C compiler: the compile step is skipped)"
        );
        let mut w = Workload::new(1, false, path.clone());
        w.setup(&Ctx::default(), 1).unwrap();
        assert_eq!(w.commands(), ["grep", "sort", "wc", "cat"]);
        let body = read(&w.dir().unwrap().join("s0"), "script");
        assert!(
            !body.contains("cc.out") && !body.contains("ed.out"),
            "{body}"
        );
        w.run(1).unwrap();
        let s0 = w.dir().unwrap().join("s0");
        assert!(s0.join("sort.out").exists() && !s0.join("prog").exists());
        w.teardown().unwrap();
        let (_e, empty) = only(&[], None);
        assert!(command_notes(&empty).is_err());
        assert!(Workload::new(1, false, empty)
            .setup(&Ctx::default(), 1)
            .is_err());
    }

    #[test]
    fn a_failing_command_fails_the_trial_naming_it() {
        // "grep" here is false(1): it exits 1 whatever it is asked.
        let (_d, path) = only(&["sort", "cat"], Some(("grep", "false")));
        let mut w = Workload::new(3, false, path);
        w.setup(&Ctx::default(), 1).unwrap();
        let e = w.run(1).unwrap_err().to_string();
        assert!(e.contains("command grep failed (exit status 1)"), "{e}");
        let dir = w.dir().unwrap().to_path_buf();
        drop(w);
        assert!(!dir.exists(), "Drop removes {}", dir.display());
    }

    #[test]
    fn points_count_the_shell_and_each_command_present() {
        let full = present(STEPS, &search_path()).len() as u64;
        let short = present(&steps_for(true), &search_path()).len() as u64;
        for (quick, per) in [(false, 1 + full), (true, 1 + short)] {
            for p in points(quick) {
                assert_eq!(p.ops_per_iteration, p.x as u64 * per);
                assert_eq!(p.param & (SHORT - 1), p.x as u64);
                assert_eq!(p.param & SHORT != 0, quick);
            }
        }
        let xs: Vec<f64> = points(true).iter().map(|p| p.x).collect();
        assert_eq!(xs, [1.0, 2.0]);
    }

    #[test]
    fn derive_reports_the_peak_and_the_fall_past_it() {
        let mut ys = HashMap::new();
        ys.insert(1u64, 1000.0);
        ys.insert(2, 1500.0);
        ys.insert(4, 1200.0);
        let s = series_of(&ys);
        let d = derive(&[s]);
        assert_eq!(
            d[0].name,
            "workload peak throughput, processes/hour, at 2 scripts"
        );
        assert_eq!(d[0].value, 1500.0);
        // Table IV beside the peak: throughput and its % column.
        let f = &d[0].formula;
        assert!(f.contains("AT&T 3B20S 10000, VAX-11/780 9800, VAX-11/750 6000, PDP-11/70 5800 processes/hour (Feder 1984, Table IV)"), "{f}");
        assert!(
            f.contains("change since System III: VAX-11/780 25, PDP-11/70 -3 % since System III"),
            "{f}"
        );
        assert!(f.contains("any ~35 users per 10,000 processes/hour"), "{f}");
        assert_eq!(d[1].name, "workload throughput at 4 scripts, % of peak");
        assert!((d[1].value - 80.0).abs() < 1e-9);
    }

    /// A measured-looking series with the given medians (only x and y matter to derive).
    fn series_of(ys: &HashMap<u64, f64>) -> Series {
        use crate::model::{BenchResult, Estimate, SeriesPoint};
        let mut s = super::super::series_from(&THROUGHPUT, Vec::new(), None);
        let mut xs: Vec<u64> = ys.keys().copied().collect();
        xs.sort_unstable();
        for x in xs {
            let y = ys[&x];
            s.points.push(SeriesPoint {
                x: x as f64,
                label: None,
                bytes_per_op: 0.0,
                y: Some(Estimate {
                    median: y,
                    ci_low: y,
                    ci_high: y,
                    ci_level: 0.95,
                    min: y,
                    max: y,
                    mean: y,
                    cv: 0.0,
                    n: 1,
                }),
                result: BenchResult {
                    id: format!("workload.throughput@{x}"),
                    group: "workload".into(),
                    ops_per_iteration: 1,
                    paper_count: 0,
                    unit: "process".into(),
                    placement: "single".into(),
                    cpus: Vec::new(),
                    trials: Vec::new(),
                    summary: None,
                    error: None,
                },
            });
        }
        s
    }
}
