//! A PostgreSQL store's URL as sysperf reads it: the driver's settings, plus the parameters
//! libpq has and the driver lacks (`sslmode=verify-ca|verify-full`, `sslrootcert`,
//! `require_auth`, `passfile`, `service`: #44 item 5), with libpq's environment variables as
//! their defaults (`PGSSLMODE`, `PGSSLROOTCERT`, `PGREQUIREAUTH`, `PGPASSFILE`, `PGSERVICE`,
//! `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`), a service's settings before them (see
//! `pgservice.rs`), and libpq's unix socket when nothing names a host; where the URL leads
//! ([`PgUrl::target`]); and the URL as it may be shown, its password hidden ([`redact`]).
//!
//! It is not the connection (see `pg/connect.rs`) and reads no password file (see
//! `pg/pgpass.rs`). It sits beside `pg`, not in it, because `backend` checks and shows
//! locations with it and `pg` builds on `backend`.

use crate::store::StoreError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_postgres::config::{Host, LoadBalanceHosts};

/// How long connecting to one address may take, handshake and authentication included,
/// unless the URL's `connect_timeout` says otherwise.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// libpq's `sslmode`s, but `allow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server offers it, its certificate not checked (libpq's default).
    Prefer,
    /// TLS or nothing; the certificate is checked as for `verify-ca` when root
    /// certificates are given (as libpq does), else not.
    Require,
    /// TLS, the certificate signed by a root in `sslrootcert`.
    VerifyCa,
    /// TLS, the certificate signed by a root in `sslrootcert` and naming the URL's host.
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Option<SslMode> {
        Some(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The certificates a server's certificate must chain to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RootCert {
    /// A PEM file of one or more certificates.
    File(PathBuf),
    /// The system's trusted roots (`sslrootcert=system`, as in libpq 16).
    System,
}

/// The ways the server may have sysperf authenticate (`require_auth`, as in libpq 16). By
/// default SCRAM-SHA-256, or none at all (trust, peer): a cleartext password or an MD5 hash
/// of one is never sent unless the URL allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AuthPolicy {
    /// The server lets the user in without asking anything.
    pub none: bool,
    /// The password in clear (`password`).
    pub password: bool,
    /// An MD5 hash of the password and user name (`md5`).
    pub md5: bool,
    /// SCRAM-SHA-256 (`scram-sha-256`): the password never leaves this machine.
    pub scram: bool,
}

impl AuthPolicy {
    /// sysperf's default.
    pub(crate) const SCRAM_ONLY: AuthPolicy = AuthPolicy {
        none: true,
        password: false,
        md5: false,
        scram: true,
    };

    /// libpq's `require_auth` list: methods, or methods each with a leading `!` (all but).
    fn parse(list: &str) -> Result<AuthPolicy, String> {
        let items: Vec<&str> = list.split(',').map(str::trim).collect();
        let negated = items.iter().filter(|m| m.starts_with('!')).count();
        if negated != 0 && negated != items.len() {
            return Err("require_auth mixes methods with methods negated by '!'".into());
        }
        let negated = negated != 0;
        let mut p = AuthPolicy {
            none: negated,
            password: negated,
            md5: negated,
            scram: negated,
        };
        for m in items {
            let slot = match m.trim_start_matches('!') {
                "none" => &mut p.none,
                "password" => &mut p.password,
                "md5" => &mut p.md5,
                "scram-sha-256" => &mut p.scram,
                // Methods the driver cannot use either way.
                "gss" | "sspi" => continue,
                other => {
                    return Err(format!(
                        "require_auth has '{other}'; the methods are password, md5, \
                         scram-sha-256, gss, sspi and none"
                    ))
                }
            };
            *slot = !negated;
        }
        Ok(p)
    }
}

/// A PostgreSQL store's URL, understood.
#[derive(Clone)]
pub(crate) struct PgUrl {
    /// The driver's settings: user, database, hosts, ports, the password if the URL has one,
    /// and the driver's TLS mode (prefer or require; disable).
    pub config: tokio_postgres::Config,
    /// The URL without its password, for messages.
    pub shown: String,
    pub sslmode: SslMode,
    /// The roots to check the server's certificate against, if the URL or `PGSSLROOTCERT`
    /// names them (else `~/.postgresql/root.crt` when it exists, as libpq does).
    pub rootcert: Option<RootCert>,
    pub auth: AuthPolicy,
    /// The password file (`passfile`, else `PGPASSFILE`, else `~/.pgpass`).
    pub passfile: Option<PathBuf>,
    /// The bound on connecting to one address: TCP, TLS, startup and authentication.
    pub timeout: Duration,
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgUrl({})", self.shown)
    }
}

/// The parameters sysperf reads itself (the driver refuses them).
const OURS: [&str; 5] = [
    "sslmode",
    "sslrootcert",
    "require_auth",
    "passfile",
    "service",
];

/// The driver's parameters a service file may set (#44 item 5), each when the URL does not.
const SERVICE_KEYS: [&str; 8] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "connect_timeout",
];

/// Socket directories libpq builds take as the default, in the order one is chosen for a URL
/// without a host: the first holding the server's socket, else the first (Debian's).
const SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

/// Whether the driver's settings name the setting `key` of [`SERVICE_KEYS`] already.
fn has(config: &tokio_postgres::Config, key: &str) -> bool {
    match key {
        "host" | "hostaddr" => !config.get_hosts().is_empty() || !config.get_hostaddrs().is_empty(),
        "port" => !config.get_ports().is_empty(),
        "dbname" => config.get_dbname().is_some(),
        "user" => config.get_user().is_some(),
        "password" => config.get_password().is_some(),
        "application_name" => config.get_application_name().is_some(),
        "connect_timeout" => config.get_connect_timeout().is_some(),
        _ => true,
    }
}

/// Sets the driver's setting `key` (one of [`SERVICE_KEYS`]) to `value` as libpq reads it:
/// hosts and ports as comma-separated lists, a host starting with `/` a socket directory.
fn set(config: &mut tokio_postgres::Config, key: &str, value: &str) -> Result<(), String> {
    let list = || value.split(',').map(str::trim);
    match key {
        "host" => {
            for h in list() {
                if h.starts_with('/') {
                    config.host_path(h);
                } else {
                    config.host(h);
                }
            }
        }
        "hostaddr" => {
            for a in list() {
                config.hostaddr(
                    a.parse()
                        .map_err(|_| format!("hostaddr '{a}' is not an IP address"))?,
                );
            }
        }
        "port" => {
            for p in list() {
                config.port(p.parse().map_err(|_| format!("port '{p}' is not a port"))?);
            }
        }
        "dbname" => {
            config.dbname(value);
        }
        "user" => {
            config.user(value);
        }
        "password" => {
            config.password(value);
        }
        "application_name" => {
            config.application_name(value);
        }
        "connect_timeout" => {
            let secs: u64 = value
                .parse()
                .map_err(|_| format!("connect_timeout '{value}' is not a number of seconds"))?;
            if secs > 0 {
                config.connect_timeout(Duration::from_secs(secs.max(2)));
            }
        }
        _ => {}
    }
    Ok(())
}

/// libpq's default when neither the URL, its service nor `PGHOST` names a host: the unix
/// socket of `port` in the default socket directory ([`SOCKET_DIRS`]).
fn default_socket_dir(port: u16) -> &'static str {
    SOCKET_DIRS
        .into_iter()
        .find(|d| Path::new(d).join(format!(".s.PGSQL.{port}")).exists())
        .unwrap_or(SOCKET_DIRS[0])
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

fn decode(s: &str) -> Option<String> {
    let bytes = percent_decode(s)?;
    String::from_utf8(bytes).ok()
}

/// `%XX` escapes decoded (a `%` not followed by two hex digits is kept, as the driver does).
fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// The type of [`PgUrl::parse`]'s error maker: the URL is bad, and why.
type Bad<'a> = &'a dyn Fn(String) -> StoreError;

/// The URL the driver reads (the query's parameters that sysperf reads itself, [`OURS`],
/// taken out) and those parameters, decoded.
fn split_query(url: &str, bad: Bad<'_>) -> Result<(String, HashMap<String, String>), StoreError> {
    // The query, where the driver finds it: after the credentials (which end at the first
    // '@'), from the first '?'.
    let creds_end = url.find('@').map_or(0, |i| i + 1);
    let (base, query) = match url[creds_end..].find('?') {
        Some(i) => (&url[..creds_end + i], &url[creds_end + i + 1..]),
        None => (url, ""),
    };
    let mut kept = Vec::new();
    let mut ours = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(k).unwrap_or_default();
        if OURS.contains(&key.as_str()) {
            let value = decode(v).ok_or_else(|| bad(format!("the value of {key} is not UTF-8")))?;
            ours.insert(key, value);
        } else {
            kept.push(pair);
        }
    }
    let driver_url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((driver_url, ours))
}

/// A service's settings (#44 item 5) where the URL has none, before the environment's
/// (libpq's order: the URL, the service file, the environment, the defaults).
fn apply_service(
    config: &mut tokio_postgres::Config,
    ours: &mut HashMap<String, String>,
    service: &str,
    bad: Bad<'_>,
) -> Result<(), StoreError> {
    let settings = super::pgservice::settings(service).map_err(bad)?;
    for (key, value) in settings {
        if OURS.contains(&key.as_str()) {
            ours.entry(key).or_insert(value);
        } else if SERVICE_KEYS.contains(&key.as_str()) {
            if !has(config, &key) {
                set(config, &key, &value)
                    .map_err(|why| bad(format!("in the service \"{service}\": {why}")))?;
            }
        } else {
            return Err(bad(format!(
                "the service \"{service}\" sets '{key}', which sysperf does not take from a service file (it takes {} and {})",
                SERVICE_KEYS.join(", "),
                OURS[..4].join(", ")
            )));
        }
    }
    Ok(())
}

/// libpq's environment where the URL and the service set nothing, then its defaults:
/// without a host, the unix socket (#44 item 5).
fn apply_env(config: &mut tokio_postgres::Config, bad: Bad<'_>) -> Result<(), StoreError> {
    for (key, var) in [
        ("host", "PGHOST"),
        ("port", "PGPORT"),
        ("dbname", "PGDATABASE"),
        ("user", "PGUSER"),
    ] {
        if let Some(value) = env(var).filter(|_| !has(config, key)) {
            set(config, key, &value).map_err(|why| bad(format!("{why} (from {var})")))?;
        }
    }
    if !has(config, "host") {
        let port = config.get_ports().first().copied().unwrap_or(5432);
        config.host_path(default_socket_dir(port));
    }
    Ok(())
}

/// The TLS mode and roots, from the URL's parameters or else the environment's, checked
/// against each other.
fn ssl_of(
    ours: &HashMap<String, String>,
    bad: Bad<'_>,
) -> Result<(SslMode, Option<RootCert>), StoreError> {
    let param = |key: &str, var: &str| ours.get(key).cloned().or_else(|| env(var));
    let rootcert = param("sslrootcert", "PGSSLROOTCERT").map(|r| match r.as_str() {
        "system" => RootCert::System,
        _ => RootCert::File(PathBuf::from(r)),
    });
    let sslmode = match param("sslmode", "PGSSLMODE") {
        Some(m) => SslMode::parse(&m).ok_or_else(|| {
            let from = if ours.contains_key("sslmode") {
                ""
            } else {
                " (from PGSSLMODE)"
            };
            bad(format!(
                "sslmode={m}{from} is not one of disable, prefer, require, verify-ca, verify-full"
            ))
        })?,
        // libpq: the system's roots mean a certificate naming the host.
        None if rootcert == Some(RootCert::System) => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    if rootcert == Some(RootCert::System) && sslmode != SslMode::VerifyFull {
        return Err(bad(format!(
            "sslrootcert=system needs sslmode=verify-full, not {}",
            sslmode.name()
        )));
    }
    Ok((sslmode, rootcert))
}

impl PgUrl {
    /// Reads a `postgres://` or `postgresql://` URL (the scheme in lower case).
    pub(crate) fn parse(url: &str) -> Result<PgUrl, StoreError> {
        let shown = redact(url);
        let bad = |why: String| {
            StoreError::BadUrl {
            url: shown.clone(),
            why: format!("{why}; the form is postgres://USER@HOST:PORT/DATABASE[?sslmode=verify-full&sslrootcert=FILE]"),
        }
        };
        let (driver_url, mut ours) = split_query(url, &bad)?;
        let mut config: tokio_postgres::Config =
            driver_url.parse().map_err(|e: tokio_postgres::Error| {
                bad(format!(
                    "it is not a valid PostgreSQL URL ({})",
                    describe(&e)
                ))
            })?;
        // A service's settings, then the environment's ([`apply_service`], [`apply_env`]).
        if let Some(service) = ours.remove("service").or_else(|| env("PGSERVICE")) {
            apply_service(&mut config, &mut ours, &service, &bad)?;
        }
        apply_env(&mut config, &bad)?;
        if config.get_load_balance_hosts() == LoadBalanceHosts::Random {
            return Err(bad("load_balance_hosts=random is not supported".into()));
        }
        let param = |key: &str, var: &str| ours.get(key).cloned().or_else(|| env(var));
        let (sslmode, rootcert) = ssl_of(&ours, &bad)?;
        config.ssl_mode(match sslmode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
        let auth = match param("require_auth", "PGREQUIREAUTH") {
            Some(list) => AuthPolicy::parse(&list).map_err(bad)?,
            None => AuthPolicy::SCRAM_ONLY,
        };
        let timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        // The driver's default user, made explicit: the password file is searched for it.
        if config.get_user().is_none() {
            if let Ok(user) = whoami::username() {
                config.user(&user);
            }
        }
        if config.get_application_name().is_none() {
            config.application_name("sysperf");
        }
        Ok(PgUrl {
            config,
            shown,
            sslmode,
            rootcert,
            auth,
            passfile: param("passfile", "PGPASSFILE").map(PathBuf::from),
            timeout,
        })
    }

    /// Whether the URL itself carries a password (else one is looked for in `PGPASSWORD`
    /// and the password file).
    pub(crate) fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }

    /// Where the URL leads, as libpq goes (#44 item 1): each address (`hostaddr`, else the
    /// host: a name in lower case, or a socket directory) with its port, then the database;
    /// the same whatever the URL's scheme, parameters, password or service file. What a
    /// spool file made while its store was never reached is matched by.
    pub(crate) fn target(&self) -> String {
        let c = &self.config;
        let ports = c.get_ports();
        let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let (hosts, addrs) = (c.get_hosts(), c.get_hostaddrs());
        let at: Vec<String> = (0..hosts.len().max(addrs.len()))
            .map(|i| {
                let host = match (addrs.get(i), hosts.get(i)) {
                    (Some(a), _) => a.to_string(),
                    (None, Some(Host::Tcp(h))) => h.to_ascii_lowercase(),
                    (None, Some(h)) => PgUrl::host_name(h),
                    (None, None) => String::new(),
                };
                format!("{host}:{}", port(i))
            })
            .collect();
        let database = c.get_dbname().or(c.get_user()).unwrap_or_default();
        format!("{}/{database}", at.join(","))
    }

    /// The hosts, for the password file: each as the URL names it, a socket directory as its
    /// path.
    pub(crate) fn host_name(host: &Host) -> String {
        match host {
            Host::Tcp(h) => h.clone(),
            Host::Unix(p) => p.to_string_lossy().into_owned(),
        }
    }
}

/// `url` with its password replaced by `***` wherever it may be: between `user:` and the
/// last `@` (a password may hold an unencoded `@`, `/` or `?`, and hiding too much beats
/// showing part of one); in any parameter whose name contains "password"; and, in a URL
/// without `@`, after a port that is not a number (`postgres://user:secret/db`, where the
/// driver reads the password as a port).
pub(crate) fn redact(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let (scheme, rest) = url.split_at(start);
    let mut out = String::from(scheme);
    let tail = match rest.find('@') {
        Some(first_at) => match rest[..first_at].find(':') {
            Some(colon) => {
                let last_at = rest.rfind('@').unwrap_or(first_at);
                out.push_str(&rest[..=colon]);
                out.push_str("***");
                &rest[last_at..]
            }
            None => rest,
        },
        None => {
            let hosts_end = rest.find(['/', '?']).unwrap_or(rest.len());
            let mut at = 0;
            for chunk in rest[..hosts_end].split(',') {
                let port_at = chunk
                    .rfind(':')
                    .filter(|&i| !chunk[i..].contains(']'))
                    .map(|i| at + i + 1);
                if let Some(p) = port_at {
                    let end = at + chunk.len();
                    if !rest[p..end].bytes().all(|b| b.is_ascii_digit()) {
                        out.push_str(&rest[..p]);
                        out.push_str("***");
                        return out;
                    }
                }
                at += chunk.len() + 1;
            }
            rest
        }
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    out.push_str(path);
    if let Some(query) = query {
        out.push('?');
        let mut hiding = false;
        let mut first = true;
        for pair in query.split('&') {
            let key = pair.split_once('=').map(|(k, _)| k);
            if hiding && key.is_none() {
                // A raw '&' inside the hidden value.
                continue;
            }
            if !first {
                out.push('&');
            }
            first = false;
            hiding = key.is_some_and(|k| {
                decode(k).is_some_and(|k| k.to_ascii_lowercase().contains("password"))
            });
            match key {
                Some(k) if hiding => {
                    out.push_str(k);
                    out.push_str("=***");
                }
                _ => out.push_str(pair),
            }
        }
    }
    out
}

/// A driver error in words, its causes included: what the server said (`FATAL: ...`), or
/// what failed on the way.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_wherever_they_are() {
        for (url, shown) in [
            (
                "postgres://bob:s3cret@db.example:5433/runs?password=s3cret&sslmode=disable",
                "postgres://bob:***@db.example:5433/runs?password=***&sslmode=disable",
            ),
            ("postgres://bob@h/db", "postgres://bob@h/db"),
            (
                "postgres://bench:s3cret@127.0.0.1:notaport/runs",
                "postgres://bench:***@127.0.0.1:notaport/runs",
            ),
            // Unencoded '/', '?' and '@' in the password.
            ("postgres://bob:s3/cret@h/db", "postgres://bob:***@h/db"),
            ("postgres://bob:s3?cret@h/db", "postgres://bob:***@h/db"),
            ("postgres://bob:s3@cr@et@h/db", "postgres://bob:***@h/db"),
            (
                "postgres://bob:s3?c@r/et@h:1/db",
                "postgres://bob:***@h:1/db",
            ),
            // Percent-encoded.
            (
                "postgres://bob:s3%2F%3F%40cret@h/db",
                "postgres://bob:***@h/db",
            ),
            // No '@': the driver reads "s3cret" as a port.
            ("postgres://bob:s3cret", "postgres://bob:***"),
            ("postgres://bob:s3/cr?et", "postgres://bob:***"),
            (
                "postgres://h:5432,bob:s3cret/db",
                "postgres://h:5432,bob:***",
            ),
            ("postgres://[::1]:5432/db", "postgres://[::1]:5432/db"),
            // Parameters: any name holding "password", encoded names, raw '&' in the value.
            (
                "postgres://bob@h/db?sslpassword=s3cret&x=1",
                "postgres://bob@h/db?sslpassword=***&x=1",
            ),
            (
                "postgres://bob@h/db?%70assword=s3cret",
                "postgres://bob@h/db?%70assword=***",
            ),
            (
                "postgres://bob@h/db?password=s3&cret&sslmode=require",
                "postgres://bob@h/db?password=***&sslmode=require",
            ),
            // An '@' in a parameter, no password: nothing hidden.
            (
                "postgres://bob@h/db?application_name=a@b",
                "postgres://bob@h/db?application_name=a@b",
            ),
        ] {
            assert_eq!(redact(url), shown, "{url}");
            assert!(!redact(url).contains("cret"), "{url}");
        }
    }

    #[test]
    fn libpq_parameters_are_read_and_not_given_to_the_driver() {
        let u = PgUrl::parse(
            "postgres://bob@h:5433/db?sslmode=verify-full&sslrootcert=/etc/ca.pem&require_auth=password,scram-sha-256&application_name=x",
        )
        .unwrap();
        assert_eq!(u.sslmode, SslMode::VerifyFull);
        assert_eq!(u.rootcert, Some(RootCert::File("/etc/ca.pem".into())));
        assert!(u.auth.password && u.auth.scram && !u.auth.md5 && !u.auth.none);
        assert_eq!(u.config.get_application_name(), Some("x"));
        assert_eq!(
            u.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        assert_eq!(u.timeout, CONNECT_TIMEOUT);
        let d = PgUrl::parse("postgres://bob@h/db?connect_timeout=3&sslmode=disable").unwrap();
        assert_eq!(d.auth, AuthPolicy::SCRAM_ONLY);
        assert_eq!(d.timeout, Duration::from_secs(3));
        assert_eq!(d.config.get_application_name(), Some("sysperf"));
        let not = PgUrl::parse("postgres://bob@h/db?require_auth=!password,!md5").unwrap();
        assert!(not.auth.none && not.auth.scram && !not.auth.password && !not.auth.md5);
        let sys = PgUrl::parse("postgres://bob@h/db?sslrootcert=system").unwrap();
        assert_eq!(sys.sslmode, SslMode::VerifyFull);
    }

    /// #44 item 5: a URL without a host is libpq's unix socket default, and one spelled
    /// otherwise but leading to the same place has the same target (item 1).
    #[test]
    fn a_url_without_a_host_is_the_unix_socket_and_targets_ignore_spelling() {
        let u = PgUrl::parse("postgres:///fleet?sslmode=disable").unwrap();
        let dir = match u.config.get_hosts() {
            [Host::Unix(p)] => p.clone(),
            other => panic!("{other:?}"),
        };
        assert!(SOCKET_DIRS.contains(&dir.to_str().unwrap()), "{dir:?}");
        assert_eq!(u.target(), format!("{}:5432/fleet", dir.display()));
        let bare = PgUrl::parse("postgresql://bob@/db").unwrap();
        assert_eq!(bare.target(), format!("{}:5432/db", dir.display()));
        let t = |url: &str| PgUrl::parse(url).unwrap().target();
        let same = t("postgres://bob@DB.lab:5432/sp5");
        assert_eq!(same, "db.lab:5432/sp5");
        for url in [
            "postgres://bob@db.lab/sp5?connect_timeout=5",
            "postgresql://bob:s3cret@db.lab:5432/sp5",
            "postgres://bob@db.lab/sp5?sslmode=require&application_name=x",
        ] {
            assert_eq!(t(url), same, "{url}");
        }
        assert_ne!(t("postgres://bob@db.lab:5433/sp5"), same);
        assert_ne!(t("postgres://bob@db.lab/other"), same);
        // No database: the user's name, as the server takes it.
        assert_eq!(t("postgres://bob@db.lab"), "db.lab:5432/bob");
    }

    #[test]
    fn bad_urls_are_refused_without_their_password() {
        for (url, why) in [
            ("postgres://bob:s3cret@h:notaport/db", "port"),
            ("postgres://bob:s3cret@h/db?sslmode=allow", "sslmode=allow"),
            (
                "postgres://bob:s3cret@h/db?require_auth=ldap",
                "require_auth",
            ),
            (
                "postgres://bob:s3cret@h/db?require_auth=md5,!password",
                "mixes",
            ),
            (
                "postgres://bob:s3cret@h/db?sslrootcert=system&sslmode=require",
                "system",
            ),
            ("postgres://bob:s3cret@h/db?nosuch=1", "nosuch"),
        ] {
            let e = PgUrl::parse(url).unwrap_err();
            assert!(e.is_user_error(), "{url}");
            let text = e.to_string();
            assert!(text.contains(why), "{url}: {text}");
            assert!(!text.contains("s3cret"), "{url}: {text}");
        }
    }
}
