//! The server side of a push: every frame is validated (header, IPC payload, schema and
//! types, dictionaries sorted and unique with every entry used, codes in range, NOT NULL,
//! lengths, decimal precision, date and timestamp ranges, fragment and row counts) and
//! every fragment becomes a unit of the append/publish stage, whose dictionary step merges
//! client dictionaries into the partitions' dictionaries and encodes plain fragment columns
//! (the server's sort step). A text fragment (`auto`'s windows of records sent unparsed)
//! is parsed by the loader's CSV parse stage into one unit, its errors named by the file,
//! line and byte the frame gives. The load publishes only after the client's end frame checked
//! out: a malformed, truncated or interrupted push publishes nothing. A `seq` push's files
//! arrive whole, each file's bytes together, and load as a local load of those files.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, DictionaryArray, PrimitiveArray};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow::datatypes::{DataType, Field, Schema, UInt8Type, UInt16Type, UInt32Type};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use wireload_load::{Dialect, LoadOptions, Source, parse_text};
use wireload_publish::{
    Appender, LoadControl, LoadError, MergeStrategy, Schedule, Sites, Text, check_pushed_column,
    pool, pool_cpu_seconds, thread_cpu_seconds,
};
use wireload_storage::{Partitioning, StoredAs, Table, TableDef};

use crate::PushError;
use crate::account::MachineLoad;
use crate::protocol::{
    Described, Frame, Hello, Mode, Reply, Steps, WireColumn, WireDialect, decode_batch, from_json,
};

/// One frame as it arrived: its header (JSON) and payload.
#[derive(Debug, Clone, Default)]
pub struct RawFrame {
    /// The `app_metadata`: a [`Frame`] in JSON.
    pub header: Bytes,
    /// The `data_body`.
    pub body: Bytes,
}

/// What a push loaded.
#[derive(Debug, Clone)]
pub struct Ingested {
    /// Rows added.
    pub rows: u64,
    /// Payload bytes received (headers and bodies).
    pub bytes_received: u64,
    /// Seconds from the first frame to the publication.
    pub seconds: f64,
    /// The server's CPU seconds per step.
    pub steps: Steps,
}

impl Ingested {
    /// The final reply of a push.
    pub fn reply(&self) -> Reply {
        Reply::Done {
            rows: self.rows,
            bytes_received: self.bytes_received,
            seconds: self.seconds,
            steps: self.steps.clone(),
        }
    }
}

/// The table as a client of a push sees it: columns and which it may send encoded.
pub fn describe(table: &Table, max_frame_bytes: u64) -> Described {
    let def = table.def();
    let stored_as = table.snapshot().stored_as.clone();
    let key = match def.partitioning {
        Partitioning::Single => None,
        Partitioning::Hash { column, .. } => Some(column),
    };
    Described {
        table: def.name.clone(),
        columns: def
            .schema
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| WireColumn {
                name: col.name.clone(),
                ty: col.ty,
                nullable: col.nullable,
                encodable: stored_as.get(c) != Some(&StoredAs::Plain)
                    && Some(c) != key
                    && wireload_storage::dictionary::is_supported(&col.ty.arrow_type())
                    && wireload_storage::dictionary_type(&col.ty),
            })
            .collect(),
        max_frame_bytes,
        text: !def.indexes.iter().any(|i| i.unique),
    }
}

/// Runs one push into `table`: frames come from `frames` in order (running out before the
/// end frame, or an error in it, fails the push), `progress` gets the `auto`
/// mode's feedback. Validation runs on `threads` threads; publishes when the end frame
/// checks out, and nothing otherwise.
pub fn ingest(
    table: &Table,
    hello: &Hello,
    frames: impl Iterator<Item = Result<RawFrame, PushError>> + Send,
    progress: &(dyn Fn(Reply) + Sync),
    ctl: &LoadControl,
    threads: usize,
) -> Result<Ingested, PushError> {
    let started = Instant::now();
    match hello.mode {
        Mode::Seq => ingest_file(table, hello, frames, ctl, threads, started),
        Mode::Pipe => Err(PushError::Protocol(
            "pipe mode uses the PostgreSQL protocol's COPY, not a push".into(),
        )),
        _ => ingest_fragments(table, hello, frames, progress, ctl, threads, started),
    }
}

/// A dictionary a client sent for one partition and column, and which entries codes used.
struct ClientDictionary {
    values: ArrayRef,
    used: Mutex<Vec<u64>>,
}

/// State the fragment tasks share.
struct Shared<'a> {
    def: &'a TableDef,
    file: &'a str,
    encodable: Vec<bool>,
    /// the first error (the push fails with it)
    error: Mutex<Option<PushError>>,
    failed: AtomicBool,
    /// fragments being validated, and a wait for a free slot
    in_flight: Mutex<usize>,
    freed: Condvar,
    validate_ns: AtomicU64,
    /// CPU of parsing text fragments
    parse_ns: AtomicU64,
    /// rows of text fragments
    text_rows: AtomicU64,
    validated: AtomicU64,
}

impl Shared<'_> {
    fn fail(&self, e: PushError) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
        self.failed.store(true, Relaxed);
    }
}

#[allow(clippy::too_many_arguments)]
fn ingest_fragments(
    table: &Table,
    hello: &Hello,
    frames: impl Iterator<Item = Result<RawFrame, PushError>> + Send,
    progress: &(dyn Fn(Reply) + Sync),
    ctl: &LoadControl,
    threads: usize,
    started: Instant,
) -> Result<Ingested, PushError> {
    let def = table.def();
    let described = describe(table, 0);
    let shared = Shared {
        def,
        file: &hello.file,
        encodable: described.columns.iter().map(|c| c.encodable).collect(),
        error: Mutex::new(None),
        failed: AtomicBool::new(false),
        in_flight: Mutex::new(0),
        freed: Condvar::new(),
        validate_ns: AtomicU64::new(0),
        parse_ns: AtomicU64::new(0),
        text_rows: AtomicU64::new(0),
        validated: AtomicU64::new(0),
    };
    // text fragments are records without a header
    let dialect = hello.dialect.as_ref().map(|d| Dialect {
        header: false,
        ..load_dialect(d)
    });
    let names = file_names(hello);
    let appender = Appender::begin(table, &hello.file, MergeStrategy::Chunk)
        .with_schedule(Schedule::Interleaved)?;
    let work = pool(threads)?;
    let dictionary_cpu = Mutex::new(0.0f64);
    let mut received = 0u64;
    let mut load = MachineLoad::new();
    // the load threads' CPU when the busy fraction was last measured, and when; the
    // fraction then (measured over BUSY_WINDOW at least: /proc/stat counts 10 ms ticks)
    let mut last_report = (crate::account::load_threads_cpu_seconds(), Instant::now());
    let (mut busy, mut loading) = (0.0f64, 0.0f64);
    let run = appender.run(ctl, None, threads, |appender| {
        let mut all: Vec<Arc<ClientDictionary>> = Vec::new();
        let mut current: HashMap<usize, Arc<ClientDictionary>> = HashMap::new();
        // pieces of a dictionary that has more to come, per column
        let mut pieces: HashMap<usize, Vec<ArrayRef>> = HashMap::new();
        let (mut partition, mut next_fragment, mut rows) = (0u64, 0u64, 0u64);
        let mut ended = None;
        work.in_place_scope(|scope| {
            for frame in frames {
                if shared.failed.load(Relaxed) || ctl.cancel.load(Relaxed) {
                    break;
                }
                let frame = match frame {
                    Ok(f) => f,
                    Err(e) => {
                        shared.fail(e);
                        break;
                    }
                };
                received += (frame.header.len() + frame.body.len()) as u64;
                let header: Frame = match from_json(&frame.header) {
                    Ok(h) => h,
                    Err(e) => {
                        shared.fail(e);
                        break;
                    }
                };
                if ended.is_some() {
                    shared.fail(PushError::Protocol("a frame after the end frame".into()));
                    break;
                }
                let fragments_before = next_fragment;
                let step = match header {
                    Frame::Dictionary {
                        partition: p,
                        column,
                        entries,
                        last,
                    } => {
                        let t0 = thread_cpu_seconds();
                        let r = advance(&mut partition, p, &mut current).and_then(|()| {
                            if p != partition
                                || (!pieces.is_empty() && !pieces.contains_key(&column))
                            {
                                return Err(PushError::Protocol(
                                    "a dictionary's pieces are interleaved with other frames"
                                        .into(),
                                ));
                            }
                            let piece = dictionary_piece(&shared, column, entries, &frame.body)?;
                            pieces.entry(column).or_default().push(piece);
                            if !last {
                                return Ok(());
                            }
                            let parts = pieces.remove(&column).unwrap_or_default();
                            let d = dictionary(&shared, column, parts)?;
                            if current.insert(column, Arc::clone(&d)).is_some() {
                                return Err(PushError::Protocol(format!(
                                    "a second dictionary of column {} in partition {p}",
                                    column + 1
                                )));
                            }
                            all.push(d);
                            Ok(())
                        });
                        *dictionary_cpu.lock().unwrap_or_else(|p| p.into_inner()) +=
                            thread_cpu_seconds() - t0;
                        r
                    }
                    Frame::Fragment {
                        partition: p,
                        fragment,
                        rows: n,
                        encoded,
                    } => advance(&mut partition, p, &mut current).and_then(|()| {
                        in_order("fragment", !pieces.is_empty(), fragment, next_fragment)?;
                        let dictionaries = encoded
                            .iter()
                            .enumerate()
                            .map(|(i, &c)| {
                                if i > 0 && encoded[i - 1] >= c {
                                    return Err(PushError::Protocol(
                                        "encoded columns are not ascending".into(),
                                    ));
                                }
                                current.get(&c).cloned().map(|d| (c, d)).ok_or_else(|| {
                                    PushError::Protocol(format!(
                                        "fragment {fragment} has column {} encoded, but \
                                         partition {p} has no dictionary of it",
                                        c + 1
                                    ))
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        let first_row = rows;
                        rows = rows
                            .checked_add(n)
                            .ok_or_else(|| PushError::Protocol("row count overflows".into()))?;
                        next_fragment += 1;
                        wait_for_room(&shared, threads);
                        let shared = &shared;
                        scope.spawn(move |_| {
                            let _place = InFlight(shared);
                            let t0 = thread_cpu_seconds();
                            if !shared.failed.load(Relaxed) {
                                let unit = fragment_batch(
                                    shared,
                                    &frame.body,
                                    n,
                                    first_row,
                                    &dictionaries,
                                )
                                .and_then(|batch| {
                                    let sites = if appender.wants_sites() {
                                        Sites::Rows {
                                            rows: Some(vec![(first_row..first_row + n).collect()]),
                                        }
                                    } else {
                                        Sites::None
                                    };
                                    Ok(appender.unit_of_batch(
                                        fragment as usize,
                                        &batch,
                                        sites,
                                        None,
                                    )?)
                                });
                                match unit {
                                    Ok(u) => appender.accept(fragment as usize, u),
                                    Err(e) => shared.fail(e),
                                }
                            }
                            shared
                                .validate_ns
                                .fetch_add(((thread_cpu_seconds() - t0) * 1e9) as u64, Relaxed);
                        });
                        Ok(())
                    }),
                    Frame::Text {
                        fragment,
                        file,
                        byte,
                        lines,
                        len,
                        lz4,
                    } => (|| {
                        in_order("text fragment", !pieces.is_empty(), fragment, next_fragment)?;
                        let dialect = dialect.as_ref().ok_or_else(|| {
                            PushError::Protocol(
                                "a text fragment in a push without the files' CSV dialect".into(),
                            )
                        })?;
                        if appender.wants_sites() {
                            return Err(PushError::Protocol(
                                "a text fragment into a table with a unique key (the server \
                                 does not take text for it)"
                                    .into(),
                            ));
                        }
                        let name = usize::try_from(file)
                            .ok()
                            .and_then(|f| names.get(f))
                            .ok_or_else(|| {
                                PushError::Protocol(format!(
                                    "text of file {file}: the push has {} files",
                                    names.len()
                                ))
                            })?;
                        let data = text_payload(&frame.body, len, lz4)?;
                        next_fragment += 1;
                        wait_for_room(&shared, threads);
                        let shared = &shared;
                        scope.spawn(move |_| {
                            let _place = InFlight(shared);
                            let t0 = thread_cpu_seconds();
                            if !shared.failed.load(Relaxed) {
                                let text = Text {
                                    data: &data,
                                    byte,
                                    lines,
                                };
                                match parse_text(
                                    appender,
                                    dialect,
                                    name,
                                    text,
                                    fragment as usize,
                                    ctl,
                                ) {
                                    Ok(rows) => {
                                        shared.text_rows.fetch_add(rows, Relaxed);
                                    }
                                    Err(e) => shared.fail(PushError::Load(e)),
                                }
                            }
                            shared
                                .parse_ns
                                .fetch_add(((thread_cpu_seconds() - t0) * 1e9) as u64, Relaxed);
                        });
                        Ok(())
                    })(),
                    Frame::End {
                        fragments,
                        rows: sent_rows,
                        bytes,
                    } => {
                        // the rows of fragment frames: text ones are counted as they parse
                        if fragments != next_fragment || sent_rows != rows {
                            Err(PushError::Protocol(format!(
                                "the client says it sent {fragments} fragments of \
                                 {sent_rows} rows; {next_fragment} fragments of {rows} rows \
                                 arrived"
                            )))
                        } else {
                            ended = Some(bytes);
                            Ok(())
                        }
                    }
                    Frame::Raw { .. } => Err(PushError::Protocol(
                        "a raw frame in a push of fragments".into(),
                    )),
                };
                if let Err(e) = step {
                    shared.fail(e);
                    break;
                }
                if next_fragment != fragments_before && next_fragment.is_multiple_of(4) {
                    let mut steps = Steps::default();
                    steps.add("validate", shared.validate_ns.load(Relaxed) as f64 * 1e-9);
                    steps.add("parse", shared.parse_ns.load(Relaxed) as f64 * 1e-9);
                    // busy with other work: the server's CPUs less what the load
                    // threads (this push's and other loads') used
                    let span = last_report.1.elapsed().as_secs_f64();
                    if span >= BUSY_WINDOW {
                        let loads = crate::account::load_threads_cpu_seconds();
                        let own = (loads - last_report.0) / (span * load.cpus() as f64);
                        last_report = (loads, Instant::now());
                        busy = (load.sample() - own).max(0.0);
                        loading = own.min(1.0);
                    }
                    progress(Reply::Progress {
                        fragments: shared.validated.load(Relaxed),
                        steps,
                        busy,
                        loading,
                    });
                }
            }
        });
        if shared.failed.load(Relaxed) {
            return Err(LoadError::Options("the push was refused".into()));
        }
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        if ended.is_none() {
            shared.fail(PushError::Protocol(
                "the push ended before its end frame: nothing was loaded".into(),
            ));
            return Err(LoadError::Options("the push was refused".into()));
        }
        // every entry of every client dictionary must be some row's value
        for d in &all {
            let used = d.used.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = (0..d.values.len()).find(|&e| used[e / 64] & (1 << (e % 64)) == 0)
            {
                shared.fail(PushError::Protocol(format!(
                    "dictionary entry {entry} of a column (of {} entries) is used by no row",
                    d.values.len()
                )));
                return Err(LoadError::Options("the push was refused".into()));
            }
        }
        Ok(rows)
    });
    let refused = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let (rows, published) = match (run, refused) {
        (_, Some(e)) => return Err(e),
        (Err(e), None) => return Err(PushError::Load(e)),
        (Ok(r), None) => r,
    };
    debug_assert_eq!(rows + shared.text_rows.load(Relaxed), published.rows);
    let mut steps = Steps::default();
    steps.add("validate", shared.validate_ns.load(Relaxed) as f64 * 1e-9);
    let parse_ns = shared.parse_ns.load(Relaxed);
    if parse_ns > 0 {
        steps.add("parse", parse_ns as f64 * 1e-9);
    }
    steps.add(
        "dictionaries",
        *dictionary_cpu.lock().unwrap_or_else(|p| p.into_inner()),
    );
    steps.add("merge", published.merge_cpu_seconds);
    Ok(Ingested {
        rows: published.rows,
        bytes_received: received,
        seconds: started.elapsed().as_secs_f64(),
        steps,
    })
}

/// A `what` (a fragment or a text fragment) numbered `fragment` may come now: no dictionary
/// is half sent (`dictionary_open`) and `next` is its number.
fn in_order(what: &str, dictionary_open: bool, fragment: u64, next: u64) -> Result<(), PushError> {
    if dictionary_open {
        return Err(PushError::Protocol(format!(
            "a {what} before the last piece of a dictionary"
        )));
    }
    if fragment != next {
        return Err(PushError::Protocol(format!(
            "fragment {fragment} arrived where fragment {next} was expected"
        )));
    }
    Ok(())
}

/// Waits until fewer than two fragments per thread are in flight, and takes a place.
fn wait_for_room(shared: &Shared<'_>, threads: usize) {
    let mut busy = shared.in_flight.lock().unwrap_or_else(|p| p.into_inner());
    while *busy >= threads * 2 {
        busy = shared.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
    }
    *busy += 1;
}

/// A fragment's place in flight, freed when dropped: also when its task panics, so the
/// frames' loop never waits for a place that no task will free.
struct InFlight<'s, 'a>(&'s Shared<'a>);

impl Drop for InFlight<'_, '_> {
    fn drop(&mut self) {
        let shared = self.0;
        shared.validated.fetch_add(1, Relaxed);
        *shared.in_flight.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        shared.freed.notify_one();
    }
}

/// The most bytes a text or raw frame may hold.
pub const MAX_TEXT_BYTES: u64 = 256 << 20;

/// A text frame's records: its payload of `len` bytes ([`frame_bytes`]), not empty.
fn text_payload(body: &Bytes, len: u64, lz4: bool) -> Result<Bytes, PushError> {
    if len == 0 {
        return Err(PushError::Protocol(format!(
            "a text fragment of 0 bytes (1 to {MAX_TEXT_BYTES} are taken)"
        )));
    }
    frame_bytes("a text frame", body, len, lz4)
}

/// The bytes of a text or raw frame (`what` in errors): its payload, decompressed when
/// `lz4`, which must be `len` bytes. The length is checked before anything is allocated for
/// it: at most [`MAX_TEXT_BYTES`], and an LZ4 block's own length (which the decoder
/// allocates) must be `len`.
fn frame_bytes(what: &str, body: &Bytes, len: u64, lz4: bool) -> Result<Bytes, PushError> {
    if len > MAX_TEXT_BYTES {
        return Err(PushError::Protocol(format!(
            "{what} of {len} bytes (1 to {MAX_TEXT_BYTES} are taken)"
        )));
    }
    let data = if lz4 {
        let said = body
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64);
        if said != Some(len) {
            return Err(PushError::Protocol(format!(
                "{what} says {len} bytes, its LZ4 block {said:?}"
            )));
        }
        let bytes = lz4_flex::decompress_size_prepended(body)
            .map_err(|e| PushError::Protocol(format!("bad LZ4 block: {e}")))?;
        Bytes::from(bytes)
    } else {
        body.clone()
    };
    if data.len() as u64 != len {
        return Err(PushError::Protocol(format!(
            "{what} said {len} bytes, {} arrived",
            data.len()
        )));
    }
    Ok(data)
}

/// The load dialect of a push's wire dialect.
fn load_dialect(d: &WireDialect) -> Dialect {
    Dialect {
        delimiter: d.delimiter,
        quote: d.quote,
        escape: d.escape,
        header: d.header,
        null: d.null.clone(),
    }
}

/// The names of a push's files, in order: its `files`, or its one `file`.
fn file_names(hello: &Hello) -> Vec<&str> {
    match hello.files.as_slice() {
        [] => vec![hello.file.as_str()],
        many => many.iter().map(String::as_str).collect(),
    }
}

/// The shortest span the server's busy fraction is measured over, in seconds.
const BUSY_WINDOW: f64 = 0.25;

/// Moves to client partition `p` (the current one or a later one: partitions whose
/// fragments were all empty send nothing); a new partition's dictionaries replace the last
/// one's.
fn advance(
    partition: &mut u64,
    p: u64,
    current: &mut HashMap<usize, Arc<ClientDictionary>>,
) -> Result<(), PushError> {
    if p == *partition {
        Ok(())
    } else if p > *partition {
        *partition = p;
        current.clear();
        Ok(())
    } else {
        Err(PushError::Protocol(format!(
            "partition {p} after partition {partition}"
        )))
    }
}

/// A piece of a dictionary, its shape checked.
fn dictionary_piece(
    shared: &Shared<'_>,
    column: usize,
    entries: u64,
    body: &Bytes,
) -> Result<ArrayRef, PushError> {
    let def = shared.def;
    let col = def.schema.columns.get(column).ok_or_else(|| {
        PushError::Protocol(format!(
            "a dictionary of column {}: the table has {}",
            column + 1,
            def.schema.columns.len()
        ))
    })?;
    if !shared.encodable[column] {
        return Err(PushError::Protocol(format!(
            "column \"{}\" cannot be sent encoded (stored plain, the partitioning key, or \
             of a type without dictionaries)",
            col.name
        )));
    }
    let batch = decode_batch(body)?;
    if batch.num_columns() != 1 || batch.num_rows() as u64 != entries {
        return Err(PushError::Protocol(format!(
            "the dictionary of column \"{}\" has {} columns and {} entries, expected 1 \
             column and {entries} entries",
            col.name,
            batch.num_columns(),
            batch.num_rows()
        )));
    }
    Ok(Arc::clone(batch.column(0)))
}

/// A dictionary from its pieces, checked.
fn dictionary(
    shared: &Shared<'_>,
    column: usize,
    pieces: Vec<ArrayRef>,
) -> Result<Arc<ClientDictionary>, PushError> {
    let col = &shared.def.schema.columns[column];
    let values = match pieces.as_slice() {
        [one] => Arc::clone(one),
        many => {
            let parts: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
            arrow::compute::concat(&parts).map_err(|e| {
                PushError::Protocol(format!("the dictionary of column \"{}\": {e}", col.name))
            })?
        }
    };
    check_pushed_column(shared.file, column, col, &values, 0).map_err(|e| {
        PushError::Protocol(format!("the dictionary of column \"{}\": {e}", col.name))
    })?;
    if !wireload_storage::dictionary::is_valid_dictionary(&values) {
        return Err(PushError::Protocol(format!(
            "the dictionary of column \"{}\" is not sorted and unique (or holds NULL)",
            col.name
        )));
    }
    Ok(Arc::new(ClientDictionary {
        used: Mutex::new(vec![0u64; values.len().div_ceil(64)]),
        values,
    }))
}

/// A fragment frame's rows as a batch of the table's columns (encoded ones as dictionary
/// arrays over the client's dictionary), every value checked.
fn fragment_batch(
    shared: &Shared<'_>,
    body: &Bytes,
    rows: u64,
    first_row: u64,
    dictionaries: &[(usize, Arc<ClientDictionary>)],
) -> Result<RecordBatch, PushError> {
    let def = shared.def;
    let batch = decode_batch(body)?;
    let columns = &def.schema.columns;
    if batch.num_columns() != columns.len() || batch.num_rows() as u64 != rows {
        return Err(PushError::Protocol(format!(
            "a fragment of {} columns and {} rows, expected {} columns and {rows} rows",
            batch.num_columns(),
            batch.num_rows(),
            columns.len()
        )));
    }
    let mut arrays = Vec::with_capacity(columns.len());
    let mut fields = Vec::with_capacity(columns.len());
    for (c, (col, array)) in columns.iter().zip(batch.columns()).enumerate() {
        let array = match dictionaries.iter().find(|(dc, _)| *dc == c) {
            None => {
                check_pushed_column(shared.file, c, col, array, first_row)?;
                if shared.encodable[c] {
                    // storage encodes it and keeps none of the frame
                    Arc::clone(array)
                } else {
                    // stored as it is: in buffers of its own, not slices of the frame's
                    // buffer, which holds every column of the fragment
                    wireload_storage::own_buffers(array)
                        .map_err(|e| PushError::Protocol(format!("column \"{}\": {e}", col.name)))?
                }
            }
            Some((_, d)) => encoded_column(shared, c, array, d, first_row)?,
        };
        fields.push(Field::new(
            &col.name,
            array.data_type().clone(),
            col.nullable,
        ));
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| PushError::Protocol(format!("a fragment's columns do not fit: {e}")))
}

/// Codes of column `c` over client dictionary `d`, checked (type, NOT NULL, range) and
/// marked used, as a dictionary array.
fn encoded_column(
    shared: &Shared<'_>,
    c: usize,
    codes: &ArrayRef,
    d: &ClientDictionary,
    first_row: u64,
) -> Result<ArrayRef, PushError> {
    let col = &shared.def.schema.columns[c];
    if !col.nullable && codes.null_count() > 0 {
        let row = (0..codes.len()).find(|&r| codes.is_null(r)).unwrap_or(0);
        return Err(PushError::Load(LoadError::ArrowValue {
            file: shared.file.to_string(),
            row: first_row + row as u64 + 1,
            column: c + 1,
            column_name: col.name.clone(),
            problem: Box::new(wireload_publish::BadValue::Null),
        }));
    }
    let entries = d.values.len();
    let mut used = vec![0u64; entries.div_ceil(64)];
    let out_of_range = |row: usize, code: usize| {
        PushError::Protocol(format!(
            "column \"{}\": code {code} at row {} is out of range (the dictionary has \
             {entries} entries)",
            col.name,
            first_row + row as u64 + 1
        ))
    };
    macro_rules! mark {
        ($t:ty) => {{
            let keys = codes.as_primitive::<$t>();
            wireload_publish::dictionary::mark_used(
                keys.values(),
                keys.nulls(),
                entries,
                &mut used,
            )
            .map_err(|e| out_of_range(e.row, e.code))?;
            // the codes in buffers of their own: storage may keep them as they are, and
            // the frame's buffer holds every column of the fragment
            let keys = PrimitiveArray::<$t>::new(
                keys.values().to_vec().into(),
                keys.nulls().map(own_nulls),
            );
            let dictionary = Arc::clone(&d.values);
            // SAFETY: every non-null key was checked above to be below the dictionary's
            // length (`try_new` would check each again: 3% of a push's server CPU)
            let array = unsafe { DictionaryArray::<$t>::new_unchecked(keys, dictionary) };
            Arc::new(array) as ArrayRef
        }};
    }
    let array = match codes.data_type() {
        DataType::UInt8 => mark!(UInt8Type),
        DataType::UInt16 => mark!(UInt16Type),
        DataType::UInt32 => mark!(UInt32Type),
        other => {
            return Err(PushError::Protocol(format!(
                "column \"{}\": codes of type {other}, expected UInt8, UInt16 or UInt32",
                col.name
            )));
        }
    };
    let mut all = d.used.lock().unwrap_or_else(|p| p.into_inner());
    for (a, u) in all.iter_mut().zip(used) {
        *a |= u;
    }
    drop(all);
    Ok(array)
}

/// `nulls` in a buffer of their own.
fn own_nulls(nulls: &NullBuffer) -> NullBuffer {
    let bits = nulls.inner().sliced();
    NullBuffer::new(BooleanBuffer::new(
        Buffer::from_slice_ref(bits.as_slice()),
        0,
        nulls.len(),
    ))
}

/// `seq`: the files' bytes arrive whole first, then the server loads them as a local load
/// of several files does (each file with its own header, named by its own name in errors).
fn ingest_file(
    table: &Table,
    hello: &Hello,
    frames: impl Iterator<Item = Result<RawFrame, PushError>> + Send,
    ctl: &LoadControl,
    threads: usize,
    started: Instant,
) -> Result<Ingested, PushError> {
    let dialect = hello
        .dialect
        .as_ref()
        .ok_or_else(|| PushError::Protocol("a seq push without the file's CSV dialect".into()))?;
    let names = file_names(hello);
    let t0 = thread_cpu_seconds();
    // the bytes of each file that sent any, in file order; the bytes of all of them
    let mut files: Vec<(usize, Vec<u8>)> = Vec::new();
    let (mut total, mut received, mut ended) = (0u64, 0u64, false);
    for frame in frames {
        let frame = frame?;
        received += (frame.header.len() + frame.body.len()) as u64;
        if ended {
            return Err(PushError::Protocol("a frame after the end frame".into()));
        }
        match from_json::<Frame>(&frame.header)? {
            Frame::Raw {
                file,
                offset,
                len,
                lz4,
            } => {
                if offset != total {
                    return Err(PushError::Protocol(format!(
                        "bytes at offset {offset} arrived where offset {total} was expected"
                    )));
                }
                let index = usize::try_from(file)
                    .ok()
                    .filter(|&f| f < names.len())
                    .ok_or_else(|| {
                        PushError::Protocol(format!(
                            "bytes of file {file}: the push has {} files",
                            names.len()
                        ))
                    })?;
                match files.last() {
                    Some(&(current, _)) if current > index => {
                        return Err(PushError::Protocol(format!(
                            "bytes of file {index} after bytes of file {current}"
                        )));
                    }
                    Some(&(current, _)) if current == index => {}
                    _ => files.push((index, Vec::new())),
                }
                let bytes = frame_bytes("a raw frame", &frame.body, len, lz4)?;
                files
                    .last_mut()
                    .expect("the file was just added")
                    .1
                    .extend_from_slice(&bytes);
                total += len;
            }
            Frame::End { bytes, .. } => {
                if bytes != total {
                    return Err(PushError::Protocol(format!(
                        "the client says it sent {bytes} bytes; {total} arrived"
                    )));
                }
                ended = true;
            }
            other => {
                return Err(PushError::Protocol(format!(
                    "a {other:?} frame in a seq push"
                )));
            }
        }
    }
    if !ended {
        return Err(PushError::Protocol(
            "the push ended before its end frame: nothing was loaded".into(),
        ));
    }
    let transfer = thread_cpu_seconds() - t0;
    let opts = LoadOptions {
        dialect: load_dialect(dialect),
        threads: Some(threads),
        ..LoadOptions::default()
    };
    // files that sent no bytes hold no rows (not even a header)
    let mut sources: Vec<Source> = files
        .into_iter()
        .map(|(f, data)| Source::Bytes {
            name: names[f].to_string(),
            data: Arc::from(data),
        })
        .collect();
    if sources.is_empty() {
        sources.push(Source::Bytes {
            name: hello.file.clone(),
            data: Arc::from(Vec::new()),
        });
    }
    let parse_pool = pool(threads)?;
    let cpu0 = pool_cpu_seconds(&parse_pool);
    let report = wireload_load::load_files(table, &sources, &opts, ctl)?;
    let mut steps = Steps::default();
    steps.add("transfer", transfer);
    steps.add("load", pool_cpu_seconds(&parse_pool) - cpu0);
    Ok(Ingested {
        rows: report.rows,
        bytes_received: received,
        seconds: started.elapsed().as_secs_f64(),
        steps,
    })
}
