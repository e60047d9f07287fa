//! A token bucket on the client's socket: [`Throttled`] holds what a connection writes (and,
//! with a bucket of its own, what it reads) to a [`Bandwidth`], so that a push over loopback
//! can stand in for one over a slower network, and [`channel`] connects a tonic channel
//! through it, counting the bytes sent.
//!
//! The buckets hold little (the larger of 16 KiB and 5 ms at the rate), so the rate holds
//! over any stretch longer than a few milliseconds; a write that finds the bucket empty
//! waits on a timer (the task is woken when enough tokens have come), never spinning.

use std::fmt;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};

use crate::PushError;

/// A link speed in bits per second, written the way `tc` writes rates (`1gbit`, `500mbit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bandwidth {
    /// Bits per second (at least 8).
    pub bits_per_second: u64,
}

/// The units a bandwidth may be written in, largest first (decimal, as in `tc`).
const UNITS: [(&str, u64); 5] = [
    ("tbit", 1_000_000_000_000),
    ("gbit", 1_000_000_000),
    ("mbit", 1_000_000),
    ("kbit", 1_000),
    ("bit", 1),
];

impl Bandwidth {
    /// A bandwidth of `bits_per_second`.
    pub fn new(bits_per_second: u64) -> Self {
        Bandwidth { bits_per_second }
    }

    /// Whole bytes per second (bits / 8, rounded down).
    pub fn bytes_per_second(&self) -> u64 {
        self.bits_per_second / 8
    }
}

impl FromStr for Bandwidth {
    type Err = String;

    /// Reads `1gbit`, `10gbit`, `500mbit`, `100kbit`, `2.5gbit`, `8000bit` or a bare number of
    /// bits per second (`1000000`), in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_lowercase();
        let usage = || {
            format!(
                "invalid bandwidth {s:?}: write a number of bits per second with an optional \
                 unit, e.g. 1gbit, 2.5gbit, 500mbit, 100kbit or 1000000"
            )
        };
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = (&text[..split], text[split..].trim());
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(usage());
        }
        let multiplier = if unit.is_empty() {
            1
        } else {
            UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|&(_, m)| m)
                .ok_or_else(usage)?
        };
        let too_large = || format!("bandwidth {s:?} is too large");
        let bits = if number.contains('.') {
            let value: f64 = number.parse().map_err(|_| usage())?;
            let bits = (value * multiplier as f64).round();
            if !bits.is_finite() || bits >= u64::MAX as f64 {
                return Err(too_large());
            }
            bits as u64
        } else {
            let value: u64 = number.parse().map_err(|_| too_large())?;
            value.checked_mul(multiplier).ok_or_else(too_large)?
        };
        if bits == 0 {
            return Err(format!("bandwidth {s:?} is zero; give a positive rate"));
        }
        if bits < 8 {
            return Err(format!(
                "bandwidth {s:?} is below 8bit (one byte per second)"
            ));
        }
        Ok(Bandwidth {
            bits_per_second: bits,
        })
    }
}

impl fmt::Display for Bandwidth {
    /// The largest unit that writes the rate exactly: `1gbit`, `2500mbit`, `1234bit`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.bits_per_second;
        let (name, m) = UNITS
            .iter()
            .copied()
            .find(|&(_, m)| bits.is_multiple_of(m) && bits >= m)
            .unwrap_or(("bit", 1));
        write!(f, "{}{name}", bits / m)
    }
}

/// One direction's token bucket (tokens are bytes).
struct Bucket {
    /// bytes per second
    rate: f64,
    /// the most tokens the bucket holds
    burst: f64,
    /// how many tokens a wait waits for (when the caller wants that many)
    quantum: f64,
    tokens: f64,
    last: Instant,
    /// the timer of the wait under way, made on the first wait (inside the runtime)
    sleep: Option<Pin<Box<Sleep>>>,
    /// the timer fired since the last take: take whatever has come, even less than a quantum
    fired: bool,
}

impl Bucket {
    fn new(bandwidth: Bandwidth) -> Self {
        let rate = bandwidth.bits_per_second as f64 / 8.0;
        // 5 ms: a timer set for 1 ms fires after 1 to 3 (tokio's resolution is 1 ms), and
        // what comes meanwhile must fit, or the rate is not reached
        let burst = (rate * 0.005).max(16.0 * 1024.0);
        // a millisecond's worth, but at least a packet's payload
        let quantum = (rate * 0.001).max(1460.0).min(burst / 2.0);
        Bucket {
            rate,
            burst,
            quantum,
            tokens: burst,
            last: Instant::now(),
            sleep: None,
            fired: false,
        }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.last = now;
    }

    /// How many of `want` bytes may pass now (at least 1 when `want` is not 0); `Pending`
    /// with the task's waker on the timer while the bucket is short.
    fn poll_take(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<usize> {
        if want == 0 {
            return Poll::Ready(0);
        }
        loop {
            self.refill();
            let available = self.tokens.floor();
            let need = (want as f64).min(self.quantum);
            if available >= need || (self.fired && available >= 1.0) {
                self.fired = false;
                return Poll::Ready((available as usize).min(want));
            }
            // a microsecond over, so that the tokens are there when the timer fires
            let wait = Duration::from_secs_f64((need - self.tokens) / self.rate + 1e-6);
            let deadline = Instant::now() + wait;
            let sleep = match &mut self.sleep {
                Some(sleep) => {
                    sleep.as_mut().reset(deadline);
                    sleep
                }
                None => self
                    .sleep
                    .insert(Box::pin(tokio::time::sleep_until(deadline))),
            };
            ready!(sleep.as_mut().poll(cx));
            self.fired = true;
        }
    }

    fn spend(&mut self, bytes: usize) {
        self.tokens -= bytes as f64;
    }
}

/// A stream whose writes and reads are each held to a [`Bandwidth`] by a token bucket.
pub struct Throttled<S> {
    inner: S,
    bandwidth: Option<Bandwidth>,
    write: Option<Bucket>,
    read: Option<Bucket>,
    written: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

/// `inner` held to `bandwidth` each way; `None` passes everything straight through.
pub fn throttled<S>(inner: S, bandwidth: Option<Bandwidth>) -> Throttled<S> {
    Throttled::new(inner, bandwidth)
}

impl<S> Throttled<S> {
    /// `inner` held to `bandwidth` each way; `None` passes everything straight through.
    pub fn new(inner: S, bandwidth: Option<Bandwidth>) -> Self {
        Throttled {
            inner,
            bandwidth,
            write: bandwidth.map(Bucket::new),
            read: bandwidth.map(Bucket::new),
            written: Arc::new(AtomicU64::new(0)),
            received: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Counts the bytes written into `counter` (added to what it holds) instead of a new one.
    pub fn with_counter(mut self, counter: Arc<AtomicU64>) -> Self {
        self.written = counter;
        self
    }

    /// The counter of bytes written, to read after the stream has been handed away.
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.written)
    }

    /// The counter of bytes read, to read after the stream has been handed away.
    pub fn read_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.received)
    }

    /// The bytes written so far (what the counter holds).
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// The bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The bandwidth each direction is held to (`None`: not throttled).
    pub fn bandwidth(&self) -> Option<Bandwidth> {
        self.bandwidth
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped stream, mutably (what is written to it directly is neither throttled nor
    /// counted).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped stream, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> fmt::Debug for Throttled<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttled")
            .field("bandwidth", &self.bandwidth)
            .field("bytes_written", &self.bytes_written())
            .field("bytes_read", &self.bytes_read())
            .finish_non_exhaustive()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Throttled<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let got = match &mut this.read {
            None => {
                let before = buf.filled().len();
                ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                buf.filled().len() - before
            }
            Some(bucket) => {
                let allowed = ready!(bucket.poll_take(cx, buf.remaining()));
                let got = if allowed == buf.remaining() {
                    let before = buf.filled().len();
                    ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                    buf.filled().len() - before
                } else {
                    let mut limited = ReadBuf::new(buf.initialize_unfilled_to(allowed));
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
                    let got = limited.filled().len();
                    buf.advance(got);
                    got
                };
                bucket.spend(got);
                got
            }
        };
        this.received.fetch_add(got as u64, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Throttled<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let allowed = match &mut this.write {
            None => buf.len(),
            Some(bucket) => ready!(bucket.poll_take(cx, buf.len())),
        };
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, &buf[..allowed]))?;
        if let Some(bucket) = &mut this.write {
            bucket.spend(written);
        }
        this.written.fetch_add(written as u64, Ordering::Relaxed);
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.write.is_some() {
            // the first non-empty buffer, through the bucket
            let first = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &**b);
            return self.poll_write(cx, first);
        }
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        this.written.fetch_add(written as u64, Ordering::Relaxed);
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.write.is_none() && self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The HTTP/2 receive windows the client offers (per stream and per connection).
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// Where CA certificate bundles lie on common systems (`SSL_CERT_FILE` comes first).
const CA_BUNDLES: [&str; 6] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/openssl/cert.pem",
];

/// A tonic channel to `url` (`http://host:port`, or `https://` verified against the system's
/// CA bundle or the PEM file in `SSL_CERT_FILE`) whose socket is held to `bandwidth` each
/// way; the bytes written to the socket (after TLS) are added to `sent`.
pub async fn channel(
    url: &str,
    bandwidth: Option<Bandwidth>,
    sent: Arc<AtomicU64>,
) -> Result<Channel, PushError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| PushError::Options(format!("invalid server URL {url:?}: {e}")))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => {
            return Err(PushError::Options(format!(
                "invalid server URL {url:?}: write http://host:port or https://host:port"
            )));
        }
    };
    if uri.host().is_none_or(str::is_empty) {
        return Err(PushError::Options(format!(
            "invalid server URL {url:?}: no host"
        )));
    }
    let mut endpoint = Endpoint::from(uri)
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(30))
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    if https {
        endpoint = endpoint
            .tls_config(tls_config()?)
            .map_err(|e| PushError::Options(format!("TLS for {url}: {}", chain(&e))))?;
    }
    let default_port = if https { 443 } else { 80 };
    let connector = tower::service_fn(move |uri: Uri| {
        let sent = Arc::clone(&sent);
        async move {
            let host = uri.host().unwrap_or_default();
            // an IPv6 host comes in brackets
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host)
                .to_string();
            let port = uri.port_u16().unwrap_or(default_port);
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            tcp.set_nodelay(true)?;
            Ok::<_, io::Error>(hyper_util::rt::TokioIo::new(
                Throttled::new(tcp, bandwidth).with_counter(sent),
            ))
        }
    });
    endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|e| {
            let why = chain(&e);
            // webpki refuses what `openssl req -x509` makes by default: say how to fix it
            let hint = if why.contains("CaUsedAsEndEntity") {
                " (the server's certificate is a CA certificate; the client takes only a \
                 server certificate: make it with basicConstraints=CA:FALSE, or sign it with \
                 a CA and trust the CA)"
            } else {
                ""
            };
            PushError::Transport(format!("connecting to {url}: {why}{hint}"))
        })
}

/// TLS verified against the PEM bundle in `SSL_CERT_FILE`, or else the system's.
fn tls_config() -> Result<ClientTlsConfig, PushError> {
    let path = match std::env::var_os("SSL_CERT_FILE") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => CA_BUNDLES
            .iter()
            .map(Path::new)
            .find(|p| p.is_file())
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                PushError::Options(format!(
                    "https: found no CA certificates (looked in {}); set SSL_CERT_FILE to a \
                     PEM file of the certificates to trust",
                    CA_BUNDLES.join(", ")
                ))
            })?,
    };
    let pem = std::fs::read(&path)
        .map_err(|e| PushError::io(format!("reading CA certificates {}", path.display()), e))?;
    if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        return Err(PushError::Options(format!(
            "https: {} holds no PEM certificates",
            path.display()
        )));
    }
    Ok(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))
}

/// An error and its sources, `: `-separated (tonic's own message is terse).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn bw(s: &str) -> Bandwidth {
        s.parse().unwrap()
    }

    #[test]
    fn parses_rates() {
        assert_eq!(bw("1gbit").bits_per_second, 1_000_000_000);
        assert_eq!(bw("10gbit").bits_per_second, 10_000_000_000);
        assert_eq!(bw("500mbit").bits_per_second, 500_000_000);
        assert_eq!(bw("100kbit").bits_per_second, 100_000);
        assert_eq!(bw("2.5gbit").bits_per_second, 2_500_000_000);
        assert_eq!(bw("0.1gbit").bits_per_second, 100_000_000);
        assert_eq!(bw("1000000").bits_per_second, 1_000_000);
        assert_eq!(bw("8000bit").bits_per_second, 8000);
        assert_eq!(bw("1GBit").bits_per_second, 1_000_000_000);
        assert_eq!(bw(" 100 MBIT ").bits_per_second, 100_000_000);
        assert_eq!(bw("1tbit").bits_per_second, 1_000_000_000_000);
        assert_eq!(bw("100mbit").bytes_per_second(), 12_500_000);
        for bad in [
            "",
            "0",
            "0gbit",
            "0.0mbit",
            "gbit",
            "1 gigabit",
            "1gbps",
            "-1gbit",
            "1.gbit",
            ".5gbit",
            "1.2.3gbit",
            "1e9",
            "abc",
            "4bit",
            "99999999999999999999",
            "99999999999gbit",
            "1gbit/s",
        ] {
            let err = bad.parse::<Bandwidth>().unwrap_err();
            assert!(err.contains("bandwidth"), "{bad:?}: {err}");
        }
        assert!("0".parse::<Bandwidth>().unwrap_err().contains("zero"));
    }

    #[test]
    fn displays_rates() {
        for (text, shown) in [
            ("1gbit", "1gbit"),
            ("10gbit", "10gbit"),
            ("2.5gbit", "2500mbit"),
            ("100kbit", "100kbit"),
            ("1000000", "1mbit"),
            ("1234", "1234bit"),
            ("1000gbit", "1tbit"),
        ] {
            let b = bw(text);
            assert_eq!(b.to_string(), shown);
            assert_eq!(bw(shown), b);
        }
    }

    /// Writes `len` bytes through `writer` while a task drains `reader`, counting how often
    /// the write was polled; returns (elapsed, polls).
    async fn pump<W, R>(mut writer: W, mut reader: R, len: usize) -> (Duration, u64)
    where
        W: AsyncWrite + Unpin,
        R: AsyncRead + Unpin + Send + 'static,
    {
        let drain = tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let mut total = 0usize;
            loop {
                let n = reader.read(&mut buf).await.unwrap();
                if n == 0 {
                    return total;
                }
                total += n;
            }
        });
        let data = vec![7u8; len];
        let start = std::time::Instant::now();
        let mut polls = 0u64;
        let mut offset = 0;
        while offset < len {
            let n = std::future::poll_fn(|cx| {
                polls += 1;
                Pin::new(&mut writer).poll_write(cx, &data[offset..])
            })
            .await
            .unwrap();
            assert!(n > 0);
            offset += n;
        }
        writer.shutdown().await.unwrap();
        drop(writer);
        assert_eq!(drain.await.unwrap(), len);
        (start.elapsed(), polls)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_through_without_a_bandwidth() {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let writer = throttled(a, None);
        let counter = writer.counter();
        let (elapsed, _) = pump(writer, b, 4_000_000).await;
        assert!(elapsed < Duration::from_millis(200), "{elapsed:?}");
        assert_eq!(counter.load(Ordering::Relaxed), 4_000_000);

        let (mut a, b) = tokio::io::duplex(1024);
        let mut reader = throttled(b, None);
        a.write_all(b"hello").await.unwrap();
        drop(a);
        let mut got = String::new();
        reader.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "hello");
        assert_eq!(reader.bytes_read(), 5);
        assert_eq!(reader.bytes_written(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holds_writes_to_the_rate() {
        // 4 MB at 100 Mbit/s (12.5 MB/s): 0.32 s, less the first burst
        let (a, b) = tokio::io::duplex(64 * 1024);
        let writer = throttled(a, Some(bw("100mbit")));
        let counter = writer.counter();
        let (elapsed, polls) = pump(writer, b, 4_000_000).await;
        assert!(
            elapsed > Duration::from_millis(250) && elapsed < Duration::from_millis(600),
            "{elapsed:?}"
        );
        // a write per millisecond's worth and a wait between: no spinning
        assert!(polls < 5_000, "{polls} polls");
        assert_eq!(counter.load(Ordering::Relaxed), 4_000_000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holds_reads_to_the_rate() {
        // 2 MB at 100 Mbit/s: 0.16 s
        let (a, b) = tokio::io::duplex(64 * 1024);
        let reader = throttled(b, Some(bw("100mbit")));
        let received = reader.read_counter();
        let (elapsed, _) = pump(a, reader, 2_000_000).await;
        assert!(
            elapsed > Duration::from_millis(120) && elapsed < Duration::from_millis(450),
            "{elapsed:?}"
        );
        assert_eq!(received.load(Ordering::Relaxed), 2_000_000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn limits_both_directions_apart() {
        // 2 MB each way at once at 100 Mbit/s: each bucket is the rate, so 0.16 s, not 0.32
        let (a, b) = tokio::io::duplex(64 * 1024);
        let client = throttled(a, Some(bw("100mbit")));
        let (sent, received) = (client.counter(), client.read_counter());
        let (client_read, client_write) = tokio::io::split(client);
        let (server_read, server_write) = tokio::io::split(b);
        let start = std::time::Instant::now();
        let up = tokio::spawn(pump(client_write, server_read, 2_000_000));
        let down = tokio::spawn(pump(server_write, client_read, 2_000_000));
        let (up, _) = up.await.unwrap();
        let (down, _) = down.await.unwrap();
        let elapsed = start.elapsed();
        for t in [up, down] {
            assert!(t > Duration::from_millis(120), "{t:?}");
        }
        assert!(elapsed < Duration::from_millis(290), "{elapsed:?}");
        assert_eq!(sent.load(Ordering::Relaxed), 2_000_000);
        assert_eq!(received.load(Ordering::Relaxed), 2_000_000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_into_a_given_counter() {
        let shared = Arc::new(AtomicU64::new(100));
        let (a, mut b) = tokio::io::duplex(1024);
        let mut writer = throttled(a, Some(bw("1gbit"))).with_counter(Arc::clone(&shared));
        assert!(Arc::ptr_eq(&writer.counter(), &shared));
        writer.write_all(b"0123456789").await.unwrap();
        let mut got = [0u8; 10];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"0123456789");
        assert_eq!(writer.bytes_written(), 110);
        drop(writer);
        assert_eq!(shared.load(Ordering::Relaxed), 110);
    }

    #[tokio::test]
    async fn refuses_bad_urls() {
        let sent = Arc::new(AtomicU64::new(0));
        for url in [
            "ftp://127.0.0.1:1",
            "127.0.0.1:32010",
            "not a url",
            "http://",
        ] {
            match channel(url, None, Arc::clone(&sent)).await {
                Err(PushError::Options(m)) => assert!(m.contains("URL"), "{url}: {m}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        // a port nobody listens on
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        match channel(&format!("http://127.0.0.1:{port}"), None, sent).await {
            Err(PushError::Transport(m)) => assert!(m.contains("127.0.0.1"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    mod flight {
        //! `channel` against a real Arrow Flight server: `DoPut` through the throttle.

        use super::*;
        use arrow_flight::flight_service_client::FlightServiceClient;
        use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
        use arrow_flight::{
            Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo,
            HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
        };
        use futures::StreamExt;
        use futures::stream::BoxStream;
        use tonic::{Request, Response, Status, Streaming};

        /// Answers `DoPut` with the number of body bytes it received.
        struct Sink;

        type Answer<T> = Result<Response<T>, Status>;

        #[tonic::async_trait]
        impl FlightService for Sink {
            type HandshakeStream = BoxStream<'static, Result<HandshakeResponse, Status>>;
            type ListFlightsStream = BoxStream<'static, Result<FlightInfo, Status>>;
            type DoGetStream = BoxStream<'static, Result<FlightData, Status>>;
            type DoPutStream = BoxStream<'static, Result<PutResult, Status>>;
            type DoExchangeStream = BoxStream<'static, Result<FlightData, Status>>;
            type DoActionStream = BoxStream<'static, Result<arrow_flight::Result, Status>>;
            type ListActionsStream = BoxStream<'static, Result<ActionType, Status>>;

            async fn handshake(
                &self,
                _: Request<Streaming<HandshakeRequest>>,
            ) -> Answer<Self::HandshakeStream> {
                Err(Status::unimplemented("handshake"))
            }
            async fn list_flights(&self, _: Request<Criteria>) -> Answer<Self::ListFlightsStream> {
                Err(Status::unimplemented("list_flights"))
            }
            async fn get_flight_info(&self, _: Request<FlightDescriptor>) -> Answer<FlightInfo> {
                Err(Status::unimplemented("get_flight_info"))
            }
            async fn poll_flight_info(&self, _: Request<FlightDescriptor>) -> Answer<PollInfo> {
                Err(Status::unimplemented("poll_flight_info"))
            }
            async fn get_schema(&self, _: Request<FlightDescriptor>) -> Answer<SchemaResult> {
                Err(Status::unimplemented("get_schema"))
            }
            async fn do_get(&self, _: Request<Ticket>) -> Answer<Self::DoGetStream> {
                Err(Status::unimplemented("do_get"))
            }
            async fn do_put(
                &self,
                request: Request<Streaming<FlightData>>,
            ) -> Answer<Self::DoPutStream> {
                let mut frames = request.into_inner();
                let mut total = 0u64;
                while let Some(frame) = frames.next().await {
                    total += frame?.data_body.len() as u64;
                }
                let result = PutResult {
                    app_metadata: total.to_string().into(),
                };
                Ok(Response::new(futures::stream::iter([Ok(result)]).boxed()))
            }
            async fn do_exchange(
                &self,
                _: Request<Streaming<FlightData>>,
            ) -> Answer<Self::DoExchangeStream> {
                Err(Status::unimplemented("do_exchange"))
            }
            async fn do_action(&self, _: Request<Action>) -> Answer<Self::DoActionStream> {
                Err(Status::unimplemented("do_action"))
            }
            async fn list_actions(&self, _: Request<Empty>) -> Answer<Self::ListActionsStream> {
                Err(Status::unimplemented("list_actions"))
            }
        }

        /// Pushes `frames` frames of 64 KiB to a fresh server over `channel(.., bandwidth)`;
        /// returns (elapsed, bytes the client sent).
        async fn push(bandwidth: Option<Bandwidth>, frames: usize) -> (Duration, u64) {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(
                tonic::transport::Server::builder()
                    .add_service(FlightServiceServer::new(Sink))
                    .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
            );
            let sent = Arc::new(AtomicU64::new(0));
            let channel = channel(&format!("http://{addr}"), bandwidth, Arc::clone(&sent))
                .await
                .unwrap();
            let mut client = FlightServiceClient::new(channel);
            let body = bytes::Bytes::from(vec![1u8; 64 * 1024]);
            let data = (0..frames).map(move |_| FlightData {
                data_body: body.clone(),
                ..Default::default()
            });
            let start = std::time::Instant::now();
            let mut results = client
                .do_put(futures::stream::iter(data))
                .await
                .unwrap()
                .into_inner();
            let result = results.next().await.unwrap().unwrap();
            let elapsed = start.elapsed();
            let total = (frames * 64 * 1024).to_string();
            assert_eq!(&result.app_metadata[..], total.as_bytes());
            server.abort();
            (elapsed, sent.load(Ordering::Relaxed))
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn pushes_through_the_throttle() {
            // 32 x 64 KiB = 2 MiB at 100 Mbit/s: 0.17 s
            let (elapsed, sent) = push(Some(bw("100mbit")), 32).await;
            assert!(elapsed > Duration::from_millis(130), "{elapsed:?}");
            assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
            assert!((2 << 20..(2 << 20) + (256 << 10)).contains(&sent), "{sent}");

            let (elapsed, sent) = push(None, 32).await;
            assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
            assert!(sent >= 2 << 20, "{sent}");
        }
    }
}
