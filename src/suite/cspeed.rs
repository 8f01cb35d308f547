//! The `cspeed` suite (`sysperf run --suite cspeed`): J. Feder, "The Evolution of UNIX System
//! Performance", AT&T Bell Laboratories Technical Journal 63(8), 1984, Section II, "C language
//! performance": Table II, "Normalized C object code execution speed", and "the times to
//! compile the benchmark program". It is not the rest of Feder's paper (the `feder`, `commands`
//! and `workload` suites), and not a general CPU benchmark: one small fixed program, as his was.
//!
//! The program. Feder's were "a collection of small C language programs that do not reference
//! either the operating system or the C library", without floating point, with "only light
//! use of multiplication and division", "extracted from existing system programs"; they were
//! never published. sysperf's is csrc/cspeed.c, written in that spirit: five kernels, each the
//! inner loop of a familiar system program (wc's counting, a symbol table's chained hashing,
//! sort's comparisons through a procedure, an interpreter's dispatch loop running sum(1)'s
//! checksum, cksum's table-driven CRC), over one fixed 8 KiB text that looks like C source.
//! Every pass checks itself against something computed another way, and at start-up one pass
//! of each kernel is compared with the result the source is known to give. The build compiles
//! it with its driver (csrc/cspeed_main.c) into a freestanding static executable with `-O`
//! (Feder's results are "for peephole optimized code"), which sysperf carries.
//!
//! `cspeed.table2` (C execution speed): setup writes the program into a private directory and
//! starts it (one process per trial, as the forks/execs program of the fork tests: no exec and
//! no C start-up in the timed region); each run sends it a count over a pipe, it runs that
//! many passes of the point's kernel, making no system call, and answers with its own rusage.
//! The timed region is that exchange. The y is its wall time per pass, the time `compare`'s
//! ratios are of: the program only computes, so on a quiet machine that is its CPU time, which
//! the table's User column shows (the program's rusage, which the harness counts as the
//! test's); on a busy one the wall time also holds the waits for a CPU, and the run warns
//! that other work inflated it. (A CPU-time y would hide the load, but then `compare`, whose
//! ratios are of wall time for every point, would set a ratio beside it that is not of the
//! figures shown.) In-process (the kernels linked into sysperf and called)
//! would save the pipe exchange, a few microseconds a trial, but would need `unsafe` outside
//! a system call and would run the kernels in the multi-MiB worker, not as the small program
//! Feder's were.
//!
//! `cspeed.compile`: the same source compiled by this machine's `cc`, found by sysperf's one
//! rule for programs (`crate::programs`: trusted directories of PATH only; the `CC` variable
//! is not read, since root may run this with another user's environment), run with a fixed
//! environment (`PATH=/usr/bin:/bin`, `LC_ALL=C`, `TMPDIR` the scratch directory), so that
//! `GCC_EXEC_PREFIX`, `COMPILER_PATH` and the like, which choose the programs the compiler
//! runs, never come from the caller. One operation is one compile, `cc -O -c cspeed.c` or the
//! whole program linked as the build links it, and the y is its wall time, cc's processes
//! reaped inside the timed region. Without a `cc` the points fail with the reason: never a
//! figure.
//!
//! Table II's figures are relative speeds (the 3B20S is 1.00); today's are absolute times.
//! The derived figure prints both; two machines (or compilers, or kernels) compare as the
//! paper's did by `sysperf compare RUN_A RUN_B`, whose ratio per kernel is the paper's
//! "normalizing individual benchmark results", and the ratio of the derived geometric means is
//! their average.

use super::{Axis, SeriesSpec, Suite};
use crate::bench::forker::Forker;
use crate::bench::{Benchmark, Ctx, Helper, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, YKind};
use crate::programs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The C-speed program, built from csrc/cspeed.c and csrc/cspeed_main.c with `-O`.
pub static PROGRAM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cspeed"));
/// The benchmark proper: the source the compile series compiles.
pub const SOURCE: &str = include_str!("../../csrc/cspeed.c");
/// Its driver and the header of the helper programs' system calls, for the linked compile.
pub const MAIN_SOURCE: &str = include_str!("../../csrc/cspeed_main.c");
pub const SYS_H: &str = include_str!("../../csrc/sys.h");
/// The compiler the build made [`PROGRAM`] with.
pub const BUILT_WITH: &str = env!("SYSPERF_CSPEED_CC");

/// The kernels, as the program's argument names them, in its order.
pub const KERNELS: [&str; 5] = ["wc", "symtab", "sort", "interp", "crc"];

/// One kernel's passes, run by the C-speed program in a process of its own.
pub struct Speed {
    kernel: &'static str,
    program: Option<Forker>,
}

impl Speed {
    pub fn new(kernel: &'static str) -> Speed {
        Speed {
            kernel,
            program: None,
        }
    }
}

impl Benchmark for Speed {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let argv = ["cspeed".to_string(), self.kernel.to_string()];
        self.program = Some(Forker::start_program(
            ctx,
            PROGRAM,
            "passes of the C-speed program whose self-check failed",
            &argv,
            &[],
            None,
        )?);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        match &mut self.program {
            Some(p) => p.run(iterations),
            None => Err(BenchError::Protocol("cspeed: no setup".into())),
        }
    }

    fn helper(&mut self) -> Option<Helper> {
        self.program.as_mut().and_then(Forker::helper)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.program = None;
        Ok(())
    }
}

/// What one compile makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// `cc -O -c cspeed.c`: the object file `cspeed.o`.
    Object,
    /// The whole program, `cspeed.c` and its driver, linked as the build links it.
    Program,
}

impl Build {
    /// The file the compile writes, in the scratch directory.
    pub fn output(self) -> &'static str {
        match self {
            Build::Object => "cspeed.o",
            Build::Program => "cspeed",
        }
    }

    /// cc's arguments, relative to the scratch directory.
    pub fn args(self) -> Vec<&'static str> {
        match self {
            Build::Object => vec!["-O", "-c", "-o", "cspeed.o", "cspeed.c"],
            // The build's own flags for the carried program (build.rs's FREESTANDING).
            Build::Program => std::iter::once("-O")
                .chain(env!("SYSPERF_FREESTANDING").split(' '))
                .chain(["-o", "cspeed", "cspeed.c", "cspeed_main.c"])
                .collect(),
        }
    }
}

/// The fixed environment cc runs with: nothing of the caller's (see the module documentation).
pub fn cc_command(cc: &Path, dir: &Path, build: Build) -> std::io::Result<Command> {
    let mut c = programs::at(cc)?;
    c.args(build.args())
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    Ok(c)
}

/// Why the compile points cannot be measured here, when there is no `cc` by the rule.
pub fn no_cc(e: &programs::NotFound) -> String {
    format!(
        "no C compiler, so the compile time is not measurable here: {e} (apt-get install gcc, \
         or dnf install gcc)"
    )
}

/// One compile of the benchmark program per operation.
pub struct Compile {
    build: Build,
    cc: Option<PathBuf>,
    scratch: Option<super::feder::Scratch>,
}

impl Compile {
    pub fn new(build: Build) -> Compile {
        Compile {
            build,
            cc: None,
            scratch: None,
        }
    }

    /// The file the compiles write (None before setup and after teardown).
    pub fn output(&self) -> Option<PathBuf> {
        self.scratch
            .as_ref()
            .map(|s| s.path().join(self.build.output()))
    }
}

impl Benchmark for Compile {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let cc = programs::find("cc").map_err(|e| BenchError::Protocol(no_cc(&e)))?;
        let scratch = super::feder::Scratch::named(&std::env::temp_dir(), "cspeed")?;
        let mut files = vec![("cspeed.c", SOURCE)];
        if self.build == Build::Program {
            files.extend([("cspeed_main.c", MAIN_SOURCE), ("sys.h", SYS_H)]);
        }
        for (name, text) in files {
            std::fs::write(scratch.path().join(name), text)
                .map_err(BenchError::sys("writing the benchmark's source"))?;
        }
        self.cc = Some(cc);
        self.scratch = Some(scratch);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let (Some(cc), Some(s)) = (&self.cc, &self.scratch) else {
            return Err(BenchError::Protocol("compile: no setup".into()));
        };
        for _ in 0..iterations {
            let out = cc_command(cc, s.path(), self.build)
                .and_then(|mut c| c.output())
                .map_err(BenchError::sys("running cc"))?;
            if !out.status.success() {
                let said = String::from_utf8_lossy(&out.stderr);
                let said: Vec<&str> = said.lines().take(5).collect();
                return Err(BenchError::Protocol(format!(
                    "{} {} ended with {}: {}",
                    cc.display(),
                    self.build.args().join(" "),
                    out.status,
                    said.join(" / ")
                )));
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.scratch = None;
        Ok(())
    }
}

const KERNEL_AXIS: Axis = Axis {
    name: "kernel",
    unit: "",
    log: false,
};

pub static TABLE2_SERIES: SeriesSpec = SeriesSpec {
    id: "cspeed.table2",
    figure: "cspeed.table2",
    figure_title: "Table II: C object code execution speed, today (time per pass)",
    curve: "today",
    paper: "Table II, \"Normalized C object code execution speed\" (Version 5.0 compilers, \
            peephole optimized, relative to the 3B20S): 3B20S 1.00, VAX-11/780 0.97, \
            VAX-11/750 0.61, PDP-11/70 0.83; small C programs extracted from system programs, \
            calling neither the operating system nor the C library",
    today: "one pass of a kernel of sysperf's freestanding C program (csrc/cspeed.c, -O) over a \
            fixed 8 KiB text: wc's counting, a chained-hash symbol table, sort of the lines \
            through a comparison procedure, a stack-machine interpreter running sum(1), a \
            table-driven CRC-32; run by the program in its own process, y the wall time per \
            pass: an absolute time (compare two runs for the paper's ratio)",
    x: KERNEL_AXIS,
    y: YKind::CostNs,
    unit: "pass",
    shape: Shape::Single,
    points: |_| super::feder::labelled(&KERNELS),
    make: |k| Box::new(Speed::new(KERNELS[(k as usize).min(KERNELS.len() - 1)])),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

/// The compile points' labels, in [`Build`] order.
pub const BUILDS: [&str; 2] = ["object", "program"];

pub static COMPILE_SERIES: SeriesSpec = SeriesSpec {
    id: "cspeed.compile",
    figure: "cspeed.compile",
    figure_title: "Compile time of the benchmark program (Feder §II), today",
    curve: "cc -O",
    paper: "§II: \"The times to compile the benchmark program\": on System V, VAX programs \
            compile more than 25 percent faster and 3B20S programs more than twice as fast \
            relative to 4.0; PDP-11/70 compilation speed essentially unchanged since System \
            III; no times printed",
    today: "this machine's cc (by sysperf's rule for programs, a fixed environment) compiling \
            csrc/cspeed.c: object = cc -O -c; program = the whole program with its driver, \
            linked static and freestanding as the build links it; wall time per compile, cc's \
            processes reaped inside it",
    x: Axis {
        name: "build",
        unit: "",
        log: false,
    },
    y: YKind::CostNs,
    unit: "compile",
    shape: Shape::Single,
    points: |_| super::feder::labelled(&BUILDS),
    make: |b| {
        Box::new(Compile::new(if b == 0 {
            Build::Object
        } else {
            Build::Program
        }))
    },
    paper_points: &[],
    paper_system: None,
    printed: None,
};

fn series() -> Vec<&'static SeriesSpec> {
    vec![&TABLE2_SERIES, &COMPILE_SERIES]
}

/// The compilers: the build's, which made the measured program, and this machine's `cc`,
/// which the compile series runs (with its version), or why there is none.
fn preflight() -> Result<Vec<String>, String> {
    let mut notes = vec![format!(
        "the C-speed program was compiled by the build with {BUILT_WITH}: its speed is that \
         compiler's code's as much as this machine's (Feder: \"The grouping of machine with \
         compiler performance is unfortunate\")"
    )];
    notes.push(match programs::find("cc") {
        Ok(cc) => {
            let version = cc_version(&cc).unwrap_or_else(|| "version unknown".into());
            format!(
                "compile series: {} ({version}), environment PATH=/usr/bin:/bin LC_ALL=C \
                 TMPDIR=<scratch>",
                cc.display()
            )
        }
        Err(e) => no_cc(&e),
    });
    Ok(notes)
}

/// The first line `cc --version` prints, run as the compile series runs cc.
fn cc_version(cc: &Path) -> Option<String> {
    let out = programs::at(cc)
        .ok()?
        .arg("--version")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_string())
}

/// Table II today: the geometric mean of the kernels' time per pass, beside the paper's
/// relative speeds; and the compile times beside the paper's words on them.
fn derive(series: &[Series]) -> Vec<Derived> {
    use crate::papers::beside;
    let mut out = Vec::new();
    let found: Vec<(&str, f64, usize)> = KERNELS
        .iter()
        .filter_map(|k| {
            super::feder::point_y(series, TABLE2_SERIES.id, k).map(|e| (*k, e.median, e.n))
        })
        .filter(|(_, m, _)| *m > 0.0)
        .collect();
    if !found.is_empty() {
        let value = geometric_mean(&found.iter().map(|f| f.1).collect::<Vec<_>>());
        let missing: Vec<&str> = KERNELS
            .iter()
            .filter(|k| !found.iter().any(|f| f.0 == **k))
            .copied()
            .collect();
        let parts: Vec<String> = found
            .iter()
            .map(|(k, m, _)| format!("{k} {:.1} us", m / 1e3))
            .collect();
        out.push(Derived {
            na: (!missing.is_empty()).then(|| {
                format!(
                    "only {} of the {} kernels measured (missing: {}): a mean of other kernels \
                     is another figure; run the whole cspeed.table2 series",
                    found.len(),
                    KERNELS.len(),
                    missing.join(", ")
                )
            }),
            name: "C execution time per pass (Table II), geometric mean of the kernels".into(),
            value: value / 1e3,
            unit: "us/pass".into(),
            formula: format!(
                "geometric mean of the kernels' time per pass ({}) = {:.1} us. Feder's \
                 Table II: {}: speeds relative to his 3B20S, where this is an absolute time on \
                 this machine with the build's compiler. To compare two machines, compilers or \
                 kernels as the paper did, `sysperf compare RUN_A RUN_B`: each kernel's ratio \
                 is the paper's normalised result, and the ratio of this figure in the two runs \
                 is their (geometric) average",
                parts.join(", "),
                value / 1e3,
                beside("feder.table2.c_speed")
            ),
        });
    }
    let compiles: Vec<(&str, f64)> = BUILDS
        .iter()
        .filter_map(|b| super::feder::point_y(series, COMPILE_SERIES.id, b).map(|e| (*b, e.median)))
        .collect();
    if let Some(&(build, ns)) = compiles.last() {
        out.push(Derived {
            na: None,
            name: format!("compile time of the benchmark program ({build})"),
            value: ns / 1e6,
            unit: "ms/compile".into(),
            formula: format!(
                "wall time of one compile: {}. Feder printed no times, only changes between \
                 releases on one machine: {}; today's ratio of that kind is `sysperf compare` of \
                 a run before and after the change (a compiler, a kernel, a machine)",
                compiles
                    .iter()
                    .map(|(b, ns)| format!("{b} {:.1} ms", ns / 1e6))
                    .collect::<Vec<_>>()
                    .join(", "),
                beside("feder.compile.speedup")
            ),
        });
    }
    out
}

/// The geometric mean of positive values (0 for none).
pub fn geometric_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

pub static SUITE: Suite = Suite {
    name: "cspeed",
    title: "Feder 1984 §II: C object code execution speed and compile time",
    paper: "J. Feder, \"The Evolution of UNIX System Performance\", AT&T Bell Laboratories \
            Technical Journal 63(8), 1984: Section II, Table II and the compile times",
    series,
    preflight,
    derive,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The C source's `name[...] = {...}` initialiser, its items trimmed of quotes and `u`.
    fn c_array(name: &str) -> Vec<String> {
        let at = SOURCE
            .find(name)
            .unwrap_or_else(|| panic!("{name} not in cspeed.c"));
        let body = &SOURCE[at..];
        let (open, close) = (body.find('{').unwrap(), body.find('}').unwrap());
        body[open + 1..close]
            .split(',')
            .map(|s| s.trim().trim_matches('"').trim_end_matches('u').to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    #[test]
    fn the_kernels_are_the_programs_and_every_pass_checks_itself() {
        assert_eq!(c_array("kernel_names[KERNELS] ="), KERNELS);
        for k in KERNELS {
            let mut b = Speed::new(k);
            b.setup(&Ctx::default(), 1).unwrap();
            // The program's answer counts the passes whose self-check failed: run() is an
            // error unless there were none.
            b.run(3).unwrap();
            let h = b.helper().expect("the program's answer");
            assert_eq!(
                h.children,
                crate::model::Usage::default(),
                "{k}: no children"
            );
            assert!(h.maps > 0 && h.maps < 16, "{k}: {} mappings", h.maps);
            b.teardown().unwrap();
        }
    }

    /// The start-up check compares one pass of each kernel with the known answer written in
    /// the source: a program whose answer differs (here, one of the answers changed in the
    /// carried image) refuses to start, and says so.
    #[test]
    fn a_program_that_computes_another_answer_does_not_start() {
        let expected = c_array("expected[KERNELS] =");
        assert_eq!(expected.len(), KERNELS.len());
        let wc = u32::from_str_radix(expected[0].trim_start_matches("0x"), 16).unwrap();
        let needle = wc.to_le_bytes();
        let mut image = PROGRAM.to_vec();
        let at = image
            .windows(4)
            .position(|w| w == needle)
            .expect("the known answer is in the program");
        image[at] ^= 1;
        let argv = ["cspeed".to_string(), "wc".to_string()];
        let e = Forker::start_program(&Ctx::default(), &image, "x", &argv, &[], None)
            .err()
            .expect("started with a wrong known answer");
        assert!(e.to_string().contains("ended with status 6"), "{e}");
        // An unknown kernel is refused too (exit 2), before any pass.
        let argv = ["cspeed".to_string(), "nope".to_string()];
        let e = Forker::start_program(&Ctx::default(), PROGRAM, "x", &argv, &[], None)
            .err()
            .expect("started with no such kernel");
        assert!(e.to_string().contains("ended with status 2"), "{e}");
    }

    /// The passes are the program's work: its CPU time grows with their number, and the
    /// harness takes it as the test's (the helper's usage).
    #[test]
    fn the_program_really_runs_the_passes_it_is_sent() {
        let mut b = Speed::new("interp");
        b.setup(&Ctx::default(), 1).unwrap();
        let mut cpu = |n: u64| {
            b.run(n).unwrap();
            let h = b.helper().expect("the program's answer");
            h.own.cpu_ns()
        };
        let (few, many) = (cpu(20), cpu(200));
        b.teardown().unwrap();
        assert!(few > 0, "20 passes took no CPU time");
        // Ten times the passes, about ten times the time (CPU time: the machine's load
        // changes it little).
        let ratio = many as f64 / few as f64;
        assert!((4.0..25.0).contains(&ratio), "{few} ns then {many} ns");
    }

    #[test]
    fn compiles_really_run_cc_in_the_scratch_directory_and_leave_nothing() {
        let Ok(cc) = programs::find("cc") else {
            println!("skipped: no cc here");
            return;
        };
        for (build, elf_type) in [(Build::Object, 1u16), (Build::Program, 2)] {
            let mut b = Compile::new(build);
            b.setup(&Ctx::default(), 1).unwrap();
            let out = b.output().unwrap();
            let dir = out.parent().unwrap().to_path_buf();
            assert!(
                !out.exists(),
                "{build:?}: {} before any compile",
                out.display()
            );
            let before = crate::sys::usage_children().cpu_ns();
            b.run(1).unwrap();
            // cc ran as a child of this process (its time is counted as the children's) and
            // wrote its ELF file (relocatable, or an executable) where the point said.
            assert!(crate::sys::usage_children().cpu_ns() > before, "{build:?}");
            let bytes = std::fs::read(&out).unwrap();
            assert_eq!(&bytes[..4], b"\x7fELF", "{build:?}");
            assert_eq!(
                u16::from_le_bytes([bytes[16], bytes[17]]),
                elf_type,
                "{build:?}"
            );
            b.teardown().unwrap();
            assert!(!dir.exists(), "{build:?}: {} left behind", dir.display());
        }
        assert!(cc.is_absolute());
    }

    #[test]
    fn cc_runs_with_a_fixed_environment_of_its_own() {
        let c = cc_command(Path::new("/usr/bin/cc"), Path::new("/x"), Build::Object).unwrap();
        let mut set: Vec<String> = c
            .get_envs()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        set.sort();
        assert_eq!(set, ["LC_ALL", "PATH", "TMPDIR"]);
        // The whole program is linked with the build's own flags.
        let program = Build::Program.args();
        assert!(
            program.starts_with(&["-O", "-static", "-nostdlib"]) && program.contains(&"-s"),
            "{program:?}"
        );
        assert!(cc_command(Path::new("cc"), Path::new("/x"), Build::Object).is_err());
        let e = programs::NotFound {
            name: "cc".into(),
            path: "/nowhere".into(),
            skipped: String::new(),
        };
        let why = no_cc(&e);
        assert!(
            why.contains("not measurable") && why.contains("install gcc"),
            "{why}"
        );
    }

    #[test]
    fn the_geometric_mean_is_the_mean_of_the_ratios() {
        assert!((geometric_mean(&[2.0, 8.0]) - 4.0).abs() < 1e-9);
        assert_eq!(geometric_mean(&[]), 0.0);
        // Two machines: the ratio of the means is the mean of the per-kernel ratios.
        let (a, b) = ([10.0, 40.0, 90.0], [20.0, 20.0, 180.0]);
        let ratios: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y / x).collect();
        let lhs = geometric_mean(&b) / geometric_mean(&a);
        assert!((lhs - geometric_mean(&ratios)).abs() < 1e-9);
    }
}
