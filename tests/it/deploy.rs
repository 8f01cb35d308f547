//! The Ansible deployment (#21, #35 item 7): deploy/sysperf.yml run for real against 3 "hosts"
//! the way a fleet is reached. Each host is a network namespace of its own (`ip netns`, named
//! sysperf-PID-N, removed on drop, also on panic) joined to this one by a veth pair, where an
//! sshd (Debian's openssh-server) listens on the host's address with a hostname and a /run of
//! its own (`unshare --uts --mount`); Ansible reaches it over ssh with a key made here, so the
//! binary and Ansible's modules travel over ssh. The store is a private PostgreSQL cluster
//! (tests/it/support/pg.rs) that the hosts reach over TCP with TLS (its certificate made here
//! for its address, checked with sslmode=verify-full) as a user with a SCRAM password kept in
//! an Ansible Vault file. Needs root, `ip`, `unshare`, sshd, ssh-keygen, openssl and
//! ansible-playbook: skipped without, except under CI (`CI=true`), where a missing tool fails.

use crate::support as common;

use common::json_of;
use common::pg::{self, under_ci};
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `program ARGS`, which must succeed.
fn must(program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace, deleted when dropped (also when the test panics), and with it the
/// veth pair that joins it to this one.
struct Netns(String);

impl Netns {
    fn new(name: String) -> Netns {
        must("ip", &["netns", "add", &name]);
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// The two ends of host `n`'s link (this side, the host's side): a /30 of this test
/// process's own in 172.16.0.0/12, so that concurrent test processes, and the net suite's
/// links in 10.0.0.0/8, never share a subnet. The database's address is the last of the
/// process's block of 64.
fn link(n: u32) -> (Ipv4Addr, Ipv4Addr) {
    let net = block() | (n << 2);
    (Ipv4Addr::from(net + 1), Ipv4Addr::from(net + 2))
}

fn db_address() -> Ipv4Addr {
    Ipv4Addr::from(block() | 62)
}

/// This test process's block of 64 addresses in 172.16.0.0/12.
fn block() -> u32 {
    u32::from(Ipv4Addr::new(172, 16, 0, 0)) | ((std::process::id() & 0x3fff) << 6)
}

/// A host of the fleet: its namespace and the sshd listening in it (killed when dropped,
/// before the namespace goes; it also dies with this thread: PR_SET_PDEATHSIG).
struct Host {
    sshd: Child,
    _ns: Netns,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}

impl Host {
    /// Host `n` named `name`: the namespace, its link (and, on host 0's link, the database's
    /// address), and an sshd on the host's address that lets in the key `key` as root, with
    /// `env` set in every session.
    fn start(n: u32, name: &str, w: &Path, key: &Path, env: &str) -> Host {
        let pid = std::process::id();
        let ns = Netns::new(format!("sysperf-{pid}-{n}"));
        let (here, there) = link(n);
        let (a, b) = (format!("sd{pid}h{n}a"), format!("sd{pid}h{n}b"));
        must(
            "ip",
            &[
                "link", "add", &a, "type", "veth", "peer", "name", &b, "netns", &ns.0,
            ],
        );
        must("ip", &["addr", "add", &format!("{here}/30"), "dev", &a]);
        if n == 0 {
            must(
                "ip",
                &["addr", "add", &format!("{}/32", db_address()), "dev", &a],
            );
        }
        must("ip", &["link", "set", &a, "up"]);
        let inside = |args: &[&str]| {
            let mut all = vec!["-n", ns.0.as_str()];
            all.extend(args);
            must("ip", &all);
        };
        inside(&["addr", "add", &format!("{there}/30"), "dev", &b]);
        inside(&["link", "set", &b, "up"]);
        inside(&["link", "set", "lo", "up"]);
        inside(&[
            "route",
            "add",
            &format!("{}/32", db_address()),
            "via",
            &here.to_string(),
        ]);
        let dir = w.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let host_key = dir.join("ssh_host_key");
        must(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                host_key.to_str().unwrap(),
            ],
        );
        let conf = dir.join("sshd_config");
        std::fs::write(
            &conf,
            format!(
                "ListenAddress {there}:22\nHostKey {}\nPidFile {}\nPermitRootLogin prohibit-password\n\
                 AuthorizedKeysFile {}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\nSetEnv {env}\n",
                host_key.display(),
                dir.join("sshd.pid").display(),
                key.with_extension("pub").display(),
            ),
        )
        .unwrap();
        // In the namespace: a hostname and a /run of its own (sshd wants /run/sshd, which a
        // machine without the ssh service lacks; the machine's /run is left alone).
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns", "exec", &ns.0, "unshare", "--uts", "--mount", "sh", "-c",
        ])
        .arg(
            "mount -t tmpfs -o mode=0755 sysperf-run /run && mkdir -m 0755 /run/sshd \
                 && hostname \"$1\" && exec \"$2\" -D -e -f \"$3\"",
        )
        .args(["sh", &format!("{name}-{pid}")])
        .arg(sshd_path())
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sshd.log")).unwrap());
        sysperf::clib::dies_with_parent(&mut cmd);
        let mut sshd = cmd.spawn().unwrap();
        // Listening when a connection is accepted (from this side of the link).
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect_timeout(&(there, 22).into(), Duration::from_secs(1))
            .is_err()
        {
            if let Ok(Some(st)) = sshd.try_wait() {
                panic!(
                    "sshd of {name} exited ({st}): {}",
                    std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "sshd of {name} does not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Host { sshd, _ns: ns }
    }
}

fn sshd_path() -> PathBuf {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("sshd"))
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
fn the_playbook_deploys_over_ssh_to_3_namespace_hosts_and_their_runs_compare() {
    let tools = [
        "ansible-playbook",
        "ansible-vault",
        "ssh",
        "ssh-keygen",
        "openssl",
    ];
    if let Some(missing) = tools.iter().find(|t| !have(t)) {
        assert!(
            !under_ci(),
            "{missing} is not installed: under CI the deployment test must run; install ansible-core, openssh-client, openssh-server and openssl"
        );
        eprintln!("skipped: {missing} is not installed");
        return;
    }
    if !sshd_path().exists() {
        assert!(!under_ci(), "sshd is not installed: install openssh-server");
        eprintln!("skipped: sshd is not installed (apt-get install openssh-server)");
        return;
    }
    if pg::unsafe_free_euid() != 0 || !have("ip") || !have("unshare") {
        eprintln!(
            "skipped: the deployment test makes network namespaces: it needs root, ip and unshare"
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::Builder::new()
        .prefix("sysperf-deploy-")
        .tempdir()
        .unwrap();
    let w = work.path();
    let pid = std::process::id();
    let state = w.join("state");
    // Controller's key, let in as root by every host's sshd.
    let key = w.join("id_ed25519");
    must(
        "ssh-keygen",
        &["-q", "-t", "ed25519", "-N", "", "-f", key.to_str().unwrap()],
    );
    // The hosts, before the server: it listens on host 0's link.
    let hosts = ["host1", "host2", "host3"];
    // What every session on a host has: its spool files in a directory of the test (the
    // hosts share the file system), and a short outage.
    let env = format!("XDG_STATE_HOME={} SYSPERF_PG_RETRY_S=1", state.display());
    let fleet: Vec<Host> = hosts
        .iter()
        .enumerate()
        .map(|(n, h)| Host::start(n as u32, h, w, &key, &env))
        .collect();

    // The shared store: TLS with a certificate for its address, and the hosts' user `bench`
    // with a SCRAM password; this side (the test's own checks) by 127.0.0.1 as before.
    let db = db_address();
    let Some(certs) = common::certs::make(&format!("IP:{db}")) else {
        return;
    };
    let hba = "local all all trust\n\
               host all sysperf 127.0.0.1/32 trust\n\
               hostssl deploy_fleet bench 172.16.0.0/12 scram-sha-256\n";
    // A cluster of its own: the play is run once with the server stopped (#35).
    let Some(cluster) = pg::PgCluster::start_with(pg::Setup {
        tls: Some((certs.path("server.crt"), certs.path("server.key"))),
        hba: Some(hba.into()),
        listen: vec![db.to_string()],
    }) else {
        return;
    };
    let password = format!("fleet-{pid}-s3cret");
    cluster.query(
        "postgres",
        &format!("CREATE ROLE bench LOGIN PASSWORD '{password}'"),
    );
    cluster.query("postgres", "CREATE DATABASE deploy_fleet OWNER bench");
    let url = cluster.url("deploy_fleet");
    // What the hosts are given: no password in it.
    let db_url = format!(
        "postgres://bench@{db}:{}/deploy_fleet?sslmode=verify-full&sslrootcert={}",
        cluster.port,
        certs.path("ca.crt").display()
    );
    // The password, kept encrypted with Ansible Vault as a fleet keeps it.
    let vault_pass = w.join("vault-pass");
    std::fs::write(&vault_pass, format!("vault-{pid}\n")).unwrap();
    let vaulted = Command::new("ansible-vault")
        .args(["encrypt_string", "--vault-password-file"])
        .arg(&vault_pass)
        .args([&password, "--name", "sysperf_db_password"])
        .env("ANSIBLE_LOCAL_TEMP", w.join("ansible-local"))
        .output()
        .unwrap();
    assert!(
        vaulted.status.success(),
        "{}",
        String::from_utf8_lossy(&vaulted.stderr)
    );
    let vault = w.join("vault.yml");
    std::fs::write(&vault, &vaulted.stdout).unwrap();
    assert!(!String::from_utf8_lossy(&vaulted.stdout).contains(&password));

    let mut inventory = String::from("[fleet]\n");
    for (n, host) in hosts.iter().enumerate() {
        // Namespaces share the file system: each host installs into a directory of its own,
        // with its systemd unit directory (as /etc/systemd/system is there on a host).
        let bin_dir: PathBuf = w.join(host).join("bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        std::fs::create_dir_all(w.join(host).join("units")).unwrap();
        inventory.push_str(&format!(
            "{host} ansible_host={} ansible_user=root ansible_ssh_private_key_file={} ansible_python_interpreter=/usr/bin/python3 sysperf_bin_dir={} sysperf_unit_dir={} sysperf_etc_dir={}\n",
            link(n as u32).1,
            key.display(),
            bin_dir.display(),
            w.join(host).join("units").display(),
            w.join(host).join("etc").display(),
        ));
    }
    let inventory_path = w.join("inventory.ini");
    std::fs::write(&inventory_path, inventory).unwrap();

    let label = format!("deploy{pid}");
    let play = |extra: &[&str]| {
        let out = Command::new("ansible-playbook")
            .current_dir(w)
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_LOCAL_TEMP", w.join("ansible-local"))
            .env("ANSIBLE_REMOTE_TEMP", w.join("ansible-remote"))
            .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
            .env("ANSIBLE_HOST_KEY_CHECKING", "False")
            // No connection outlives the play (a persistent master would, for a minute), and
            // no host key is kept in the machine's known_hosts.
            .env(
                "ANSIBLE_SSH_ARGS",
                "-o ControlMaster=no -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o IdentitiesOnly=yes",
            )
            .arg("-i")
            .arg(&inventory_path)
            .arg(root.join("deploy/sysperf.yml"))
            .args(["-e", &format!("label={label}")])
            .args(["-e", &format!("sysperf_db={db_url}")])
            .arg("-e")
            .arg(format!("@{}", vault.display()))
            .arg("--vault-password-file")
            .arg(&vault_pass)
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
        // The password is in no output of the play.
        assert!(!log.contains(&password), "the password was shown:\n{log}");
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
            .contains(&format!("SYSPERF_DB={db_url}")));
        assert!(std::fs::read_to_string(&env)
            .unwrap()
            .contains(&format!("PGPASSWORD={password}")));
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
    drop(fleet);
}
