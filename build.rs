//! Build script: compiles the papers' null job and big job, Feder's 8K-BSS job, the paper's
//! forks/execs program (csrc/forker.c) and Feder's C-speed program (csrc/cspeed.c with its
//! driver csrc/cspeed_main.c) into tiny freestanding static executables that the sysperf
//! binary carries (include_bytes!), so no benchmark depends on a program outside sysperf. It also records the git commit the build is made from (`SYSPERF_COMMIT`: the
//! version every run stores and `--version` prints). It builds nothing else.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// How every carried program is linked.
/// -nostdlib/-static: no libc, no loader; the program is its own _start.
/// -no-pie: a fixed-address executable, like the papers' a.out files.
/// -Wl,--build-id=none, -s: nothing in the file but text and data.
const FREESTANDING: [&str; 9] = [
    "-static",
    "-nostdlib",
    "-nostartfiles",
    "-no-pie",
    "-fno-pie",
    "-fno-stack-protector",
    "-fno-asynchronous-unwind-tables",
    "-Wl,--build-id=none",
    "-s",
];

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = env::var("SYSPERF_JOB_CC")
        .or_else(|_| env::var("CC"))
        .unwrap_or_else(|_| "cc".to_string());
    // The jobs are optimised for size (their text is what exec reads); the C-speed program
    // with `-O`, as Feder's "peephole optimized" code and the compile series' `cc -O`.
    let programs: [(&str, &[&str], &str); 5] = [
        ("nulljob", &["csrc/nulljob.c"], "-Os"),
        ("bigjob", &["csrc/bigjob.c"], "-Os"),
        ("bss8k", &["csrc/bss8k.c"], "-Os"),
        ("forker", &["csrc/forker.c"], "-Os"),
        ("cspeed", &["csrc/cspeed.c", "csrc/cspeed_main.c"], "-O"),
    ];
    for (job, sources, opt) in programs {
        let src = sources.join(" ");
        for s in sources {
            println!("cargo:rerun-if-changed={s}");
        }
        let dst = out.join(job);
        let status = Command::new(&cc)
            .arg(opt)
            .args(FREESTANDING)
            .arg("-o")
            .arg(&dst)
            .args(sources)
            .status()
            .unwrap_or_else(|e| panic!("could not run the C compiler '{cc}' for {src}: {e}; install gcc (apt-get install gcc)"));
        assert!(status.success(), "compiling {src} with '{cc}' failed");
    }
    // The compiler the C-speed program was built with, for the cspeed suite's notes: that
    // program's speed is this compiler's code's as much as the machine's (Feder's "grouping
    // of machine with compiler performance").
    let version = Command::new(&cc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "version unknown".into());
    println!("cargo:rustc-env=SYSPERF_CSPEED_CC={cc} -O ({version})");
    // The same flags for the cspeed suite's compile of the whole program.
    println!(
        "cargo:rustc-env=SYSPERF_FREESTANDING={}",
        FREESTANDING.join(" ")
    );
    println!("cargo:rerun-if-changed=csrc/job.h");
    println!("cargo:rerun-if-changed=csrc/sys.h");
    commit();
    println!("cargo:rerun-if-env-changed=SYSPERF_JOB_CC");
    println!("cargo:rerun-if-env-changed=CC");
}

/// The commit HEAD names, 12 hex digits, as `SYSPERF_COMMIT` for the crate: from the
/// environment when a packager sets it, else from git, else "unknown" (a source tarball). The
/// build is redone when HEAD moves (a commit, a checkout).
fn commit() {
    println!("cargo:rerun-if-env-changed=SYSPERF_COMMIT");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = env::var("SYSPERF_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    // HEAD itself, the branch file it points to (in a worktree or not), and packed refs: only
    // those that exist. Cargo reruns a build script whose watched file is missing on every
    // build, and so recompiled the whole crate after each no-change `cargo build` in a
    // checkout whose refs were never packed (no `.git/packed-refs`). A branch whose ref is in
    // none of these files yet (unborn, or only packed) is followed through its folder.
    let mut watched = Vec::new();
    for file in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", file]) {
            watched.push(PathBuf::from(p));
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &r]) {
            let p = PathBuf::from(p);
            if !p.exists() {
                if let Some(dir) = p.parent() {
                    watched.push(dir.to_path_buf());
                }
            }
            watched.push(p);
        }
    }
    for p in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    println!("cargo:rustc-env=SYSPERF_COMMIT={commit}");
}
