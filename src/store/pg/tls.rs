//! TLS for the PostgreSQL store: rustls with the ring provider, its certificate check as
//! libpq's sslmode says ([`config`]), and the connector the driver runs the handshake with
//! ([`Connector`]), whose stream is watched inside TLS and gives SCRAM its channel binding
//! (`tls-server-end-point`: the hash of the server's certificate).
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
        (Some(roots), mode) => {
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
                names: mode == SslMode::VerifyFull,
                provider,
            })
        }
        (None, _) => Arc::new(Verify {
            webpki: None,
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

/// The root certificates `r` names.
fn load_roots(r: &RootCert) -> Result<rustls::RootCertStore, ConnectError> {
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
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(bad(
            "it holds no certificate (PEM, BEGIN CERTIFICATE)".into()
        ));
    }
    Ok(store)
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
/// (verify-full). The handshake's signatures are always checked.
#[derive(Debug)]
struct Verify {
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
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
}
