//! The chunked scan against the `csv` crate (random valid RFC 4180 files, every chunk size
//! from 1 byte up), and the block scanner of every SIMD backend this machine has against
//! the reference scanner (random, often malformed, input; special bytes at every position
//! of a block).

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_csv::reference::RefScanner;
use wireload_csv::{
    Backend, BlockScanner, Dialect, FieldBatch, ScanConfig, ScanError, ScanMode, Scanner,
    chunk_ranges, chunk_start_states, first_record_start,
};

/// A scanner to test: the reference scanner (`None`) or the block scanner classifying
/// with a backend (`Scalar`: the portable classifier).
type Engine = Option<Backend>;

/// The reference scanner and the block scanner of every backend this machine has.
fn engines() -> Vec<Engine> {
    let mut all: Vec<Engine> = vec![None];
    all.extend(Backend::available().into_iter().map(Some));
    all
}

type Rows = Vec<Vec<(Vec<u8>, bool)>>;

/// Scans `data` the way a load does: chunks, start states, one scanner per chunk.
fn scan_chunked(
    data: &[u8],
    dialect: &Dialect,
    mode: ScanMode,
    chunk_size: usize,
    max_rows: usize,
    ncols: usize,
    engine: Engine,
) -> Result<Rows, ScanError> {
    let cfg = ScanConfig::new(dialect, mode).unwrap();
    let chunks = chunk_ranges(0, data.len(), chunk_size);
    let states = chunk_start_states(data, &chunks, &cfg, mode);
    let mut rows = Vec::new();
    for (r, st) in chunks.iter().zip(states) {
        let start = first_record_start(data, &cfg, r.start, st);
        if start >= r.end {
            continue;
        }
        let mut batch = FieldBatch::new(ncols);
        let mut scanner = match engine {
            None => Scanner::Reference(RefScanner::new(&cfg, data, start, r.end, ncols)),
            Some(b) if cfg.block_scannable() => Scanner::Blocks(BlockScanner::with_backend(
                b, &cfg, data, start, r.end, ncols,
            )),
            Some(_) => Scanner::new(&cfg, data, start, r.end, ncols),
        };
        loop {
            let more = scanner.next_batch(&mut batch, max_rows)?;
            for c in 0..ncols {
                let by_column: Vec<_> = batch.column(data, c).collect();
                let by_field: Vec<_> = (0..batch.rows()).map(|r| batch.field(data, r, c)).collect();
                assert_eq!(by_column, by_field, "column {c}");
            }
            for row in 0..batch.rows() {
                rows.push(
                    (0..ncols)
                        .map(|c| {
                            let (b, q) = batch.field(data, row, c);
                            (b.to_vec(), q)
                        })
                        .collect(),
                );
            }
            if !more {
                break;
            }
        }
    }
    Ok(rows)
}

/// A random RFC 4180 file and the values it holds.
fn random_file(rng: &mut StdRng, dialect: &Dialect) -> (Vec<u8>, Vec<Vec<Vec<u8>>>, usize) {
    let ncols = rng.random_range(1..6);
    let nrows = rng.random_range(0..40);
    let q = dialect.quote.unwrap();
    let d = dialect.delimiter;
    let pieces: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"hello".to_vec(),
        vec![d],
        vec![q],
        b"\n".to_vec(),
        b"\r\n".to_vec(),
        b" ".to_vec(),
        "é".as_bytes().to_vec(),
        "日本".as_bytes().to_vec(),
        b"0123456789".to_vec(),
        vec![b'x'; 70],
    ];
    let crlf = rng.random_bool(0.3);
    let mut out = Vec::new();
    let mut values = Vec::new();
    for _ in 0..nrows {
        let mut row = Vec::new();
        for c in 0..ncols {
            let mut v = Vec::new();
            for _ in 0..rng.random_range(0..4) {
                v.extend_from_slice(&pieces[rng.random_range(0..pieces.len())]);
            }
            let special = v
                .iter()
                .any(|&b| b == d || b == q || b == b'\n' || b == b'\r');
            let lone_empty = ncols == 1 && v.is_empty();
            if special || lone_empty || rng.random_bool(0.2) {
                out.push(q);
                for &b in &v {
                    if b == q {
                        out.push(q);
                    }
                    out.push(b);
                }
                out.push(q);
            } else {
                out.extend_from_slice(&v);
            }
            if c + 1 < ncols {
                out.push(d);
            }
            row.push(v);
        }
        if crlf {
            out.extend_from_slice(b"\r\n");
        } else {
            out.push(b'\n');
        }
        values.push(row);
    }
    if !out.is_empty() && rng.random_bool(0.3) {
        // no final record delimiter
        while out.last() == Some(&b'\n') || out.last() == Some(&b'\r') {
            out.pop();
        }
    }
    (out, values, ncols)
}

fn random_dialect(rng: &mut StdRng) -> Dialect {
    let delims = [b',', b'|', b'\t', b';', 0x01];
    let quotes = [b'"', b'\''];
    let q = quotes[rng.random_range(0..quotes.len())];
    Dialect {
        delimiter: delims[rng.random_range(0..delims.len())],
        quote: Some(q),
        escape: Some(q),
        ..Dialect::default()
    }
}

#[test]
fn chunked_scan_equals_csv_crate_on_random_rfc4180_files() {
    let mut rng = StdRng::seed_from_u64(2024);
    for case in 0..400 {
        let dialect = random_dialect(&mut rng);
        let (data, values, ncols) = random_file(&mut rng, &dialect);
        let expected: Vec<Vec<Vec<u8>>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(dialect.delimiter)
            .quote(dialect.quote.unwrap())
            .from_reader(&data[..])
            .byte_records()
            .map(|r| r.unwrap().iter().map(|f| f.to_vec()).collect())
            .collect();
        assert_eq!(
            expected, values,
            "generator and csv crate disagree (case {case})"
        );
        let sizes = [1, 2, 3, 7, 63, 64, 65, 100, 1000, 1 << 20];
        for &chunk in &sizes {
            for engine in engines() {
                let max_rows = rng.random_range(1..50);
                let got = scan_chunked(
                    &data,
                    &dialect,
                    ScanMode::Safe,
                    chunk,
                    max_rows,
                    ncols,
                    engine,
                )
                .unwrap_or_else(|e| {
                    panic!(
                        "case {case} chunk {chunk}: {e:?}\n{:?}",
                        String::from_utf8_lossy(&data)
                    )
                });
                let got: Vec<Vec<Vec<u8>>> = got
                    .into_iter()
                    .map(|r| r.into_iter().map(|(b, _)| b).collect())
                    .collect();
                assert_eq!(got, expected, "case {case} chunk {chunk} engine {engine:?}");
            }
        }
    }
}

#[test]
fn fast_mode_equals_safe_mode_without_quoted_newlines_and_fails_with_them() {
    let mut rng = StdRng::seed_from_u64(77);
    for case in 0..300 {
        let dialect = random_dialect(&mut rng);
        let (data, _, ncols) = random_file(&mut rng, &dialect);
        let safe =
            scan_chunked(&data, &dialect, ScanMode::Safe, 1 << 20, 1000, ncols, None).unwrap();
        let has_quoted_nl = safe
            .iter()
            .flatten()
            .any(|(b, q)| *q && b.iter().any(|&c| c == b'\n' || c == b'\r'));
        for (chunk, engine) in [1, 5, 64, 300, 1 << 20]
            .into_iter()
            .zip(engines().into_iter().cycle())
        {
            let fast = scan_chunked(&data, &dialect, ScanMode::Fast, chunk, 7, ncols, engine);
            if has_quoted_nl {
                let err = fast.expect_err("fast mode must refuse quoted newlines");
                assert_eq!(
                    err.kind,
                    wireload_csv::ScanErrorKind::QuotedRecordDelimiter,
                    "case {case}"
                );
            } else {
                assert_eq!(fast.unwrap(), safe, "case {case} chunk {chunk}");
            }
        }
    }
}

/// Random bytes from an alphabet rich in special characters.
fn random_bytes(rng: &mut StdRng, specials: &[u8]) -> Vec<u8> {
    let n = rng.random_range(0..300);
    (0..n)
        .map(|_| {
            if rng.random_bool(0.6) {
                specials[rng.random_range(0..specials.len())]
            } else {
                b'a' + rng.random_range(0..3)
            }
        })
        .collect()
}

#[test]
fn block_scanner_equals_reference_scanner_on_arbitrary_input() {
    let mut rng = StdRng::seed_from_u64(5);
    let dialects = [
        Dialect::default(),
        Dialect {
            escape: None,
            ..Dialect::default()
        },
        Dialect {
            quote: None,
            escape: None,
            ..Dialect::default()
        },
        Dialect {
            delimiter: b'|',
            quote: Some(b'\''),
            escape: Some(b'\''),
            ..Dialect::default()
        },
    ];
    for case in 0..20_000 {
        let dialect = &dialects[case % dialects.len()];
        let specials = [dialect.delimiter, b'"', b'\'', b'\n', b'\r'];
        let data = random_bytes(&mut rng, &specials);
        let ncols = rng.random_range(1..4);
        for mode in [ScanMode::Safe, ScanMode::Fast] {
            let max_rows = rng.random_range(1..10);
            let reference =
                scan_chunked(&data, dialect, mode, usize::MAX / 2, max_rows, ncols, None);
            for engine in engines().into_iter().skip(1) {
                let block = scan_chunked(
                    &data,
                    dialect,
                    mode,
                    usize::MAX / 2,
                    max_rows,
                    ncols,
                    engine,
                );
                assert_eq!(
                    block,
                    reference,
                    "case {case} {mode:?} {dialect:?} {engine:?} input {:?}",
                    String::from_utf8_lossy(&data)
                );
            }
        }
    }
}

#[test]
fn every_special_byte_at_every_position_of_two_blocks_scans_alike_on_every_backend() {
    // Records whose fields cross the 64-byte block boundary, with one special byte (or a
    // pair of them) planted at each position of the first 130 bytes.
    let base: Vec<u8> = b"1234567,abcdefghij,\"q,u\"\"o\",xyz\n".repeat(6);
    let dialects = [
        Dialect::default(),
        Dialect {
            quote: None,
            escape: None,
            ..Dialect::default()
        },
    ];
    let plants: [&[u8]; 7] = [b",", b"\"", b"\n", b"\r", b"\r\n", b"\"\"", b"\xFF"];
    for dialect in &dialects {
        for plant in plants {
            for pos in 0..130 {
                let mut data = base.clone();
                data.splice(pos..pos, plant.iter().copied());
                for mode in [ScanMode::Safe, ScanMode::Fast] {
                    let reference = scan_chunked(&data, dialect, mode, 1 << 20, 4, 4, None);
                    for engine in engines().into_iter().skip(1) {
                        let got = scan_chunked(&data, dialect, mode, 1 << 20, 4, 4, engine);
                        assert_eq!(got, reference, "{plant:?} at {pos}, {mode:?}, {engine:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn long_inputs_of_many_whole_blocks_scan_alike_on_every_backend() {
    // Thousands of records spanning many 64-byte blocks, mostly unquoted (the scan's
    // multi-block fast path), with rare quoted fields, doubled quotes, CRLFs, empty lines
    // and, in some inputs, one malformed record late in the input.
    let mut rng = StdRng::seed_from_u64(31);
    let mut scanned_rows = 0;
    for case in 0..24 {
        let ncols = rng.random_range(1..12);
        let mut data = Vec::new();
        for _ in 0..rng.random_range(500..3000) {
            for c in 0..ncols {
                match rng.random_range(0..200) {
                    0 => data.extend_from_slice(b"\"quo,ted\"\"\""),
                    1 => data.extend_from_slice(b"\"multi\nline\""),
                    _ => {
                        let n = rng.random_range(0..20);
                        data.extend((0..n).map(|i| b'a' + (i % 26) as u8));
                    }
                }
                if c + 1 < ncols {
                    data.push(b',');
                }
            }
            match rng.random_range(0..100) {
                0 => data.extend_from_slice(b"\r\n"),
                1 => data.extend_from_slice(b"\n\n"),
                _ => data.push(b'\n'),
            }
        }
        if case % 4 == 3 {
            let at = data.len() * 3 / 4;
            data.insert(at, b'"');
        }
        for mode in [ScanMode::Safe, ScanMode::Fast] {
            for max_rows in [1, 7, 2048] {
                let reference = scan_chunked(
                    &data,
                    &Dialect::default(),
                    mode,
                    1 << 30,
                    max_rows,
                    ncols,
                    None,
                );
                scanned_rows += reference.as_ref().map_or(0, |rows| rows.len());
                for engine in engines().into_iter().skip(1) {
                    let got = scan_chunked(
                        &data,
                        &Dialect::default(),
                        mode,
                        1 << 30,
                        max_rows,
                        ncols,
                        engine,
                    );
                    assert_eq!(
                        got, reference,
                        "case {case} {mode:?} rows {max_rows} {engine:?}"
                    );
                }
            }
        }
    }
    // most inputs scan without error: the comparison is over real records
    assert!(scanned_rows > 50_000, "only {scanned_rows} rows scanned");
}

#[test]
fn backslash_escape_dialect_scans_in_chunks() {
    // PostgreSQL CSV with ESCAPE '\': only \" and \\ are escapes inside quotes.
    let dialect = Dialect {
        escape: Some(b'\\'),
        ..Dialect::default()
    };
    let data = b"1,\"a\\\"b\"\n2,\"c\\\\\"\n3,\"x\\y\"\n4,\"multi\nline \\\" q\"\n5,plain\\\n";
    let expected: Vec<Vec<&[u8]>> = vec![
        vec![b"1", b"a\"b"],
        vec![b"2", b"c\\"],
        vec![b"3", b"x\\y"],
        vec![b"4", b"multi\nline \" q"],
        vec![b"5", b"plain\\"],
    ];
    for chunk in 1..data.len() + 2 {
        let rows = scan_chunked(data, &dialect, ScanMode::Safe, chunk, 2, 2, None).unwrap();
        let rows: Vec<Vec<&[u8]>> = rows
            .iter()
            .map(|r| r.iter().map(|(b, _)| &b[..]).collect())
            .collect();
        assert_eq!(rows, expected, "chunk {chunk}");
    }
}

proptest! {
    #[test]
    fn chunk_size_never_changes_the_result(seed in 0u64..1_000_000, chunk in 1usize..400) {
        let mut rng = StdRng::seed_from_u64(seed);
        let dialect = random_dialect(&mut rng);
        let (data, values, ncols) = random_file(&mut rng, &dialect);
        let got = scan_chunked(&data, &dialect, ScanMode::Safe, chunk, 3, ncols, Some(Backend::selected())).unwrap();
        let got: Vec<Vec<Vec<u8>>> = got.into_iter().map(|r| r.into_iter().map(|(b, _)| b).collect()).collect();
        prop_assert_eq!(got, values);
    }
}
