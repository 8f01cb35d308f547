//! Installing sysperf anywhere (#22): the version and commit in `--version` and in every run;
//! shell completions and man pages generated from the same definitions as `--help`, checked
//! option by option; and the distribution binary (scripts/dist.sh): static, at most 20 MiB,
//! and able to measure in an empty root that has only /proc, /sys and /dev.

use crate::support as common;

use common::{json_of, sysperf};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn version_line() -> String {
    let out = sysperf(Path::new("/nonexistent/unused.db"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn version_names_the_commit_and_every_run_stores_it() {
    let line = version_line();
    let version = line
        .strip_prefix("sysperf ")
        .unwrap_or_else(|| panic!("{line}"));
    let (semver, commit) = version.split_once('+').unwrap_or_else(|| panic!("{line}"));
    assert_eq!(semver, env!("CARGO_PKG_VERSION"));
    let in_git = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match in_git {
        // The build script runs again when HEAD moves, so the binary names HEAD.
        Some(head) => assert_eq!(commit, head, "{line}"),
        None => assert!(commit == "unknown" || commit.len() == 12, "{line}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let out = sysperf(&db)
        .args(["run", "syscall", "--quick", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(json_of(&out.stdout)["sysperf_version"], version);
    let shown = sysperf(&db).args(["show", "latest"]).output().unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    // The header: the first line, or the second under a --quick run's SMOKE TEST line (#33).
    let header = text.lines().find(|l| !l.starts_with("SMOKE TEST")).unwrap();
    assert!(
        header.contains(&format!("measured by sysperf {version}")),
        "{text}"
    );
}

/// Every subcommand's name, from `sysperf --help`.
fn subcommands() -> Vec<String> {
    let out = sysperf(Path::new("/nonexistent/unused.db"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut in_commands = false;
    let mut subs = Vec::new();
    // The commands are listed by task (#33: "Measure:", "Observe the machine:", ...) between
    // the usage line and the options.
    for l in text.lines() {
        if l.starts_with("Usage:") {
            in_commands = true;
            continue;
        }
        if l.starts_with("Options:") {
            break;
        }
        if in_commands {
            if let Some(name) = l
                .strip_prefix("  ")
                .and_then(|l| l.split_whitespace().next())
            {
                if name != "help" && !l.starts_with("   ") {
                    subs.push(name.to_string());
                }
            }
        }
    }
    assert!(subs.len() > 10, "{text}");
    subs
}

/// The long options `sysperf SUB --help` lists.
fn options_of(sub: &str) -> BTreeSet<String> {
    let out = sysperf(Path::new("/nonexistent/unused.db"))
        .args([sub, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{sub}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            // "  -o, --output <FILE>" or "      --json"
            let l = l.trim_start();
            let l = match l.strip_prefix("--") {
                Some(rest) => rest,
                None => l.strip_prefix('-')?.split_once(", --")?.1,
            };
            let name: String = l
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[test]
fn man_pages_and_completions_carry_every_option_of_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = sysperf(Path::new("/nonexistent/unused.db"))
        .args(["man", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let bash = sysperf(Path::new("/nonexistent/unused.db"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(bash.status.success());
    let bash = String::from_utf8(bash.stdout).unwrap();
    for shell in ["zsh", "fish"] {
        let out = sysperf(Path::new("/nonexistent/unused.db"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout.len() > 1000, "{shell}");
    }
    let main_page = std::fs::read_to_string(dir.path().join("sysperf.1")).unwrap();
    assert!(options_of("run").contains("trials") && options_of("export").contains("output"));
    for sub in subcommands() {
        let page = dir.path().join(format!("sysperf-{sub}.1"));
        let roff = std::fs::read_to_string(&page)
            .unwrap_or_else(|e| panic!("{}: {e}", page.display()))
            // roff writes a hyphen as \-
            .replace("\\-", "-");
        assert!(main_page.contains(&sub), "sysperf.1 lacks {sub}");
        assert!(bash.contains(&sub), "bash completion lacks {sub}");
        for opt in options_of(&sub) {
            assert!(
                roff.contains(&format!("--{opt}")),
                "man sysperf-{sub} lacks --{opt} that 'sysperf {sub} --help' has"
            );
            assert!(
                bash.contains(&format!("--{opt}")),
                "bash completion lacks --{opt} of {sub}"
            );
        }
    }
    // A directory not there yet is made, parents too (#43); a file is bad input.
    let nested = dir.path().join("new/man1");
    let out = sysperf(Path::new("/nonexistent/unused.db"))
        .args(["man", nested.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(nested.join("sysperf.1").is_file());
    let out = sysperf(Path::new("/nonexistent/unused.db"))
        .args(["man", nested.join("sysperf.1").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// target/dist/sysperf, built by scripts/dist.sh (.ci/run builds it before the tests).
fn dist_binary() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist/sysperf");
    if bin.exists() {
        return Some(bin);
    }
    assert!(
        std::env::var("CI").is_err(),
        "target/dist/sysperf is missing: .ci/run builds it with scripts/dist.sh"
    );
    eprintln!("skipped: no target/dist/sysperf (bash scripts/dist.sh --binary builds it)");
    None
}

#[test]
fn the_dist_binary_is_static_small_and_measures_in_an_empty_root() {
    let Some(bin) = dist_binary() else {
        return;
    };
    let size = std::fs::metadata(&bin).unwrap().len();
    assert!(size <= 20 << 20, "{} bytes", size);
    let ldd = Command::new("ldd").arg(&bin).output().unwrap();
    let said =
        String::from_utf8_lossy(&ldd.stdout).to_string() + &String::from_utf8_lossy(&ldd.stderr);
    assert!(
        said.contains("not a dynamic executable") || said.contains("statically linked"),
        "{said}"
    );
    if !sysperf::sys::is_root() {
        eprintln!("skipped the empty-root run: mounting /proc in a mount namespace needs root");
        return;
    }
    // An empty root: the binary, and the kernel's /proc, /sys and /dev. Nothing else: no
    // libc, no /tmp, no /etc, no shell.
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in ["proc", "sys", "dev"] {
        std::fs::create_dir(r.join(d)).unwrap();
    }
    std::fs::copy(&bin, r.join("sysperf")).unwrap();
    let script = format!(
        "set -e; mount -t proc proc {r}/proc; mount --rbind /sys {r}/sys; \
         mount --rbind /dev {r}/dev; exec chroot {r} /sysperf run syscall --quick --json --db /s.db",
        r = r.display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env_clear()
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = json_of(&out.stdout);
    assert_eq!(run["results"][0]["id"], "syscall");
    assert!(
        run["results"][0]["summary"]["wall_ns_per_op"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(r.join("s.db").exists());
}
