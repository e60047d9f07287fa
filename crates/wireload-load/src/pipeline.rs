//! The CSV load of one source: open, header, then windows of whole records through the
//! parse stage, then the append/publish stage.
//!
//! A mapped file (or bytes in memory) is one window: the fast path. A stream is read in
//! blocks; each window is what is left of the last one plus the next block, cut after its
//! last complete record (found with the chunks' quote states, so a quoted newline is never
//! taken for a record's end), and the records after the cut wait for the next block. Every
//! window starts at a record boundary, outside quotes: the same chunking and parallel quote
//! context work on each.
//!
//! ```text
//!   stream:  [block 0 ............][block 1 ............][block 2 ....]
//!   windows: [records ........|rest][rest+block 1 ...|rest][rest+block 2]
//!                             ^ last record end outside quotes
//! ```

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use wireload_csv::{
    BOM, ScanConfig, last_record_end, line_ends, line_of, reference::first_record, skip_bom,
};
use wireload_storage::Table;

use crate::error::{LoadError, Position};
use crate::options::{LoadControl, LoadOptions, LoadReport};
use crate::parse::{CsvParse, Origin, SNIPPET};
use crate::pool::install;
use crate::publish::{Appender, Published};
use crate::source::{Block, Blocks, Input, Source};

/// See [`crate::load_into`].
pub(crate) fn load(
    table: &Table,
    source: &Source,
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    let t0 = Instant::now();
    let scan = ScanConfig::new(&opts.dialect, opts.mode).map_err(|e| LoadError::Options(e.0))?;
    let file = source.name();
    let input = source.open()?;
    let def = table.def();
    let (bytes, units, published) = match &input {
        Input::Whole(whole) => install(opts.threads, || {
            let data = whole.bytes();
            ctl.bytes_total.store(data.len() as u64, Relaxed);
            let start = data_start(data, &scan, opts.dialect.header, &file)?;
            let sample = &data[start..(start + (1 << 20)).min(data.len())];
            let parse = CsvParse::new(def, opts, file.clone(), sample)?;
            // readers and other writers go on until the merge publishes
            let appender =
                Appender::begin(table, &file, opts.merge).with_schedule(opts.schedule)?;
            let origin = Origin {
                byte: 0,
                lines: 0,
                whole: true,
            };
            let (units, published) =
                appender.run(ctl, Some(data), rayon::current_num_threads(), |appender| {
                    parse.parse_window(data, start, origin, 0, appender, ctl)
                })?;
            Ok::<_, LoadError>((data.len() as u64, units, published))
        })??,
        Input::Stream(_) => {
            let Input::Stream(blocks) = input else {
                unreachable!("matched above")
            };
            stream(table, blocks, &scan, opts, ctl, &file)?
        }
    };
    Ok(LoadReport {
        table: table.name().to_string(),
        rows: published.rows,
        bytes,
        seconds: t0.elapsed().as_secs_f64(),
        chunks: units,
        merge_seconds: published.merge_seconds,
        merge_steps: published.merge_steps,
    })
}

/// Loads a stream window by window; returns (bytes read, units, what was published).
fn stream(
    table: &Table,
    mut blocks: Blocks,
    scan: &ScanConfig,
    opts: &LoadOptions,
    ctl: &LoadControl,
    file: &str,
) -> Result<(u64, usize, Published), LoadError> {
    if let Some(size) = blocks.size() {
        ctl.bytes_total.store(size, Relaxed);
    }
    let def = table.def();
    let mut window = Block::default();
    let mut eof = false;
    // the first window: a block (or 1 MiB) for a sample, the whole BOM, and the whole
    // header record with its record delimiter
    let first = blocks.block().min(1 << 20).max(BOM.len());
    let header_read = |w: &[u8]| match data_start(w, scan, true, file) {
        Ok(next) => {
            next > 0
                && matches!(w[next - 1], b'\n' | b'\r')
                && (w[next - 1] != b'\r' || next < w.len())
        }
        Err(_) => false,
    };
    loop {
        let enough =
            window.bytes().len() >= first && (!opts.dialect.header || header_read(window.bytes()));
        if eof || enough {
            break;
        }
        match blocks.next_block()? {
            Some(b) => grow(&blocks, &mut window, b),
            None => eof = true,
        }
    }
    let start = data_start(window.bytes(), scan, opts.dialect.header, file)?;
    let sample_end = (start + (1 << 20)).min(window.bytes().len());
    let parse = CsvParse::new(
        def,
        opts,
        file.to_string(),
        &window.bytes()[start..sample_end],
    )?;
    let appender = Appender::begin(table, file, opts.merge).with_schedule(opts.schedule)?;
    let threads = install(opts.threads, rayon::current_num_threads)?;
    let ((byte, units), published) = appender.run(ctl, None, threads, |appender| {
        let (mut byte, mut lines, mut units) = (0u64, 0u64, 0usize);
        let mut start = start;
        loop {
            if ctl.cancel.load(Relaxed) {
                return Err(LoadError::Cancelled);
            }
            if appender.merge_failed() {
                // the load fails with the merge step's error: read no more
                return Err(LoadError::Options("a merge step failed".into()));
            }
            // the window ends after its last complete record, unless the stream has ended
            let cut = if eof {
                window.bytes().len()
            } else {
                match cut(&parse, window.bytes(), start) {
                    Some(cut) => cut,
                    None => {
                        // no complete record yet: read more
                        match blocks.next_block()? {
                            Some(b) => grow(&blocks, &mut window, b),
                            None => eof = true,
                        }
                        continue;
                    }
                }
            };
            let origin = Origin {
                byte,
                lines,
                whole: false,
            };
            // parsed on the pool; the stream is read on this thread, between windows
            units += install(opts.threads, || {
                parse.parse_window(&window.bytes()[..cut], start, origin, units, appender, ctl)
            })??;
            byte += cut as u64;
            lines += line_ends(window.bytes(), 0..cut);
            if eof {
                break;
            }
            // the next window: the next block with the unparsed rest put in front of it
            let next = blocks.next_block()?;
            start = 0;
            match next {
                Some(mut b) => {
                    b.prepend(&window.bytes()[cut..]);
                    blocks.recycle(std::mem::replace(&mut window, b));
                }
                None => {
                    eof = true;
                    window.advance(cut);
                    if window.bytes().is_empty() {
                        break;
                    }
                }
            }
        }
        Ok((byte, units))
    })?;
    Ok((byte, units, published))
}

/// Appends block `b` to `window` (the block becomes the window when the window is empty).
fn grow(blocks: &Blocks, window: &mut Block, b: Block) {
    if window.bytes().is_empty() {
        blocks.recycle(std::mem::replace(window, b));
    } else {
        window.extend(b.bytes());
        blocks.recycle(b);
    }
}

/// Where the window `data` (records from `start`) is cut: after its last complete record,
/// leaving at least the last byte for the next window (so a `\r\n` is never split); None
/// when no record ends in it.
fn cut(parse: &CsvParse<'_>, data: &[u8], start: usize) -> Option<usize> {
    if data.len() <= start + 1 {
        return None;
    }
    let end = data.len() - 1;
    let (chunks, states) = parse.chunks(&data[..end], start);
    let (last, state) = (chunks.last()?, *states.last()?);
    let found = last_record_end(data, end, &parse.scan, last.start, state).or_else(|| {
        // a record longer than a chunk: look from the window's start
        last_record_end(data, end, &parse.scan, start, Default::default())
    })?;
    // a `\r\n` stays whole: the `\n` goes with the record it ends
    Some(if data[found - 1] == b'\r' && data[found] == b'\n' {
        found + 1
    } else {
        found
    })
}

/// Where the data records of `data` start: after a BOM and, with a header, after the
/// header record (an error names the header's problem).
pub fn data_start(
    data: &[u8],
    scan: &ScanConfig,
    header: bool,
    file: &str,
) -> Result<usize, LoadError> {
    let start = skip_bom(data);
    if !header {
        return Ok(start);
    }
    match first_record(scan, data, start) {
        Ok(Some((_, next))) => Ok(next),
        Ok(None) => Err(LoadError::Syntax {
            pos: Box::new(Position {
                file: file.to_string(),
                line: 1,
                column: 1,
                column_name: None,
                byte: start as u64,
            }),
            message: "the input is empty, but a header record was expected".into(),
            text: String::new(),
            expected: "a header record".into(),
        }),
        Err(e) => Err(LoadError::Syntax {
            pos: Box::new(Position {
                file: file.to_string(),
                line: line_of(data, e.at),
                column: e.field,
                column_name: None,
                byte: e.at as u64,
            }),
            message: format!("in the header: {}", e.kind),
            text: String::from_utf8_lossy(&data[e.at..(e.at + SNIPPET).min(data.len())])
                .into_owned(),
            expected: e.expected(),
        }),
    }
}
