//! Compressed inputs: gzip (every member of a multi-member file) and zstd (every frame),
//! found by their magic bytes, not by a file's extension, and decoded as they are read, so
//! a compressed input is streamed like any other and never held whole or written out. A
//! [`Counting`] reader under the decoder tells how much of the compressed input was
//! consumed (progress of a compressed file is its compressed bytes). A regular file with
//! several frames or members is decoded on threads of its own instead (`parallel_decode`),
//! with the same output and errors.

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A reader a [`crate::Source`] streams from.
pub(crate) type BoxedReader = Box<dyn Read + Send>;

/// The first bytes of a gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// Bytes 1 to 3 of a skippable zstd frame (byte 0 is 0x50 to 0x5f): pzstd starts with one.
const ZSTD_SKIPPABLE: [u8; 3] = [0x2a, 0x4d, 0x18];
/// Bytes of the longest magic: what [`Codec::sniff`] needs to see.
pub(crate) const MAGIC_BYTES: usize = 4;
/// Compressed bytes read per call under a decoder.
const INPUT_BUFFER: usize = 1 << 20;

/// A compression format wireload decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// gzip (RFC 1952), any number of members.
    Gzip,
    /// Zstandard, any number of frames.
    Zstd,
}

impl Codec {
    /// The format whose magic bytes `head` (the first bytes of an input) starts with.
    pub(crate) fn sniff(head: &[u8]) -> Option<Codec> {
        if head.starts_with(&GZIP_MAGIC) {
            Some(Codec::Gzip)
        } else if head.starts_with(&ZSTD_MAGIC)
            || (head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == ZSTD_SKIPPABLE)
        {
            Some(Codec::Zstd)
        } else {
            None
        }
    }

    /// The format's name in error messages.
    fn name(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        }
    }

    /// A reader of what `compressed` decodes to; its errors say what is wrong with the
    /// compressed stream ("gzip stream is truncated").
    pub(crate) fn decoder(self, compressed: impl Read + Send + 'static) -> io::Result<BoxedReader> {
        self.decoder_buffered(BufReader::with_capacity(INPUT_BUFFER, compressed))
    }

    /// [`decoder`](Self::decoder) of a buffered input, which the decoder reads in place.
    pub(crate) fn decoder_buffered(
        self,
        input: impl BufRead + Send + 'static,
    ) -> io::Result<BoxedReader> {
        let inner: BoxedReader = match self {
            Codec::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
            Codec::Zstd => Box::new(zstd::Decoder::with_buffer(input)?),
        };
        Ok(Box::new(Decoded { inner, codec: self }))
    }
}

/// A decoder whose errors name the format and the problem.
struct Decoded {
    inner: BoxedReader,
    codec: Codec,
}

impl Read for Decoded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| describe(self.codec, e))
    }
}

/// The error a decoder of `codec` gives for `e`, an error of the library under it: it names
/// the format and the problem ("gzip stream is truncated").
pub(crate) fn describe(codec: Codec, e: io::Error) -> io::Error {
    let codec = codec.name();
    match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{codec} stream is truncated"),
        ),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData | io::ErrorKind::Other => {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{codec} stream is corrupt: {e}"),
            )
        }
        // the compressed input itself could not be read: its own error
        _ => e,
    }
}

/// A reader that adds the bytes it reads to a counter.
pub(crate) struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    /// Counts the bytes read from `inner` into `count`.
    pub(crate) fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Counting { inner, count }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Relaxed);
        Ok(n)
    }
}

/// The bytes of a memory-mapped compressed file as a [`BufRead`], handed to a decoder in
/// place (no copy into a buffer); what the decoder consumes is added to a counter.
pub(crate) struct Mapped<B> {
    bytes: B,
    at: usize,
    count: Arc<AtomicU64>,
}

impl<B: AsRef<[u8]>> Mapped<B> {
    /// Reads `bytes` from the start, counting what is consumed into `count`.
    pub(crate) fn new(bytes: B, count: Arc<AtomicU64>) -> Self {
        Mapped {
            bytes,
            at: 0,
            count,
        }
    }
}

impl<B: AsRef<[u8]>> Read for Mapped<B> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let rest = self.fill_buf()?;
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<B: AsRef<[u8]>> BufRead for Mapped<B> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        // at most what a buffered reader would hold: progress moves as the decoder goes
        let bytes = self.bytes.as_ref();
        let end = (self.at + INPUT_BUFFER).min(bytes.len());
        Ok(&bytes[self.at.min(end)..end])
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.bytes.as_ref().len() - self.at);
        self.at += n;
        self.count.fetch_add(n as u64, Relaxed);
    }
}

/// Reads up to [`MAGIC_BYTES`] bytes from the start of `reader` (fewer only at its end).
pub(crate) fn read_head(reader: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = vec![0; MAGIC_BYTES];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(filled);
    Ok(head)
}

/// A reader of any stream that decodes it when it is compressed: on the first read it looks
/// at the stream's first bytes and reads through a decoder when they are a gzip or zstd
/// magic, else reads the stream as it is.
pub(crate) enum Sniffing {
    /// Not read yet.
    Unread(BoxedReader),
    /// Reading through a decoder, or the stream as it is.
    Reading(BoxedReader),
    /// The first read failed: nothing more to read.
    Failed,
}

impl Sniffing {
    /// A reader of `reader`, decoded when it is compressed.
    pub(crate) fn new(reader: BoxedReader) -> Self {
        Sniffing::Unread(reader)
    }

    /// The reader that decodes `reader` when its first bytes say so.
    fn start(mut reader: BoxedReader) -> io::Result<BoxedReader> {
        let head = read_head(&mut reader)?;
        let codec = Codec::sniff(&head);
        let whole = Cursor::new(head).chain(reader);
        match codec {
            Some(codec) => codec.decoder(whole),
            None => Ok(Box::new(whole)),
        }
    }
}

impl Read for Sniffing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Sniffing::Unread(_) = self {
            let Sniffing::Unread(reader) = std::mem::replace(self, Sniffing::Failed) else {
                unreachable!("matched above")
            };
            *self = Sniffing::Reading(Self::start(reader)?);
        }
        match self {
            Sniffing::Reading(reader) => reader.read(buf),
            Sniffing::Unread(_) | Sniffing::Failed => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn magic_bytes_pick_the_format() {
        assert_eq!(Codec::sniff(&gzip(b"a")), Some(Codec::Gzip));
        let z = zstd::encode_all(&b"a"[..], 1).unwrap();
        assert_eq!(Codec::sniff(&z), Some(Codec::Zstd));
        assert_eq!(Codec::sniff(b"a,b\n"), None);
        assert_eq!(Codec::sniff(b"\x1f"), None);
    }

    #[test]
    fn sniffing_decodes_compressed_streams_and_passes_others_through() {
        let data = b"id,name\n1,x\n2,y\n".repeat(100);
        let mut two = gzip(&data[..700]);
        two.extend(gzip(&data[700..]));
        let mut frames = zstd::encode_all(&data[..300], 3).unwrap();
        frames.extend(zstd::encode_all(&data[300..], 3).unwrap());
        for input in [two, frames, data.clone(), b"1".to_vec(), Vec::new()] {
            let want = if Codec::sniff(&input).is_some() {
                data.clone()
            } else {
                input.clone()
            };
            let got = read_all(Sniffing::new(Box::new(Cursor::new(input)))).unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn truncated_and_corrupt_streams_say_so() {
        let data = b"0123456789,abcdefghij\n".repeat(5000);
        let gz = gzip(&data);
        let err = read_all(
            Codec::Gzip
                .decoder(Cursor::new(gz[..gz.len() / 2].to_vec()))
                .unwrap(),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "gzip stream is truncated");
        let z = zstd::encode_all(&data[..], 3).unwrap();
        let err = read_all(
            Codec::Zstd
                .decoder(Cursor::new(z[..z.len() - 3].to_vec()))
                .unwrap(),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "zstd stream is truncated");
        let mut bad = gz.clone();
        let at = bad.len() - 6;
        bad[at] ^= 0xff; // the CRC
        let err = read_all(Codec::Gzip.decoder(Cursor::new(bad)).unwrap()).unwrap_err();
        assert!(
            err.to_string().starts_with("gzip stream is corrupt: "),
            "{err}"
        );
    }

    #[test]
    fn a_mapped_input_decodes_as_a_read_one_and_counts_what_the_decoder_consumed() {
        let data = b"0123456789,abcdefghij\n".repeat(100_000);
        let mut z = zstd::encode_all(&data[..], 3).unwrap();
        z.extend(zstd::encode_all(&b"x\n"[..], 3).unwrap());
        for (codec, input) in [(Codec::Zstd, z), (Codec::Gzip, gzip(&data))] {
            let count = Arc::new(AtomicU64::new(0));
            let mapped = Mapped::new(input.clone(), count.clone());
            let got = read_all(codec.decoder_buffered(mapped).unwrap()).unwrap();
            let want = read_all(codec.decoder(Cursor::new(input.clone())).unwrap()).unwrap();
            assert_eq!(got, want);
            assert_eq!(count.load(Relaxed), input.len() as u64);
        }
        let mut plain = Mapped::new(b"abc".to_vec(), Arc::new(AtomicU64::new(0)));
        let mut two = [0u8; 2];
        assert_eq!(plain.read(&mut two).unwrap(), 2);
        assert_eq!(plain.read(&mut two).unwrap(), 1);
        assert_eq!(plain.read(&mut two).unwrap(), 0);
        assert_eq!(plain.count.load(Relaxed), 3);
    }

    #[test]
    fn counting_counts_what_is_read() {
        let count = Arc::new(AtomicU64::new(5));
        let got = read_all(Counting::new(Cursor::new(vec![1u8; 1000]), count.clone())).unwrap();
        assert_eq!((got.len(), count.load(Relaxed)), (1000, 1005));
    }
}
