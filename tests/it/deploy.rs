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
//!
//! #41: the package is installed from a directory only root may use, not from a file another
//! user planted in a host's /tmp (a host with a /tmp of its own, a package made here, removed
//! after); and the play refuses a store's URL below sslmode=verify-full unless told.

use crate::support as common;

use common::json_of;
use common::pg::{self, under_ci};
use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
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
    /// `env` set in every session; with a /tmp of its own (an empty tmpfs) when `own_tmp`.
    fn start(n: u32, name: &str, w: &Path, key: &Path, env: &str, own_tmp: bool) -> Host {
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
        // machine without the ssh service lacks; the machine's /run is left alone). `ip netns
        // exec` and `unshare` exec what they run: the child is sshd (Host::pid).
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns", "exec", &ns.0, "unshare", "--uts", "--mount", "sh", "-c",
        ])
        .arg(
            "mount -t tmpfs -o mode=0755 sysperf-run /run && mkdir -m 0755 /run/sshd \
                 && { [ \"$4\" = no ] || mount -t tmpfs -o mode=1777 sysperf-tmp /tmp; } \
                 && hostname \"$1\" && exec \"$2\" -D -e -f \"$3\"",
        )
        .args(["sh", &format!("{name}-{pid}")])
        .arg(sshd_path())
        .arg(&conf)
        .arg(if own_tmp { "own-tmp" } else { "no" })
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

    /// The process id of the host's sshd, whose mount namespace (its /tmp) is the host's.
    fn pid(&self) -> u32 {
        self.sshd.id()
    }
}

fn sshd_path() -> PathBuf {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("sshd"))
}

/// A new ssh key of the controller in `w` (no passphrase): its private key's path.
fn controller_key(w: &Path) -> PathBuf {
    let key = w.join("id_ed25519");
    must(
        "ssh-keygen",
        &["-q", "-t", "ed25519", "-N", "", "-f", key.to_str().unwrap()],
    );
    key
}

/// `ansible-playbook -i INVENTORY deploy/sysperf.yml ARGS` as the tests run it, from `w`: no
/// colour, Ansible's temporary files in `w`, no connection outliving the play (a persistent
/// master would, for a minute) and no host key kept in the machine's known_hosts. Its output,
/// and its stdout and stderr as one text.
fn ansible_playbook<S: AsRef<OsStr>>(w: &Path, inventory: &Path, args: &[S]) -> (Output, String) {
    let out = Command::new("ansible-playbook")
        .current_dir(w)
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_LOCAL_TEMP", w.join("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", w.join("ansible-remote"))
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("ANSIBLE_HOST_KEY_CHECKING", "False")
        .env(
            "ANSIBLE_SSH_ARGS",
            "-o ControlMaster=no -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o IdentitiesOnly=yes",
        )
        .arg("-i")
        .arg(inventory)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/sysperf.yml"))
        .args(args)
        .output()
        .unwrap();
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, log)
}

/// The command of `host`'s scheduled service as systemd runs it ($$ is $, %% is %), with a
/// settle of 1 s instead of 120.
fn service_command(w: &Path, host: &str) -> String {
    let units = w.join(host).join("units");
    let service = std::fs::read_to_string(units.join("sysperf-fleet.service")).unwrap();
    service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap()
        .replace("$$", "$")
        .replace("%%", "%")
        .replace("--settle 120", "--settle 1")
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

/// Whether the `tools` are installed, and, with `hosts`, sshd and what namespace hosts need
/// (root, ip, unshare); else says what is missing (false), or fails under CI.
fn ready(tools: &[&str], hosts: bool) -> bool {
    if let Some(missing) = tools.iter().find(|t| !have(t)) {
        assert!(
            !under_ci(),
            "{missing} is not installed: under CI the deployment tests must run; install ansible-core, openssh-client, openssh-server and openssl"
        );
        eprintln!("skipped: {missing} is not installed");
        return false;
    }
    if !hosts {
        return true;
    }
    if !sshd_path().exists() {
        assert!(!under_ci(), "sshd is not installed: install openssh-server");
        eprintln!("skipped: sshd is not installed (apt-get install openssh-server)");
        return false;
    }
    if pg::unsafe_free_euid() != 0 || !have("ip") || !have("unshare") {
        eprintln!(
            "skipped: the deployment test makes network namespaces: it needs root, ip and unshare"
        );
        return false;
    }
    true
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
    if !ready(&tools, true) {
        return;
    }
    let work = pg::test_dir("deploy", None);
    let w = work.path();
    let pid = std::process::id();
    let state = w.join("state");
    // Controller's key, let in as root by every host's sshd.
    let key = controller_key(w);
    // The hosts, before the server: it listens on host 0's link.
    let hosts = ["host1", "host2", "host3"];
    // What every session on a host has: its spool files in a directory of the test (the
    // hosts share the file system), and a short outage.
    let env = format!("XDG_STATE_HOME={} SYSPERF_PG_RETRY_S=1", state.display());
    let fleet: Vec<Host> = hosts
        .iter()
        .enumerate()
        .map(|(n, h)| Host::start(n as u32, h, w, &key, &env, false))
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
        let mut args = vec![
            "-e".to_string(),
            format!("label={label}"),
            "-e".into(),
            format!("sysperf_db={db_url}"),
            "-e".into(),
            format!("@{}", vault.display()),
            "--vault-password-file".into(),
            vault_pass.display().to_string(),
            "-e".into(),
            format!(
                "sysperf_binary={}",
                assert_cmd::cargo::cargo_bin("sysperf").display()
            ),
            "-e".into(),
            "sysperf_selection='syscall --quick'".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let (out, log) = ansible_playbook(w, &inventory_path, &args);
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
    let exec = service_command(w, "host1");
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

    // #44 item 6: the timer firing twice on two hosts, over the network with verify-full,
    // the store's server down at the first firing. Each firing is the host's service command
    // run in the host's namespace over ssh, with its environment file, as systemd runs it.
    let fire = |n: usize| -> i32 {
        let host = hosts[n];
        let exec = service_command(w, host);
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let env_file = std::fs::read_to_string(w.join(host).join("etc/fleet.env")).unwrap();
        let vars: Vec<String> = env_file
            .lines()
            .filter(|l| l.contains('='))
            .map(quote)
            .collect();
        let out = Command::new("ssh")
            .args([
                "-o",
                "ControlMaster=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
            ])
            .args(["-o", "StrictHostKeyChecking=no", "-o", "IdentitiesOnly=yes"])
            .arg("-i")
            .arg(&key)
            .arg(format!("root@{}", link(n as u32).1))
            .arg(format!("env {} {exec}", vars.join(" ")))
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        if code != 0 && code != 5 {
            panic!(
                "{host}: the service's command exited {code}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        code
    };
    let count = |sql: &str| {
        cluster.query("deploy_fleet", sql)[0]
            .parse::<usize>()
            .unwrap()
    };
    let before = count("SELECT count(*) FROM runs");
    cluster.stop();
    for n in [0, 1] {
        // 5: measured and spooled, which the service counts as success (SuccessExitStatus=5).
        assert_eq!(
            fire(n),
            5,
            "{}: the first firing with the server away",
            hosts[n]
        );
    }
    assert_eq!(spooled(), 2);
    cluster.start_again();
    for n in [0, 1] {
        assert_eq!(fire(n), 0, "{}: the second firing", hosts[n]);
    }
    // Both firings of both hosts are in the store, complete, each once; nothing waits.
    assert_eq!(spooled(), 0);
    assert_eq!(count("SELECT count(*) FROM runs"), before + 4);
    assert_eq!(
        count("SELECT count(*) - count(DISTINCT id) FROM runs"),
        0,
        "a run stored twice"
    );
    for (n, host) in hosts[..2].iter().enumerate() {
        let fired = count(&format!(
            "SELECT count(*) FROM runs WHERE complete = 1 AND hostname = '{host}-{pid}' AND label LIKE '{label}-{host}-2%'"
        ));
        assert_eq!(fired, 2, "{}: the two firings", hosts[n]);
    }
    // `changes` reads the fleet's store with them in it: an answer (0, 6 or 7), not an error.
    let changes = assert_cmd::Command::cargo_bin("sysperf")
        .unwrap()
        .env("SYSPERF_DB", &url)
        .env("NO_COLOR", "1")
        .args(["changes", "--json"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&changes.stderr);
    assert!(
        matches!(changes.status.code(), Some(0 | 6 | 7)),
        "changes: {said}"
    );
    json_of(&changes.stdout);
    drop(fleet);
}

/// A Debian package `name` made in `dir` (as SAID.deb) of nothing but a postinst that writes
/// `said` into `mark`: maintainer scripts run as root, and what `mark` holds after an install
/// says which package was installed.
fn probe_deb(dir: &Path, name: &str, said: &str, mark: &Path) -> PathBuf {
    let tree = dir.join(said);
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        format!(
            "Package: {name}\nVersion: 1.0\nArchitecture: all\n\
             Maintainer: sysperf tests <tests@sysperf.invalid>\n\
             Description: a package of sysperf's deployment test, removed after it\n"
        ),
    )
    .unwrap();
    let postinst = tree.join("DEBIAN/postinst");
    std::fs::write(
        &postinst,
        format!("#!/bin/sh\necho {said} > '{}'\n", mark.display()),
    )
    .unwrap();
    std::fs::set_permissions(&postinst, std::fs::Permissions::from_mode(0o755)).unwrap();
    let deb = dir.join(format!("{said}.deb"));
    must(
        "dpkg-deb",
        &[
            "--root-owner-group",
            "--build",
            tree.to_str().unwrap(),
            deb.to_str().unwrap(),
        ],
    );
    deb
}

/// A package the test may have installed on this machine, purged when dropped (also when the
/// test panics): the namespace hosts share its file system and its dpkg database.
struct Purged(String);

impl Drop for Purged {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", &self.0]).output();
    }
}

/// A process the test started, killed when dropped (also when the test panics).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What another user (nobody) on a host does to the package's old path: puts a file at
/// /tmp/sysperf.deb before the play, and whenever it holds anything else but stays theirs,
/// writes their own package into it.
const SWAP_PACKAGE: &str = "cd /tmp || exit 1
while :; do
  if ! cmp -s sysperf.deb .as-planted && ! cmp -s sysperf.deb .their.deb; then
    cat .their.deb > sysperf.deb 2>/dev/null && echo swapped >> .swapped
  fi
  sleep 0.01
done";

/// #41 item 2: the package is copied into a directory made afresh that only root may use and
/// installed from there, not from /tmp/sysperf.deb, where a file planted by another user kept
/// its owner through the copy, who swapped in their own package before the install (its
/// maintainer scripts then ran as root). The host has a /tmp of its own, holding such a file
/// and that user swapping it.
#[test]
fn the_package_is_installed_from_a_directory_only_root_may_use_not_a_file_planted_in_tmp() {
    let tools = [
        "ansible-playbook",
        "ssh",
        "ssh-keygen",
        "dpkg-deb",
        "nsenter",
        "setpriv",
    ];
    if !ready(&tools, true) {
        return;
    }
    // Not in /tmp: the host's /tmp is its own, and the host reaches Ansible's files and the
    // mark here.
    let work = tempfile::Builder::new()
        .prefix("sysperf-deploy-deb-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let w = work.path();
    let pid = std::process::id();
    let key = controller_key(w);
    // Host 4: the other test of this process uses hosts 0 to 2 and the database's address.
    let env = format!("XDG_STATE_HOME={}", w.join("state").display());
    let host = Host::start(4, "debhost", w, &key, &env, true);
    let name = format!("sysperf-probe-{pid}");
    let mark = w.join("installed");
    let genuine = probe_deb(w, &name, "genuine", &mark);
    let theirs = probe_deb(w, &name, "theirs", &mark);
    let _purged = Purged(name.clone());

    // nobody's files in the host's /tmp (reached through its sshd's root).
    let tmp = PathBuf::from(format!("/proc/{}/root/tmp", host.pid()));
    let planted = b"nobody's file, planted before the play\n";
    for (file, content) in [
        ("sysperf.deb", planted.to_vec()),
        (".as-planted", planted.to_vec()),
        (".their.deb", std::fs::read(&theirs).unwrap()),
    ] {
        std::fs::write(tmp.join(file), content).unwrap();
        std::os::unix::fs::chown(tmp.join(file), Some(65534), Some(65534)).unwrap();
    }
    let mut swapper = Command::new("nsenter");
    swapper
        .args(["-t", &host.pid().to_string(), "-m", "setpriv"])
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["sh", "-c", SWAP_PACKAGE])
        .stdin(Stdio::null());
    sysperf::clib::dies_with_parent(&mut swapper);
    let _swapper = Killed(swapper.spawn().unwrap());

    let inventory = w.join("inventory.ini");
    std::fs::write(
        &inventory,
        format!(
            "debhost ansible_host={} ansible_user=root ansible_ssh_private_key_file={} ansible_python_interpreter=/usr/bin/python3\n",
            link(4).1,
            key.display()
        ),
    )
    .unwrap();
    // The package is the test's; the play's sysperf commands are /bin/true (extra variables
    // win over the play's): this test is about the package's path, not the store.
    let (out, log) = ansible_playbook(
        w,
        &inventory,
        &[
            "-e".to_string(),
            format!("label=deb{pid}"),
            "-e".into(),
            "sysperf_db=postgres://bench@192.0.2.1:5432/none?sslmode=verify-full&sslrootcert=/none"
                .into(),
            "-e".into(),
            format!("sysperf_deb={}", genuine.display()),
            "-e".into(),
            "sysperf=/bin/true".into(),
            "-e".into(),
            "sysperf_rerun=true".into(),
        ],
    );
    assert!(out.status.success(), "ansible-playbook failed:\n{log}");
    let installed = std::fs::read_to_string(&mark).unwrap_or_default();
    assert_eq!(
        installed.trim(),
        "genuine",
        "the package installed is not the one the play copied (nobody's, swapped into /tmp/sysperf.deb)"
    );
    // nobody's file is left as it was, and was never theirs to swap.
    assert_eq!(std::fs::read(tmp.join("sysperf.deb")).unwrap(), planted);
    assert!(!tmp.join(".swapped").exists());
    assert!(
        log.contains("TASK [Remove the package's directory]"),
        "{log}"
    );
    drop(host);
}

/// #41 item 6: the play refuses a store's URL below sslmode=verify-full (the hosts would take
/// another server for the store's) before it touches a host, saying what to give, and never
/// the URL's password; verify-full, sslrootcert=system and sysperf_allow_insecure_tls=true go
/// on. The play runs on this machine (a local connection) and stops at its next task, whose
/// binary does not exist.
#[test]
fn the_play_refuses_a_store_url_below_verify_full_unless_told() {
    if !ready(&["ansible-playbook"], false) {
        return;
    }
    let work = pg::test_dir("deploy-tls", None);
    let w = work.path();
    let inventory = w.join("inventory.ini");
    std::fs::write(
        &inventory,
        "here ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n",
    )
    .unwrap();
    let base = "postgres://bench:pl4y-s3cret@db.invalid:5432/fleet";
    let missing = w.join("no-such-sysperf");
    let play = |url: String, extra: &[&str]| {
        let mut args = vec![
            "-e".to_string(),
            "label=tls".into(),
            "-e".into(),
            format!("sysperf_db={url}"),
            "-e".into(),
            format!("sysperf_binary={}", missing.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let (out, log) = ansible_playbook(w, &inventory, &args);
        assert!(!out.status.success(), "{url}: {log}");
        assert!(
            !log.contains("pl4y-s3cret"),
            "{url}: the password was shown:\n{log}"
        );
        log
    };
    for (query, mode) in [
        ("", "prefer (the default)"),
        ("?sslmode=require", "require"),
        ("?sslmode=verify-ca&sslrootcert=/etc/ca.pem", "verify-ca"),
        // The last sslmode is the one sysperf uses.
        (
            "?sslmode=verify-full&sslrootcert=/etc/ca.pem&sslmode=disable",
            "disable",
        ),
    ] {
        let log = play(format!("{base}{query}"), &[]);
        assert!(
            log.contains(&format!("sysperf_db has sslmode={mode}:"))
                && log.contains("Add ?sslmode=verify-full&sslrootcert=FILE"),
            "the play went on with {query:?}:\n{log}"
        );
        assert!(!log.contains("TASK [Copy the sysperf binary]"), "{log}");
    }
    for (query, extra) in [
        ("?sslmode=verify-full&sslrootcert=/etc/ca.pem", &[][..]),
        ("?sslrootcert=system", &[]),
        ("", &["-e", "sysperf_allow_insecure_tls=true"]),
    ] {
        let log = play(format!("{base}{query}"), extra);
        assert!(
            !log.contains("sysperf_db has sslmode")
                && log.contains("TASK [Copy the sysperf binary]"),
            "{query:?} {extra:?} was refused:\n{log}"
        );
    }
}
