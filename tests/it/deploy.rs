//! The Ansible deployment (#21): deploy/sysperf.yml run for real against 3 "hosts", each a
//! network namespace of its own (`ip netns`, named sysperf-PID-N, removed on drop, also on
//! panic) with a hostname of its own (a UTS namespace per task, `unshare --uts` + `hostname`).
//! Ansible reaches each through its local connection, with a Python interpreter that enters
//! the host's namespaces, so every task (the copy's module, the run) executes inside them. The
//! store is a private PostgreSQL cluster (tests/it/support/pg.rs), reached from the namespaces by
//! its unix socket, since they share the file system. Needs root, `ip` and `unshare`, and
//! ansible-playbook: skipped without, except that under CI (`CI=true`) a missing
//! ansible-playbook fails.

use crate::support as common;

use common::json_of;
use common::pg;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A network namespace, deleted when dropped (also when the test panics).
struct Netns(String);

impl Netns {
    fn new(name: String) -> Netns {
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ip netns add {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// `sysperf ARGS` on the store `db`, which must succeed: its stdout.
fn sysperf(db: &str, args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("sysperf")
        .unwrap()
        .env("SYSPERF_DB", db)
        .env("NO_COLOR", "1")
        .args(args)
        .assert()
        .success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn the_playbook_deploys_to_3_namespace_hosts_and_their_runs_compare() {
    if !have("ansible-playbook") {
        assert!(
            !under_ci(),
            "ansible-playbook is not installed: under CI the deployment test must run; install ansible-core"
        );
        eprintln!("skipped: ansible-playbook is not installed (apt-get install ansible-core)");
        return;
    }
    if pg::unsafe_free_euid() != 0 || !have("ip") || !have("unshare") {
        eprintln!(
            "skipped: the deployment test makes network namespaces: it needs root, ip and unshare"
        );
        return;
    }
    // A cluster of its own: the play is run once with the server stopped (#35).
    let Some(cluster) = pg::PgCluster::start() else {
        return;
    };
    let url = cluster.create_db("deploy_fleet");
    // The same database by the unix socket, which every namespace reaches.
    let socket_url = format!(
        "postgres://sysperf@localhost:{}/deploy_fleet?host={}",
        cluster.port,
        cluster.socket_dir().display()
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::Builder::new()
        .prefix("sysperf-deploy-")
        .tempdir()
        .unwrap();
    let w = work.path();
    let hosts = ["host1", "host2", "host3"];
    let pid = std::process::id();
    let mut namespaces = Vec::new();
    let mut inventory = String::from("[fleet]\n");
    for (n, host) in hosts.iter().enumerate() {
        let ns = Netns::new(format!("sysperf-{pid}-{n}"));
        // The "host": its python runs every task in its network namespace, under its hostname.
        let python = w.join(format!("{host}-python"));
        std::fs::write(
            &python,
            format!(
                "#!/bin/sh\nexec ip netns exec {ns} unshare --uts sh -c 'hostname \"$0\" && exec python3 \"$@\"' {host}-{pid} \"$@\"\n",
                ns = ns.0
            ),
        )
        .unwrap();
        std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // Namespaces share the file system: each host installs into a directory of its own.
        let bin_dir: PathBuf = w.join(host).join("bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        // Its systemd unit directory (as /etc/systemd/system is there on a host).
        std::fs::create_dir_all(w.join(host).join("units")).unwrap();
        inventory.push_str(&format!(
            "{host} ansible_connection=local ansible_python_interpreter={} sysperf_bin_dir={} sysperf_unit_dir={} sysperf_etc_dir={}\n",
            python.display(),
            bin_dir.display(),
            w.join(host).join("units").display(),
            w.join(host).join("etc").display(),
        ));
        namespaces.push(ns);
    }
    let inventory_path = w.join("inventory.ini");
    std::fs::write(&inventory_path, inventory).unwrap();

    let label = format!("deploy{pid}");
    let state = w.join("state");
    let play = |extra: &[&str]| {
        let out = Command::new("ansible-playbook")
            .current_dir(w)
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_LOCAL_TEMP", w.join("ansible-local"))
            .env("ANSIBLE_REMOTE_TEMP", w.join("ansible-remote"))
            .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
            // Spool files of the hosts (they share the file system), and a short outage.
            .env("XDG_STATE_HOME", &state)
            .env("SYSPERF_PG_RETRY_S", "1")
            .arg("-i")
            .arg(&inventory_path)
            .arg(root.join("deploy/sysperf.yml"))
            .args(["-e", &format!("label={label}")])
            .args(["-e", &format!("sysperf_db={socket_url}")])
            .args([
                "-e",
                &format!(
                    "sysperf_binary={}",
                    assert_cmd::cargo::cargo_bin("sysperf").display()
                ),
            ])
            .args(["-e", "sysperf_selection='syscall --quick'"])
            .args(extra)
            .output()
            .unwrap();
        let log = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out, log)
    };
    let (out, log) = play(&[]);
    assert!(out.status.success(), "ansible-playbook failed:\n{log}");
    assert_eq!(log.matches("changed=2 ").count(), 3, "{log}");

    // Each host got its binary, and stored one complete run under its own hostname.
    for host in hosts {
        assert!(w.join(host).join("bin/sysperf").exists(), "{host}: {log}");
    }
    let runs = json_of(sysperf(&url, &["runs", "--json"]).as_bytes());
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}\n{log}");
    let mut stored: Vec<(String, String)> = cluster
        .query(
            "deploy_fleet",
            "SELECT label || ' ' || hostname || ' ' || complete FROM runs",
        )
        .into_iter()
        .map(|r| {
            let mut f = r.split(' ');
            let (l, h, c) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            assert_eq!(c, "1", "{r}: not complete");
            (l.to_string(), h.to_string())
        })
        .collect();
    stored.sort();
    let want: Vec<(String, String)> = hosts
        .iter()
        .map(|h| (format!("{label}-{h}"), format!("{h}-{pid}")))
        .collect();
    assert_eq!(stored, want, "{log}");

    // The fleet report: `compare --by host`, one column per host, named by its hostname (the
    // playbook's runs are the only runs in this store).
    let table = sysperf(&url, &["compare", "--by", "host"]);
    for (i, host) in hosts.iter().enumerate() {
        let legend = format!("  [{}] ", i + 1);
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&legend) && l.contains(&format!("host={host}-{pid}"))),
            "no column [{}] for {host}:\n{table}",
            i + 1
        );
    }
    let row = table
        .lines()
        .find(|l| l.starts_with("syscall "))
        .unwrap_or_else(|| panic!("no syscall row:\n{table}"));
    let elapsed = row.split('|').nth(1).unwrap();
    assert_eq!(elapsed.split_whitespace().count(), 3, "{row}\n{table}");

    // #35 item 10: the play again with the same label stores no duplicates.
    let (out, log) = play(&[]);
    assert!(out.status.success(), "ansible-playbook failed:\n{log}");
    assert_eq!(
        log.matches("is stored already: not run").count(),
        3,
        "{log}"
    );
    assert_eq!(
        cluster.query("deploy_fleet", "SELECT count(*) FROM runs"),
        ["3"]
    );

    // #35 item 1: with the server away, each host's run goes into a spool file; the play
    // says so (exit code 5 is not a failure), and the next play uploads them.
    cluster.stop();
    let (out, log) = play(&["-e", "sysperf_rerun=true"]);
    assert!(out.status.success(), "ansible-playbook failed:\n{log}");
    assert_eq!(log.matches("SPOOLED: host").count(), 3, "{log}");
    let spool = state.join("sysperf/spool");
    let spooled = || {
        std::fs::read_dir(&spool)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "db"))
                })
                .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(spooled(), 3, "{log}");
    cluster.start_again();
    let (out, log) = play(&[]);
    assert!(out.status.success(), "ansible-playbook failed:\n{log}");
    assert_eq!(spooled(), 0, "{log}");
    assert_eq!(
        cluster.query(
            "deploy_fleet",
            "SELECT count(*) FROM runs WHERE complete = 1"
        ),
        ["6"],
        "{log}"
    );

    // #35 item 8: runs on a schedule. The timer is not started here (the test's hosts share
    // this machine's init); its units are checked, and the service's command run as systemd
    // would run it.
    let (out, log) = play(&[
        "-e",
        "sysperf_schedule='*-*-* 03:00:00'",
        "-e",
        "sysperf_enable_timer=false",
    ]);
    assert!(out.status.success(), "ansible-playbook failed:\n{log}");
    for host in hosts {
        let units = w.join(host).join("units");
        let service = std::fs::read_to_string(units.join("sysperf-fleet.service")).unwrap();
        let timer = std::fs::read_to_string(units.join("sysperf-fleet.timer")).unwrap();
        assert!(timer.contains("OnCalendar=*-*-* 03:00:00"), "{timer}");
        assert!(timer.contains("Persistent=true"), "{timer}");
        assert!(service.contains("--settle 120"), "{service}");
        assert!(service.contains("SuccessExitStatus=5"), "{service}");
        let env = w.join(host).join("etc/fleet.env");
        let mode = std::fs::metadata(&env).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", env.display());
        assert!(std::fs::read_to_string(&env)
            .unwrap()
            .contains(&format!("SYSPERF_DB={socket_url}")));
        if have("systemd-analyze") {
            let v = Command::new("systemd-analyze")
                .arg("verify")
                .arg(units.join("sysperf-fleet.service"))
                .arg(units.join("sysperf-fleet.timer"))
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&v.stderr);
            assert!(
                v.status.success() && !said.contains("sysperf-fleet"),
                "systemd-analyze verify: {said}"
            );
        }
    }
    // The service's command, as systemd runs it ($$ is $, %% is %), stores a run labelled
    // LABEL-HOST-YYYYMMDDTHHMM.
    let service = std::fs::read_to_string(w.join("host1/units/sysperf-fleet.service")).unwrap();
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap()
        .replace("$$", "$")
        .replace("%%", "%")
        .replace("--settle 120", "--settle 1");
    let ran = Command::new("/bin/sh")
        .args(["-c", &exec])
        .env("SYSPERF_DB", &url)
        .env("NO_COLOR", "1")
        .current_dir(w)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{exec}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let labels = cluster.query(
        "deploy_fleet",
        &format!("SELECT label FROM runs WHERE label LIKE '{label}-host1-2%'"),
    );
    assert_eq!(labels.len(), 1, "{labels:?}");
    assert_eq!(
        labels[0].len(),
        format!("{label}-host1-").len() + 13,
        "{labels:?}"
    );
    drop(namespaces);
}
