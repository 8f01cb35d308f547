//! TLS for the PostgreSQL store: rustls with the ring provider, its certificate check as
//! libpq's sslmode says ([`config`]), and the connector the driver runs the handshake with
//! ([`Connector`]), whose stream is watched inside TLS and gives SCRAM its channel binding
//! (`tls-server-end-point`: the hash of the server's certificate).
//!
//! A certificate given in `sslrootcert` that the server presents itself (a self-signed one,
//! pinned) is accepted as libpq accepts it, though webpki would refuse it as a CA's.
//!
//! Why rustls and not native-tls: the distribution binary is static (glibc with crt-static,
//! scripts/dist.sh); native-tls is OpenSSL, whose static linking wants static libssl and
//! libcrypto builds and drags glibc's dlopen and NSS caveats along, while rustls and ring
//! are Rust plus a little C and assembly built by cc, linked like the rest. Why not
//! tokio-postgres-rustls: its X.509 parser (x509-cert, for the channel binding's hash
//! algorithm) took binary size the 15 MiB limit does not leave; reading one OID of the
//! certificate takes a few lines here.
//!
//! It is not the connection (`connect.rs`).

use super::error::ConnectError;
use super::guard::{Phase, Watch};
use super::url::{AuthPolicy, PgUrl, RootCert, SslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};

/// The rustls settings the URL's sslmode asks for (None: no TLS).
pub(super) fn config(url: &PgUrl) -> Result<Option<Arc<rustls::ClientConfig>>, ConnectError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match (&url.rootcert, url.sslmode) {
        (_, SslMode::Disable) => return Ok(None),
        (Some(r), _) => Some(load_roots(r)?),
        // libpq: verification uses ~/.postgresql/root.crt by default, and require turns into
        // verify-ca when that file exists.
        (None, mode) => {
            let default = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".postgresql/root.crt"));
            match (default, mode) {
                (Some(f), SslMode::VerifyCa | SslMode::VerifyFull) => {
                    Some(load_roots(&RootCert::File(f))?)
                }
                (Some(f), SslMode::Require) if f.exists() => Some(load_roots(&RootCert::File(f))?),
                (None, SslMode::VerifyCa | SslMode::VerifyFull) => {
                    return Err(ConnectError::RootCert {
                        path: "~/.postgresql/root.crt".into(),
                        why: "no HOME to find it in; give sslrootcert=FILE".into(),
                    })
                }
                _ => None,
            }
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ConnectError::Tls {
            addr: url.shown.clone(),
            why: e.to_string(),
        })?;
    let verifier: Arc<dyn ServerCertVerifier> = match (roots, url.sslmode) {
        (Some((roots, pinned)), mode) => {
            let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(|e| ConnectError::Tls {
                addr: url.shown.clone(),
                why: e.to_string(),
            })?;
            Arc::new(Verify {
                webpki: Some(webpki),
                pinned,
                names: mode == SslMode::VerifyFull,
                provider,
            })
        }
        (None, _) => Arc::new(Verify {
            webpki: None,
            pinned: Vec::new(),
            names: false,
            provider,
        }),
    };
    Ok(Some(Arc::new(
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    )))
}

/// The root certificates `r` names: as roots, and as they are in the file (a server that
/// presents one of them itself is taken to present a pinned certificate).
type Roots = (rustls::RootCertStore, Vec<CertificateDer<'static>>);

fn load_roots(r: &RootCert) -> Result<Roots, ConnectError> {
    use rustls::pki_types::pem::PemObject;
    let path = match r {
        RootCert::File(p) => p.clone(),
        RootCert::System => system_roots(),
    };
    let bad = |why: String| ConnectError::RootCert {
        path: path.clone(),
        why,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
        .map_err(|e| bad(pem_error(&e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(pem_error(&e)))?;
    let mut store = rustls::RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err(bad(
            "it holds no certificate (PEM, BEGIN CERTIFICATE)".into()
        ));
    }
    Ok((store, certs))
}

fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        other => format!("{other:?}"),
    }
}

/// The system's bundle of trusted roots: `SSL_CERT_FILE`, else Debian's and Fedora's.
fn system_roots() -> PathBuf {
    std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .or_else(|| {
            [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
            ]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
        })
        .unwrap_or_else(|| Path::new("/etc/ssl/certs/ca-certificates.crt").to_path_buf())
}

/// The server certificate check of each sslmode: none (prefer, require without roots); the
/// chain to the roots (verify-ca, require with roots); the chain and the host's name
/// (verify-full). A certificate that is one of the roots itself is pinned ([`pinned`]). The
/// handshake's signatures are always checked.
#[derive(Debug)]
struct Verify {
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    /// The certificates of sslrootcert, byte for byte.
    pinned: Vec<CertificateDer<'static>>,
    names: bool,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Verify {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return pinned(end_entity, self.names.then_some(server_name), now);
        }
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The check of a server's certificate that is byte for byte one given in sslrootcert (a
/// self-signed certificate, pinned). libpq (OpenSSL) trusts a root it is given whatever else
/// it is; webpki refuses a certificate with `CA:TRUE` as a server's (`CaUsedAsEndEntity`),
/// and `openssl req -x509` makes self-signed certificates with it. Its dates are still
/// checked, and its names when `name` is given (verify-full). Its signature needs no check:
/// it is the certificate the user gave, and the handshake's signature, checked apart, proves
/// that the server holds its key.
fn pinned(
    cert: &CertificateDer<'_>,
    name: Option<&ServerName<'_>>,
    now: UnixTime,
) -> Result<ServerCertVerified, rustls::Error> {
    let (not_before, not_after) = validity_of(cert).ok_or(rustls::Error::InvalidCertificate(
        CertificateError::BadEncoding,
    ))?;
    let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    if now < not_before {
        return Err(rustls::Error::InvalidCertificate(
            CertificateError::NotValidYet,
        ));
    }
    if now > not_after {
        return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
    }
    if let Some(name) = name {
        let parsed = rustls::server::ParsedCertificate::try_from(cert)?;
        rustls::client::verify_server_name(&parsed, name)?;
    }
    Ok(ServerCertVerified::assertion())
}

/// The notBefore and notAfter of a DER certificate, in Unix seconds: TBSCertificate ::=
/// SEQUENCE { [0] version OPTIONAL, serialNumber INTEGER, signature SEQUENCE, issuer
/// SEQUENCE, validity SEQUENCE { notBefore Time, notAfter Time }, ... }.
fn validity_of(cert: &[u8]) -> Option<(i64, i64)> {
    let (0x30, cert, _) = der(cert)? else {
        return None;
    };
    let (0x30, mut tbs, _) = der(cert)? else {
        return None;
    };
    if tbs.first() == Some(&0xa0) {
        tbs = der(tbs)?.2;
    }
    for tag in [0x02, 0x30, 0x30] {
        let (t, _, rest) = der(tbs)?;
        if t != tag {
            return None;
        }
        tbs = rest;
    }
    let (0x30, validity, _) = der(tbs)? else {
        return None;
    };
    let (tag, from, rest) = der(validity)?;
    let not_before = der_time(tag, from)?;
    let (tag, to, _) = der(rest)?;
    Some((not_before, der_time(tag, to)?))
}

/// A DER Time in Unix seconds: UTCTime `YYMMDDHHMMSSZ` (years 1950 to 2049, RFC 5280) or
/// GeneralizedTime `YYYYMMDDHHMMSSZ`, the forms RFC 5280 allows.
fn der_time(tag: u8, value: &[u8]) -> Option<i64> {
    let digits = value.strip_suffix(b"Z")?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let number = |b: &[u8]| b.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    let (year, rest) = match (tag, digits.len()) {
        (0x17, 12) => match number(&digits[..2]) {
            yy @ 50.. => (1900 + yy, &digits[2..]),
            yy => (2000 + yy, &digits[2..]),
        },
        (0x18, 14) => (number(&digits[..4]), &digits[4..]),
        _ => return None,
    };
    let [month, day, hour, minute, second] = [0, 2, 4, 6, 8].map(|i| number(&rest[i..i + 2]));
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60;
    valid.then(|| {
        crate::model::days_from_civil(year, month, day) * 86_400
            + hour * 3_600
            + minute * 60
            + second
    })
}

/// The driver's TLS connector: the handshake with `name` as the server's name, its stream
/// watched (the server's messages are readable inside TLS only). None: TLS was not asked
/// for, and the driver never calls it.
pub(super) struct Connector {
    pub(super) tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    pub(super) auth: AuthPolicy,
}

type Stream<S> = Watch<tokio_rustls::client::TlsStream<S>>;

impl<S> TlsConnect<S> for Connector
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    type Stream = Stream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream<S>>>>>;

    fn connect(self, stream: S) -> Self::Future {
        let auth = self.auth;
        match self.tls {
            Some((config, name)) => {
                let handshake = tokio_rustls::TlsConnector::from(config).connect(name, stream);
                Box::pin(async move { Ok(Watch::new(handshake.await?, Phase::Message, auth)) })
            }
            None => {
                Box::pin(async { Err(io::Error::other("TLS is not set up for this connection")) })
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for Stream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.inner.get_ref();
        session
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|cert| end_point_hash(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929's `tls-server-end-point`: the certificate hashed with its signature's hash
/// function, SHA-256 standing in for MD5 and SHA-1. None for a signature without one
/// (RSASSA-PSS, whose hash is in its parameters; Ed25519): SCRAM then goes without binding.
fn end_point_hash(cert: &[u8]) -> Option<Vec<u8>> {
    // sha{1,256,384,512}WithRSAEncryption, md5WithRSAEncryption (1.2.840.113549.1.1.x) and
    // ecdsa-with-SHA{1,256,384,512} (1.2.840.10045.4.1, 4.3.x).
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    let oid = signature_oid(cert)?;
    let algorithm = match (oid.strip_prefix(RSA), oid.strip_prefix(ECDSA)) {
        (Some([4 | 5 | 11]), _) | (_, Some([1] | [3, 2])) => &ring::digest::SHA256,
        (Some([12]), _) | (_, Some([3, 3])) => &ring::digest::SHA384,
        (Some([13]), _) | (_, Some([3, 4])) => &ring::digest::SHA512,
        _ => return None,
    };
    Some(ring::digest::digest(algorithm, cert).as_ref().to_vec())
}

/// The OID of a DER certificate's signatureAlgorithm: Certificate ::= SEQUENCE {
/// tbsCertificate SEQUENCE, signatureAlgorithm SEQUENCE { algorithm OID, ... }, ... }.
fn signature_oid(cert: &[u8]) -> Option<&[u8]> {
    let (0x30, cert, _) = der(cert)? else {
        return None;
    };
    let (0x30, _, rest) = der(cert)? else {
        return None;
    };
    let (0x30, algorithm, _) = der(rest)? else {
        return None;
    };
    match der(algorithm)? {
        (0x06, oid, _) => Some(oid),
        _ => None,
    }
}

/// The DER element at the start of `b`: its tag, its contents and what follows it.
fn der(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &b| a << 8 | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_algorithm_is_read_from_the_certificate() {
        // A certificate's outline: SEQUENCE { SEQUENCE {tbs}, SEQUENCE { OID, NULL }, BIT STRING }.
        let cert = |oid: &[u8]| {
            let mut alg = vec![0x06, oid.len() as u8];
            alg.extend_from_slice(oid);
            alg.extend_from_slice(&[0x05, 0x00]);
            let mut body = vec![0x30, 0x03, 0x02, 0x01, 0x02, 0x30, alg.len() as u8];
            body.extend(alg);
            body.extend_from_slice(&[0x03, 0x02, 0x00, 0xff]);
            let mut c = vec![0x30, 0x81, body.len() as u8];
            c.extend(body);
            c
        };
        let sha256_rsa = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b];
        let ecdsa_384 = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];
        let ed25519 = [0x2b, 0x65, 0x70];
        let c = cert(&sha256_rsa);
        assert_eq!(signature_oid(&c), Some(&sha256_rsa[..]));
        assert_eq!(end_point_hash(&c).map(|h| h.len()), Some(32));
        assert_eq!(end_point_hash(&cert(&ecdsa_384)).map(|h| h.len()), Some(48));
        assert_eq!(end_point_hash(&cert(&ed25519)), None);
        // Truncated or not DER: no binding, no panic.
        for n in 0..c.len() {
            assert_eq!(end_point_hash(&c[..n]), None, "{n}");
        }
        assert_eq!(end_point_hash(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn the_validity_dates_are_read_from_the_certificate() {
        // SEQUENCE { tbs SEQUENCE { [0] { INTEGER 2 }, serial, signature, issuer, validity
        // SEQUENCE { UTCTime, GeneralizedTime } }, ... }, as openssl writes them.
        let tlv = |tag: u8, body: &[u8]| {
            let mut v = vec![tag, body.len() as u8];
            v.extend_from_slice(body);
            v
        };
        let validity = [tlv(0x17, b"240101000000Z"), tlv(0x18, b"20500101000000Z")].concat();
        let tbs = [
            tlv(0xa0, &tlv(0x02, &[2])),
            tlv(0x02, &[1]),
            tlv(0x30, &[]),
            tlv(0x30, &[]),
            tlv(0x30, &validity),
        ]
        .concat();
        let cert = tlv(0x30, &[tlv(0x30, &tbs), tlv(0x30, &[])].concat());
        assert_eq!(validity_of(&cert), Some((1_704_067_200, 2_524_608_000)));
        assert_eq!(der_time(0x17, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(der_time(0x17, b"500101000000Z"), Some(-631_152_000));
        for bad in [
            &b"241301000000Z"[..],
            b"24010100000Z",
            b"2401010000+0Z",
            b"240101000000",
        ] {
            assert_eq!(
                der_time(0x17, bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        // Truncated or not DER: no dates, no panic.
        for n in 0..cert.len() {
            assert_eq!(validity_of(&cert[..n]), None, "{n}");
        }
        // A pinned certificate is taken within its dates only.
        let pinned_at = |secs: u64| {
            let now = UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
            pinned(&CertificateDer::from(cert.clone()), None, now).map(|_| ())
        };
        assert_eq!(pinned_at(1_800_000_000), Ok(()));
        assert_eq!(
            pinned_at(1_704_067_199),
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet
            ))
        );
        assert_eq!(
            pinned_at(2_524_608_001),
            Err(rustls::Error::InvalidCertificate(CertificateError::Expired))
        );
    }
}
