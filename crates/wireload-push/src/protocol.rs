//! The frames of a push. A push is one Arrow Flight `DoPut` call whose descriptor command
//! is a [`Hello`] (an `Any` of type [`PUSH_TYPE_URL`]); the server answers with the table's
//! description ([`Reply::Described`]), then the client sends frames, each a `FlightData`
//! whose `app_metadata` is a [`Frame`] (JSON) and whose `data_body` is the frame's payload:
//! an Arrow IPC stream holding one record batch (dictionaries, fragments) or raw file bytes
//! (`seq`). The server answers with progress and, at the end, what it loaded.
//!
//! Our own framing and not Flight's one IPC stream per call: a fragment column may be
//! encoded in one fragment and plain in the next (the per fragment column decision), and a
//! client partition's dictionary is sent once for all its fragments. A fragment's encoded
//! columns travel as their codes (UInt8/16/32) into the dictionary frame of the same
//! partition and column.

use std::cell::Cell;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::buffer::Buffer;
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use arrow_ipc::CompressionType;
use arrow_ipc::reader::StreamDecoder;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use wireload_types::SqlType;

use crate::PushError;

/// The `Any` type URL of a push's descriptor command.
pub const PUSH_TYPE_URL: &str = "type.googleapis.com/wireload.Push";

/// Where the work of a load is done: the Shared Loading modes and the baselines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// SL_A: the client dictionary-encodes every column it can.
    All,
    /// SL_N: the client only deserializes; the server encodes.
    None,
    /// SL_S: the client encodes a fragment column when the estimated dictionary plus codes
    /// are smaller than the plain column (HyperLogLog with the HIP estimator).
    Size,
    /// Beyond the paper: columns move between client and server during the load, from
    /// measured bandwidth, CPU time per step and the server's load.
    Auto,
    /// PIPE: the file over the PostgreSQL protocol's COPY FROM STDIN.
    Pipe,
    /// SEQ: the whole file is transferred, then the server loads it.
    Seq,
}

impl Mode {
    /// Every mode, in the order benchmarks list them.
    pub const ALL: [Mode; 6] = [
        Mode::All,
        Mode::Size,
        Mode::None,
        Mode::Auto,
        Mode::Pipe,
        Mode::Seq,
    ];

    /// The mode's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::All => "all",
            Mode::None => "none",
            Mode::Size => "size",
            Mode::Auto => "auto",
            Mode::Pipe => "pipe",
            Mode::Seq => "seq",
        }
    }

    /// The paper's name of the mode.
    pub fn paper_name(self) -> &'static str {
        match self {
            Mode::All => "SL_A",
            Mode::None => "SL_N",
            Mode::Size => "SL_S",
            Mode::Auto => "auto",
            Mode::Pipe => "PIPE",
            Mode::Seq => "SEQ",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s) || m.paper_name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown mode {s:?}: all, none, size, auto, pipe or seq"))
    }
}

/// The CSV dialect of a `seq` push and of `auto`'s text fragments (the server parses them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireDialect {
    /// Field delimiter.
    pub delimiter: u8,
    /// Quote character, if any.
    pub quote: Option<u8>,
    /// Escape character, if any.
    pub escape: Option<u8>,
    /// The first record is a header.
    pub header: bool,
    /// The text of NULL.
    pub null: Vec<u8>,
}

/// What a client asks for: the descriptor command of the `DoPut` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The table to load into.
    pub table: String,
    /// The mode (not `pipe`, which does not use this protocol).
    pub mode: Mode,
    /// The name errors give the input (the client's file names).
    pub file: String,
    /// `seq` and `auto`: the name of each file, in the order they are sent (raw and text
    /// frames say which file their bytes belong to; `seq`'s server loads each file with its
    /// own header); empty: one input named `file`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The dialect, for `seq` and `auto`'s text fragments.
    pub dialect: Option<WireDialect>,
}

/// One column of the table as the client deserializes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireColumn {
    /// Column name.
    pub name: String,
    /// SQL type.
    pub ty: SqlType,
    /// NULL allowed.
    pub nullable: bool,
    /// The client may send it encoded (the server stores it in dictionaries or has not
    /// decided yet, its type has dictionaries, and it is not the partitioning key).
    pub encodable: bool,
}

/// The server's description of the table, its first answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Described {
    /// The table's name.
    pub table: String,
    /// Its columns.
    pub columns: Vec<WireColumn>,
    /// The largest frame the server accepts, in bytes.
    pub max_frame_bytes: u64,
    /// The server takes [`Frame::Text`] (the table has no unique key, whose errors name
    /// rows by their place in the push).
    #[serde(default)]
    pub text: bool,
}

/// The header of one frame from the client (a `FlightData`'s `app_metadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Frame {
    /// (A piece of) the dictionary of column `column` in client partition `partition`
    /// (numbers ascending from 0): the payload is one batch of one column, sorted unique
    /// values; a dictionary larger than a frame comes in pieces in order, the last one
    /// marked `last`.
    Dictionary {
        /// client partition
        partition: u64,
        /// table column
        column: usize,
        /// entries in this frame
        entries: u64,
        /// the dictionary's last piece
        #[serde(default = "yes")]
        last: bool,
    },
    /// Fragment `fragment` (numbers dense from 0 over the push) of client partition
    /// `partition`: the payload is one batch of `rows` rows, one column per table column;
    /// the columns in `encoded` hold codes into that partition's dictionary of the column.
    Fragment {
        /// client partition
        partition: u64,
        /// fragment number
        fragment: u64,
        /// rows
        rows: u64,
        /// encoded columns, ascending
        encoded: Vec<usize>,
    },
    /// Fragment `fragment` as CSV text for the server to parse (`auto`, where the server has
    /// CPU to spare): whole records of file `file` (index into [`Hello::files`]), `byte`
    /// bytes and `lines` line ends into it, parsed with [`Hello::dialect`] (no header);
    /// LZ4-compressed (block format with the length prepended) when `lz4`. It belongs to
    /// no partition: it has no encoded column.
    Text {
        /// fragment number
        fragment: u64,
        /// the file (index into [`Hello::files`])
        file: u64,
        /// offset of the text in the file
        byte: u64,
        /// line ends in the file before the text
        lines: u64,
        /// uncompressed length
        len: u64,
        /// the payload is LZ4-compressed
        lz4: bool,
    },
    /// Bytes `offset..offset + len` of the push's input (`seq`: the files one after
    /// another), all of them of file `file`; LZ4-compressed (block format with the length
    /// prepended) when `lz4`. A file's bytes come in order, and the files in order.
    Raw {
        /// the file (index into [`Hello::files`]) the bytes belong to
        #[serde(default)]
        file: u64,
        /// offset in the push's input (all files)
        offset: u64,
        /// uncompressed length
        len: u64,
        /// the payload is LZ4-compressed
        lz4: bool,
    },
    /// The end of the push: what was sent, for the server to check.
    End {
        /// fragments sent (text ones included)
        fragments: u64,
        /// rows sent in fragment frames (the server counts the rows of text ones)
        rows: u64,
        /// file bytes the fragments (or raw frames) came from
        bytes: u64,
    },
}

fn yes() -> bool {
    true
}

/// CPU seconds of one side of a push, per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    /// Pairs of (step, CPU seconds).
    pub cpu_s: Vec<(String, f64)>,
}

impl Steps {
    /// Adds `seconds` to `step`.
    pub fn add(&mut self, step: &str, seconds: f64) {
        match self.cpu_s.iter_mut().find(|(s, _)| s == step) {
            Some((_, t)) => *t += seconds,
            None => self.cpu_s.push((step.to_string(), seconds)),
        }
    }

    /// CPU seconds of every step.
    pub fn total(&self) -> f64 {
        self.cpu_s.iter().map(|(_, t)| t).sum()
    }
}

/// What the server says while and after loading (a `PutResult`'s `app_metadata`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    /// The table, before any frame.
    Described(Described),
    /// Progress: what was received and validated so far, the server's CPU per step and how
    /// busy the CPUs it may run on are with other work than loads (0 idle .. 1 all busy) —
    /// the `auto` mode's feedback.
    Progress {
        /// fragments validated
        fragments: u64,
        /// CPU seconds per step so far
        steps: Steps,
        /// fraction of the server's CPUs busy lately with other work than loads
        busy: f64,
        /// fraction of the server's CPUs its loads used lately (this push's and others')
        #[serde(default)]
        loading: f64,
    },
    /// The load was published.
    Done {
        /// rows added
        rows: u64,
        /// payload bytes received
        bytes_received: u64,
        /// seconds from the first frame to the publication
        seconds: f64,
        /// the server's CPU seconds per step
        steps: Steps,
    },
}

/// Encodes `batch` as an Arrow IPC stream (one schema, one batch), LZ4-compressed buffers
/// when `lz4`.
pub fn encode_batch(batch: &RecordBatch, lz4: bool) -> Result<Vec<u8>, PushError> {
    let options = IpcWriteOptions::default()
        .try_with_compression(lz4.then_some(CompressionType::LZ4_FRAME))
        .map_err(|e| PushError::Protocol(format!("IPC options: {e}")))?;
    let mut out = Vec::with_capacity(batch.get_array_memory_size() + 1024);
    let mut writer = StreamWriter::try_new_with_options(&mut out, batch.schema_ref(), options)
        .map_err(|e| PushError::Protocol(format!("IPC: {e}")))?;
    writer
        .write(batch)
        .and_then(|()| writer.finish())
        .map_err(|e| PushError::Protocol(format!("IPC: {e}")))?;
    drop(writer);
    Ok(out)
}

/// Decodes a payload of [`encode_batch`]: exactly one record batch, validated (the IPC
/// reader builds every array with full validation: offsets, lengths, UTF-8). The payload is
/// decoded in place (arrays over its bytes; a buffer not aligned for its type is copied),
/// message by message, so lengths it states are never allocated
/// before the bytes are there (arrow's `StreamReader` allocates a message's stated body
/// length up front: a forged one aborts the process). A payload the decoder panics on
/// (arrow-ipc 59 asserts some buffer lengths instead of checking them: a validity buffer
/// shorter than its array, a buffer past the body) is refused like any other malformed one.
pub fn decode_batch(payload: &Bytes) -> Result<RecordBatch, PushError> {
    let bad = |e: String| PushError::Protocol(format!("malformed IPC payload: {e}"));
    check_stated_lengths(payload).map_err(bad)?;
    // unwind safe: the closure only reads the payload, which a panic leaves as it was
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        untrusted(|| {
            let mut decoder = StreamDecoder::new();
            let mut buffer = Buffer::from(payload.clone());
            let mut batches = Vec::with_capacity(1);
            while let Some(batch) = decoder
                .decode(&mut buffer)
                .map_err(|e| bad(e.to_string()))?
            {
                batches.push(batch);
            }
            decoder.finish().map_err(|e| bad(e.to_string()))?;
            match batches.len() {
                1 => Ok(batches.pop().expect("one batch")),
                0 => Err(bad("no record batch".into())),
                _ => Err(bad("more than one record batch".into())),
            }
        })
    }));
    decoded.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("the decoder failed");
        Err(bad(what.to_string()))
    })
}

thread_local! {
    /// This thread is decoding bytes from the network inside a `catch_unwind`.
    static UNTRUSTED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` marked as decoding bytes from the network, whose panics the caller catches and
/// refuses as malformed input (see [`decoding_untrusted`]).
pub fn untrusted<T>(f: impl FnOnce() -> T) -> T {
    /// Clears the mark when `f` returns or unwinds.
    struct Mark(bool);
    impl Drop for Mark {
        fn drop(&mut self) {
            UNTRUSTED.with(|u| u.set(self.0));
        }
    }
    let _mark = Mark(UNTRUSTED.with(|u| u.replace(true)));
    f()
}

/// True inside [`untrusted`] on this thread: a panic hook can report such a panic as the
/// malformed input it is, in one line, where the default hook would print a crash.
pub fn decoding_untrusted() -> bool {
    UNTRUSTED.with(Cell::get)
}

/// The most bytes the compressed buffers of one payload (or one `DoPut` stream) may say
/// they hold uncompressed.
const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Checks the lengths an IPC stream states before arrow acts on them: every message and
/// body lies inside `payload`, and each message passes [`check_ipc_message`].
fn check_stated_lengths(payload: &[u8]) -> Result<(), String> {
    let word = |at: usize| -> Option<i32> {
        let b = payload.get(at..at + 4)?;
        Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (mut at, mut decompressed) = (0usize, 0u64);
    while let Some(mut len) = word(at) {
        at += 4;
        if len == -1 {
            // the continuation marker; the length follows
            len = word(at).ok_or("a message cut after its marker")?;
            at += 4;
        }
        if len == 0 {
            return Ok(());
        }
        let meta = usize::try_from(len)
            .ok()
            .and_then(|n| payload.get(at..at.checked_add(n)?))
            .ok_or("a message longer than the payload")?;
        at += meta.len();
        let message = arrow_ipc::root_as_message(meta).map_err(|e| format!("a message: {e}"))?;
        let body = usize::try_from(message.bodyLength())
            .ok()
            .and_then(|n| payload.get(at..at.checked_add(n)?))
            .ok_or("a message body longer than the payload")?;
        at += body.len();
        check_buffers(message, body, &mut decompressed)?;
    }
    Ok(())
}

/// Checks one IPC message (its flatbuffer `meta`, none when empty, and its `body`) before
/// arrow acts on it:
/// its record batch's buffers lie inside the body, and the uncompressed lengths its
/// compressed buffers state (arrow allocates them before decompressing: a forged one aborts
/// the process) add up, with `decompressed` before, to at most 1 GiB.
pub fn check_ipc_message(meta: &[u8], body: &[u8], decompressed: &mut u64) -> Result<(), String> {
    if meta.is_empty() {
        // no message (a Flight call's first data may carry only its descriptor)
        return Ok(());
    }
    let message = arrow_ipc::root_as_message(meta).map_err(|e| format!("a message: {e}"))?;
    check_buffers(message, body, decompressed)
}

/// [`check_ipc_message`] of a message already read.
fn check_buffers(
    message: arrow_ipc::Message<'_>,
    body: &[u8],
    decompressed: &mut u64,
) -> Result<(), String> {
    let Some(batch) = message.header_as_record_batch() else {
        return Ok(());
    };
    let compressed = batch.compression().is_some();
    for buffer in batch.buffers().into_iter().flatten() {
        let bytes = usize::try_from(buffer.offset())
            .ok()
            .zip(usize::try_from(buffer.length()).ok())
            .and_then(|(o, n)| body.get(o..o.checked_add(n)?))
            .ok_or("a buffer outside its message body")?;
        if let (true, Some(b)) = (compressed, bytes.get(..8)) {
            let stated = i64::from_le_bytes(b.try_into().expect("8 bytes"));
            *decompressed = decompressed.saturating_add(u64::try_from(stated).unwrap_or(0));
            if *decompressed > MAX_DECOMPRESSED {
                return Err(format!(
                    "compressed buffers that say they hold over {MAX_DECOMPRESSED} bytes"
                ));
            }
        }
    }
    Ok(())
}

/// A one-column batch of `values` named `name` (a dictionary frame's payload).
pub fn column_batch(name: &str, values: ArrayRef) -> Result<RecordBatch, PushError> {
    let schema = Schema::new(vec![Field::new(name, values.data_type().clone(), false)]);
    RecordBatch::try_new(Arc::new(schema), vec![values])
        .map_err(|e| PushError::Protocol(format!("dictionary batch: {e}")))
}

/// The JSON of a frame header or reply.
pub fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("protocol values serialize")
}

/// A frame header or reply from JSON; None when it is not one.
pub fn from_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, PushError> {
    serde_json::from_slice(bytes).map_err(|e| PushError::Protocol(format!("bad header: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};

    #[test]
    fn frames_round_trip() {
        let frames = [
            Frame::Dictionary {
                partition: 1,
                column: 3,
                entries: 9,
                last: false,
            },
            Frame::Fragment {
                partition: 0,
                fragment: 7,
                rows: 100,
                encoded: vec![1, 4],
            },
            Frame::Text {
                fragment: 8,
                file: 1,
                byte: 10,
                lines: 2,
                len: 30,
                lz4: false,
            },
            Frame::Raw {
                file: 1,
                offset: 5,
                len: 6,
                lz4: true,
            },
            Frame::End {
                fragments: 2,
                rows: 3,
                bytes: 4,
            },
        ];
        for f in frames {
            assert_eq!(from_json::<Frame>(&to_json(&f)).unwrap(), f);
        }
        assert!(from_json::<Frame>(b"{\"kind\":\"fragment\"}").is_err());
        // a raw frame of a client that knows no file numbers is of the first file
        assert_eq!(
            from_json::<Frame>(b"{\"kind\":\"raw\",\"offset\":0,\"len\":1,\"lz4\":false}").unwrap(),
            Frame::Raw {
                file: 0,
                offset: 0,
                len: 1,
                lz4: false
            }
        );
        assert_eq!("SL_S".parse::<Mode>().unwrap(), Mode::Size);
    }

    /// arrow-ipc 59 panics on some malformed payloads (a validity buffer shorter than its
    /// array, a buffer past the body's end) where it should return an error; found by the
    /// mutated pushes of `wireload-flight`'s tests, which hung a push: its fragment task
    /// panicked and never freed its place in flight.
    #[test]
    fn payloads_the_ipc_reader_panics_on_are_refused() {
        let batch = RecordBatch::try_from_iter([
            (
                "a",
                Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            ),
            (
                "b",
                Arc::new(StringArray::from(vec![Some("x"), None, Some("zzz")])) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut panicked = 0;
        for bytes in [false, true].map(|lz4| encode_batch(&batch, lz4).unwrap()) {
            for at in 0..bytes.len() {
                for bit in 0..8 {
                    let mut forged = bytes.clone();
                    forged[at] ^= 1 << bit;
                    // Ok (a flip that keeps the batch valid) or a refusal, never a panic
                    if let Err(e) = decode_batch(&Bytes::from(forged)) {
                        let e = e.to_string();
                        assert!(e.contains("malformed IPC payload"), "{e}");
                        panicked += usize::from(e.contains("Buffer") || e.contains("buffer not"));
                    }
                }
            }
        }
        assert!(panicked > 0, "no flip reached the reader's panics");
    }

    #[test]
    fn the_untrusted_mark_holds_inside_only_and_survives_a_panic() {
        assert!(!decoding_untrusted());
        assert!(untrusted(decoding_untrusted));
        // nested: the outer mark stays until the outer call ends
        untrusted(|| {
            untrusted(|| ());
            assert!(decoding_untrusted());
        });
        assert!(!decoding_untrusted());
        let unwound = std::panic::catch_unwind(|| untrusted(|| panic!("a forged payload")));
        assert!(unwound.is_err());
        assert!(
            !decoding_untrusted(),
            "the mark outlived an unwinding panic"
        );
    }

    #[test]
    fn batches_round_trip_and_bad_payloads_fail() {
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
            (
                "b",
                Arc::new(StringArray::from(vec!["x", "yy", "zzz"])) as ArrayRef,
            ),
        ])
        .unwrap();
        for lz4 in [false, true] {
            let bytes = encode_batch(&batch, lz4).unwrap();
            assert_eq!(decode_batch(&Bytes::from(bytes.clone())).unwrap(), batch);
            // every truncation is refused, never a panic
            for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 9] {
                assert!(
                    decode_batch(&Bytes::copy_from_slice(&bytes[..cut])).is_err(),
                    "cut at {cut}"
                );
            }
        }
        // invalid UTF-8 inside a string buffer is refused
        let mut bytes = encode_batch(&batch, false).unwrap();
        let at = bytes.windows(3).position(|w| w == b"zzz").unwrap();
        bytes[at] = 0xff;
        let err = decode_batch(&Bytes::from(bytes)).unwrap_err().to_string();
        assert!(err.contains("malformed"), "{err}");
    }
}
