//! `execs*` and `vexecs*`: process creation with exec of the papers' "null job" or "big job"
//! (Appendix A, "execs", "nulljob", "bigjob"; the vexecs programs use vfork).
//!
//! The jobs are tiny static programs compiled from csrc/ by the build and carried inside
//! sysperf, so nothing outside sysperf is run. Setup writes the chosen one as a file named as
//! the run script named it ("nulljob", "bigjob") into a private directory (see `forker`), and
//! it is exec'd by that name: a path lookup, as the paper's execv(argv[3], argv) looked
//! "nulljob" up in its working directory, not an exec of a descriptor (which skips the lookup).
//! `execs*` run the appendix's `execs` program itself, a few KiB of C (`forker`), so that the
//! forking process has the paper's size, and `vexecs*` its `vexecs`, the same with vfork; it
//! runs in the directory and calls execve("nulljob").
//!
//! As in the paper, the child gets the parent's argv ("execs 1000 0 nulljob") and a small
//! fixed environment (36 bytes, about the paper's), or that plus the run script's fifteen
//! variables (`setenv a` .. `setenv o`, each "a=" and 69 digits) for the "1K env" tests, so
//! results do not depend on the caller's environment. The paper counts those variables as
//! "1065 additional bytes of data" (§3.2.1: 15 strings of 71 characters), which the kernel
//! copies as 1,080 with their terminating NULs; `env_bytes` counts the NULs,
//! [`paper_env_bytes`] is the paper's count, the one its cost per byte divides by.

use super::forker::Forker;
use super::{Benchmark, Charge, Chart, Ctx, Group, Helper, Shape, Spec};
use crate::error::BenchError;

/// The null job: 1 KiB of initialized data, exits 0.
pub static NULL_JOB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/nulljob"));
/// The big job: 250 KiB of initialized data, exits 0.
pub static BIG_JOB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bigjob"));

/// The minimal environment every exec test passes (36 bytes with terminators).
pub const BASE_ENV: &[&str] = &["HOME=/", "PATH=/bin:/usr/bin", "TERM=dumb"];

/// The paper's size of the 1K environment: "the execs0null and execs1knull tests were rerun
/// with 1065 additional bytes of data" (§3.2.1): the run script's 15 variables of 71
/// characters each, counted without their terminators.
pub fn paper_env_bytes() -> usize {
    kilo_env().iter().map(String::len).sum()
}

/// The run script's "fill environment with ~1024 bytes": setenv a..o, each 69 digits
/// (72 bytes a variable with "a=" and the terminator, 1,080 in all; 1,065 without the NULs,
/// the paper's count).
pub fn kilo_env() -> Vec<String> {
    const VALUE: &str = "012345678901234567890123456789012345678901234567890123456780123456789";
    ('a'..='o').map(|c| format!("{c}={VALUE}")).collect()
}

/// Feder's Table III "exec 8K BSS" job: 8 KiB of BSS and no other data, exits 0
/// (csrc/bss8k.c).
pub static BSS8K_JOB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bss8k"));

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Job {
    Null,
    Big,
    /// The feder suite's (Table III row 8).
    Bss8k,
}

impl Job {
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Job::Null => NULL_JOB,
            Job::Big => BIG_JOB,
            Job::Bss8k => BSS8K_JOB,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Job::Null => "nulljob",
            Job::Big => "bigjob",
            Job::Bss8k => "bss8k",
        }
    }
}

/// The chart this family's tests are drawn on.
pub static CHART: Chart = Chart {
    name: "exec",
    title: "exec after fork and vfork",
    about: None,
};

macro_rules! exec_spec {
    ($id:literal, $label:literal, $paper:literal, $today:literal, $vfork:expr, $brk:literal, $job:expr, $kenv:expr) => {
        Spec {
            id: $id,
            label: $label,
            group: Group::Kernel,
            chart: &CHART,
            paper: $paper,
            today: $today,
            paper_count: 1_000,
            unit: "exec",
            ops_per_iteration: 1,
            shape: Shape::Single,
            charge: Charge::Waited,
            make: || Box::new(Execs::new($vfork, $brk, $job, $kenv)),
        }
    };
}

pub static SPECS: &[Spec] = &[
    exec_spec!(
        "execs0null",
        "execs0null",
        "fork-exec ``null job''-exit-wait 1,000 times",
        "the appendix's execs program (a few KiB of C): fork(), execv(\"nulljob\") by name, wait()",
        false,
        0,
        Job::Null,
        false
    ),
    exec_spec!(
        "execs0null-1kenv",
        "execs0null (1K env)",
        "execs0null above, with 1K environment added",
        "as execs0null, plus the run script's 15 variables (the paper's 1,065 bytes; 1,080 with terminators)",
        false,
        0,
        Job::Null,
        true
    ),
    exec_spec!(
        "execs1knull",
        "execs1knull",
        "sbrk(1024), fault page, fork-exec ``null job''-exit-wait 1,000 times",
        "the execs program: sbrk(1024) touched every 1 KiB, fork(), execv null job, wait()",
        false,
        1024,
        Job::Null,
        false
    ),
    exec_spec!(
        "execs1knull-1kenv",
        "execs1knull (1K env)",
        "execs1knull above, with 1K environment added",
        "as execs1knull, plus the run script's 15 variables (the paper's 1,065 bytes; 1,080 with terminators)",
        false,
        1024,
        Job::Null,
        true
    ),
    exec_spec!(
        "execs100knull",
        "execs100knull",
        "sbrk(102400), fault pages, fork-exec ``null job''-exit-wait 1,000 times",
        "the execs program: sbrk(102400) touched every 1 KiB, fork(), execv null job, wait()",
        false,
        102_400,
        Job::Null,
        false
    ),
    exec_spec!(
        "vexecs0null",
        "vexecs0null",
        "vfork-exec ``null job''-exit-wait 1,000 times",
        "the appendix's vexecs (execs with vfork): vfork, execv(\"nulljob\") by name, wait()",
        true,
        0,
        Job::Null,
        false
    ),
    exec_spec!(
        "vexecs1knull",
        "vexecs1knull",
        "sbrk(1024), fault page, vfork-exec ``null job''-exit-wait 1,000 times",
        "the vexecs program: sbrk(1024) touched, vfork, execv null job, wait()",
        true,
        1024,
        Job::Null,
        false
    ),
    exec_spec!(
        "vexecs100knull",
        "vexecs100knull",
        "sbrk(102400), fault pages, vfork-exec ``null job''-exit-wait 1,000 times",
        "the vexecs program: sbrk(102400) touched, vfork, execv null job, wait()",
        true,
        102_400,
        Job::Null,
        false
    ),
    exec_spec!(
        "execs0big",
        "execs0big",
        "fork-exec ``big job''-exit-wait 1,000 times",
        "the execs program: fork(), execv(\"bigjob\") (250 KiB data) by name, wait()",
        false,
        0,
        Job::Big,
        false
    ),
    exec_spec!(
        "execs1kbig",
        "execs1kbig",
        "sbrk(1024), fault page, fork-exec ``big job''-exit-wait 1,000 times",
        "the execs program: sbrk(1024) touched, fork(), execv big job, wait()",
        false,
        1024,
        Job::Big,
        false
    ),
    exec_spec!(
        "execs100kbig",
        "execs100kbig",
        "sbrk(102400), fault pages, fork-exec ``big job''-exit-wait 1,000 times",
        "the execs program: sbrk(102400) touched, fork(), execv big job, wait()",
        false,
        102_400,
        Job::Big,
        false
    ),
    exec_spec!(
        "vexecs0big",
        "vexecs0big",
        "vfork-exec ``big job''-exit-wait 1,000 times",
        "the vexecs program: vfork, execv(\"bigjob\") (250 KiB data) by name, wait()",
        true,
        0,
        Job::Big,
        false
    ),
    exec_spec!(
        "vexecs1kbig",
        "vexecs1kbig",
        "sbrk(1024), fault pages, vfork-exec ``big job''-exit-wait 1,000 times",
        "the vexecs program: sbrk(1024) touched, vfork, execv big job, wait()",
        true,
        1024,
        Job::Big,
        false
    ),
    exec_spec!(
        "vexecs100kbig",
        "vexecs100kbig",
        "sbrk(102400), fault pages, vfork-exec ``big job''-exit-wait 1,000 times",
        "the vexecs program: sbrk(102400) touched, vfork, execv big job, wait()",
        true,
        102_400,
        Job::Big,
        false
    ),
];

pub(crate) struct Execs {
    vfork: bool,
    brk: usize,
    job: Job,
    kilo_env: bool,
    /// The paper's execs (or vexecs) program.
    forker: Option<Forker>,
}

impl Execs {
    pub(crate) fn new(vfork: bool, brk: usize, job: Job, kilo_env: bool) -> Execs {
        Execs {
            vfork,
            brk,
            job,
            kilo_env,
            forker: None,
        }
    }
}

/// Bytes the environment occupies in the new image (strings and their terminators).
pub fn env_bytes(kilo: bool) -> usize {
    let extra: usize = if kilo {
        kilo_env().iter().map(|s| s.len() + 1).sum()
    } else {
        0
    };
    BASE_ENV.iter().map(|s| s.len() + 1).sum::<usize>() + extra
}

impl Benchmark for Execs {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let prog = if self.vfork { "vexecs" } else { "execs" };
        // "execs 1000 0 nulljob": the job gets this argv, as execv(argv[3], argv) gave it.
        let argv_s = vec![
            prog.to_string(),
            iterations.to_string(),
            self.brk.to_string(),
            self.job.name().to_string(),
        ];
        let mut env_s: Vec<String> = BASE_ENV.iter().map(|s| s.to_string()).collect();
        if self.kilo_env {
            env_s.extend(kilo_env());
        }
        // The program grows its own heap and passes its environment on to the job.
        let job = (self.job.name(), self.job.bytes());
        self.forker = Some(Forker::start(ctx, &argv_s, &env_s, Some(job))?);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        match &mut self.forker {
            Some(f) => f.run(iterations),
            None => Err(BenchError::Protocol("exec: no setup".into())),
        }
    }

    fn helper(&mut self) -> Option<Helper> {
        self.forker.as_mut().and_then(Forker::helper)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.forker = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;

    #[test]
    fn a_file_planted_at_the_old_program_directory_name_changes_nothing() {
        // sysperf-exec-<pid> was the exec tests' fixed name (removed and remade, whoever
        // owned it); now the directory has a random name and the planted file stays.
        let planted = std::env::temp_dir().join(format!("sysperf-exec-{}", sys::getpid()));
        std::fs::write(&planted, "theirs").unwrap();
        let dir = crate::bench::forker::ProgramDir::new();
        let kept = std::fs::read(&planted);
        let _ = std::fs::remove_file(&planted);
        assert!(dir.is_ok(), "{:?}", dir.err());
        assert_eq!(kept.unwrap(), b"theirs");
    }

    #[test]
    fn environment_sizes_are_the_run_scripts_with_terminators() {
        let v = kilo_env();
        assert_eq!(v.len(), 15);
        assert!(v.iter().all(|s| s.len() == 71), "a=, then 69 digits");
        // Every size in the code and its texts counts the NULs, as the kernel copies them.
        assert_eq!(env_bytes(false), 36);
        assert_eq!(env_bytes(true) - env_bytes(false), 1080);
        // The paper's 1065 (§3.2.1): the same strings without their NULs.
        let paper = crate::published::figure("env.bytes", "4.1BSD and 4.2BSD").unwrap();
        assert_eq!(paper_env_bytes() as f64, paper.value);
    }

    #[test]
    fn jobs_are_tiny_static_executables_with_the_papers_data_sizes() {
        for (job, min, max) in [
            (Job::Null, 1024, 16 * 1024),
            (Job::Big, 250 * 1024, 270 * 1024),
        ] {
            let b = job.bytes();
            assert_eq!(&b[..4], b"\x7fELF", "{job:?}");
            assert!(
                b.len() >= min && b.len() <= max,
                "{job:?}: {} bytes",
                b.len()
            );
        }
    }
}
