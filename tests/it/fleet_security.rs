//! The PostgreSQL store's credentials and TLS (#29 item 7, #35 item 10): a password is never
//! shown, whatever the URL; TLS by libpq's sslmode against a private cluster with a
//! certificate made here; a server that asks for a cleartext password or an MD5 hash gets
//! nothing (a fake server on a local port reads what it was sent); a server that never
//! answers is given up at the connect timeout; `.pgpass` and `PGPASSWORD` are used; a
//! failed login or a missing database exits 2; no "db error: db error"; a service in a
//! `pg_service.conf` names the store, a URL without a host is the unix socket, and a service
//! file another user could change is refused (#44 item 5).
//!
//! Needs PostgreSQL (tests/it/support/pg.rs) and the openssl command; skipped without them,
//! except under CI.

use crate::support as common;

use common::certs;
use common::pg::{self, PgCluster, Setup};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `sysperf ARGS` in `cwd` with `env` set, and no password or TLS settings from the
/// environment this test runs in.
fn sysperf_cmd(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("sysperf"));
    for k in [
        "PGSERVICE",
        "PGSERVICEFILE",
        "PGSYSCONFDIR",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGPASSFILE",
        "PGSSLMODE",
        "PGSSLROOTCERT",
        "PGREQUIREAUTH",
        "SYSPERF_DB",
    ] {
        c.env_remove(k);
    }
    c.env("NO_COLOR", "1")
        .env("HOME", cwd)
        .env("XDG_STATE_HOME", cwd.join("state"))
        .env("SYSPERF_PG_RETRY_S", "1")
        .current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args);
    c
}

fn sysperf(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    sysperf_cmd(cwd, env, args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The files in `dir` but the ones this test put there.
fn made_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["pgpass", ".pgpass", "state"].contains(&n.as_str()))
        .collect()
}

#[test]
fn a_password_is_never_shown_and_a_bad_url_is_no_file_path() {
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    // Port 1: nothing listens there, so connecting fails at once.
    for (url, code) in [
        ("postgres://bench:s3cret@127.0.0.1:notaport/runs", 2),
        ("postgres://bench:s3/cret@127.0.0.1:1/runs", 1),
        ("postgres://bench:s3?cret@127.0.0.1:1/runs", 1),
        ("postgres://bench:s3@cret@127.0.0.1:1/runs", 1),
        ("postgres://bench:s3%2F%3F%40cret@127.0.0.1:1/runs", 1),
        ("postgres://bench@127.0.0.1:1/runs?password=s3cret", 1),
        ("postgres://bench:s3cret/runs", 2),
        ("postgres://bench:s3cret@127.0.0.1:1/runs?sslmode=bogus", 2),
    ] {
        for (args, env) in [
            (vec!["runs", "--db", url], vec![]),
            (vec!["show", "latest"], vec![("SYSPERF_DB", url)]),
            (vec!["sync", url, "copy.db"], vec![]),
            (vec!["sync", "copy.db", url], vec![]),
        ] {
            let out = sysperf(d, &env, &args);
            let all = text(&out);
            assert!(!all.contains("cret"), "{args:?} {env:?}: {all}");
            if args[0] != "sync" {
                assert_eq!(out.status.code(), Some(code), "{args:?} {env:?}: {all}");
                assert!(all.contains("bench"), "{args:?} {env:?}: {all}");
            }
        }
        // Not taken for an SQLite file: nothing was made in the working directory.
        assert_eq!(made_in(d), Vec::<String>::new(), "{url}");
    }
}

/// What a fake server does once a client connected.
#[derive(Clone, Copy)]
enum Fake {
    /// Answers the SSLRequest with N, then asks for this authentication (3 cleartext,
    /// 5 MD5) after the startup message.
    Ask(u32),
    /// Never says anything.
    Silent,
    /// Answers the SSLRequest with S (TLS), then says nothing.
    SilentTls,
}

/// A fake PostgreSQL server on a free local port; its thread returns every byte the client
/// sent after its startup message, once the client closed the connection (or after 60 s).
fn fake_server(fake: Fake) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut s = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("no client came: {e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let packet = |s: &mut TcpStream| -> Vec<u8> {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return Vec::new();
            }
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize - 4];
            s.read_exact(&mut body).unwrap();
            body
        };
        let mut startup = packet(&mut s);
        if startup.starts_with(&80877103u32.to_be_bytes()) {
            match fake {
                Fake::Ask(_) => s.write_all(b"N").unwrap(),
                Fake::SilentTls => s.write_all(b"S").unwrap(),
                Fake::Silent => {}
            }
            if let Fake::Ask(_) = fake {
                startup = packet(&mut s);
            }
        }
        assert!(!startup.is_empty() || !matches!(fake, Fake::Ask(_)));
        if let Fake::Ask(code) = fake {
            let mut m = vec![b'R'];
            let body: &[u8] = if code == 5 { b"salt" } else { b"" };
            m.extend_from_slice(&(8 + body.len() as u32).to_be_bytes());
            m.extend_from_slice(&code.to_be_bytes());
            m.extend_from_slice(body);
            s.write_all(&m).unwrap();
        }
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        got
    });
    (port, serve)
}

#[test]
fn a_server_asking_for_a_cleartext_password_or_an_md5_hash_gets_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    for (code, asked) in [(3, "a cleartext password"), (5, "an MD5 hash")] {
        let (port, serve) = fake_server(Fake::Ask(code));
        let url = format!("postgres://bench:s3cret@127.0.0.1:{port}/runs");
        let out = sysperf(cwd.path(), &[], &["runs", "--db", &url]);
        let sent = serve.join().unwrap();
        assert!(
            !sent.windows(6).any(|w| w == b"s3cret") && !sent.contains(&b'p'),
            "the fake server received {:?}\n{}",
            String::from_utf8_lossy(&sent),
            text(&out)
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(asked), "{}", text(&out));
        assert!(text(&out).contains("require_auth="), "{}", text(&out));
    }
    // What the URL allows is answered: the fake server does read what it was sent.
    let (port, serve) = fake_server(Fake::Ask(3));
    let url = format!(
        "postgres://bench:s3cret@127.0.0.1:{port}/runs?require_auth=password&connect_timeout=2"
    );
    let out = sysperf(cwd.path(), &[], &["runs", "--db", &url]);
    let sent = serve.join().unwrap();
    assert!(sent.windows(6).any(|w| w == b"s3cret"), "{}", text(&out));
    assert!(!text(&out).contains("s3cret"), "{}", text(&out));
}

#[test]
fn a_server_that_never_answers_is_given_up_at_the_connect_timeout() {
    let cwd = tempfile::tempdir().unwrap();
    for fake in [Fake::Silent, Fake::SilentTls] {
        let (port, serve) = fake_server(fake);
        let url = format!("postgres://bench@127.0.0.1:{port}/runs?connect_timeout=2");
        let mut child = sysperf_cmd(cwd.path(), &[], &["runs", "--db", &url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A guard against hanging the test, far above the bound: the run must end by itself.
        let guard = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() && Instant::now() < guard {
            std::thread::sleep(Duration::from_millis(50));
        }
        let ended = child.try_wait().unwrap().is_some();
        if !ended {
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        serve.join().unwrap();
        assert!(
            ended,
            "still connecting after 30 s with connect_timeout=2: {}",
            text(&out)
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("no answer within 2 s"),
            "{}",
            text(&out)
        );
    }
}

/// A cluster with TLS on and these users (made here): `tlsonly` (trust, TLS only),
/// `scram` (SCRAM-SHA-256, password `s3:cret`), `clear` (cleartext password over TLS,
/// `s3cret`); the superuser `sysperf` trusted as usual.
fn secure_cluster(certs: &certs::Certs) -> Option<PgCluster> {
    let hba = "\
local all all trust
hostnossl all tlsonly 127.0.0.1/32 reject
hostssl all clear 127.0.0.1/32 password
host all scram 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
";
    let cluster = PgCluster::start_with(Setup {
        tls: Some((certs.path("server.crt"), certs.path("server.key"))),
        hba: Some(hba.into()),
        ..Setup::default()
    })?;
    for sql in [
        "CREATE ROLE tlsonly LOGIN",
        "CREATE ROLE scram LOGIN PASSWORD 's3:cret'",
        "CREATE ROLE clear LOGIN PASSWORD 's3cret'",
        "CREATE DATABASE store OWNER tlsonly",
        "CREATE DATABASE scramdb OWNER scram",
        "CREATE DATABASE cleardb OWNER clear",
    ] {
        cluster.query("postgres", sql);
    }
    Some(cluster)
}

#[test]
fn tls_is_used_and_the_certificate_checked_as_sslmode_says() {
    let Some(certs) = certs::make("DNS:localhost") else {
        return;
    };
    let Some(cluster) = secure_cluster(&certs) else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let (ca, other) = (certs.path("ca.crt"), certs.path("other-ca.crt"));
    let (ca, other) = (ca.to_str().unwrap(), other.to_str().unwrap());
    let port = cluster.port;
    // tlsonly may connect over TLS only: a connection that works used it.
    for (host, query, works) in [
        ("127.0.0.1", "sslmode=disable".to_string(), false),
        ("127.0.0.1", "sslmode=prefer".to_string(), true),
        ("127.0.0.1", "sslmode=require".to_string(), true),
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={ca}"),
            true,
        ),
        (
            "127.0.0.1",
            format!("sslmode=verify-ca&sslrootcert={ca}"),
            true,
        ),
        // The certificate names localhost, not 127.0.0.1.
        (
            "127.0.0.1",
            format!("sslmode=verify-full&sslrootcert={ca}"),
            false,
        ),
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={other}"),
            false,
        ),
        (
            "127.0.0.1",
            format!("sslmode=verify-ca&sslrootcert={other}"),
            false,
        ),
        // As libpq: require checks the chain when root certificates are given.
        (
            "127.0.0.1",
            format!("sslmode=require&sslrootcert={other}"),
            false,
        ),
        (
            "localhost",
            "sslmode=verify-full&sslrootcert=missing.crt".to_string(),
            false,
        ),
    ] {
        let url = format!("postgres://tlsonly@{host}:{port}/store?{query}");
        let out = sysperf(cwd.path(), &[], &["runs", "--db", &url]);
        assert_eq!(out.status.success(), works, "{url}: {}", text(&out));
        if !works && query.contains("sslrootcert") {
            assert!(text(&out).contains("sslrootcert"), "{url}: {}", text(&out));
        }
    }
    // PGSSLMODE and PGSSLROOTCERT, as in libpq.
    let url = format!("postgres://tlsonly@localhost:{port}/store");
    let out = sysperf(
        cwd.path(),
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", other)],
        &["runs", "--db", &url],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let out = sysperf(
        cwd.path(),
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca)],
        &["runs", "--db", &url],
    );
    assert!(out.status.success(), "{}", text(&out));
    // A server without TLS, under require.
    if let Some(plain) = pg::shared() {
        let url = format!(
            "postgres://sysperf@127.0.0.1:{}/postgres?sslmode=require",
            plain.port
        );
        let out = sysperf(cwd.path(), &[], &["runs", "--db", &url]);
        assert!(text(&out).contains("does not offer TLS"), "{}", text(&out));
    }
    // A cleartext password is refused inside TLS too, unless the URL allows it.
    let pgpass = cwd.path().join("pgpass");
    std::fs::write(&pgpass, format!("*:{port}:*:clear:s3cret\n")).unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let pgpass = pgpass.to_str().unwrap();
    let url = format!("postgres://clear@127.0.0.1:{port}/cleardb?sslmode=require");
    let out = sysperf(
        cwd.path(),
        &[("PGPASSFILE", pgpass)],
        &["runs", "--db", &url],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("a cleartext password"),
        "{}",
        text(&out)
    );
    let url = format!("{url}&require_auth=password");
    let out = sysperf(
        cwd.path(),
        &[("PGPASSFILE", pgpass)],
        &["runs", "--db", &url],
    );
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn pgpass_and_pgpassword_are_used_and_logins_that_fail_exit_2() {
    let Some(certs) = certs::make("DNS:localhost") else {
        return;
    };
    let Some(cluster) = secure_cluster(&certs) else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    let port = cluster.port;
    let url = format!("postgres://scram@127.0.0.1:{port}/scramdb");
    let runs = ["runs", "--db", url.as_str()];
    // No password anywhere.
    let out = sysperf(d, &[], &runs);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("~/.pgpass"), "{}", text(&out));
    // ~/.pgpass: the first matching line, escapes read.
    let pgpass = d.join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("# comment\nother:{port}:*:scram:wrong\n127.0.0.1:{port}:scramdb:scram:s3\\:cret\n*:*:*:*:wrong\n"),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = sysperf(d, &[], &runs);
    assert!(out.status.success(), "{}", text(&out));
    // PGPASSFILE names another; a file others may read is ignored, with a warning.
    let other = d.join("pgpass");
    std::fs::rename(&pgpass, &other).unwrap();
    let other = other.to_str().unwrap();
    let out = sysperf(d, &[("PGPASSFILE", other)], &runs);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::set_permissions(other, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = sysperf(d, &[("PGPASSFILE", other)], &runs);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("has group or world access"),
        "{}",
        text(&out)
    );
    // PGPASSWORD, before the file; a wrong one is a failed login: exit 2, said once.
    let out = sysperf(d, &[("PGPASSWORD", "s3:cret")], &runs);
    assert!(out.status.success(), "{}", text(&out));
    // SCRAM bound to the TLS channel (the server checks the certificate's hash sysperf sends).
    let bound = format!(
        "postgres://scram@localhost:{port}/scramdb?sslmode=verify-full&sslrootcert={}&channel_binding=require",
        certs.path("ca.crt").display()
    );
    let out = sysperf(d, &[("PGPASSWORD", "s3:cret")], &["runs", "--db", &bound]);
    assert!(out.status.success(), "{}", text(&out));
    let out = sysperf(d, &[("PGPASSWORD", "wrong")], &runs);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("password authentication failed for user \"scram\""),
        "{all}"
    );
    assert!(!all.contains("db error") && !all.contains("wrong"), "{all}");
    // A database that does not exist: exit 2.
    let url = format!("postgres://scram@127.0.0.1:{port}/no_such_db");
    let out = sysperf(d, &[("PGPASSWORD", "s3:cret")], &["runs", "--db", &url]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("database \"no_such_db\" does not exist"),
        "{all}"
    );
    assert!(!all.contains("db error"), "{all}");
    // The server's error after connecting is said once, whole: scram may not create tables
    // in the database tlsonly owns.
    let url = format!("postgres://scram@127.0.0.1:{port}/store");
    let out = sysperf(
        d,
        &[("PGPASSWORD", "s3:cret")],
        &["run", "syscall", "--quick", "--db", &url],
    );
    let all = text(&out);
    assert!(
        all.contains("PostgreSQL error: ERROR: permission denied for schema public"),
        "{all}"
    );
    assert!(!all.contains("db error"), "{all}");
}

/// Two self-signed certificates for localhost, `pinned` and `other` (each with its key), and
/// a cluster whose server presents `pinned` and lets `tlsonly` in over TLS only (without
/// asking) into its database `pinned`.
fn self_signed_cluster() -> Option<(certs::Certs, PgCluster)> {
    let certs = certs::self_signed("DNS:localhost", &["pinned", "other"])?;
    let hba = "\
local all all trust
hostnossl all tlsonly 127.0.0.1/32 reject
host all all 127.0.0.1/32 trust
";
    let cluster = PgCluster::start_with(Setup {
        tls: Some((certs.path("pinned.crt"), certs.path("pinned.key"))),
        hba: Some(hba.into()),
        ..Setup::default()
    })?;
    cluster.query("postgres", "CREATE ROLE tlsonly LOGIN");
    cluster.query("postgres", "CREATE DATABASE pinned OWNER tlsonly");
    Some((certs, cluster))
}

/// #41 item 6: a server's self-signed certificate, made as libpq's documentation has it made
/// (CA:TRUE), given as its own sslrootcert, passes verify-full as it does with libpq (webpki
/// alone refuses it: CaUsedAsEndEntity); its names are still checked.
#[test]
fn a_self_signed_certificate_given_as_its_own_sslrootcert_passes_verify_full() {
    let Some((certs, cluster)) = self_signed_cluster() else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    // A root file of several certificates, the server's among them.
    let bundle = cwd.path().join("bundle.crt");
    let both = [certs.path("other.crt"), certs.path("pinned.crt")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .concat();
    std::fs::write(&bundle, both).unwrap();
    let pinned = certs.path("pinned.crt");
    let (pinned, bundle) = (pinned.to_str().unwrap(), bundle.to_str().unwrap());
    let port = cluster.port;
    for (host, query, works) in [
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={pinned}"),
            true,
        ),
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={bundle}"),
            true,
        ),
        (
            "127.0.0.1",
            format!("sslmode=verify-ca&sslrootcert={pinned}"),
            true,
        ),
        (
            "127.0.0.1",
            format!("sslmode=require&sslrootcert={pinned}"),
            true,
        ),
        // The certificate names localhost, not 127.0.0.1.
        (
            "127.0.0.1",
            format!("sslmode=verify-full&sslrootcert={pinned}"),
            false,
        ),
    ] {
        let url = format!("postgres://tlsonly@{host}:{port}/pinned?{query}");
        let out = sysperf(cwd.path(), &[], &["runs", "--db", &url]);
        assert_eq!(out.status.success(), works, "{url}: {}", text(&out));
    }
    // doctor has nothing to say of the store's TLS at verify-full.
    let url = format!(
        "postgres://tlsonly@localhost:{port}/pinned?sslmode=verify-full&sslrootcert={pinned}"
    );
    let out = sysperf(cwd.path(), &[], &["doctor", "--json", "--db", &url]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("store_tls"), "{}", text(&out));
}

/// #41 item 6: pinning is byte for byte: another self-signed certificate of the same name
/// and subject, given as sslrootcert, fails closed (exit code 1, saying the certificate is
/// not trusted), under verify-full and verify-ca alike.
#[test]
fn another_self_signed_certificate_as_sslrootcert_fails_closed() {
    let Some((certs, cluster)) = self_signed_cluster() else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let other = certs.path("other.crt");
    let other = other.to_str().unwrap();
    let port = cluster.port;
    for (host, mode) in [("localhost", "verify-full"), ("127.0.0.1", "verify-ca")] {
        let url =
            format!("postgres://tlsonly@{host}:{port}/pinned?sslmode={mode}&sslrootcert={other}");
        let out = sysperf(cwd.path(), &[], &["runs", "--db", &url]);
        assert_eq!(out.status.code(), Some(1), "{url}: {}", text(&out));
        assert!(text(&out).contains("certificate"), "{url}: {}", text(&out));
    }
}

/// #41 item 6: `sysperf doctor` on a PostgreSQL store reached over TCP below verify-full
/// warns, saying what to set; a unix socket (never TLS) is not such a store.
#[test]
fn doctor_warns_of_a_tcp_store_below_verify_full() {
    let Some(url) = pg::fresh_db("doctor_tls") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    for (url, mode) in [
        (url.clone(), "prefer"),
        (format!("{url}?sslmode=disable"), "disable"),
    ] {
        let out = sysperf(cwd.path(), &[], &["doctor", "--json", "--db", &url]);
        assert!(out.status.success(), "{url}: {}", text(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let finding = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == "store_tls")
            .unwrap_or_else(|| panic!("{url}: no store_tls finding: {}", text(&out)));
        assert_eq!(finding["severity"], "warn", "{finding}");
        let title = finding["title"].as_str().unwrap();
        assert!(title.contains(&format!("sslmode={mode}")), "{finding}");
        assert!(
            finding["fix"]
                .as_str()
                .unwrap()
                .contains("sslmode=verify-full&sslrootcert=FILE"),
            "{finding}"
        );
        assert_eq!(doc["facts"]["store_sslmode"], mode, "{doc}");
    }
    // Over the cluster's unix socket: no TLS to check.
    let cluster = pg::shared().unwrap();
    let db = url.rsplit('/').next().unwrap();
    let socket = format!(
        "postgres://sysperf@{}:{}/{db}",
        cluster
            .socket_dir()
            .display()
            .to_string()
            .replace('/', "%2F"),
        cluster.port
    );
    let out = sysperf(cwd.path(), &[], &["doctor", "--json", "--db", &socket]);
    assert!(out.status.success(), "{socket}: {}", text(&out));
    assert!(!text(&out).contains("store_tls"), "{}", text(&out));
}

/// #44 item 5: a service (`?service=`, `PGSERVICE`) defined in a `pg_service.conf` found as
/// libpq finds it (`PGSERVICEFILE`, `~/.pg_service.conf`, `PGSYSCONFDIR`), a URL that names no
/// host, and the service file's checks: one another user could change never chooses the
/// server.
#[test]
fn a_service_in_pg_service_conf_names_the_store_as_in_libpq() {
    let Some(url) = pg::fresh_db("service_file") else {
        return;
    };
    let cluster = pg::shared().unwrap();
    let db = url.rsplit('/').next().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    let sysconf = d.join("sysconf");
    let sysconf = sysconf.to_str().unwrap();
    let sysperf = |d: &Path, env: &[(&str, &str)], args: &[&str]| {
        let mut env = env.to_vec();
        env.push(("PGSYSCONFDIR", sysconf));
        sysperf(d, &env, args)
    };
    let file = d.join(".pg_service.conf");
    let write = |text: &str, mode: u32| {
        std::fs::write(&file, text).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    write(
        &format!(
            "# stores\n[fleet]\nhost=127.0.0.1\nport={port}\ndbname={db}\nuser=sysperf\nsslmode=disable\n\n\
             [socket]\nhost={sock}\nport={port}\ndbname={db}\nuser=sysperf\n",
            port = cluster.port,
            sock = cluster.socket_dir().display()
        ),
        0o644,
    );
    let export = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minimal-export.json");
    // ~/.pg_service.conf, the service named in the URL, which names nothing else.
    let out = sysperf(
        d,
        &[],
        &[
            "sync",
            export.to_str().unwrap(),
            "postgres://?service=fleet",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cluster.query(db, "SELECT label FROM runs"), ["minimal"]);
    // PGSERVICE, a unix socket from the file, a URL with no host at all.
    for (env, db_arg) in [
        (vec![("PGSERVICE", "fleet")], "postgres://"),
        (vec![("PGSERVICE", "socket")], "postgresql:///"),
        (vec![], "postgres:///?service=socket"),
    ] {
        let out = sysperf(d, &env, &["runs", "--db", db_arg]);
        assert!(out.status.success(), "{env:?} {db_arg}: {}", text(&out));
        assert!(
            text(&out).contains("minimal"),
            "{env:?} {db_arg}: {}",
            text(&out)
        );
    }
    // The URL's own settings win over the service's: another database.
    let other = "postgres:///no_such_db?service=fleet";
    let out = sysperf(d, &[], &["runs", "--db", other]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("\"no_such_db\" does not exist"),
        "{}",
        text(&out)
    );
    // PGSERVICEFILE names the file; the system's (PGSYSCONFDIR) is read when the user's
    // lacks the service.
    let moved = d.join("services");
    std::fs::rename(&file, &moved).unwrap();
    let out = sysperf(
        d,
        &[("PGSERVICEFILE", moved.to_str().unwrap())],
        &["runs", "--db", "postgres://?service=fleet"],
    );
    assert!(out.status.success(), "{}", text(&out));
    std::fs::create_dir(d.join("sysconf")).unwrap();
    std::fs::rename(&moved, d.join("sysconf/pg_service.conf")).unwrap();
    let out = sysperf(d, &[], &["runs", "--db", "postgres://?service=fleet"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::rename(d.join("sysconf/pg_service.conf"), &file).unwrap();

    // Exit 2, saying why, for a service nowhere (saying where it looked) and a service file
    // that may not be used.
    let refused = |service: &str, why: &str| {
        let url = format!("postgres://?service={service}");
        let out = sysperf(d, &[], &["runs", "--db", &url]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(why), "{}", text(&out));
    };
    refused("nosuch", "the service \"nosuch\" is not defined in");
    // A service file others may change never chooses the server (as root: nor another
    // user's): exit 2, nothing connected to.
    write(&std::fs::read_to_string(&file).unwrap(), 0o666);
    refused("fleet", "may be written by its group or others");
    if pg::unsafe_free_euid() == 0 {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        refused("fleet", "not by this user or root");
    }
}
