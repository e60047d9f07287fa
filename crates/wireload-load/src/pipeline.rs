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
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::Instant;

use wireload_csv::{
    BOM, ScanConfig, last_record_end, line_ends, line_of, reference::first_record, skip_bom,
};
use wireload_storage::{Table, TableDef};

use crate::limits::{check_lines, too_long};
use crate::options::LoadOptions;
use crate::parse::{Chunker, Chunks, CsvParse, Origin, Records, SNIPPET, lines_before};
use crate::reject::RejectLog;
use crate::source::{Block, Blocks, Input, Source};
use wireload_publish::{Appender, LoadControl, LoadReport, Published, Sink, Text, install};
use wireload_publish::{LoadError, Position};

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
    let (input, parse_ctl) = open(source, ctl, opts)?;
    let def = table.def();
    let (bytes, units, published, rejects) = match &input {
        Input::Whole(whole) => install(opts.threads, || {
            let data = whole.bytes();
            ctl.bytes_total.store(data.len() as u64, Relaxed);
            let start = data_start(data, &scan, opts.dialect.header, &file)?;
            check_whole(data, opts, &file)?;
            // the chunk tasks count the records' bytes
            ctl.bytes_done.fetch_add(start as u64, Relaxed);
            let sample = &data[start..(start + (1 << 20)).min(data.len())];
            let parse = CsvParse::new(def, opts, file.clone(), sample)?;
            // readers and other writers go on until the merge publishes
            let appender = Appender::begin(table, &file, opts.merge)
                .with_schedule(opts.schedule)?
                .with_memory_budget(opts.memory_budget);
            let origin = Origin {
                byte: 0,
                lines: 0,
                whole: true,
            };
            let records = Records {
                data,
                start,
                chunks: parse.chunker().chunks(data, start),
                lines: None,
                origin,
                release: Some(whole),
            };
            let (units, published) =
                appender.run(ctl, Some(data), rayon::current_num_threads(), |appender| {
                    parse.parse_window(records, 0, appender, ctl)
                })?;
            Ok::<_, LoadError>((data.len() as u64, units, published, parse.take_rejects()))
        })??,
        Input::Stream(_) => {
            let Input::Stream(blocks) = input else {
                unreachable!("matched above")
            };
            stream(table, blocks, &scan, opts, ctl, &parse_ctl, &file)?
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
        rejected: rejects.count,
        rejects: rejects.kept,
    })
}

/// Opens `source` (in `opts.encoding`) for a load watched by `ctl`: the input, and the
/// control its parse reports progress to. A compressed (or transcoded) file's progress is
/// the file's bytes its decoder consumed, added to `ctl.bytes_done` as it reads; its parse
/// then counts into a control of its own (sharing `ctl`'s cancel flag), so decoded bytes
/// are not added to it.
pub(crate) fn open(
    source: &Source,
    ctl: &LoadControl,
    opts: &LoadOptions,
) -> Result<(Input, LoadControl), LoadError> {
    let input = source.open_encoded(opts.encoding, &ctl.bytes_done)?;
    let parse_ctl = match &input {
        Input::Stream(blocks) if blocks.decoded() => LoadControl {
            cancel: ctl.cancel.clone(),
            ..LoadControl::default()
        },
        _ => ctl.clone(),
    };
    Ok((input, parse_ctl))
}

/// Stores the total bytes of a streamed input in `ctl`, when known: a compressed file's
/// size, else the stream's length.
pub(crate) fn store_stream_total(blocks: &Blocks, ctl: &LoadControl) {
    if let Some(size) = blocks.compressed_size().or(blocks.size()) {
        ctl.bytes_total.store(size, Relaxed);
    }
}

/// Loads a stream window by window; returns (bytes read, units, what was published, the
/// rejected records). `parse_ctl` is what the parse reports progress to (see [`open`]).
fn stream(
    table: &Table,
    blocks: Blocks,
    scan: &ScanConfig,
    opts: &LoadOptions,
    ctl: &LoadControl,
    parse_ctl: &LoadControl,
    file: &str,
) -> Result<(u64, usize, Published, RejectLog), LoadError> {
    store_stream_total(&blocks, ctl);
    let appender = Appender::begin(table, file, opts.merge)
        .with_schedule(opts.schedule)?
        .with_memory_budget(opts.memory_budget);
    let threads = install(opts.threads, rayon::current_num_threads)?;
    let ((byte, units, rejects), published) = appender.run(ctl, None, threads, |appender| {
        stream_windows(table.def(), blocks, scan, opts, parse_ctl, file, appender)
    })?;
    Ok((byte, units, published, rejects))
}

/// Parses a stream window by window, handing each chunk's buffers to `sink`; returns
/// (bytes read, units, the rejected records). Adds the bytes it parses to `ctl.bytes_done`
/// (the total is the caller's to store).
pub(crate) fn stream_windows(
    def: &TableDef,
    mut blocks: Blocks,
    scan: &ScanConfig,
    opts: &LoadOptions,
    ctl: &LoadControl,
    file: &str,
    sink: &dyn Sink,
) -> Result<(u64, usize, RejectLog), LoadError> {
    let mut window = Block::default();
    let mut eof = false;
    // the first window: a block (or 1 MiB) for a sample, the whole BOM, and the whole
    // header record with its record delimiter
    let first = blocks.block().min(1 << 20).max(BOM.len());
    let header_read = |w: &[u8]| match header_end(w, scan, skip_bom(w), file) {
        Ok(Some(next)) => {
            next > 0
                && matches!(w[next - 1], b'\n' | b'\r')
                && (w[next - 1] != b'\r' || next < w.len())
        }
        Ok(None) | Err(_) => false,
    };
    loop {
        let header = !opts.dialect.header || header_read(window.bytes());
        if eof || (window.bytes().len() >= first && header) {
            break;
        }
        // a header not ended yet must not grow past the limit
        let bom = skip_bom(window.bytes());
        if let Some(limit) = opts.max_line_bytes
            && !header
            && window.bytes().len() - bom > limit + 1
        {
            return Err(too_long(file, 1, bom as u64, limit));
        }
        match blocks.next_block()? {
            Some(b) => grow(&blocks, &mut window, b),
            None => eof = true,
        }
    }
    let start = data_start(window.bytes(), scan, opts.dialect.header, file)?;
    // the chunk tasks count the records' bytes
    ctl.bytes_done.fetch_add(start as u64, Relaxed);
    let sample_end = (start + (1 << 20)).min(window.bytes().len());
    let parse = CsvParse::new(
        def,
        opts,
        file.to_string(),
        &window.bytes()[start..sample_end],
    )?;
    let recycler = blocks.recycler();
    let (tx, windows) = sync_channel(1);
    let cutting = Cutting {
        blocks,
        window,
        start,
        eof,
        chunker: parse.chunker(),
        limit: opts.max_line_bytes,
        file: file.to_string(),
    };
    std::thread::Builder::new()
        .name("wireload-cut".into())
        .spawn(move || cutting.run(tx))
        .map_err(|e| LoadError::Threads {
            threads: 1,
            message: e.to_string(),
        })?;
    let (mut byte, mut units) = (0u64, 0usize);
    loop {
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        if sink.failed() {
            // the load fails with the consumer's error: read no more
            return Err(LoadError::Options("a merge step failed".into()));
        }
        let w = match windows.recv() {
            Ok(Ok(Some(w))) => w,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(LoadError::Options(
                    "internal: the stream's cutting thread stopped early".into(),
                ));
            }
        };
        sink.ready()?;
        if let Some(&before) = w.lines.first() {
            let text = Text {
                data: &w.block.bytes()[w.start..w.cut],
                byte: w.origin.byte + w.start as u64,
                lines: w.origin.lines + before,
            };
            if sink.take_text(units, text)? {
                ctl.bytes_done.fetch_add(text.data.len() as u64, Relaxed);
                units += 1;
                byte = w.origin.byte + w.cut as u64;
                recycler.recycle(w.block);
                continue;
            }
        }
        let records = Records {
            data: &w.block.bytes()[..w.cut],
            start: w.start,
            chunks: w.chunks,
            lines: Some(w.lines),
            origin: w.origin,
            release: None,
        };
        // parsed on the pool while the cutting thread prepares the next window
        units += install(opts.threads, || {
            parse.parse_window(records, units, sink, ctl)
        })??;
        byte = w.origin.byte + w.cut as u64;
        recycler.recycle(w.block);
    }
    Ok((byte, units, parse.take_rejects()))
}

/// A window cut and chunked, ready to parse.
struct Window {
    /// The bytes; the window is `block.bytes()[..cut]`.
    block: Block,
    /// Where its first record starts.
    start: usize,
    /// Where its last complete record ends.
    cut: usize,
    /// Its chunks.
    chunks: Chunks,
    /// The line ends before each chunk.
    lines: Vec<u64>,
    /// Where it lies in the input.
    origin: Origin,
}

/// The thread that cuts a stream into windows, one ahead of the parse: it waits for
/// blocks, finds each window's last complete record, chunks it and counts its lines while
/// the window before is parsed.
struct Cutting {
    blocks: Blocks,
    /// What is read but not yet sent.
    window: Block,
    /// Where its first record starts.
    start: usize,
    /// The stream has ended: `window` is the last.
    eof: bool,
    chunker: Chunker,
    /// the longest record (and line) the load takes
    limit: Option<usize>,
    /// the input's name in errors
    file: String,
}

impl Cutting {
    /// Sends the windows, then None; an error ends the stream. Stops when the parse is gone.
    fn run(mut self, tx: SyncSender<Result<Option<Window>, LoadError>>) {
        // the chunks' quote states and lines are counted on this thread, not queued behind
        // the parse on its pool (`chunk_states_and_lines`). A rayon pool of this thread
        // alone (`use_current_thread`) did that before and leaked about 7 KB per load.
        let result = self.windows(&tx);
        let _ = tx.send(result.map(|()| None));
    }

    fn windows(
        &mut self,
        tx: &SyncSender<Result<Option<Window>, LoadError>>,
    ) -> Result<(), LoadError> {
        let (mut byte, mut lines) = (0u64, 0u64);
        loop {
            // the window ends after its last complete record, unless the stream has ended
            let (cut, chunks, counts) = if self.eof {
                let data = self.window.bytes();
                let (chunks, counts) = self.chunker.chunks_and_lines(data, self.start, data.len());
                (data.len(), chunks, counts)
            } else {
                match cut(&self.chunker, self.window.bytes(), self.start) {
                    Some(cut) => cut,
                    None => {
                        // no complete record yet: read more, unless the record (from
                        // `start`, not ended before the window's last byte) is too long
                        let data = self.window.bytes();
                        if let Some(limit) = self.limit
                            && data.len() - self.start > limit + 1
                        {
                            let line = lines + line_of(data, self.start);
                            let at = byte + self.start as u64;
                            return Err(too_long(&self.file, line, at, limit));
                        }
                        match self.blocks.next_block()? {
                            Some(b) => grow(&self.blocks, &mut self.window, b),
                            None => self.eof = true,
                        }
                        continue;
                    }
                }
            };
            let data = self.window.bytes();
            // the first window's header is checked too (records start at line starts)
            let from = if byte == 0 {
                skip_bom(data)
            } else {
                self.start
            };
            check_lines(data, from, cut, self.limit, &self.file, byte, lines)?;
            let origin = Origin {
                byte,
                lines,
                whole: false,
            };
            // counted with the quotes, for the next window's origin and this one's rows
            let (chunk_lines, window_lines) =
                lines_before(self.window.bytes(), self.start, &counts);
            byte += cut as u64;
            lines += window_lines;
            // the unparsed rest goes in front of the next block
            let rest = self.window.bytes()[cut..].to_vec();
            let window = Window {
                block: std::mem::take(&mut self.window),
                start: self.start,
                cut,
                chunks,
                lines: chunk_lines,
                origin,
            };
            if tx.send(Ok(Some(window))).is_err() || self.eof {
                return Ok(());
            }
            self.start = 0;
            match self.blocks.next_block()? {
                Some(mut b) => {
                    b.prepend(&rest);
                    self.window = b;
                }
                None => {
                    self.eof = true;
                    if rest.is_empty() {
                        return Ok(());
                    }
                    self.window.extend(&rest);
                }
            }
        }
    }
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

/// Where the window `data` (records from `start`) is cut, its chunks up to there and the line
/// ends in each: after its last complete record, leaving at least the last byte for the
/// next window (so a `\r\n` is never split); None when no record ends in it.
fn cut(chunker: &Chunker, data: &[u8], start: usize) -> Option<(usize, Chunks, Vec<u64>)> {
    if data.len() <= start + 1 {
        return None;
    }
    let end = data.len() - 1;
    let ((mut chunks, mut states), mut lines) = chunker.chunks_and_lines(data, start, end);
    let (last, state) = (chunks.last()?, *states.last()?);
    let found = last_record_end(data, end, &chunker.scan, last.start, state).or_else(|| {
        // a record longer than a chunk: look from the window's start
        last_record_end(data, end, &chunker.scan, start, Default::default())
    })?;
    // a `\r\n` stays whole: the `\n` goes with the record it ends
    let cut = if data[found - 1] == b'\r' && data[found] == b'\n' {
        found + 1
    } else {
        found
    };
    // the chunks of `data[..cut]` are those of `data[..end]` that start before the cut
    // (chunks are cut at fixed offsets from `start`), the last one ending there
    let n = chunks.iter().take_while(|r| r.start < cut).count();
    chunks.truncate(n);
    states.truncate(n);
    lines.truncate(n);
    if let (Some(last), Some(ends)) = (chunks.last_mut(), lines.last_mut()) {
        // the line ends counted past the cut go with the next window; a cut after a
        // `\r\n` whose `\n` is the window's last byte takes that line end in
        if cut < last.end {
            *ends -= line_ends(data, cut..last.end);
        } else {
            *ends += line_ends(data, last.end..cut);
        }
        last.end = cut;
    }
    Some((cut, (chunks, states), lines))
}

/// Fails when a line of the whole input `data` (its header too) is longer than
/// `opts.max_line_bytes`.
pub(crate) fn check_whole(data: &[u8], opts: &LoadOptions, file: &str) -> Result<(), LoadError> {
    check_lines(
        data,
        skip_bom(data),
        data.len(),
        opts.max_line_bytes,
        file,
        0,
        0,
    )
}

/// Where the data records of `data` start: after a BOM and, with a header, after the
/// header record (an error names the header's problem). An input without any record has
/// no data records (`data.len()`), as PostgreSQL and DuckDB load an empty file with a
/// header expected as zero rows.
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
    Ok(header_end(data, scan, start, file)?.unwrap_or(data.len()))
}

/// Where the record after the header (the first record at or after `start`) starts; None
/// when `data` has no record there.
fn header_end(
    data: &[u8],
    scan: &ScanConfig,
    start: usize,
    file: &str,
) -> Result<Option<usize>, LoadError> {
    match first_record(scan, data, start) {
        Ok(Some((_, next))) => Ok(Some(next)),
        Ok(None) => Ok(None),
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
