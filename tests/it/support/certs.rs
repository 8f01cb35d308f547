//! Certificates for the tests of PostgreSQL over TLS: a CA of the test, a server certificate
//! it signed for the names the test gives, and another CA that signed nothing; or self-signed
//! server certificates as libpq users make them ([`self_signed`]). Made with the openssl
//! command in a temporary directory that goes with them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::pg::under_ci;

/// The certificates of a test: a CA, the server's (signed by it, for the names given only)
/// and its key, and another CA that signed nothing.
pub struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// `openssl ARGS` in `dir`: its output, or Err when there is no openssl command.
fn openssl(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
}

/// A temporary directory for certificates; None (after saying why) without the openssl
/// command, except under CI.
fn workdir() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().unwrap();
    if openssl(dir.path(), &["version"]).is_err() {
        assert!(
            !under_ci(),
            "the openssl command is missing; under CI the TLS tests must run"
        );
        eprintln!("skipped: no openssl command");
        return None;
    }
    Some(dir)
}

/// A new P-256 key, unencrypted (openssl req's -newkey options).
const EC: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

/// Makes the certificates, the server's for `names` (a subjectAltName value:
/// `DNS:localhost`, `IP:10.1.2.3,IP:...`); None (after saying why) without the openssl
/// command, except under CI.
pub fn make(names: &str) -> Option<Certs> {
    let dir = workdir()?;
    let openssl = |args: &[&str]| openssl(dir.path(), args);
    for ca in ["ca", "other-ca"] {
        x509(
            dir.path(),
            ca,
            &format!("/CN=sysperf test {ca}"),
            &[
                "basicConstraints=critical,CA:TRUE",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
    }
    std::fs::write(
        dir.path().join("ext.cnf"),
        format!("subjectAltName={names}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"),
    )
    .unwrap();
    let mut args = vec!["req"];
    args.extend(EC);
    args.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=sysperf test server",
    ]);
    for step in [
        args,
        vec![
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "2",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.crt",
        ],
    ] {
        let out = openssl(&step).unwrap();
        assert!(
            out.status.success(),
            "{step:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(Certs { dir })
}

/// Self-signed server certificates for `names` (a subjectAltName value), each with its key
/// (NAME.crt, NAME.key), made as libpq's documentation has them made: `openssl req -x509
/// -subj /CN=... -addext subjectAltName=...`, which marks them CA:TRUE. None (after saying
/// why) without the openssl command, except under CI.
pub fn self_signed(names: &str, certs: &[&str]) -> Option<Certs> {
    let dir = workdir()?;
    let san = format!("subjectAltName={names}");
    for name in certs {
        x509(dir.path(), name, "/CN=localhost", &[&san]);
    }
    Some(Certs { dir })
}

/// A self-signed certificate NAME.crt and its new key NAME.key in `dir`, for two days, of
/// subject `subj` with the extensions `exts` besides openssl's defaults (which mark it CA:TRUE).
fn x509(dir: &Path, name: &str, subj: &str, exts: &[&str]) {
    let (key, crt) = (format!("{name}.key"), format!("{name}.crt"));
    let mut args = vec!["req", "-x509"];
    args.extend(EC);
    args.extend(["-keyout", &key, "-out", &crt, "-days", "2", "-subj", subj]);
    for ext in exts {
        args.extend(["-addext", ext]);
    }
    let out = openssl(dir, &args).unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
