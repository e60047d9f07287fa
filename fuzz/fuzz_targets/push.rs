//! The server side of a Shared Loading push (`wireload_push::ingest::ingest`, which runs
//! behind `wireload serve`'s Flight `DoPut`) on frames built from the input: dictionaries,
//! fragments (plain and encoded columns), text and raw frames, end frames and frames of
//! arbitrary bytes, in any order and with any header values, each payload optionally
//! damaged after it is encoded. The input drives a generator (see `Gen`), so most pushes
//! are well-formed enough to reach the checks behind the IPC decoder.
//!
//! Oracles: nothing panics or aborts, except arrow's IPC decoder inside `decode_batch`,
//! which catches its panics and refuses the payload by design (the hook below lets those
//! through to it); a refused push leaves the table as it was; an accepted one adds exactly
//! the rows it reports.
#![no_main]

use std::sync::{Arc, Once};

use arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int64Array, StringArray, UInt8Array,
    UInt16Array, UInt32Array,
};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use libfuzzer_sys::fuzz_target;
use wireload_index::IndexKind;
use wireload_load::LoadControl;
use wireload_push::ingest::{RawFrame, ingest};
use wireload_push::protocol::{Frame, Hello, Mode, WireDialect, encode_batch, to_json};
use wireload_storage::{Catalog, Compression, IndexDef, Partitioning, TableDef};

/// The table's columns; the generator builds values of these types.
const COLUMNS: &str = "id BIGINT NOT NULL, s VARCHAR, d DATE, n DECIMAL(10,2), f DOUBLE";

/// Reads the fuzz input as a stream of choices (zeros once it runs out).
struct Gen<'a> {
    data: &'a [u8],
}

impl<'a> Gen<'a> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn bit(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn below(&mut self, n: u64) -> u64 {
        u64::from(self.byte()) % n.max(1)
    }

    fn word(&mut self) -> u64 {
        (0..8).fold(0u64, |w, _| w << 8 | u64::from(self.byte()))
    }

    fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = (self.byte() as usize % (max + 1)).min(self.data.len());
        let (taken, rest) = self.data.split_at(n);
        self.data = rest;
        taken
    }

    /// A count, usually the true one, sometimes a lie.
    fn count(&mut self, truth: u64) -> u64 {
        match self.byte() % 8 {
            0 => self.word(),
            1 => truth.wrapping_add(1),
            2 => truth.saturating_sub(1),
            _ => truth,
        }
    }

    /// `n` values of table column `c` (codes into a dictionary when `codes` is Some, the
    /// code width in bytes), sorted and unique when `sorted`.
    fn column(&mut self, c: usize, n: usize, codes: Option<u8>, sorted: bool) -> ArrayRef {
        let null = |g: &mut Self| g.byte() == 0xff;
        if let Some(width) = codes {
            let mut keys: Vec<Option<u32>> = (0..n)
                .map(|_| (!null(self)).then(|| u32::from(self.byte() % 6)))
                .collect();
            if self.byte() == 0xfe
                && let Some(first) = keys.first_mut()
            {
                *first = Some(self.word() as u32);
            }
            return match width {
                1 => Arc::new(UInt8Array::from_iter(
                    keys.iter().map(|k| k.map(|v| v as u8)),
                )),
                2 => Arc::new(UInt16Array::from_iter(
                    keys.iter().map(|k| k.map(|v| v as u16)),
                )),
                _ => Arc::new(UInt32Array::from(keys)),
            };
        }
        macro_rules! values {
            ($make:expr) => {{
                let mut v: Vec<Option<_>> = (0..n)
                    .map(|_| if null(self) { None } else { Some($make) })
                    .collect();
                if sorted {
                    v.retain(Option::is_some);
                    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
                    v.dedup();
                }
                v
            }};
        }
        match c {
            0 => Arc::new(Int64Array::from(values!((self.byte() % 16) as i64 - 2))),
            1 => {
                let v = values!(String::from_utf8_lossy(self.bytes(6)).into_owned());
                Arc::new(StringArray::from(v))
            }
            2 => Arc::new(Date32Array::from(values!(
                i32::from(self.byte()) * 300 - 9000
            ))),
            3 => {
                let v = values!(match self.byte() {
                    0xfd => i128::MAX,
                    b => i128::from(b) * 137 - 5000,
                });
                Arc::new(
                    Decimal128Array::from(v)
                        .with_precision_and_scale(10, 2)
                        .expect("a valid precision"),
                )
            }
            _ => Arc::new(Float64Array::from(values!(f64::from(self.byte()) / 4.0))),
        }
    }
}

/// `arrays` as one IPC payload (LZ4 when `lz4`), fields named c0, c1, ...
fn payload(arrays: Vec<ArrayRef>, lz4: bool) -> Vec<u8> {
    let fields: Vec<Field> = arrays
        .iter()
        .enumerate()
        .map(|(i, a)| Field::new(format!("c{i}"), a.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("a batch");
    encode_batch(&batch, lz4).expect("encodes")
}

/// Bytes of the input as the text of a text or raw frame, and the frame's payload (LZ4 when
/// `lz4`).
fn text(g: &mut Gen<'_>, lz4: bool) -> (Vec<u8>, Vec<u8>) {
    let text = g.bytes(120).to_vec();
    let body = if lz4 {
        lz4_flex::compress_prepend_size(&text)
    } else {
        text.clone()
    };
    (text, body)
}

/// The frames of one push, built from the input.
fn frames(g: &mut Gen<'_>, columns: usize) -> Vec<RawFrame> {
    let mut out = Vec::new();
    let (mut partition, mut fragment, mut rows, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..1 + g.below(12) {
        if g.data.is_empty() {
            break;
        }
        let lz4 = g.bit();
        let (header, mut body) = match g.byte() % 7 {
            0 => {
                if g.byte() % 4 == 0 {
                    partition += 1;
                }
                let column = g.below(columns as u64 + 1) as usize;
                let n = 1 + g.below(8) as usize;
                let sorted = g.byte() % 8 != 0;
                let values = g.column(column.min(columns - 1), n, None, sorted);
                let entries = values.len() as u64;
                let header = Frame::Dictionary {
                    partition,
                    column,
                    entries: g.count(entries),
                    last: g.byte() % 8 != 0,
                };
                (to_json(&header), payload(vec![values], lz4))
            }
            1 | 2 => {
                let n = g.below(6) as usize;
                let mask = g.byte();
                let mut encoded = Vec::new();
                let arrays = (0..columns)
                    .map(|c| {
                        let codes = (mask >> c & 1 == 1).then(|| 1 << g.below(3));
                        if codes.is_some() {
                            encoded.push(c);
                        }
                        g.column(c, n, codes, false)
                    })
                    .collect();
                let header = Frame::Fragment {
                    partition,
                    fragment: g.count(fragment),
                    rows: g.count(n as u64),
                    encoded,
                };
                fragment += 1;
                rows += n as u64;
                (to_json(&header), payload(arrays, lz4))
            }
            3 => {
                let (text, body) = text(g, lz4);
                let header = Frame::Text {
                    fragment: g.count(fragment),
                    file: g.below(3),
                    byte: bytes,
                    lines: g.below(4),
                    len: g.count(text.len() as u64),
                    lz4,
                };
                fragment += 1;
                bytes += text.len() as u64;
                (to_json(&header), body)
            }
            4 => {
                let (text, body) = text(g, lz4);
                let header = Frame::Raw {
                    file: g.below(3),
                    offset: g.count(bytes),
                    len: g.count(text.len() as u64),
                    lz4,
                };
                bytes += text.len() as u64;
                (to_json(&header), body)
            }
            5 => {
                let header = Frame::End {
                    fragments: g.count(fragment),
                    rows: g.count(rows),
                    bytes: g.count(bytes),
                };
                (to_json(&header), Vec::new())
            }
            _ => (g.bytes(64).to_vec(), g.bytes(200).to_vec()),
        };
        // damage the payload after encoding: a byte changed, or the payload cut
        match g.byte() % 8 {
            0 if !body.is_empty() => {
                let at = g.word() as usize % body.len();
                body[at] ^= g.byte() | 1;
            }
            1 => body.truncate(g.word() as usize % (body.len() + 1)),
            _ => {}
        }
        out.push(RawFrame {
            header: header.into(),
            body: body.into(),
        });
    }
    out
}

/// Lets the panics of arrow's IPC decoder reach the `catch_unwind` in `decode_batch` (which
/// refuses such payloads by design: it marks the decoding `untrusted`); any other panic
/// stays a crash (libFuzzer's hook aborts).
fn arrow_panics_are_caught() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !wireload_push::protocol::decoding_untrusted() {
                fuzzer_hook(info);
            }
        }));
    });
}

fuzz_target!(|input: &[u8]| {
    arrow_panics_are_caught();
    let mut g = Gen { data: input };
    let config = g.byte();
    let schema = wireload_types::sql::parse_columns(COLUMNS).expect("the schema parses");
    let columns = schema.columns.len();
    let compression = [
        Compression::Dictionary,
        Compression::Dictionary,
        Compression::Auto,
        Compression::Dictionary,
        Compression::Plain,
    ];
    let mut def = TableDef::new("t", schema, Partitioning::Single)
        .and_then(|d| d.with_compression(compression.to_vec()))
        .expect("a valid definition");
    if config & 0x10 != 0 {
        // a primary key: the server refuses text frames
        let key = IndexDef {
            name: "t_pkey".into(),
            columns: vec![0],
            unique: true,
            primary: true,
            kind: IndexKind::Art,
        };
        def = def.with_indexes(vec![key]).expect("a valid key");
    }
    let table = Catalog::default()
        .create_table(def, false)
        .expect("a new table");
    let mode = [Mode::All, Mode::None, Mode::Size, Mode::Auto, Mode::Seq][config as usize % 5];
    let hello = Hello {
        table: "t".into(),
        mode,
        file: "f.csv".into(),
        files: if config & 0x20 != 0 {
            vec!["a.csv".into(), "b.csv".into()]
        } else {
            Vec::new()
        },
        dialect: (config & 0x40 != 0).then(|| WireDialect {
            delimiter: b',',
            quote: Some(b'"'),
            escape: None,
            header: config & 0x80 != 0,
            null: Vec::new(),
        }),
    };
    let threads = 1 + (config as usize >> 3 & 1);
    for _ in 0..2 {
        let frames = frames(&mut g, columns);
        let before = table.snapshot().num_rows() as u64;
        let result = ingest(
            &table,
            &hello,
            frames.into_iter().map(Ok),
            &|_| {},
            &LoadControl::default(),
            threads,
        );
        let after = table.snapshot().num_rows() as u64;
        match result {
            Ok(done) => assert_eq!(after, before + done.rows, "an accepted push adds its rows"),
            Err(_) => assert_eq!(after, before, "a refused push changes nothing"),
        }
    }
});
