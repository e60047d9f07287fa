//! One connection's message loop: TLS negotiation, each message read with the size limit
//! checked at its header (before any of its body is buffered), dispatch to the handlers,
//! and a FATAL error for a message that is malformed or too large.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use futures::SinkExt;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{
    MaybeTls, PgWireMessageServerCodec, negotiate_tls, process_error, process_message,
};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::codec::{Decoder, Framed};

use crate::server::{Cancel, Startup};
use crate::session::{Connection, PgStatement};

/// How long a client has to log in (PostgreSQL's `authentication_timeout` is a minute).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Free space in the read buffer before each read of the socket.
const READ_BYTES: usize = 64 << 10;
/// The bytes in front of a typed message's body: its type and its length.
const HEADER_BYTES: usize = 5;

/// A negotiated client socket.
type Socket = Framed<MaybeTls, PgWireMessageServerCodec<Arc<PgStatement>>>;

/// Why the next message could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// The socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The bytes are not a frontend message.
    #[error("invalid frontend message: {0}")]
    Malformed(PgWireError),
    /// A header announced a message over the limit.
    #[error(
        "message of {len} bytes is over this server's limit of {limit} bytes (max_message_bytes)"
    )]
    TooLarge { len: usize, limit: usize },
    /// A message whose body does not have the fields its type needs.
    #[error("invalid frontend message: {0}")]
    Invalid(String),
    /// The client hung up in the middle of a message.
    #[error("connection closed in the middle of a message")]
    Truncated,
}

impl ReadError {
    /// PostgreSQL's SQLSTATE for the error.
    fn code(&self) -> &'static str {
        match self {
            ReadError::TooLarge { .. } => "54000",
            _ => "08P01",
        }
    }
}

/// Serves one client connection: negotiates TLS, then reads and dispatches messages until
/// the client leaves, a FATAL error, a message over `max_message_bytes`, or a cancel
/// request (which has a connection of its own).
pub(crate) async fn serve_connection(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    connection: Arc<Connection>,
    startup: Arc<Startup>,
    cancel: Arc<Cancel>,
    max_message_bytes: usize,
) -> io::Result<()> {
    let login_deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(login_deadline);
    let negotiated = tokio::select! {
        _ = &mut login_deadline => return Ok(()),
        socket = negotiate_tls(tcp, tls) => socket?,
    };
    // a direct TLS handshake without a certificate configured
    let Some(mut socket): Option<Socket> = negotiated else {
        return Ok(());
    };
    loop {
        let logging_in = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = if logging_in {
            tokio::select! {
                _ = &mut login_deadline => return Ok(()),
                next = next_message(&mut socket, max_message_bytes) => next,
            }
        } else {
            next_message(&mut socket, max_message_bytes).await
        };
        let message = match next {
            Ok(Some(PgWireFrontendMessage::Terminate(_))) | Ok(None) => return Ok(()),
            Ok(Some(message)) => message,
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Truncated) => return Ok(()),
            Err(e) => {
                tracing::info!(peer = %socket.socket_addr(), error = %e, "connection closed");
                let info = ErrorInfo::new("FATAL".into(), e.code().into(), e.to_string());
                socket
                    .send(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await?;
                return socket.close().await;
            }
        };
        let extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        let cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let handled = process_message(
            message,
            &mut socket,
            Arc::clone(&startup),
            Arc::clone(&connection),
            Arc::clone(&connection),
            Arc::clone(&connection),
            Arc::clone(&cancel),
        )
        .await;
        if let Err(e) = handled {
            let fatal = e.is_fatal();
            process_error(&mut socket, e, extended).await?;
            if fatal {
                return Ok(());
            }
        }
        if cancel_request {
            return Ok(());
        }
    }
}

/// The next message on `socket`, None when the client closed the connection between
/// messages. A typed message's length is checked against `limit` as soon as its header is
/// in, so a client cannot make the server buffer more than `limit` bytes of one message.
async fn next_message(
    socket: &mut Socket,
    limit: usize,
) -> Result<Option<PgWireFrontendMessage>, ReadError> {
    loop {
        // the codec and the read buffer are both the socket's: borrow them in turn
        let mut buffer = std::mem::take(socket.read_buffer_mut());
        let typed = !matches!(
            socket.state(),
            PgWireConnectionState::AwaitingSslRequest | PgWireConnectionState::AwaitingStartup
        );
        let mut rest = None;
        if typed && buffer.len() >= HEADER_BYTES {
            let len = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
            if len > limit {
                return Err(ReadError::TooLarge { len, limit });
            }
            if len < HEADER_BYTES - 1 {
                return Err(ReadError::Invalid(format!("a length of {len} bytes")));
            }
            if buffer.len() > len {
                // the whole message is in: checked, then decoded on its own, so that no
                // decoder reads past its end
                let mut one = buffer.split_to(len + 1);
                *socket.read_buffer_mut() = buffer;
                check_body(one[0], &one[HEADER_BYTES..]).map_err(ReadError::Invalid)?;
                return match decode(socket, &mut one)? {
                    Some(message) => Ok(Some(message)),
                    None => Err(ReadError::Invalid("an incomplete message".into())),
                };
            }
            rest = Some(len + 1 - buffer.len());
        } else if !typed {
            // a startup message has no type byte; pgwire caps its length (10,000 bytes)
            let message = decode(socket, &mut buffer);
            if !matches!(message, Ok(None)) {
                *socket.read_buffer_mut() = buffer;
                return message;
            }
        }
        let read = match rest {
            // a large message (COPY data) is read to its end and no further: the buffer then
            // holds it alone, and it leaves whole, uncopied
            Some(rest) if rest >= READ_BYTES => {
                buffer.reserve(rest);
                socket
                    .get_mut()
                    .read_buf(&mut (&mut buffer).limit(rest))
                    .await
            }
            _ => {
                buffer.reserve(READ_BYTES);
                socket.get_mut().read_buf(&mut buffer).await
            }
        };
        let empty = buffer.is_empty();
        *socket.read_buffer_mut() = buffer;
        match read? {
            0 if empty => return Ok(None),
            0 => return Err(ReadError::Truncated),
            _ => {}
        }
    }
}

/// Decodes the message at the front of `buffer` with the socket's codec: None when it is
/// not all there yet. A decoder that panics (on input nobody checked) is a malformed message.
fn decode(
    socket: &mut Socket,
    buffer: &mut BytesMut,
) -> Result<Option<PgWireFrontendMessage>, ReadError> {
    let codec = socket.codec_mut();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| codec.decode(buffer))) {
        Ok(decoded) => decoded.map_err(ReadError::Malformed),
        Err(_) => Err(ReadError::Invalid(
            "a message that cannot be decoded".into(),
        )),
    }
}

/// Checks that `body`, the body of a typed frontend message of type `kind`, holds the
/// fields of that type (strings terminated, counts and lengths within the body), the
/// checks pgwire's decoders leave out.
fn check_body(kind: u8, body: &[u8]) -> Result<(), String> {
    let mut b = Body { kind, rest: body };
    match kind {
        b'Q' | b'f' => b.cstr(),
        b'P' => {
            b.cstr()?;
            b.cstr()?;
            let n = b.count()?;
            b.take(n * 4, "parameter types")
        }
        b'B' => {
            b.cstr()?;
            b.cstr()?;
            let formats = b.count()?;
            b.take(formats * 2, "parameter formats")?;
            for _ in 0..b.count()? {
                let len = i32::from_be_bytes(b.array("a parameter length")?);
                match len {
                    -1 => {}
                    len if len < 0 => {
                        return Err(format!("Bind message: a parameter length of {len}"));
                    }
                    len => b.take(len as usize, "a parameter value")?,
                }
            }
            let formats = b.count()?;
            b.take(formats * 2, "result formats")
        }
        b'D' | b'C' => {
            b.take(1, "the target type")?;
            b.cstr()
        }
        b'E' => {
            b.cstr()?;
            b.take(4, "the row limit")
        }
        _ => Ok(()),
    }
}

/// A cursor over a message body, for [`check_body`].
struct Body<'a> {
    kind: u8,
    rest: &'a [u8],
}

impl Body<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<(), String> {
        if n > self.rest.len() {
            return Err(format!(
                "'{}' message: {what} ({n} bytes) past the end of the message",
                self.kind as char
            ));
        }
        self.rest = &self.rest[n..];
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let bytes = self.rest.get(..N).and_then(|b| <[u8; N]>::try_from(b).ok());
        let bytes = bytes.ok_or_else(|| {
            format!(
                "'{}' message: {what} past the end of the message",
                self.kind as char
            )
        })?;
        self.rest = &self.rest[N..];
        Ok(bytes)
    }

    fn count(&mut self) -> Result<usize, String> {
        Ok(u16::from_be_bytes(self.array("a count")?) as usize)
    }

    fn cstr(&mut self) -> Result<(), String> {
        match self.rest.iter().position(|&c| c == 0) {
            Some(end) => {
                self.rest = &self.rest[end + 1..];
                Ok(())
            }
            None => Err(format!(
                "'{}' message: a string without its terminating zero byte",
                self.kind as char
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(params: &[i32], extra: &[u8]) -> Vec<u8> {
        let mut b = b"\0s\0".to_vec();
        b.extend(0u16.to_be_bytes());
        b.extend((params.len() as u16).to_be_bytes());
        for &len in params {
            b.extend(len.to_be_bytes());
            b.extend(std::iter::repeat_n(b'x', len.max(0) as usize));
        }
        b.extend(extra);
        b
    }

    #[test]
    fn bodies_with_their_fields_pass_and_short_ones_fail() {
        let mut ok = bind(&[2, -1], &[]);
        ok.extend(0u16.to_be_bytes());
        assert_eq!(check_body(b'B', &ok), Ok(()));
        // no result-format count
        assert!(check_body(b'B', &bind(&[2, -1], &[])).is_err());
        // a parameter longer than the message
        let mut long = bind(&[], &[]);
        long.truncate(long.len() - 2);
        long.extend(1u16.to_be_bytes());
        long.extend(1000i32.to_be_bytes());
        assert!(
            check_body(b'B', &long)
                .unwrap_err()
                .contains("past the end")
        );
        assert!(
            check_body(b'B', &bind(&[-7], &[0, 0]))
                .unwrap_err()
                .contains("-7")
        );
        assert_eq!(check_body(b'P', b"s\0SELECT $1\0\0\x01\0\0\0\x17"), Ok(()));
        assert!(check_body(b'P', b"s\0SELECT $1\0\0\x02\0\0\0\x17").is_err());
        assert!(
            check_body(b'Q', b"SELECT 1")
                .unwrap_err()
                .contains("terminating zero")
        );
        assert!(check_body(b'D', b"").is_err());
        assert!(check_body(b'E', b"\0\0\0").is_err());
        assert_eq!(check_body(b'S', b"anything"), Ok(()));
    }
}
