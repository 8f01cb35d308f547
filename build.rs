//! Build script: compiles the papers' null job and big job, Feder's 8K-BSS job, and the
//! paper's forks/execs program (csrc/forker.c) into tiny freestanding static executables that
//! the sysperf binary carries (include_bytes!), so no benchmark depends on a program outside
//! sysperf. It builds nothing else.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = env::var("SYSPERF_JOB_CC")
        .or_else(|_| env::var("CC"))
        .unwrap_or_else(|_| "cc".to_string());
    for job in ["nulljob", "bigjob", "bss8k", "forker"] {
        let src = format!("csrc/{job}.c");
        println!("cargo:rerun-if-changed={src}");
        let dst = out.join(job);
        // -nostdlib/-static: no libc, no loader; the program is its own _start.
        // -no-pie: a fixed-address executable, like the papers' a.out files.
        // -Wl,--build-id=none, -s: nothing in the file but text and data.
        let status = Command::new(&cc)
            .args([
                "-Os",
                "-static",
                "-nostdlib",
                "-nostartfiles",
                "-no-pie",
                "-fno-pie",
                "-fno-stack-protector",
                "-fno-asynchronous-unwind-tables",
                "-Wl,--build-id=none",
                "-s",
                "-o",
            ])
            .arg(&dst)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("could not run the C compiler '{cc}' for {src}: {e}; install gcc (apt-get install gcc)"));
        assert!(status.success(), "compiling {src} with '{cc}' failed");
    }
    println!("cargo:rerun-if-changed=csrc/job.h");
    println!("cargo:rerun-if-env-changed=SYSPERF_JOB_CC");
    println!("cargo:rerun-if-env-changed=CC");
}
