//! The block scanner of every SIMD backend this CPU has and the reference scanner agree on
//! every input, dialect and mode, and chunked scans agree with whole-input scans.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wireload_csv::reference::RefScanner;
use wireload_csv::{
    Backend, BlockScanner, Dialect, FieldBatch, ScanConfig, ScanError, ScanMode, Scanner,
    chunk_ranges, chunk_start_states, first_record_start,
};

type Rows = Vec<Vec<(Vec<u8>, bool)>>;

/// `engine`: `None` for the reference scanner, else the block scanner with that backend.
fn scan(
    data: &[u8],
    d: &Dialect,
    mode: ScanMode,
    chunk: usize,
    ncols: usize,
    engine: Option<Backend>,
) -> Result<Rows, ScanError> {
    let cfg = ScanConfig::new(d, mode).unwrap();
    let chunks = chunk_ranges(0, data.len(), chunk);
    let states = chunk_start_states(data, &chunks, &cfg, mode);
    let mut rows = Vec::new();
    for (r, st) in chunks.iter().zip(states) {
        let start = first_record_start(data, &cfg, r.start, st);
        if start >= r.end {
            continue;
        }
        let mut batch = FieldBatch::new(ncols);
        let mut s = match engine {
            None => Scanner::Reference(RefScanner::new(&cfg, data, start, r.end, ncols)),
            Some(b) if cfg.block_scannable() => Scanner::Blocks(BlockScanner::with_backend(
                b, &cfg, data, start, r.end, ncols,
            )),
            Some(_) => Scanner::new(&cfg, data, start, r.end, ncols),
        };
        loop {
            let more = s.next_batch(&mut batch, 3)?;
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

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let (head, data) = input.split_at(3);
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
    let d = &dialects[head[0] as usize % dialects.len()];
    let ncols = 1 + head[1] as usize % 4;
    let chunk = 1 + head[2] as usize;
    for mode in [ScanMode::Safe, ScanMode::Fast] {
        let reference = scan(data, d, mode, usize::MAX / 2, ncols, None);
        for b in Backend::available() {
            let whole = scan(data, d, mode, usize::MAX / 2, ncols, Some(b));
            assert_eq!(whole, reference, "{b}");
        }
        let whole = reference;
        if mode == ScanMode::Safe {
            // chunking never changes a successful result
            if let Ok(rows) = &whole {
                let b = Backend::selected();
                assert_eq!(&scan(data, d, mode, chunk, ncols, Some(b)).unwrap(), rows);
            }
        }
    }
});
