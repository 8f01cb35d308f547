//! Certificates for the tests of PostgreSQL over TLS: a CA of the test, a server certificate
//! it signed for the names the test gives, and another CA that signed nothing; made with the
//! openssl command in a temporary directory that goes with them.

use std::path::PathBuf;
use std::process::{Command, Stdio};

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

/// Makes the certificates, the server's for `names` (a subjectAltName value:
/// `DNS:localhost`, `IP:10.1.2.3,IP:...`); None (after saying why) without the openssl
/// command, except under CI.
pub fn make(names: &str) -> Option<Certs> {
    let dir = tempfile::tempdir().unwrap();
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
    };
    if openssl(&["version"]).is_err() {
        assert!(
            !under_ci(),
            "the openssl command is missing; under CI the TLS tests must run"
        );
        eprintln!("skipped: no openssl command");
        return None;
    }
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for ca in ["ca", "other-ca"] {
        let (key, crt, subj) = (
            format!("{ca}.key"),
            format!("{ca}.crt"),
            format!("/CN=sysperf test {ca}"),
        );
        let mut args = vec!["req", "-x509"];
        args.extend(ec);
        args.extend([
            "-keyout",
            &key,
            "-out",
            &crt,
            "-days",
            "2",
            "-subj",
            &subj,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        let out = openssl(&args).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::write(
        dir.path().join("ext.cnf"),
        format!("subjectAltName={names}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"),
    )
    .unwrap();
    let mut args = vec!["req"];
    args.extend(ec);
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
