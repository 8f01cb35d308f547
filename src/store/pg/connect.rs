//! Connecting to a PostgreSQL store, and the connection as a blocking client.
//!
//! sysperf makes the socket itself and hands it to the driver (`tokio_postgres`'s
//! `connect_raw`), for three things the driver's own connect cannot do:
//! - one bound on the whole handshake: TCP connect, TLS, startup and authentication of each
//!   address tried together take at most the URL's `connect_timeout` (default 10 s); the
//!   driver's bounds only the TCP connect, so a server that accepts and never answers held a
//!   run for as long as it kept the connection open;
//! - SCRAM only: every byte the server sends before it accepts the user passes through
//!   [`Watch`], which reads the authentication requests and ends the connection, before the
//!   driver sees it, when the server asks for a cleartext password or an MD5 hash of one
//!   (unless the URL's `require_auth` allows it). The driver would answer either (it refuses
//!   them only under `channel_binding=require`, which needs TLS and a server that offers
//!   SCRAM-SHA-256-PLUS), so a fake server on the way got the password. Watching the stream
//!   is the one place that sees the request whatever the driver does; over TLS the watch is
//!   on the decrypted stream (`guard.rs`);
//! - TLS through rustls (`tls.rs`), with libpq's `verify-ca` and `verify-full` (the driver
//!   knows only disable, prefer and require); and the password from `PGPASSWORD` or the
//!   password file, looked up for each host tried (`pgpass.rs`).
//!
//! The blocking [`Client`] runs the driver on a current-thread runtime of its own, as the
//! `postgres` crate does; it offers what the store uses.
//!
//! It is not the URL parser (`url.rs`) nor the store (`pg.rs`).

use super::error::ConnectError;
use super::guard::{Phase, Refusal, Watch};
use super::pgpass;
use super::tls;
use super::url::{describe, PgUrl, SslMode};
use rustls::pki_types::ServerName;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::Host;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Error, IsolationLevel, Row, Statement, ToStatement};

/// A blocking connection: the driver's client, driven by a runtime of its own on which the
/// connection's task runs while a call waits.
pub(crate) struct Client {
    client: tokio_postgres::Client,
    rt: tokio::runtime::Runtime,
}

impl Client {
    pub(crate) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    pub(crate) fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        self.rt.block_on(self.client.query_opt(query, params))
    }

    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.rt.block_on(self.client.batch_execute(sql))
    }

    pub(crate) fn query_typed(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, Error> {
        self.rt.block_on(self.client.query_typed(sql, params))
    }

    pub(crate) fn execute_typed(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<u64, Error> {
        self.rt.block_on(self.client.execute_typed(sql, params))
    }

    pub(crate) fn transaction(&mut self) -> Result<Transaction<'_>, Error> {
        let Client { client, rt } = self;
        let tx = rt.block_on(client.transaction())?;
        Ok(Transaction { rt, tx: Some(tx) })
    }

    pub(crate) fn build_transaction(&mut self) -> TransactionBuilder<'_> {
        let Client { client, rt } = self;
        TransactionBuilder {
            rt,
            inner: client.build_transaction(),
        }
    }
}

/// [`tokio_postgres::TransactionBuilder`], blocking.
pub(crate) struct TransactionBuilder<'a> {
    rt: &'a tokio::runtime::Runtime,
    inner: tokio_postgres::TransactionBuilder<'a>,
}

impl<'a> TransactionBuilder<'a> {
    pub(crate) fn isolation_level(self, level: IsolationLevel) -> Self {
        TransactionBuilder {
            inner: self.inner.isolation_level(level),
            ..self
        }
    }

    pub(crate) fn read_only(self, read_only: bool) -> Self {
        TransactionBuilder {
            inner: self.inner.read_only(read_only),
            ..self
        }
    }

    pub(crate) fn start(self) -> Result<Transaction<'a>, Error> {
        let tx = self.rt.block_on(self.inner.start())?;
        Ok(Transaction {
            rt: self.rt,
            tx: Some(tx),
        })
    }
}

/// A transaction, blocking. Dropped without [`Transaction::commit`], it is rolled back: the
/// driver queues the ROLLBACK, sent before the connection's next statement (or the server
/// rolls back when the connection closes), so a drop never waits on the server.
pub(crate) struct Transaction<'a> {
    rt: &'a tokio::runtime::Runtime,
    /// Always Some until [`Transaction::commit`] takes it.
    tx: Option<tokio_postgres::Transaction<'a>>,
}

impl Transaction<'_> {
    fn tx(&self) -> &tokio_postgres::Transaction<'_> {
        self.tx
            .as_ref()
            .expect("a transaction is used only until committed")
    }

    pub(crate) fn commit(mut self) -> Result<(), Error> {
        match self.tx.take() {
            Some(tx) => self.rt.block_on(tx.commit()),
            None => Ok(()),
        }
    }

    pub(crate) fn execute<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        self.rt.block_on(self.tx().execute(query, params))
    }

    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.rt.block_on(self.tx().batch_execute(sql))
    }

    pub(crate) fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.rt.block_on(self.tx().prepare(sql))
    }

    pub(crate) fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        self.rt.block_on(self.tx().query_one(query, params))
    }

    pub(crate) fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        self.rt.block_on(self.tx().query_opt(query, params))
    }

    pub(crate) fn query_typed(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, Error> {
        self.rt.block_on(self.tx().query_typed(sql, params))
    }

    pub(crate) fn execute_typed(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<u64, Error> {
        self.rt.block_on(self.tx().execute_typed(sql, params))
    }
}

/// Connects to the database `url` names: each host in turn (each of its addresses), each
/// attempt bounded by the URL's timeout; the first that works, else the most telling error
/// (what a server said over an address that did not answer).
pub(crate) fn connect(url: &PgUrl) -> Result<Client, ConnectError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|source| ConnectError::Io {
            addr: "the runtime".into(),
            source,
        })?;
    let tls = tls::config(url)?;
    let client = rt.block_on(connect_any(url, tls))?;
    Ok(Client { client, rt })
}

/// Where one attempt goes.
enum Target {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tcp(a) => write!(f, "{a}"),
            Target::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

async fn connect_any(
    url: &PgUrl,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<tokio_postgres::Client, ConnectError> {
    let cfg = &url.config;
    let (hosts, addrs, ports) = (cfg.get_hosts(), cfg.get_hostaddrs(), cfg.get_ports());
    let mut worst: Option<ConnectError> = None;
    let keep = |e: ConnectError, worst: &mut Option<ConnectError>| {
        if worst
            .as_ref()
            .is_none_or(|w| w.is_unreachable() || !e.is_unreachable())
        {
            *worst = Some(e);
        }
    };
    for i in 0..hosts.len().max(addrs.len()) {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let (host, hostaddr) = (hosts.get(i), addrs.get(i));
        // The name the certificate must hold: the host, else the address.
        let name = match host {
            Some(Host::Tcp(h)) => Some(h.clone()),
            Some(Host::Unix(_)) => None,
            None => hostaddr.map(|a| a.to_string()),
        };
        let targets = match (host, hostaddr) {
            (_, Some(ip)) => vec![Target::Tcp((*ip, port).into())],
            (Some(Host::Unix(dir)), None) => {
                vec![Target::Unix(dir.join(format!(".s.PGSQL.{port}")))]
            }
            (Some(Host::Tcp(h)), None) => {
                match tokio::time::timeout(url.timeout, tokio::net::lookup_host((h.as_str(), port)))
                    .await
                {
                    Ok(Ok(found)) => found.map(Target::Tcp).collect(),
                    Ok(Err(source)) => {
                        keep(
                            ConnectError::Resolve {
                                host: url.shown.contains(h.as_str()).then(|| h.clone()),
                                source,
                            },
                            &mut worst,
                        );
                        continue;
                    }
                    Err(_) => {
                        keep(
                            ConnectError::Timeout {
                                addr: match url.shown.contains(h.as_str()) {
                                    true => format!("'{h}' (looking it up)"),
                                    false => "the host (looking it up)".into(),
                                },
                                secs: url.timeout.as_secs(),
                            },
                            &mut worst,
                        );
                        continue;
                    }
                }
            }
            (None, None) => continue,
        };
        let mut config = cfg.clone();
        if !url.has_password() {
            let key = pgpass::Key {
                host: &host
                    .map(PgUrl::host_name)
                    .unwrap_or_else(|| hostaddr.map(|a| a.to_string()).unwrap_or_default()),
                port,
                database: cfg.get_dbname().or(cfg.get_user()).unwrap_or_default(),
                user: cfg.get_user().unwrap_or_default(),
            };
            if let Some(p) = pgpass::password(&key, url.passfile.as_deref()) {
                config.password(p);
            }
        }
        for target in targets {
            let attempt = connect_one(&target, name.as_deref(), &config, url, tls.clone());
            match tokio::time::timeout(url.timeout, attempt).await {
                Ok(Ok(client)) => return Ok(client),
                Ok(Err(e)) => keep(e, &mut worst),
                Err(_) => keep(
                    ConnectError::Timeout {
                        addr: target.to_string(),
                        secs: url.timeout.as_secs(),
                    },
                    &mut worst,
                ),
            }
        }
    }
    Err(worst.unwrap_or(ConnectError::Resolve {
        host: None,
        source: io::Error::new(io::ErrorKind::NotFound, "no address"),
    }))
}

/// One attempt: the socket, then the driver's TLS, startup and authentication over it.
async fn connect_one(
    target: &Target,
    name: Option<&str>,
    config: &tokio_postgres::Config,
    url: &PgUrl,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<tokio_postgres::Client, ConnectError> {
    let io = |source| ConnectError::Io {
        addr: target.to_string(),
        source,
    };
    let mut config = config.clone();
    let socket = match target {
        Target::Tcp(a) => {
            let s = TcpStream::connect(a).await.map_err(io)?;
            // Many small round trips: Nagle's algorithm would hold each.
            s.set_nodelay(true).map_err(io)?;
            Socket::Tcp(s)
        }
        Target::Unix(p) => {
            // As libpq: no TLS through a socket on this machine.
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
            Socket::Unix(UnixStream::connect(p).await.map_err(io)?)
        }
    };
    let first = if config.get_ssl_mode() == tokio_postgres::config::SslMode::Disable {
        Phase::Message
    } else if config.get_ssl_negotiation() == tokio_postgres::config::SslNegotiation::Direct {
        // TLS from the first byte: the watch is on the decrypted stream only.
        Phase::Pass
    } else {
        Phase::SslReply
    };
    let stream = Watch::new(socket, first, url.auth);
    let tls = tls::Connector {
        tls: match (tls, name) {
            (Some(c), Some(n)) => {
                let name = ServerName::try_from(n.to_string()).map_err(|e| ConnectError::Tls {
                    addr: target.to_string(),
                    why: format!("'{n}' cannot be a TLS server name ({e})"),
                })?;
                Some((c, name))
            }
            _ => None,
        },
        auth: url.auth,
    };
    let (client, connection) = config
        .connect_raw(stream, tls)
        .await
        .map_err(|e| classify(e, target, url.sslmode))?;
    tokio::spawn(async move {
        // The driver reports a broken connection to the calls that wait on it.
        let _ = connection.await;
    });
    Ok(client)
}

/// The driver's error from a handshake, as what sysperf knows it to mean.
fn classify(e: Error, target: &Target, mode: SslMode) -> ConnectError {
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        if let Some(r) = c
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<Refusal>())
        {
            return match *r {
                Refusal::Method { asked, method } => ConnectError::Refused { asked, method },
                Refusal::NoAuth => ConnectError::NoAuth,
                Refusal::Malformed => ConnectError::Server(e),
            };
        }
        cause = c.source();
    }
    let text = describe(&e);
    if text.ends_with("password missing") {
        return ConnectError::NoPassword;
    }
    if text.ends_with("server does not support TLS") {
        return ConnectError::NoTls(mode.name());
    }
    if text.starts_with("error performing TLS handshake") {
        return ConnectError::Tls {
            addr: target.to_string(),
            why: text,
        };
    }
    ConnectError::Server(e)
}

/// A TCP or unix socket.
enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, b),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, b),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
