//! The watch on what a PostgreSQL server sends before it accepts the user: every byte
//! passes through [`Watch`], which reads the authentication requests and fails the read
//! that would hand the driver one the URL's policy does not allow (a cleartext password, an
//! MD5 hash of it), so that the driver never answers it and nothing derived from the
//! password is sent. Once the user is accepted (or TLS starts, watched inside), bytes pass
//! unread.
//!
//! It is not the connection (`connect.rs`) nor TLS (`tls.rs`), and writes pass through it.

use super::url::AuthPolicy;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Why [`Watch`] ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    Method {
        asked: &'static str,
        method: &'static str,
    },
    NoAuth,
    Malformed,
}

/// sysperf refused the server's way of authenticating: the URL (`require_auth`) or the
/// server's pg_hba.conf is the user's to change.
impl crate::error::Exit for Refusal {
    fn exit_code(&self) -> i32 {
        crate::exit::USAGE
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Method { asked, .. } => write!(f, "the server asked for {asked}"),
            Refusal::NoAuth => f.write_str("the server skipped authentication"),
            Refusal::Malformed => f.write_str("the server sent a malformed message"),
        }
    }
}

impl std::error::Error for Refusal {}

/// Where [`Watch`] is in the server's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The one-byte answer to the driver's SSLRequest: `S` (TLS follows: watched inside it),
    /// `N` (messages follow), else a message already (an old server's error).
    SslReply,
    /// Reading a message's header: type, length and, for authentication requests, the code.
    Message,
    /// Past the rest of a message.
    Skip,
    /// Authenticated (or TLS, watched inside): everything passes unread.
    Pass,
    /// Refused: every read fails.
    Refused(Refusal),
}

/// A stream that reads the server's messages until the user is authenticated and fails
/// the read that would hand the driver an authentication request the policy does not
/// allow, so that the driver never answers it. Writes pass through.
pub(crate) struct Watch<S> {
    pub(super) inner: S,
    phase: Phase,
    auth: AuthPolicy,
    /// The header being read: type, length, code.
    head: [u8; 9],
    have: usize,
    /// Bytes of the current message left to skip.
    left: usize,
    /// Whether the current message ends the watch (AuthenticationOk).
    last: bool,
    /// Whether an authentication exchange began (then AuthenticationOk is its end).
    asked: bool,
}

impl<S> Watch<S> {
    pub(super) fn new(inner: S, phase: Phase, auth: AuthPolicy) -> Watch<S> {
        Watch {
            inner,
            phase,
            auth,
            head: [0; 9],
            have: 0,
            left: 0,
            last: false,
            asked: false,
        }
    }

    /// Whether the server may make this authentication request.
    fn allow(&mut self, code: u32) -> Result<(), Refusal> {
        let refuse = |asked, method| Err(Refusal::Method { asked, method });
        match code {
            0 if !self.asked && !self.auth.none => Err(Refusal::NoAuth),
            0 => {
                self.last = true;
                Ok(())
            }
            3 if !self.auth.password => refuse("a cleartext password", "password"),
            5 if !self.auth.md5 => refuse("an MD5 hash of the password", "md5"),
            10 if !self.auth.scram => refuse("SCRAM-SHA-256", "scram-sha-256"),
            3 | 5 | 10 => {
                self.asked = true;
                Ok(())
            }
            // SASL's continuation, or methods the driver refuses itself.
            _ => Ok(()),
        }
    }

    /// Reads what the server sent, `bytes`, on from where the last read stopped.
    fn observe(&mut self, bytes: &[u8]) -> Result<(), Refusal> {
        let mut i = 0;
        while i < bytes.len() {
            match self.phase {
                Phase::Pass => return Ok(()),
                Phase::Refused(r) => return Err(r),
                Phase::SslReply => {
                    self.phase = match bytes[i] {
                        b'S' => Phase::Pass,
                        b'N' => Phase::Message,
                        _ => {
                            self.phase = Phase::Message;
                            continue;
                        }
                    };
                    i += 1;
                }
                Phase::Message => {
                    self.head[self.have] = bytes[i];
                    self.have += 1;
                    i += 1;
                    let need = if self.head[0] == b'R' { 9 } else { 5 };
                    if self.have < need {
                        continue;
                    }
                    self.have = 0;
                    let len = u32::from_be_bytes([
                        self.head[1],
                        self.head[2],
                        self.head[3],
                        self.head[4],
                    ]) as usize;
                    if len < need - 1 {
                        return Err(Refusal::Malformed);
                    }
                    if self.head[0] == b'R' {
                        let code = u32::from_be_bytes([
                            self.head[5],
                            self.head[6],
                            self.head[7],
                            self.head[8],
                        ]);
                        self.allow(code)?;
                    }
                    self.left = len - (need - 1);
                    self.phase = Phase::Skip;
                    if self.left == 0 {
                        self.end_message();
                    }
                }
                Phase::Skip => {
                    let n = self.left.min(bytes.len() - i);
                    i += n;
                    self.left -= n;
                    if self.left == 0 {
                        self.end_message();
                    }
                }
            }
        }
        Ok(())
    }

    fn end_message(&mut self) {
        self.phase = if self.last {
            Phase::Pass
        } else {
            Phase::Message
        };
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watch<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Phase::Refused(r) = this.phase {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::PermissionDenied, r)));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.phase != Phase::Pass {
            if let Err(r) = this.observe(&buf.filled()[before..]) {
                // The request never reaches the driver.
                buf.set_filled(before);
                this.phase = Phase::Refused(r);
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::PermissionDenied, r)));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watch<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, b)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn auth(code: u32, rest: &[u8]) -> Vec<u8> {
        let mut b = code.to_be_bytes().to_vec();
        b.extend_from_slice(rest);
        msg(b'R', &b)
    }

    /// What the watch says of `bytes` fed `step` bytes at a time.
    fn watch(
        policy: AuthPolicy,
        first: Phase,
        bytes: &[u8],
        step: usize,
    ) -> Result<Phase, Refusal> {
        let mut w = Watch::new((), first, policy);
        for chunk in bytes.chunks(step) {
            w.observe(chunk)?;
        }
        Ok(w.phase)
    }

    #[test]
    fn cleartext_and_md5_requests_are_refused_however_they_arrive() {
        let notice = msg(b'N', b"SNOTICE\0Mhello\0\0");
        for step in [1, 2, 3, 5, 7, 100] {
            let mut clear = notice.clone();
            clear.extend(auth(3, b""));
            let r = watch(AuthPolicy::SCRAM_ONLY, Phase::Message, &clear, step);
            assert!(
                matches!(
                    r,
                    Err(Refusal::Method {
                        method: "password",
                        ..
                    })
                ),
                "{step}: {r:?}"
            );
            let mut md5 = b"N".to_vec();
            md5.extend(auth(5, b"salt"));
            let r = watch(AuthPolicy::SCRAM_ONLY, Phase::SslReply, &md5, step);
            assert!(
                matches!(r, Err(Refusal::Method { method: "md5", .. })),
                "{step}: {r:?}"
            );
            // SCRAM, then AuthenticationOk: the watch stops, and what follows is not read.
            let mut scram = auth(10, b"SCRAM-SHA-256\0\0");
            scram.extend(auth(11, b"r=abc,s=def,i=4096"));
            scram.extend(auth(12, b"v=xyz"));
            scram.extend(auth(0, b""));
            scram.extend(auth(3, b""));
            let r = watch(AuthPolicy::SCRAM_ONLY, Phase::Message, &scram, step);
            assert_eq!(r.unwrap(), Phase::Pass, "{step}");
        }
        // Allowed by the URL.
        let allow = AuthPolicy {
            password: true,
            ..AuthPolicy::SCRAM_ONLY
        };
        assert_eq!(
            watch(allow, Phase::Message, &auth(3, b""), 1).unwrap(),
            Phase::Message
        );
        // TLS: the watch moves inside it.
        assert_eq!(
            watch(AuthPolicy::SCRAM_ONLY, Phase::SslReply, b"S\x16\x03", 1).unwrap(),
            Phase::Pass
        );
        // Trust, unless require_auth leaves out none.
        assert_eq!(
            watch(AuthPolicy::SCRAM_ONLY, Phase::Message, &auth(0, b""), 4).unwrap(),
            Phase::Pass
        );
        let scram_only = AuthPolicy {
            none: false,
            ..AuthPolicy::SCRAM_ONLY
        };
        assert!(matches!(
            watch(scram_only, Phase::Message, &auth(0, b""), 4),
            Err(Refusal::NoAuth)
        ));
        assert!(matches!(
            watch(
                AuthPolicy::SCRAM_ONLY,
                Phase::Message,
                b"R\0\0\0\x02xxxx",
                1
            ),
            Err(Refusal::Malformed)
        ));
    }
}
