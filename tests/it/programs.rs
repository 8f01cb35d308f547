//! Every external program sysperf runs is found by one rule, `sysperf::programs` (absolute
//! directories of PATH that only root or this user can write, run by absolute path), #29
//! item 6:
//!
//! - no `Command::new` in `src/` outside that module (a bare name there would be looked up
//!   by the standard library on the whole PATH, relative and empty entries included);
//! - as root, from a directory holding a planted `ip` and `tc` and with an empty entry (the
//!   current directory) first in PATH, `run --quick --suite net.longhaul` and the next
//!   `doctor`'s janitor (removing a killed worker's link) never run the planted programs, and
//!   still do their work with the real ones.

use crate::support as common;

use common::{json_of, sysperf};
use std::path::{Path, PathBuf};

/// Every `Command::new(` in the Rust files under `dir` outside `src/programs.rs` (clap's
/// `Command` is not a process), as `file:line: text`.
fn commands_outside_the_rule(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            commands_outside_the_rule(&p, root, out);
            continue;
        }
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if p.extension().and_then(|x| x.to_str()) != Some("rs") || rel == "programs.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let spawns = code
                .match_indices("Command::new(")
                .any(|(at, _)| !code[..at].ends_with("clap::"));
            if spawns {
                out.push(format!("src/{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
}

#[test]
fn no_program_is_started_outside_the_one_rule() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    commands_outside_the_rule(&src, &src, &mut found);
    assert!(
        found.is_empty(),
        "processes started without sysperf::programs (use programs::command(NAME) or \
         programs::at(ABSOLUTE_PATH)):\n{}",
        found.join("\n")
    );
    // The scan does see one where there is one.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.rs"),
        "let a = clap::Command::new(\"x\");\nlet b = std::process::Command::new(\"ip\");\n",
    )
    .unwrap();
    let mut seen = Vec::new();
    commands_outside_the_rule(dir.path(), dir.path(), &mut seen);
    assert_eq!(
        seen,
        ["src/x.rs:2: let b = std::process::Command::new(\"ip\");"]
    );
}

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// A PATH whose first entry is empty (the current directory), as in the issue.
const HOSTILE_PATH: &str = ":/usr/sbin:/usr/bin:/sbin:/bin";

/// A directory another user could have prepared: `ip` and `tc` scripts that append their
/// arguments to `mark` and then run the real program (so that old code, which ran them,
/// still worked and left nothing behind; the mark is the evidence).
struct Planted {
    dir: tempfile::TempDir,
}

impl Planted {
    fn new() -> Planted {
        let dir = tempfile::tempdir().unwrap();
        for name in ["ip", "tc"] {
            let real: PathBuf = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(name))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("{name} is not installed (iproute2)"));
            let mark = dir.path().join("mark");
            let script = format!(
                "#!/bin/sh\necho \"{name} $*\" >> '{}'\nexec '{}' \"$@\"\n",
                mark.display(),
                real.display()
            );
            let p = dir.path().join(name);
            std::fs::write(&p, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Planted { dir }
    }

    /// What the planted programs were run with, one line per run.
    fn runs(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mark")).unwrap_or_default()
    }

    /// `sysperf ARGS` from the planted directory with the hostile PATH.
    fn sysperf(&self, db: &Path) -> assert_cmd::Command {
        let mut c = sysperf(db);
        c.current_dir(self.dir.path()).env("PATH", HOSTILE_PATH);
        c
    }
}

#[test]
fn the_long_haul_and_its_janitor_never_run_a_planted_ip() {
    if !root() {
        println!("skipped: the long haul needs root");
        return;
    }
    let planted = Planted::new();
    let store = tempfile::tempdir().unwrap();
    let db = store.path().join("s.db");
    let out = planted
        .sysperf(&db)
        .args(["run", "--quick", "--suite", "net.longhaul", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        planted.runs(),
        "",
        "the planted ip/tc ran as root (stderr: {})",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The real ip and tc did the work: the long haul was measured.
    let v = json_of(&out.stdout);
    let series = v["series"].as_array().unwrap();
    let long = series
        .iter()
        .find(|s| s["id"] == "net.longhaul")
        .expect("net.longhaul measured");
    for p in long["points"].as_array().unwrap() {
        assert!(p["result"]["error"].is_null(), "{p}");
    }

    // The janitor: a worker killed with its link up, then `doctor` (whose tidy removes the
    // link with `ip`) from the planted directory.
    let request = common::point_request("net.longhaul", 4, 1000);
    let mut worker = std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"))
        .args(["__worker", &request])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = worker.id();
    // Its veth end in this namespace, `spPID.TAGa` (TAG: random per process).
    let owned = |end: char| {
        std::fs::read_dir("/sys/class/net")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.ends_with(end) && sysperf::harness::janitor::link_owner(n) == Some(pid))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let name = loop {
        if let Some(n) = owned('a') {
            break n;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "worker {pid}'s link never came up"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let link = format!("/sys/class/net/{name}");
    worker.kill().unwrap();
    worker.wait().unwrap();
    let out = planted.sysperf(&db).arg("doctor").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(planted.runs(), "", "the janitor ran the planted ip: {err}");
    assert!(out.status.success(), "{err}");
    // It did remove the link and the namespace, with the real ip.
    assert!(err.contains(&name), "{err}");
    assert!(!Path::new(&link).exists(), "{link} left");
    let netns_left: Vec<String> = std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| sysperf::harness::janitor::link_owner(n) == Some(pid))
        .collect();
    assert!(netns_left.is_empty(), "{netns_left:?}");
}
