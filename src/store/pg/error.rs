//! Why a connection to a PostgreSQL store could not be made ([`ConnectError`]), and what the
//! server said, in words that never hold a password. Beside `connect.rs`, which makes
//! connections, and `tls.rs`, which sets up TLS: both fail with it.

use super::url::describe;
use std::io;
use std::path::PathBuf;
use tokio_postgres::Error;

/// Why a connection could not be made. Its text is whole (no source to repeat) and never
/// holds a password.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("no answer within {secs} s from {addr} (connect_timeout bounds the TCP connection, TLS, startup and authentication together); check that the server runs and that the host and port are right")]
    Timeout { addr: String, secs: u64 },
    #[error("{addr}: {source}; check that the server runs and that the host and port are right")]
    Io {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// `host` is shown only when the URL as shown holds it: in a URL with an unencoded
    /// '@' in the password, the driver takes the password's end for the host.
    #[error("cannot find the host{}: {source}", .host.as_ref().map(|h| format!(" '{h}'")).unwrap_or_default())]
    Resolve {
        host: Option<String>,
        #[source]
        source: io::Error,
    },
    #[error("the server asked for {asked}, which would give it the password or a hash of it: nothing was sent. sysperf authenticates with SCRAM-SHA-256 only; if the server is yours and the path to it trusted, allow it with require_auth=scram-sha-256,{method} in the URL")]
    Refused {
        asked: &'static str,
        method: &'static str,
    },
    #[error("the server let the user in without authentication, which the URL's require_auth does not allow")]
    NoAuth,
    #[error("the server asks for a password and none was found: put it in ~/.pgpass (or the file PGPASSFILE names, mode 0600), or in PGPASSWORD")]
    NoPassword,
    #[error("the server does not offer TLS, which sslmode={0} requires")]
    NoTls(&'static str),
    #[error("TLS with {addr}: {why}; check sslmode, sslrootcert and that the URL's host is a name in the server's certificate")]
    Tls { addr: String, why: String },
    #[error("cannot use the root certificates in '{}' (sslrootcert): {why}", .path.display())]
    RootCert { path: PathBuf, why: String },
    #[error("{}", server_said(.0))]
    Server(Error),
}

impl crate::error::Exit for ConnectError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(self.is_user_error())
    }
}

impl ConnectError {
    /// Whether the user can fix it in the URL or the credentials (exit code 2): the server
    /// refused the user, the password or the database; sysperf refused the server's way of
    /// authenticating; a password or the root certificates are missing.
    pub fn is_user_error(&self) -> bool {
        match self {
            ConnectError::Refused { .. }
            | ConnectError::NoAuth
            | ConnectError::NoPassword
            | ConnectError::RootCert { .. } => true,
            ConnectError::Server(e) => e.as_db_error().is_some_and(|db| {
                let code = db.code().code();
                code.starts_with("28") || code == "3D000"
            }),
            _ => false,
        }
    }

    /// Whether the server could not be reached (the network, or a server not there): a
    /// store already connected once tries again.
    pub fn is_unreachable(&self) -> bool {
        match self {
            ConnectError::Timeout { .. }
            | ConnectError::Io { .. }
            | ConnectError::Resolve { .. } => true,
            ConnectError::Server(e) => super::connection_lost(e),
            _ => false,
        }
    }
}

fn server_said(e: &Error) -> String {
    let what = describe(e);
    let hint = match e.code().map(|c| c.code()) {
        Some("28P01") => "; check the user and its password (~/.pgpass, PGPASSFILE, PGPASSWORD or the URL)",
        Some(c) if c.starts_with("28") => {
            "; the server's pg_hba.conf does not let this user in from here"
        }
        Some("3D000") => "; check the database in the URL, or create it (createdb)",
        _ => "; check that the server runs, the URL (user, host, port, database) and that the user may connect",
    };
    format!("{what}{hint}")
}
