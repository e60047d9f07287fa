//! Input encodings: an input in Latin-1, windows-1252 or UTF-16 is transcoded to UTF-8 as
//! it is read (after any decompression), so the parse only ever sees UTF-8 and the
//! transcoded input streams like a compressed one. A UTF-16 byte order mark picks (or
//! confirms) the byte order and is dropped. Input that is not valid in its encoding (an
//! unpaired surrogate, an odd byte at the end of UTF-16) fails the load with the byte
//! offset of the bad bytes in the input as it is encoded (after decompression).

use std::io::{self, Read};

use encoding_rs::{Decoder, DecoderResult};
pub use wireload_csv::Encoding;

use crate::compressed::BoxedReader;

/// Why an input is not valid in its encoding: the payload of the `io::Error` a
/// transcoding reader fails with (a load turns it into [`crate::LoadError::Encoding`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not valid {encoding} at byte {byte}: {problem}")]
pub(crate) struct EncodingError {
    pub encoding: Encoding,
    /// 0-based offset of the bad bytes in the encoded input
    pub byte: u64,
    pub problem: String,
}

/// Bytes of encoded input read per call.
const INPUT_BUFFER: usize = 256 << 10;

/// Bytes of the encoded input kept from before the input buffer, to show bad bytes that
/// straddle buffers.
const KEPT: usize = 4;

/// Output room below which a read decodes into a small buffer of its own first (a UTF-8
/// character takes up to 4 bytes).
const MIN_OUT: usize = 8;

/// A reader of `reader` (in `encoding`) transcoded to UTF-8; `Utf8` reads it as it is.
pub(crate) fn transcoding(encoding: Encoding, reader: BoxedReader) -> BoxedReader {
    if encoding == Encoding::Utf8 {
        return reader;
    }
    Box::new(Transcoding {
        inner: reader,
        encoding,
        decoder: None,
        started: false,
        input: vec![0; INPUT_BUFFER],
        pos: 0,
        len: 0,
        kept: Vec::with_capacity(KEPT),
        consumed: 0,
        eof: false,
        done: false,
        small: Vec::new(),
        small_pos: 0,
    })
}

/// The reader [`transcoding`] makes.
struct Transcoding {
    inner: BoxedReader,
    encoding: Encoding,
    /// the decoder of a multi-byte or table encoding (Latin-1 needs none); chosen once the
    /// first bytes (a byte order mark) are read
    decoder: Option<Decoder>,
    /// the byte order mark was looked for
    started: bool,
    input: Vec<u8>,
    /// `input[pos..len]` is read and not decoded yet
    pos: usize,
    len: usize,
    /// the last bytes read before `input`
    kept: Vec<u8>,
    /// bytes of the encoded input decoded (or dropped as a byte order mark)
    consumed: u64,
    /// the encoded input has ended
    eof: bool,
    /// the decoder was flushed: nothing more to read
    done: bool,
    /// decoded bytes waiting for a caller that asked for fewer than [`MIN_OUT`]
    small: Vec<u8>,
    small_pos: usize,
}

impl Transcoding {
    /// Reads more encoded input into `input` (when all of it is decoded), until it holds
    /// at least `want` bytes or the input ends.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        if self.pos == self.len {
            let tail = self.len.saturating_sub(KEPT);
            self.kept.extend_from_slice(&self.input[tail..self.len]);
            let drop = self.kept.len().saturating_sub(KEPT);
            self.kept.drain(..drop);
            self.pos = 0;
            self.len = 0;
        }
        while self.len - self.pos < want && !self.eof {
            if self.len == self.input.len() {
                break;
            }
            match self.inner.read(&mut self.input[self.len..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Looks for a byte order mark at the start and picks the decoder.
    fn start(&mut self) -> io::Result<()> {
        self.fill(2)?;
        self.started = true;
        let head = &self.input[self.pos..self.len];
        let (le, be) = (
            head.starts_with(&[0xFF, 0xFE]),
            head.starts_with(&[0xFE, 0xFF]),
        );
        let big_endian = match self.encoding {
            Encoding::Utf8 | Encoding::Latin1 => return Ok(()),
            Encoding::Windows1252 => {
                self.decoder = Some(encoding_rs::WINDOWS_1252.new_decoder_without_bom_handling());
                return Ok(());
            }
            Encoding::Utf16 => be,
            Encoding::Utf16Le if be => {
                return Err(self.invalid(
                    0,
                    "a big-endian byte order mark (FE FF) starts the \
                     input: it is UTF-16BE (or UTF-16, which follows the mark)"
                        .into(),
                ));
            }
            Encoding::Utf16Be if le => {
                return Err(self.invalid(
                    0,
                    "a little-endian byte order mark (FF FE) starts \
                     the input: it is UTF-16LE (or UTF-16, which follows the mark)"
                        .into(),
                ));
            }
            Encoding::Utf16Le => false,
            Encoding::Utf16Be => true,
        };
        if le || be {
            self.pos += 2;
            self.consumed += 2;
        }
        let encoding = if big_endian {
            encoding_rs::UTF_16BE
        } else {
            encoding_rs::UTF_16LE
        };
        self.decoder = Some(encoding.new_decoder_without_bom_handling());
        Ok(())
    }

    /// Decodes into `out` (at least [`MIN_OUT`] bytes); 0 at the end of the input.
    fn decode(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !self.started {
            self.start()?;
        }
        loop {
            if self.done {
                return Ok(0);
            }
            self.fill(1)?;
            let src = &self.input[self.pos..self.len];
            let last = self.eof;
            let Some(decoder) = &mut self.decoder else {
                // Latin-1: each byte is its code point
                let (read, written) = encoding_rs::mem::convert_latin1_to_utf8_partial(src, out);
                self.pos += read;
                self.consumed += read as u64;
                if written == 0 && last && self.pos == self.len {
                    self.done = true;
                }
                if written > 0 || self.done {
                    return Ok(written);
                }
                continue;
            };
            let (result, read, written) =
                decoder.decode_to_utf8_without_replacement(src, out, last);
            self.pos += read;
            self.consumed += read as u64;
            match result {
                DecoderResult::InputEmpty => {
                    if last {
                        self.done = true;
                    }
                    if written > 0 || self.done {
                        return Ok(written);
                    }
                }
                DecoderResult::OutputFull => return Ok(written),
                DecoderResult::Malformed(bad, after) => {
                    return Err(self.malformed(usize::from(bad), usize::from(after)));
                }
            }
        }
    }

    /// The error of `bad` malformed bytes, `after` bytes before what was decoded so far.
    fn malformed(&self, bad: usize, after: usize) -> io::Error {
        let byte = self.consumed.saturating_sub((bad + after) as u64);
        // the bad bytes: at the end of what was read before `after`, maybe partly in the
        // previous buffer
        let end = self.pos.saturating_sub(after);
        let mut seen = self.kept.clone();
        seen.extend_from_slice(&self.input[..end]);
        let bytes = &seen[seen.len().saturating_sub(bad)..];
        let unit = |b: &[u8]| match (b, self.decoder_is_be()) {
            ([x, y, ..], false) => u16::from_le_bytes([*x, *y]),
            ([x, y, ..], true) => u16::from_be_bytes([*x, *y]),
            _ => 0,
        };
        let problem = match bytes.len() {
            1 => format!(
                "an odd number of bytes: the last byte (0x{:02X}) has no pair",
                bytes[0]
            ),
            3 => format!(
                "a high surrogate 0x{:04X} and then an odd last byte at the end",
                unit(bytes)
            ),
            _ => match unit(bytes) {
                u @ 0xD800..=0xDBFF => {
                    format!(
                        "an unpaired surrogate: high surrogate 0x{u:04X} is not followed by a low surrogate"
                    )
                }
                u @ 0xDC00..=0xDFFF => {
                    format!(
                        "an unpaired surrogate: low surrogate 0x{u:04X} has no high surrogate before it"
                    )
                }
                _ => format!("bytes {bytes:02X?} are not a character"),
            },
        };
        self.invalid(byte, problem)
    }

    /// True when the decoder reads UTF-16BE.
    fn decoder_is_be(&self) -> bool {
        self.decoder
            .as_ref()
            .is_some_and(|d| d.encoding() == encoding_rs::UTF_16BE)
    }

    /// An error saying the input is not valid at `byte`.
    fn invalid(&self, byte: u64, problem: String) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            EncodingError {
                encoding: self.encoding,
                byte,
                problem,
            },
        )
    }
}

impl Read for Transcoding {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.small_pos == self.small.len() && buf.len() < MIN_OUT {
            let mut small = std::mem::take(&mut self.small);
            small.resize(MIN_OUT, 0);
            let n = self.decode(&mut small)?;
            small.truncate(n);
            self.small = small;
            self.small_pos = 0;
        }
        if self.small_pos < self.small.len() {
            let n = buf.len().min(self.small.len() - self.small_pos);
            buf[..n].copy_from_slice(&self.small[self.small_pos..self.small_pos + n]);
            self.small_pos += n;
            return Ok(n);
        }
        self.decode(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// Reads `input` (in `encoding`) transcoded, `step` bytes per read call.
    fn read(encoding: Encoding, input: &[u8], step: usize) -> io::Result<Vec<u8>> {
        let mut r = transcoding(encoding, Box::new(Cursor::new(input.to_vec())));
        let mut out = Vec::new();
        let mut buf = vec![0; step];
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    fn utf16(text: &str, be: bool) -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| if be { u.to_be_bytes() } else { u.to_le_bytes() })
            .collect()
    }

    fn error(e: io::Error) -> EncodingError {
        e.get_ref()
            .and_then(|e| e.downcast_ref::<EncodingError>())
            .cloned()
            .unwrap_or_else(|| panic!("not an encoding error: {e}"))
    }

    #[test]
    fn latin1_and_windows_1252_decode_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let want: String = (0..=255u8).map(char::from).collect();
        for step in [1, 7, 4096] {
            assert_eq!(read(Encoding::Latin1, &all, step).unwrap(), want.as_bytes());
        }
        assert_eq!(
            read(Encoding::Windows1252, b"\x80 caf\xe9", 64).unwrap(),
            "€ café".as_bytes()
        );
    }

    #[test]
    fn utf16_follows_or_checks_its_byte_order_mark() {
        let text = "a,é\nß,日本 😀\n";
        let le = utf16(text, false);
        let be = utf16(text, true);
        let bom = |mark: [u8; 2], body: &[u8]| [&mark[..], body].concat();
        let cases = [
            (Encoding::Utf16Le, le.clone()),
            (Encoding::Utf16Le, bom([0xFF, 0xFE], &le)),
            (Encoding::Utf16Be, be.clone()),
            (Encoding::Utf16Be, bom([0xFE, 0xFF], &be)),
            (Encoding::Utf16, le.clone()),
            (Encoding::Utf16, bom([0xFF, 0xFE], &le)),
            (Encoding::Utf16, bom([0xFE, 0xFF], &be)),
        ];
        for (encoding, input) in cases {
            for step in [1, 3, 8, 4096] {
                assert_eq!(
                    read(encoding, &input, step).unwrap(),
                    text.as_bytes(),
                    "{encoding} step {step}"
                );
            }
        }
        let e = error(read(Encoding::Utf16Le, &bom([0xFE, 0xFF], &be), 64).unwrap_err());
        assert_eq!((e.byte, e.encoding), (0, Encoding::Utf16Le));
        assert!(e.problem.starts_with("a big-endian byte order mark"), "{e}");
    }

    #[test]
    fn bad_utf16_names_the_offset_of_the_bad_bytes() {
        // "ab" then a lone high surrogate before "c": bytes 4..6
        let mut lone_high = utf16("ab", false);
        lone_high.extend_from_slice(&0xD83Du16.to_le_bytes());
        lone_high.extend(utf16("c\n", false));
        let e = error(read(Encoding::Utf16Le, &lone_high, 64).unwrap_err());
        assert_eq!(e.byte, 4);
        assert_eq!(
            e.problem,
            "an unpaired surrogate: high surrogate 0xD83D is not followed by a low surrogate"
        );
        // a lone low surrogate after a byte order mark and "x": bytes 4..6
        let mut lone_low = vec![0xFE, 0xFF];
        lone_low.extend(utf16("x", true));
        lone_low.extend_from_slice(&0xDE00u16.to_be_bytes());
        let e = error(read(Encoding::Utf16, &lone_low, 5).unwrap_err());
        assert_eq!(e.byte, 4);
        assert_eq!(
            e.problem,
            "an unpaired surrogate: low surrogate 0xDE00 has no high surrogate before it"
        );
        // an odd byte at the end
        let mut odd = utf16("xyz", false);
        odd.push(b'\n');
        let e = error(read(Encoding::Utf16Le, &odd, 64).unwrap_err());
        assert_eq!(e.byte, 6);
        assert_eq!(
            e.problem,
            "an odd number of bytes: the last byte (0x0A) has no pair"
        );
        // a high surrogate at the very end
        let mut end = utf16("x", false);
        end.extend_from_slice(&0xD800u16.to_le_bytes());
        let e = error(read(Encoding::Utf16Le, &end, 64).unwrap_err());
        assert_eq!(e.byte, 2);
    }

    /// A reader that returns at most 3 bytes per call: input buffers end at odd offsets.
    struct Trickle(Cursor<Vec<u8>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.read(&mut buf[..n])
        }
    }

    #[test]
    fn bad_bytes_across_input_buffers_are_found() {
        for pad in 0..3 {
            let mut input = utf16(&"a".repeat(pad + 2), false);
            let at = input.len();
            input.extend_from_slice(&0xDC01u16.to_le_bytes());
            input.extend(utf16("tail", false));
            let mut r = transcoding(Encoding::Utf16Le, Box::new(Trickle(Cursor::new(input))));
            let e = error(r.read_to_end(&mut Vec::new()).unwrap_err());
            assert_eq!(e.byte, at as u64, "pad {pad}");
            assert_eq!(
                e.problem,
                "an unpaired surrogate: low surrogate 0xDC01 has no high surrogate before it"
            );
        }
    }
}
