//! The Shared Loading client. Three stages, each on its own threads:
//!
//! 1. *deserialize*: the loader's CSV parse stage ([`wireload_load::parse_source`]) reads
//!    the files as streams, window after window, and cuts them into chunks; each chunk
//!    becomes a columnar fragment, validated exactly as a local load validates (errors name
//!    file, line, column and byte, before anything of the fragment is sent);
//! 2. *sort and compress* (one thread with a pool of its own): fragments in file order are
//!    grouped into partitions of `fragments_per_partition`; per fragment column the mode
//!    decides whether the client encodes it; the encoded fragment columns of a partition
//!    get one sorted dictionary (the fragments' temporary dictionaries merged) and codes
//!    into it; fragments that need no dictionary go out at once;
//! 3. *transfer*: frames ([`crate::protocol`]) stream over one Flight `DoPut` call through
//!    a token bucket ([`crate::throttle`]); the server's progress replies feed `auto`.
//!
//! `auto` may also take a window of records before it is parsed and send it as text for the
//! server to parse (a *text fragment*), where the client is the bottleneck and the server
//! has CPU to spare: the split of PIPE, window by window.
//!
//! Memory stays bounded: the parse waits while more than `partitions_in_flight`
//! partitions' fragments are parsed and not yet sent.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, make_array};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, FlightDescriptor};
use futures::{SinkExt, StreamExt};
use prost::Message;
use rayon::prelude::*;
use wireload_load::{Dialect, LoadOptions, Source};
use wireload_publish::dictionary::{FragmentColumn, merge_column};
use wireload_publish::{
    LoadControl, LoadError, Sink, Sites, Text, pool_cpu_seconds, thread_cpu_seconds,
};
use wireload_storage::{Partitioning, TableDef};
use wireload_types::{ColumnDef, TableSchema};

use crate::PushError;
use crate::account::{named_threads_cpu_seconds, process_cpu_seconds};
use crate::hll::DEFAULT_PRECISION;
use crate::ingest::MAX_TEXT_BYTES;
use crate::protocol::{
    Described, Frame, Hello, Mode, PUSH_TYPE_URL, Reply, Steps, WireDialect, column_batch,
    encode_batch, from_json, to_json,
};
use crate::size::estimate;
use crate::throttle::{Bandwidth, channel};

/// How to push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// The server's Flight address, `http://host:port`.
    pub server: String,
    /// The table to load into.
    pub table: String,
    /// Where the work is done (not `pipe`: see [`crate::pipe`]).
    pub mode: Mode,
    /// User and password (HTTP Basic on the call); None: a server trusting local clients.
    pub credentials: Option<(String, String)>,
    /// The files' CSV dialect.
    pub dialect: Dialect,
    /// Bytes of file per fragment (the paper: 10 MiB).
    pub chunk_bytes: usize,
    /// Fragments per partition (the paper: 50), at most.
    pub fragments_per_partition: usize,
    /// Partitions the files are cut into at least, by their size: a partition's fragments
    /// are sent only after its dictionaries are merged, so a push of a single partition does
    /// all of the client's work before the first byte goes out, and they then arrive
    /// together, so the server's work on a partition comes in one burst that queries
    /// running beside it pay for. The paper's 50 fragments a partition assume files of many
    /// partitions; a smaller push gets partitions of `ceil(fragments / min_partitions)`
    /// fragments (1: no lower bound).
    pub min_partitions: usize,
    /// Partitions parsed and not yet sent before the parse waits (the paper: 7).
    pub partitions_in_flight: usize,
    /// Client threads for deserializing and for compressing.
    pub threads: usize,
    /// A token bucket on the socket.
    pub bandwidth: Option<Bandwidth>,
    /// LZ4 on payloads (`auto`: only while the link is its bottleneck).
    pub lz4: bool,
    /// HyperLogLog precision of `size`.
    pub hll_precision: u8,
    /// `auto`: the share of windows sent as text for the server to parse, fixed (0 to 1);
    /// None: `auto` moves it by what it measures.
    pub text_share: Option<f64>,
}

impl PushOptions {
    /// The paper's defaults for pushing into `table` at `server` in `mode`.
    pub fn new(server: impl Into<String>, table: impl Into<String>, mode: Mode) -> Self {
        PushOptions {
            server: server.into(),
            table: table.into(),
            mode,
            credentials: None,
            dialect: Dialect::default(),
            chunk_bytes: 10 << 20,
            fragments_per_partition: 50,
            min_partitions: 16,
            partitions_in_flight: 7,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            bandwidth: None,
            lz4: false,
            hll_precision: DEFAULT_PRECISION,
            text_share: None,
        }
    }
}

/// What a push did, on both sides.
#[derive(Debug, Clone, Default)]
pub struct PushReport {
    /// Rows loaded.
    pub rows: u64,
    /// Bytes of the input files.
    pub file_bytes: u64,
    /// Bytes the client wrote to its socket (frames, protocol overhead, TLS).
    pub bytes_sent: u64,
    /// Wall seconds from the start to the server's publication.
    pub seconds: f64,
    /// The client process's CPU seconds (getrusage user + system).
    pub client_cpu_s: f64,
    /// The client's CPU seconds per step.
    pub client_steps: Steps,
    /// The server's CPU seconds per step (its own accounting of this load).
    pub server_steps: Steps,
    /// Fragment columns sent encoded, of all fragment columns that could have been.
    pub encoded_columns: (u64, u64),
    /// Fragments sent as text (`auto`), and the file bytes they held.
    pub text: (u64, u64),
}

impl PushReport {
    /// Throughput over the file's bytes, MB/s.
    pub fn mb_per_s(&self) -> f64 {
        self.file_bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }
}

/// Pushes `files` (in order, one atomic load) into a table of a wireload server.
pub fn push(files: &[PathBuf], opts: &PushOptions) -> Result<PushReport, PushError> {
    if opts.mode == Mode::Pipe {
        return Err(PushError::Options(
            "pipe mode talks the PostgreSQL protocol: use crate::pipe".into(),
        ));
    }
    if files.is_empty() {
        return Err(PushError::Options("no file to push".into()));
    }
    let started = Instant::now();
    let cpu0 = process_cpu_seconds();
    let file_bytes = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()))
        .sum::<Result<u64, _>>()
        .map_err(|e| PushError::io("reading the files' sizes", e))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name(NET_THREADS)
        .build()
        .map_err(|e| PushError::io("starting the network runtime", e))?;
    let sent = Arc::new(AtomicU64::new(0));
    let (frames_tx, frames_rx) = futures::channel::mpsc::channel::<FlightData>(4);
    let hello = Hello {
        table: opts.table.clone(),
        mode: opts.mode,
        file: files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        files: if matches!(opts.mode, Mode::Seq | Mode::Auto) {
            files.iter().map(|f| f.display().to_string()).collect()
        } else {
            Vec::new()
        },
        dialect: matches!(opts.mode, Mode::Seq | Mode::Auto).then(|| WireDialect {
            delimiter: opts.dialect.delimiter,
            quote: opts.dialect.quote,
            escape: opts.dialect.escape,
            header: opts.dialect.header,
            null: opts.dialect.null.clone(),
        }),
    };
    let feedback = Arc::new(Feedback::default());
    // the call: descriptor first, then whatever the stages send; replies come back
    let (described_tx, described_rx) = sync_channel::<Result<Described, PushError>>(1);
    let call = {
        let opts = opts.clone();
        let sent = Arc::clone(&sent);
        let feedback = Arc::clone(&feedback);
        rt.spawn(async move { call(&opts, hello, sent, frames_rx, described_tx, feedback).await })
    };
    let described = match described_rx.recv() {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(match rt.block_on(call) {
                Ok(Err(e)) => e,
                _ => PushError::Transport("the call ended before the server answered".into()),
            });
        }
    };
    let out = Outbox {
        tx: Mutex::new(frames_tx),
        payload: AtomicU64::new(0),
        plain: AtomicU64::new(0),
        blocked_ns: AtomicU64::new(0),
    };
    let sent_result = match opts.mode {
        Mode::Seq => send_file(files, opts, &described, &out),
        _ => {
            let opts = PushOptions {
                fragments_per_partition: partition_fragments(opts, file_bytes),
                ..opts.clone()
            };
            send_fragments(files, &opts, &described, &out, &feedback, Arc::clone(&sent))
        }
    };
    // closing the stream ends the call: after an end frame the server publishes, without
    // one it refuses the load
    drop(out);
    let mut client = match sent_result {
        Ok(c) => c,
        Err(e) => {
            // the server refuses the unfinished push; the client's error is the one to show
            let _ = rt.block_on(call);
            return Err(e);
        }
    };
    let done = rt
        .block_on(call)
        .map_err(|e| PushError::Transport(format!("the call's task failed: {e}")))??;
    let Reply::Done {
        rows,
        steps: server_steps,
        ..
    } = done
    else {
        return Err(PushError::Protocol(
            "the server's last reply is not Done".into(),
        ));
    };
    let client_cpu_s = process_cpu_seconds() - cpu0;
    client
        .steps
        .add("transfer", (client_cpu_s - client.steps.total()).max(0.0));
    Ok(PushReport {
        rows,
        file_bytes,
        bytes_sent: sent.load(Relaxed),
        seconds: started.elapsed().as_secs_f64(),
        client_cpu_s,
        client_steps: client.steps,
        server_steps,
        encoded_columns: client.encoded,
        text: client.text,
    })
}

/// The `DoPut` call: sends the descriptor and then `frames`, reads the replies (the
/// description goes to `described`, progress to `feedback`), returns the final reply.
async fn call(
    opts: &PushOptions,
    hello: Hello,
    sent: Arc<AtomicU64>,
    frames: futures::channel::mpsc::Receiver<FlightData>,
    described: SyncSender<Result<Described, PushError>>,
    feedback: Arc<Feedback>,
) -> Result<Reply, PushError> {
    let fail = |e: PushError| {
        let _ = described.try_send(Err(PushError::Transport(e.to_string())));
        e
    };
    let ch = channel(&opts.server, opts.bandwidth, sent)
        .await
        .map_err(fail)?;
    let mut client = FlightServiceClient::new(ch)
        .max_decoding_message_size(1 << 30)
        .max_encoding_message_size(1 << 30);
    let any = arrow_flight::sql::Any {
        type_url: PUSH_TYPE_URL.into(),
        value: to_json(&hello).into(),
    };
    let first = FlightData {
        flight_descriptor: Some(FlightDescriptor::new_cmd(any.encode_to_vec())),
        ..FlightData::default()
    };
    let stream = futures::stream::once(async move { first }).chain(frames);
    let mut request = tonic::Request::new(stream);
    if let Some((user, password)) = &opts.credentials {
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let value = format!("Basic {token}").parse().map_err(|_| {
            fail(PushError::Options(
                "credentials not valid in a header".into(),
            ))
        })?;
        request.metadata_mut().insert("authorization", value);
    }
    let refused = |s: tonic::Status| PushError::Refused(s.message().to_string());
    let mut replies = client
        .do_put(request)
        .await
        .map_err(|s| fail(refused(s)))?
        .into_inner();
    let mut last = None;
    while let Some(r) = replies.next().await {
        let r = r.map_err(|s| fail(refused(s)))?;
        match from_json::<Reply>(&r.app_metadata).map_err(fail)? {
            Reply::Described(d) => {
                let _ = described.try_send(Ok(d));
            }
            Reply::Progress {
                fragments,
                steps,
                busy,
                loading,
            } => feedback.update(fragments, steps.total(), busy, loading),
            done @ Reply::Done { .. } => last = Some(done),
        }
    }
    last.ok_or_else(|| {
        fail(PushError::Transport(
            "the server closed the call without a final answer".into(),
        ))
    })
}

/// The server's latest progress, for `auto`.
#[derive(Debug, Default)]
struct Feedback {
    state: Mutex<(u64, f64, f64, f64)>,
}

impl Feedback {
    fn update(&self, fragments: u64, cpu: f64, busy: f64, loading: f64) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = (fragments, cpu, busy, loading);
    }

    /// (fragments validated, server CPU seconds so far, busy fraction of its CPUs with other
    /// work, fraction its loads used)
    fn get(&self) -> (u64, f64, f64, f64) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where the stages put frames for the call.
struct Outbox {
    tx: Mutex<futures::channel::mpsc::Sender<FlightData>>,
    /// payload bytes handed over
    payload: AtomicU64,
    /// bytes of the fragments handed over as their plain columns would have been (for
    /// `auto`: payload / plain is what encoding saves on the wire)
    plain: AtomicU64,
    /// nanoseconds the stages waited for the network to take frames
    blocked_ns: AtomicU64,
}

impl Outbox {
    /// Sends one frame (waits while the network is behind).
    fn send(&self, header: &Frame, body: Vec<u8>) -> Result<(), PushError> {
        let data = FlightData {
            app_metadata: to_json(header).into(),
            data_body: body.into(),
            ..FlightData::default()
        };
        self.payload.fetch_add(
            (data.app_metadata.len() + data.data_body.len()) as u64,
            Relaxed,
        );
        let t0 = Instant::now();
        let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let r = futures::executor::block_on(tx.send(data));
        self.blocked_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
        r.map_err(|_| PushError::Transport("the connection to the server closed".into()))
    }
}

/// What the sending stages did.
struct Sent {
    steps: Steps,
    encoded: (u64, u64),
    /// text fragments and their bytes
    text: (u64, u64),
}

/// Fragments per partition for files of `file_bytes` bytes: at most
/// `fragments_per_partition`, and few enough for `min_partitions` partitions.
fn partition_fragments(opts: &PushOptions, file_bytes: u64) -> usize {
    let chunk = opts.chunk_bytes.max(4096) as u64;
    let fragments = file_bytes.div_ceil(chunk).max(1);
    let for_min = fragments.div_ceil(opts.min_partitions.max(1) as u64);
    (opts.fragments_per_partition as u64).min(for_min).max(1) as usize
}

/// `seq`: the files' bytes as raw frames, each frame of one file (the server loads each
/// file with its own header), then the end frame.
fn send_file(
    files: &[PathBuf],
    opts: &PushOptions,
    described: &Described,
    out: &Outbox,
) -> Result<Sent, PushError> {
    use std::io::Read;
    let t0 = thread_cpu_seconds();
    let mut offset = 0u64;
    // a frame's payload fits the server's limit, compressed or not (LZ4 grows incompressible
    // bytes by at most 10% and a few bytes)
    let fits = (frame_limit(described).saturating_sub(FRAME_OVERHEAD + 256) * 10 / 11).max(1);
    let mut buf = vec![0u8; opts.chunk_bytes.clamp(64 << 10, 32 << 20).min(fits)];
    for (index, f) in files.iter().enumerate() {
        let mut file =
            File::open(f).map_err(|e| PushError::io(format!("opening {}", f.display()), e))?;
        loop {
            let n = read_full(&mut file, &mut buf)
                .map_err(|e| PushError::io(format!("reading {}", f.display()), e))?;
            if n == 0 {
                break;
            }
            let body = if opts.lz4 {
                lz4_flex::compress_prepend_size(&buf[..n])
            } else {
                buf[..n].to_vec()
            };
            let header = Frame::Raw {
                file: index as u64,
                offset,
                len: n as u64,
                lz4: opts.lz4,
            };
            out.send(&header, body)?;
            offset += n as u64;
        }
    }
    out.send(
        &Frame::End {
            fragments: 0,
            rows: 0,
            bytes: offset,
        },
        Vec::new(),
    )?;
    let mut steps = Steps::default();
    steps.add("read", thread_cpu_seconds() - t0);
    fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match file.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
    Ok(Sent {
        steps,
        encoded: (0, 0),
        text: (0, 0),
    })
}

/// The client's table: the server's columns, one partition (the server partitions).
fn client_def(described: &Described) -> Result<TableDef, PushError> {
    let schema = TableSchema {
        columns: described
            .columns
            .iter()
            .map(|c| ColumnDef {
                name: c.name.clone(),
                ty: c.ty,
                nullable: c.nullable,
            })
            .collect(),
    };
    TableDef::new(described.table.clone(), schema, Partitioning::Single)
        .map_err(|e| PushError::Protocol(format!("the server's table description: {e}")))
}

/// What the parse stage hands the compress stage: a fragment, or a window's records as text.
enum Piece {
    /// A parsed fragment.
    Fragment(RecordBatch),
    /// Records not parsed: (file, byte and line ends before them, the bytes).
    Text(TextPiece),
}

/// A window's records sent as text.
struct TextPiece {
    file: u64,
    byte: u64,
    lines: u64,
    data: Vec<u8>,
}

/// Which windows `auto` sends as text: a share the compress stage sets, spread evenly over
/// the windows the parse offers.
#[derive(Debug, Default)]
struct TextGate {
    /// the share, in thousandths
    share: AtomicU64,
    /// windows' share not yet taken
    credit: Mutex<f64>,
}

impl TextGate {
    fn share(&self) -> f64 {
        self.share.load(Relaxed) as f64 / 1000.0
    }

    fn set(&self, share: f64) {
        self.share
            .store((share.clamp(0.0, 1.0) * 1000.0).round() as u64, Relaxed);
    }

    /// True when the next window goes as text.
    fn take(&self) -> bool {
        let mut credit = self.credit.lock().unwrap_or_else(|p| p.into_inner());
        // below 1 after every take: a share of at most 1 never takes two windows' worth
        *credit += self.share();
        if *credit >= 1.0 - 1e-9 {
            *credit -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Fragments parsed and not yet taken by the compress stage, and the wait for room.
struct Parsed {
    tx: SyncSender<(usize, Piece)>,
    /// fragment numbers of earlier files
    base: AtomicUsize,
    /// the file being parsed (index into the push's files)
    file: AtomicUsize,
    /// `auto` on a server that takes text: which windows go as text; None: none
    text: Option<Arc<TextGate>>,
    /// the longest text a frame takes
    text_limit: usize,
    /// fragments parsed / sent
    parsed: AtomicUsize,
    sent: Arc<(Mutex<usize>, Condvar)>,
    limit: usize,
    stop: Arc<AtomicBool>,
    /// set when a fragment could not be handed over: the compress stage ended (failed)
    compress_gone: Arc<AtomicBool>,
}

impl Parsed {
    /// Hands piece `n` of the current file to the compress stage.
    fn hand_over(&self, n: usize, piece: Piece) -> Result<(), LoadError> {
        self.parsed.fetch_add(1, Relaxed);
        self.tx
            .send((self.base.load(Relaxed) + n, piece))
            .map_err(|_| {
                self.compress_gone.store(true, Relaxed);
                LoadError::Options("the compress stage stopped".into())
            })
    }
}

impl Sink for Parsed {
    fn wants_sites(&self) -> bool {
        false
    }

    fn failed(&self) -> bool {
        self.stop.load(Relaxed)
    }

    fn take(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        _sites: Sites,
        _input: Option<&[u8]>,
    ) -> Result<(), LoadError> {
        let batch = buffers.into_iter().next().flatten();
        let batch = match batch {
            Some(b) => b,
            // a chunk without a record start still numbers a fragment: an empty one
            None => RecordBatch::new_empty(Arc::new(Schema::empty())),
        };
        self.hand_over(n, Piece::Fragment(batch))
    }

    fn take_text(&self, n: usize, text: Text<'_>) -> Result<bool, LoadError> {
        let Some(gate) = &self.text else {
            return Ok(false);
        };
        if text.data.len() > self.text_limit || !gate.take() {
            return Ok(false);
        }
        let piece = TextPiece {
            file: self.file.load(Relaxed) as u64,
            byte: text.byte,
            lines: text.lines,
            data: text.data.to_vec(),
        };
        self.hand_over(n, Piece::Text(piece))?;
        Ok(true)
    }

    fn ready(&self) -> Result<(), LoadError> {
        let (lock, cv) = &*self.sent;
        let mut sent = lock.lock().unwrap_or_else(|p| p.into_inner());
        while self.parsed.load(Relaxed) > *sent + self.limit && !self.stop.load(Relaxed) {
            sent = cv.wait(sent).unwrap_or_else(|p| p.into_inner());
        }
        Ok(())
    }
}

/// The fragment modes: parse, decide, compress, send.
fn send_fragments(
    files: &[PathBuf],
    opts: &PushOptions,
    described: &Described,
    out: &Outbox,
    feedback: &Feedback,
    sent: Arc<AtomicU64>,
) -> Result<Sent, PushError> {
    let def = client_def(described)?;
    let threads = opts.threads.max(1);
    let parse_pool = wireload_publish::pool(threads)?;
    let compress_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("wireload-push-compress-{i}"))
        .build()
        .map_err(|e| PushError::Options(format!("cannot start threads: {e}")))?;
    let load_opts = LoadOptions {
        dialect: opts.dialect.clone(),
        chunk_size: Some(opts.chunk_bytes.max(4096)),
        threads: Some(threads),
        ..LoadOptions::default()
    };
    let (tx, rx) = sync_channel::<(usize, Piece)>(opts.fragments_per_partition.max(1) * 2);
    // text goes where the server takes it, in frames that fit, LZ4 or not
    let text_limit = (frame_limit(described).saturating_sub(FRAME_OVERHEAD + 256) * 10 / 11)
        .min(MAX_TEXT_BYTES as usize);
    let text = (opts.mode == Mode::Auto && described.text).then(|| {
        let gate = TextGate::default();
        gate.set(opts.text_share.unwrap_or(0.0));
        Arc::new(gate)
    });
    let stop = Arc::new(AtomicBool::new(false));
    let compress_gone = Arc::new(AtomicBool::new(false));
    let sent_count = Arc::new((Mutex::new(0usize), Condvar::new()));
    let sink = Parsed {
        tx,
        base: AtomicUsize::new(0),
        file: AtomicUsize::new(0),
        text: text.clone(),
        text_limit,
        parsed: AtomicUsize::new(0),
        sent: Arc::clone(&sent_count),
        limit: opts.fragments_per_partition.max(1) * opts.partitions_in_flight.max(1),
        stop: Arc::clone(&stop),
        compress_gone: Arc::clone(&compress_gone),
    };
    let parse_cpu0 = pool_cpu_seconds(&parse_pool);
    let ctl = LoadControl::default();
    let window = opts.chunk_bytes.max(4096) * (threads * 2).max(2);
    let compress = Compress {
        def: &def,
        described,
        opts,
        out,
        feedback,
        pool: &compress_pool,
        steps: Steps::default(),
        encoded: (0, 0),
        next_partition: 0,
        fragments: 0,
        rows: 0,
        sent_count: &sent_count,
        sent,
        text,
        text_sent: (0, 0),
    };
    let (parsed, compressed) = std::thread::scope(|s| {
        let compressing = std::thread::Builder::new()
            .name("wireload-push-compress".into())
            .spawn_scoped(s, move || compress.run(rx));
        let compressing = match compressing {
            Ok(h) => h,
            Err(e) => return (Err(PushError::io("starting a thread", e)), None),
        };
        let mut bytes = 0u64;
        let parsed = files.iter().enumerate().try_for_each(|(index, f)| {
            sink.file.store(index, Relaxed);
            let file =
                File::open(f).map_err(|e| PushError::io(format!("opening {}", f.display()), e))?;
            let source = Source::reader_in_blocks(f.display().to_string(), file, window);
            let (b, units) = wireload_load::parse_source(&def, &source, &load_opts, &ctl, &sink)?;
            bytes += b;
            sink.base.fetch_add(units, Relaxed);
            Ok::<_, PushError>(())
        });
        if parsed.is_err() {
            stop.store(true, Relaxed);
        }
        drop(sink);
        let compressed = compressing
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (parsed.map(|()| bytes), Some(compressed))
    });
    let (bytes, mut compress) = match (parsed, compressed.expect("the compress stage ran")) {
        // the parse stopped because the compress stage failed: its error is the cause
        (Err(_), Err(e)) if compress_gone.load(Relaxed) => return Err(e),
        (parsed, compressed) => (parsed?, compressed?),
    };
    compress.send_end(bytes)?;
    compress
        .steps
        .add("deserialize", pool_cpu_seconds(&parse_pool) - parse_cpu0);
    Ok(Sent {
        steps: compress.steps,
        encoded: compress.encoded,
        text: compress.text_sent,
    })
}

/// A column of a partition encoded: (column, dictionary, codes of each fragment that
/// encodes it, CPU seconds of its sort step).
type Encoded = (usize, ArrayRef, Vec<ArrayRef>, f64);

/// The name of the client's network threads (sending frames, reading replies).
const NET_THREADS: &str = "wireload-push-net";

/// The fewest bytes a window of `auto` sends to measure the network thread's CPU per byte
/// (where the kernel keeps no schedstat, a thread's CPU time counts in 10 ms ticks).
const PER_BYTE_WINDOW: u64 = 16 << 20;

/// Fragments of `auto`'s first partition, which encodes every column to measure what that
/// costs the client.
const EXPLORE_FRAGMENTS: usize = 2;

/// What sending one column of `auto`'s first partition cost the client, encoded and plain:
/// CPU seconds of its steps (sort step and serializing; serializing) and the bytes it
/// made, which cost the network thread's CPU as they are sent.
#[derive(Debug, Clone, Copy)]
struct ColumnCost {
    column: usize,
    encoded_cpu: f64,
    encoded_bytes: u64,
    plain_cpu: f64,
    plain_bytes: u64,
}

impl ColumnCost {
    /// True when sending the column encoded costs the client no more CPU than sending it
    /// plain, at `per_byte` CPU seconds a byte sent (it saves bytes and the server's work
    /// too, so `auto` encodes it whatever the bottleneck).
    fn free(&self, per_byte: f64) -> bool {
        self.encoded_cpu + self.encoded_bytes as f64 * per_byte
            <= self.plain_cpu + self.plain_bytes as f64 * per_byte
    }
}

/// The sort and compress stage.
struct Compress<'a> {
    def: &'a TableDef,
    described: &'a Described,
    opts: &'a PushOptions,
    out: &'a Outbox,
    feedback: &'a Feedback,
    pool: &'a rayon::ThreadPool,
    steps: Steps,
    encoded: (u64, u64),
    next_partition: u64,
    fragments: u64,
    rows: u64,
    sent_count: &'a (Mutex<usize>, Condvar),
    /// the socket's byte counter
    sent: Arc<AtomicU64>,
    /// `auto` on a server that takes text: the share of windows sent as text
    text: Option<Arc<TextGate>>,
    /// text fragments sent, and their bytes
    text_sent: (u64, u64),
}

impl Compress<'_> {
    /// Takes fragments in any order, sends partitions in file order; returns itself to
    /// send the end frame.
    fn run(mut self, rx: Receiver<(usize, Piece)>) -> Result<Self, PushError> {
        let per = self.opts.fragments_per_partition.max(1);
        let mut waiting: BTreeMap<usize, Piece> = BTreeMap::new();
        let mut next = 0usize;
        let mut group: Vec<RecordBatch> = Vec::with_capacity(per);
        let mut decider = Decider::new(self.opts, self.described, Arc::clone(&self.sent));
        decider.text = self.text.clone().filter(|_| self.opts.text_share.is_none());
        for (n, piece) in rx {
            waiting.insert(n, piece);
            while let Some(piece) = waiting.remove(&next) {
                next += 1;
                let b = match piece {
                    Piece::Fragment(b) => b,
                    Piece::Text(text) => {
                        // the fragments before it go first, as a (short) partition
                        if !group.is_empty() {
                            let g = std::mem::take(&mut group);
                            self.partition(g, &mut decider)?;
                        }
                        self.send_text(text, decider.lz4(self.opts.lz4))?;
                        decider.adapt_text(self.out, self.feedback);
                        continue;
                    }
                };
                group.push(b);
                // a fragment that needs no dictionary need not wait for its partition
                let size = if decider.exploring() {
                    per.min(EXPLORE_FRAGMENTS)
                } else {
                    per
                };
                if group.len() >= size || decider.streams(self.out, self.feedback) {
                    let g = std::mem::take(&mut group);
                    self.partition(g, &mut decider)?;
                }
            }
        }
        if !waiting.is_empty() {
            return Err(PushError::Options(
                "internal: fragments missing before the end of the input".into(),
            ));
        }
        if !group.is_empty() {
            self.partition(group, &mut decider)?;
        }
        Ok(self)
    }

    /// Decides, compresses and sends one partition's fragments.
    fn partition(
        &mut self,
        fragments: Vec<RecordBatch>,
        decider: &mut Decider,
    ) -> Result<(), PushError> {
        let partition = self.next_partition;
        self.next_partition += 1;
        let ncols = self.def.schema.columns.len();
        // every piece the parse handed over counts against its bound, the empty ones too
        let pieces = fragments.len();
        let fragments: Vec<RecordBatch> = fragments
            .into_iter()
            .filter(|b| b.num_rows() > 0 && b.num_columns() == ncols)
            .collect();
        let pool = self.pool;
        let cpu = || thread_cpu_seconds() + pool_cpu_seconds(pool);
        // the decision per fragment column
        let cpu0 = cpu();
        let exploring = decider.exploring();
        let plan: Vec<Vec<bool>> = decider.decide(&fragments, self.out, self.feedback, self.pool);
        let cpu1 = cpu();
        self.steps.add("decide", cpu1 - cpu0);
        for p in &plan {
            self.encoded.0 += p.iter().filter(|&&e| e).count() as u64;
            self.encoded.1 += self
                .described
                .columns
                .iter()
                .filter(|c| c.encodable)
                .count() as u64;
        }
        // sort and compress: one dictionary per column over the fragments that encode it
        let columns: Vec<usize> = (0..ncols).filter(|&c| plan.iter().any(|p| p[c])).collect();
        let merged: Vec<Result<Encoded, PushError>> = self.pool.install(|| {
            columns
                .par_iter()
                .map(|&c| {
                    let t0 = thread_cpu_seconds();
                    let incoming: Vec<FragmentColumn> = fragments
                        .iter()
                        .zip(&plan)
                        .filter(|(_, p)| p[c])
                        .map(|(f, _)| FragmentColumn::Plain(Arc::clone(f.column(c))))
                        .collect();
                    let m = merge_column(None, &[], incoming).map_err(|e| {
                        PushError::Options(format!(
                            "column \"{}\": cannot build its dictionary: {e}",
                            self.def.schema.columns[c].name
                        ))
                    })?;
                    let codes = m
                        .incoming
                        .iter()
                        .map(|a| {
                            let d = a.as_any_dictionary();
                            make_array(d.keys().to_data())
                        })
                        .collect();
                    Ok((c, m.dictionary, codes, thread_cpu_seconds() - t0))
                })
                .collect()
        });
        let mut dictionaries = Vec::with_capacity(merged.len());
        for m in merged {
            dictionaries.push(m?);
        }
        self.steps.add("sort+compress", cpu() - cpu1);
        if exploring {
            let cpu2 = cpu();
            decider.explored(column_costs(self.def, &fragments, &dictionaries)?);
            self.steps.add("decide", cpu() - cpu2);
        }
        // transfer: dictionaries first, then fragment after fragment, each in as many
        // frames as the server's frame limit needs
        let mut ser = 0.0;
        let limit = frame_limit(self.described);
        let lz4 = decider.lz4(self.opts.lz4);
        for (c, dictionary, _, _) in &dictionaries {
            let name = &self.def.schema.columns[*c].name;
            // a first guess of the entries a piece takes: half the limit's share of memory
            let bytes = dictionary.get_array_memory_size().max(1);
            let per_piece = dictionary.len() * (limit / 2).min(16 << 20) / bytes;
            // at least one frame: a column whose encoded values are all NULL has an empty
            // dictionary, and its fragments still refer to it
            send_in_frames(
                self.out,
                limit,
                dictionary.len(),
                per_piece,
                |at, n| {
                    let t0 = thread_cpu_seconds();
                    let body = encode_batch(&column_batch(name, dictionary.slice(at, n))?, lz4);
                    ser += thread_cpu_seconds() - t0;
                    body
                },
                |_, at, n| Frame::Dictionary {
                    partition,
                    column: *c,
                    entries: n as u64,
                    last: at + n >= dictionary.len(),
                },
                |at| format!("entry {} of the dictionary of column \"{name}\"", at + 1),
            )?;
        }
        let mut next_code = vec![0usize; ncols];
        for (f, p) in fragments.iter().zip(&plan) {
            let t0 = thread_cpu_seconds();
            let mut arrays: Vec<ArrayRef> = f.columns().to_vec();
            let mut encoded = Vec::new();
            for (c, _, codes, _) in &dictionaries {
                if p[*c] {
                    arrays[*c] = Arc::clone(&codes[next_code[*c]]);
                    next_code[*c] += 1;
                    encoded.push(*c);
                }
            }
            let fields: Vec<Field> = self
                .def
                .schema
                .columns
                .iter()
                .zip(&arrays)
                .map(|(col, a)| Field::new(&col.name, a.data_type().clone(), col.nullable))
                .collect();
            let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
                .map_err(|e| PushError::Protocol(format!("a fragment batch: {e}")))?;
            ser += thread_cpu_seconds() - t0;
            // a fragment larger than a frame goes as consecutive fragments of fewer rows
            // (numbered on, in the same partition: encoded columns keep their dictionary)
            let rows = batch.num_rows();
            let bytes = batch.get_array_memory_size().max(1);
            let first = if bytes <= limit {
                rows
            } else {
                rows * limit / bytes
            };
            let (first_fragment, rows_before) = (self.fragments, self.rows);
            let pieces = send_in_frames(
                self.out,
                limit,
                rows,
                first,
                |at, n| {
                    let t0 = thread_cpu_seconds();
                    let body = encode_batch(&batch.slice(at, n), lz4);
                    ser += thread_cpu_seconds() - t0;
                    body
                },
                |piece, _, n| Frame::Fragment {
                    partition,
                    fragment: first_fragment + piece,
                    rows: n as u64,
                    encoded: encoded.clone(),
                },
                |at| format!("row {} of the push", rows_before + at as u64 + 1),
            )?;
            self.fragments += pieces;
            self.rows += rows as u64;
            let plain: usize = f
                .columns()
                .iter()
                .map(|a| a.to_data().get_slice_memory_size().unwrap_or(0))
                .sum();
            self.out.plain.fetch_add(plain as u64, Relaxed);
        }
        self.steps.add("serialize", ser);
        let (lock, cv) = self.sent_count;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) += pieces;
        cv.notify_all();
        Ok(())
    }

    /// Sends a window's records as a text fragment, in LZ4 when `lz4`.
    fn send_text(&mut self, text: TextPiece, lz4: bool) -> Result<(), PushError> {
        let t0 = thread_cpu_seconds();
        let len = text.data.len() as u64;
        let body = if lz4 {
            lz4_flex::compress_prepend_size(&text.data)
        } else {
            text.data
        };
        self.steps.add("serialize", thread_cpu_seconds() - t0);
        let header = Frame::Text {
            fragment: self.fragments,
            file: text.file,
            byte: text.byte,
            lines: text.lines,
            len,
            lz4,
        };
        self.out.send(&header, body)?;
        self.out.plain.fetch_add(len, Relaxed);
        self.fragments += 1;
        self.text_sent.0 += 1;
        self.text_sent.1 += len;
        let (lock, cv) = self.sent_count;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        cv.notify_all();
        Ok(())
    }

    /// The end frame: what was sent.
    fn send_end(&mut self, bytes: u64) -> Result<(), PushError> {
        self.out.send(
            &Frame::End {
                fragments: self.fragments,
                rows: self.rows,
                bytes,
            },
            Vec::new(),
        )
    }
}

/// Per column of `dictionaries` (every encodable column, all fragments encoded): what
/// sending it encoded (its sort step, then its dictionary and codes serialized) and plain
/// (its values serialized) costs the client, measured on `fragments`.
fn column_costs(
    def: &TableDef,
    fragments: &[RecordBatch],
    dictionaries: &[Encoded],
) -> Result<Vec<ColumnCost>, PushError> {
    let serialize = |name: &str, a: &ArrayRef| -> Result<(f64, u64), PushError> {
        let t0 = thread_cpu_seconds();
        // nullable: a column's values may hold NULLs (a dictionary's never do)
        let field = Field::new(name, a.data_type().clone(), true);
        let batch = RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![Arc::clone(a)])
            .map_err(|e| PushError::Protocol(format!("a column batch: {e}")))?;
        let bytes = encode_batch(&batch, false)?.len() as u64;
        Ok((thread_cpu_seconds() - t0, bytes))
    };
    dictionaries
        .iter()
        .map(|(c, dictionary, codes, sort)| {
            let name = &def.schema.columns[*c].name;
            let (cpu, bytes) = serialize(name, dictionary)?;
            let mut cost = ColumnCost {
                column: *c,
                encoded_cpu: sort + cpu,
                encoded_bytes: bytes,
                plain_cpu: 0.0,
                plain_bytes: 0,
            };
            for a in codes {
                let (cpu, bytes) = serialize(name, a)?;
                cost.encoded_cpu += cpu;
                cost.encoded_bytes += bytes;
            }
            for f in fragments {
                let (cpu, bytes) = serialize(name, f.column(*c))?;
                cost.plain_cpu += cpu;
                cost.plain_bytes += bytes;
            }
            Ok(cost)
        })
        .collect()
}

/// Protobuf tags and lengths of a frame's two fields (header and payload), at most.
const FRAME_OVERHEAD: usize = 16;

/// The largest frame (one Flight message) the server takes, in bytes.
fn frame_limit(described: &Described) -> usize {
    match described.max_frame_bytes {
        0 => 1 << 30,
        n => usize::try_from(n).unwrap_or(usize::MAX).min(1 << 30),
    }
}

/// Sends items `0..len` (a fragment's rows, a dictionary's entries) in frames of at most
/// `limit` bytes: `encode(at, n)` is the payload of items `at..at + n` and `header(piece,
/// at, n)` its header (`piece` counts the frames sent). Tries `first` items a frame; a frame
/// over the limit is cut to the share of its items that fits (at most half of them) and
/// encoded again, down to one item, which must fit (`item(at)` names it in the error). At
/// least one frame, even when `len` is 0. Returns the number of frames sent.
fn send_in_frames(
    out: &Outbox,
    limit: usize,
    len: usize,
    first: usize,
    mut encode: impl FnMut(usize, usize) -> Result<Vec<u8>, PushError>,
    header: impl Fn(u64, usize, usize) -> Frame,
    item: impl Fn(usize) -> String,
) -> Result<u64, PushError> {
    let (mut at, mut step, mut piece) = (0, first.max(1), 0u64);
    loop {
        let n = step.min(len - at);
        let body = encode(at, n)?;
        let frame = header(piece, at, n);
        let size = to_json(&frame).len() + body.len() + FRAME_OVERHEAD;
        if size > limit {
            if n <= 1 {
                return Err(PushError::Options(format!(
                    "{} alone needs a frame of {size} bytes; the server takes frames of at \
                     most {limit} bytes (its max_message_bytes)",
                    item(at)
                )));
            }
            // the share that fits, by the bytes per item of this try (a little less: the
            // IPC framing does not shrink with the rows)
            let fits = (n as u128 * limit as u128 * 9 / 10 / size as u128) as usize;
            step = fits.clamp(1, n / 2);
            continue;
        }
        out.send(&frame, body)?;
        piece += 1;
        at += n;
        if at >= len {
            return Ok(piece);
        }
    }
}

/// How far `auto` moves its share of text windows at each adaptation.
const TEXT_STEP: f64 = 0.05;

/// `auto`'s next share of windows sent as text, from the current one: none while the
/// server's CPUs are busy with other work (`busy` over a quarter); less while the stages
/// wait for the socket (over 30% of the time: the link or the server is behind) or the
/// server's loads use nearly all its CPUs (`loading` over 90%: the server's buffers would
/// fill); more while the stages seldom wait for the socket (under a tenth of the time: the
/// client's parse is the bottleneck) and the server's loads leave a fifth of its CPUs idle.
fn text_share(share: f64, waiting: f64, busy: f64, loading: f64) -> f64 {
    if busy > 0.25 {
        0.0
    } else if waiting > 0.3 || loading > 0.9 {
        (share - TEXT_STEP).max(0.0)
    } else if waiting < 0.1 && loading < 0.8 {
        (share + TEXT_STEP).min(1.0)
    } else {
        share
    }
}

/// `auto`: whether payloads go in LZ4 (when asked), from whether they do now (`on`): from
/// when the stages wait for a busy link (`waiting` over 30% of the time, `wire_bound`),
/// until they seldom wait (under a tenth of the time) for a link with room.
fn squeeze(on: bool, waiting: f64, wire_bound: bool) -> bool {
    if waiting > 0.3 && wire_bound {
        true
    } else if waiting < 0.1 && !wire_bound {
        false
    } else {
        on
    }
}

/// The per fragment column decision of a mode.
struct Decider {
    mode: Mode,
    encodable: Vec<bool>,
    precision: u8,
    /// `auto`'s current choice (a static mode's behaviour)
    current: Mode,
    /// `auto`: payloads go in LZ4 (when asked): the link was seen to be the bottleneck
    squeeze: bool,
    bandwidth: Option<Bandwidth>,
    /// (nanoseconds blocked, socket bytes) at the last adaptation, and when
    blocked_at: (u64, u64, Instant),
    /// (payload, plain) bytes handed over at the last adaptation
    payload_at: (u64, u64),
    /// whether a first window of fragments sent was seen
    warmed: bool,
    /// the server's CPU seconds for the load at the last adaptation
    server_cpu_at: f64,
    /// the fastest socket rate seen while the network was the bottleneck (bytes/s)
    link_seen: f64,
    /// the socket's byte counter
    sent: Arc<AtomicU64>,
    /// `auto`: what each column cost the client on its first partition (None until then)
    costs: Option<Vec<ColumnCost>>,
    /// `auto`: the network thread's CPU seconds a byte sent: the least of the windows
    /// since its first partition (0 until one is measured)
    per_byte: f64,
    /// `auto`: the network thread's CPU seconds and the bytes sent when the current window of
    /// the per-byte measurement began
    net_at: (f64, u64),
    /// `auto` on a server that takes text, its share not fixed: the share of windows sent as
    /// text, which [`Decider::adapt`] moves
    text: Option<Arc<TextGate>>,
}

impl Decider {
    fn new(opts: &PushOptions, described: &Described, sent: Arc<AtomicU64>) -> Self {
        let initial = match opts.mode {
            // no measurement yet: a slow link makes bytes count first, a fast one CPU
            Mode::Auto => match opts.bandwidth {
                Some(b) if b.bits_per_second <= 2_000_000_000 => Mode::Size,
                _ => Mode::None,
            },
            m => m,
        };
        Decider {
            mode: opts.mode,
            encodable: described.columns.iter().map(|c| c.encodable).collect(),
            precision: opts.hll_precision,
            current: initial,
            squeeze: initial == Mode::Size,
            bandwidth: opts.bandwidth,
            blocked_at: (0, sent.load(Relaxed), Instant::now()),
            payload_at: (0, 0),
            warmed: false,
            server_cpu_at: 0.0,
            link_seen: 0.0,
            sent,
            costs: None,
            per_byte: 0.0,
            net_at: (0.0, 0),
            text: None,
        }
    }

    /// A text fragment went out: `auto` adapts (with most windows sent as text, few
    /// fragments are left to adapt on).
    fn adapt_text(&mut self, out: &Outbox, feedback: &Feedback) {
        if self.mode == Mode::Auto {
            self.adapt(out, feedback);
        }
    }

    /// True while `auto` has not measured what encoding each column costs the client: its
    /// first partition ([`EXPLORE_FRAGMENTS`] fragments) encodes every column.
    fn exploring(&self) -> bool {
        self.mode == Mode::Auto && self.costs.is_none()
    }

    /// `auto`'s first partition measured: what its columns cost. The windows so far held
    /// the start, not the pipeline's pace: the next one is a warm-up again.
    fn explored(&mut self, costs: Vec<ColumnCost>) {
        self.costs = Some(costs);
        self.warmed = false;
    }

    /// `auto`: the columns whose encoding costs the client nothing extra (none before they
    /// are measured; the static modes measure nothing).
    fn free(&self) -> Vec<bool> {
        let mut free = vec![false; self.encodable.len()];
        for cost in self.costs.iter().flatten() {
            free[cost.column] = self.encodable[cost.column] && cost.free(self.per_byte);
        }
        free
    }

    /// `auto`: takes the network thread's CPU seconds (`net`, read only when a window
    /// closes) at `sent` bytes sent. A window closes once it has sent [`PER_BYTE_WINDOW`]
    /// bytes, on a slow link too; `per_byte` is the least of the windows closed since the
    /// first partition, which approaches the cost of one more byte (a window of few large
    /// frames). An average over the push would count the per-frame and wake-up costs of
    /// the first partition's small encoded frames as costs of bytes, make plain columns
    /// look dear and keep them encoded.
    fn measure_per_byte(&mut self, sent: u64, net: impl FnOnce() -> f64) {
        let (net0, sent0) = self.net_at;
        if sent - sent0 < PER_BYTE_WINDOW {
            return;
        }
        let net = net();
        self.net_at = (net, sent);
        if self.costs.is_some() && net > net0 {
            let window = (net - net0) / (sent - sent0) as f64;
            self.per_byte = if self.per_byte > 0.0 {
                self.per_byte.min(window)
            } else {
                window
            };
        }
    }

    /// Whether payloads go in LZ4 now, when `asked` (`--lz4`): always for a static mode;
    /// for `auto`, only while the link is the bottleneck (from when the stages wait for a
    /// busy link, until they seldom wait for one with room) and no busy server wants
    /// everything done on the client. Elsewhere LZ4 only adds CPU on both sides: on 2
    /// cores it made every mode slower at 10 Gbit/s, and most at 1 Gbit/s
    /// (`bench/RESULTS.md`).
    fn lz4(&self, asked: bool) -> bool {
        asked && (self.mode != Mode::Auto || (self.squeeze && self.current != Mode::All))
    }

    /// True when the current choice encodes nothing: fragments go out one by one.
    fn streams(&mut self, out: &Outbox, feedback: &Feedback) -> bool {
        if self.mode == Mode::Auto {
            self.adapt(out, feedback);
        }
        self.current == Mode::None && !self.exploring()
    }

    /// `auto`, every 200 ms: the server's CPUs busy with other work than loads (queries)
    /// over half their time → the client transforms everything (until that falls under a
    /// quarter); the stages waiting for the socket most of the time while it carries at
    /// least 70% of the bandwidth, or (the bandwidth not given) while the server's loading
    /// uses less than half a core (the network is the bottleneck) → the client encodes
    /// where that makes fewer bytes, and keeps encoding while the plain bytes that moves a
    /// second would take more than half the link (the bandwidth, or the fastest rate seen
    /// while waiting for the socket); otherwise (the client or the server's own loading is
    /// the bottleneck) the client only deserializes. In every state the columns its first
    /// partition found no dearer to send encoded are encoded.
    fn adapt(&mut self, out: &Outbox, feedback: &Feedback) {
        let now = Instant::now();
        let (blocked, sent) = (out.blocked_ns.load(Relaxed), self.sent.load(Relaxed));
        let span = now.duration_since(self.blocked_at.2);
        // nothing sent meanwhile: a partition is being gathered, nothing to learn
        if span.as_millis() < 200 || sent == self.blocked_at.1 {
            return;
        }
        // nor while only dictionaries went out: what they save shows with the fragments
        let (payload, plain) = (out.payload.load(Relaxed), out.plain.load(Relaxed));
        if plain == self.payload_at.1 {
            return;
        }
        let waiting = (blocked - self.blocked_at.0) as f64 / span.as_nanos() as f64;
        let rate = (sent - self.blocked_at.1) as f64 / span.as_secs_f64();
        self.blocked_at = (blocked, sent, now);
        // the wire bytes a plain byte became meanwhile (1 when nothing was encoded)
        let shrink = ((payload - self.payload_at.0) as f64 / (plain - self.payload_at.1) as f64)
            .clamp(0.01, 1.0);
        self.payload_at = (payload, plain);
        let (_, server_cpu, busy, loading) = feedback.get();
        // what a byte sent costs the network thread (its names are cut to 15 bytes)
        self.measure_per_byte(sent, || named_threads_cpu_seconds(None, &NET_THREADS[..15]));
        // cores the server's loading used meanwhile
        let server_cores = (server_cpu - self.server_cpu_at) / span.as_secs_f64();
        self.server_cpu_at = server_cpu;
        // the first window holds the start (parsing a partition with nothing to send), not
        // the pace of the pipeline
        if !self.warmed {
            self.warmed = true;
            return;
        }
        let wire_bound = match self.bandwidth {
            Some(b) => rate >= 0.7 * b.bytes_per_second() as f64,
            None => server_cores < 0.5,
        };
        // the stages wait for a busy link: the network is the bottleneck
        let link_busy = waiting > 0.3 && wire_bound;
        if link_busy {
            self.link_seen = self.link_seen.max(rate);
        }
        self.squeeze = squeeze(self.squeeze, waiting, wire_bound);
        let link = match self.bandwidth {
            Some(b) => Some(b.bytes_per_second() as f64),
            None => (self.link_seen > 0.0).then_some(self.link_seen),
        };
        // encoding pays while the plain bytes it moves a second would take more than half
        // the link (sent plain, they would come near to filling it)
        let encoding_pays = link.is_some_and(|b| rate / shrink >= b / 2.0);
        // a server busy with other work gets everything done on the client, until its
        // other work falls well below half its CPUs (the load's own share moves it)
        self.current = if busy > 0.5 || (self.current == Mode::All && busy > 0.25) {
            Mode::All
        } else if link_busy || (self.current != Mode::None && encoding_pays) {
            Mode::Size
        } else {
            Mode::None
        };
        // text moves only once the first partition has measured the columns
        if let Some(gate) = self.text.as_ref().filter(|_| self.costs.is_some()) {
            gate.set(text_share(gate.share(), waiting, busy, loading));
        }
    }

    /// Which columns of each fragment the client encodes.
    fn decide(
        &mut self,
        fragments: &[RecordBatch],
        out: &Outbox,
        feedback: &Feedback,
        pool: &rayon::ThreadPool,
    ) -> Vec<Vec<bool>> {
        if self.mode == Mode::Auto {
            self.adapt(out, feedback);
        }
        let encodable = &self.encodable;
        if self.exploring() {
            return fragments.iter().map(|_| encodable.clone()).collect();
        }
        // auto encodes the columns that cost the client nothing extra in any case
        let free = self.free();
        match self.current {
            Mode::All => fragments.iter().map(|_| encodable.clone()).collect(),
            // auto knows from its first partition which columns encoding shrinks: no
            // estimate per fragment column
            Mode::Size if self.costs.is_some() => {
                let mut shrinks = free;
                for cost in self.costs.iter().flatten() {
                    shrinks[cost.column] |= cost.encoded_bytes < cost.plain_bytes;
                }
                fragments.iter().map(|_| shrinks.clone()).collect()
            }
            // SL_S: HyperLogLog per fragment column (auto has measured its columns by now)
            Mode::Size => {
                let precision = self.precision;
                pool.install(|| {
                    fragments
                        .par_iter()
                        .map(|f| {
                            (0..encodable.len())
                                .map(|c| {
                                    encodable[c]
                                        && estimate(f.column(c).as_ref(), precision)
                                            .is_some_and(|e| e.worth_encoding())
                                })
                                .collect()
                        })
                        .collect()
                })
            }
            _ => fragments.iter().map(|_| free.clone()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WireColumn;
    use wireload_types::SqlType;

    /// An outbox whose frames stay in the returned receiver.
    fn outbox() -> (Outbox, futures::channel::mpsc::Receiver<FlightData>) {
        let (tx, rx) = futures::channel::mpsc::channel(1000);
        let out = Outbox {
            tx: Mutex::new(tx),
            payload: AtomicU64::new(0),
            plain: AtomicU64::new(0),
            blocked_ns: AtomicU64::new(0),
        };
        (out, rx)
    }

    /// The frames sent: (header, payload length, whole frame's bytes).
    fn frames(
        out: Outbox,
        mut rx: futures::channel::mpsc::Receiver<FlightData>,
    ) -> Vec<(Frame, usize, usize)> {
        drop(out);
        let mut all = Vec::new();
        while let Ok(d) = rx.try_recv() {
            all.push((
                from_json::<Frame>(&d.app_metadata).unwrap(),
                d.data_body.len(),
                d.encoded_len(),
            ));
        }
        all
    }

    /// A fake fragment frame of `n` rows.
    fn fragment(piece: u64, n: usize) -> Frame {
        Frame::Fragment {
            partition: 3,
            fragment: 10 + piece,
            rows: n as u64,
            encoded: vec![1],
        }
    }

    #[test]
    fn a_column_is_free_when_encoding_costs_the_client_no_more_cpu() {
        // a low-cardinality string column: the sort step costs more than serializing the
        // values, and less than sending the bytes it saves
        let flags = ColumnCost {
            column: 0,
            encoded_cpu: 0.0016,
            encoded_bytes: 170_000,
            plain_cpu: 0.0001,
            plain_bytes: 2_700_000,
        };
        assert!(!flags.free(0.0));
        assert!(flags.free(1e-9));
        // unique strings: never
        let comments = ColumnCost {
            column: 1,
            encoded_cpu: 0.032,
            encoded_bytes: 6_000_000,
            plain_cpu: 0.0003,
            plain_bytes: 5_500_000,
        };
        assert!(!comments.free(1e-9));
        assert!(!comments.free(1e-6));
    }

    #[test]
    fn auto_encodes_its_first_partition_then_what_its_costs_say() {
        use arrow::array::Int32Array;
        let opts = PushOptions::new("http://127.0.0.1:1", "t", Mode::Auto);
        let column = |name: &str, encodable| WireColumn {
            name: name.into(),
            ty: SqlType::Integer,
            nullable: false,
            encodable,
        };
        let described = Described {
            table: "t".into(),
            columns: vec![
                column("free", true),
                column("shrinks", true),
                column("unique", true),
                column("key", false),
            ],
            max_frame_bytes: 0,
            text: false,
        };
        let mut d = Decider::new(&opts, &described, Arc::new(AtomicU64::new(0)));
        let (out, _rx) = outbox();
        let feedback = Feedback::default();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let values: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
        let fields: Vec<Field> = described
            .columns
            .iter()
            .map(|c| Field::new(&c.name, values.data_type().clone(), false))
            .collect();
        let fragment =
            RecordBatch::try_new(Arc::new(Schema::new(fields)), vec![values; 4]).unwrap();
        let fragments = [fragment.clone(), fragment];
        // the first partition: every encodable column, and it is not streamed
        assert!(d.exploring());
        assert!(!d.streams(&out, &feedback));
        let plan = d.decide(&fragments, &out, &feedback, &pool);
        assert_eq!(plan, vec![vec![true, true, true, false]; 2]);
        let cost = |column, encoded_cpu, encoded_bytes| ColumnCost {
            column,
            encoded_cpu,
            encoded_bytes,
            plain_cpu: 0.001,
            plain_bytes: 1_000_000,
        };
        d.explored(vec![
            cost(0, 0.0015, 100_000),
            cost(1, 0.01, 200_000),
            cost(2, 0.01, 2_000_000),
        ]);
        d.per_byte = 1e-9;
        assert!(!d.exploring());
        // no bandwidth given: deserializing only, but the free column is encoded
        assert_eq!(d.current, Mode::None);
        let plan = d.decide(&fragments, &out, &feedback, &pool);
        assert_eq!(plan, vec![vec![true, false, false, false]; 2]);
        // a busy link: what shrinks, from the measurement
        d.current = Mode::Size;
        let plan = d.decide(&fragments, &out, &feedback, &pool);
        assert_eq!(plan, vec![vec![true, true, false, false]; 2]);
        // LZ4 while the link is the bottleneck
        d.squeeze = true;
        assert!(d.lz4(true) && !d.lz4(false));
        // a busy server: everything encodable
        d.current = Mode::All;
        let plan = d.decide(&fragments, &out, &feedback, &pool);
        assert_eq!(plan, vec![vec![true, true, true, false]; 2]);
        // and no LZ4 for a busy server, nor once the link has room
        assert!(!d.lz4(true));
        d.current = Mode::None;
        assert!(d.lz4(true));
        d.squeeze = false;
        assert!(!d.lz4(true));
        // the static modes measure nothing and encode no column for free
        let none = PushOptions::new("http://127.0.0.1:1", "t", Mode::None);
        let mut d = Decider::new(&none, &described, Arc::new(AtomicU64::new(0)));
        assert!(!d.exploring());
        // a static mode sends LZ4 whenever asked
        assert!(d.lz4(true));
        let plan = d.decide(&fragments, &out, &feedback, &pool);
        assert_eq!(plan, vec![vec![false; 4]; 2]);
    }

    #[test]
    fn the_cost_of_a_byte_is_the_least_window_after_the_first_partition() {
        let opts = PushOptions::new("http://127.0.0.1:1", "t", Mode::Auto);
        let described = Described {
            table: "t".into(),
            columns: Vec::new(),
            max_frame_bytes: 0,
            text: false,
        };
        let mut d = Decider::new(&opts, &described, Arc::new(AtomicU64::new(0)));
        let w = PER_BYTE_WINDOW;
        // the first partition's windows (small encoded frames, dear per byte) do not count
        d.measure_per_byte(w, || 0.5);
        assert_eq!(d.per_byte, 0.0);
        d.explored(Vec::new());
        // a window shorter than PER_BYTE_WINDOW runs on; the CPU is read when it closes
        d.measure_per_byte(w + w / 2, || panic!("read before the window closed"));
        d.measure_per_byte(3 * w, || 0.5 + 4e-9 * (2 * w) as f64);
        assert!((d.per_byte - 4e-9).abs() < 1e-15, "{}", d.per_byte);
        // a cheaper window lowers it, a dearer one does not raise it
        d.measure_per_byte(4 * w, || 0.5 + 4e-9 * (2 * w) as f64 + 1e-9 * w as f64);
        assert!((d.per_byte - 1e-9).abs() < 1e-15, "{}", d.per_byte);
        let net = 0.5 + 4e-9 * (2 * w) as f64 + 1e-9 * w as f64;
        d.measure_per_byte(5 * w, || net + 9e-9 * w as f64);
        assert!((d.per_byte - 1e-9).abs() < 1e-15, "{}", d.per_byte);
    }

    #[test]
    fn the_text_share_follows_the_bottleneck_and_spreads_over_the_windows() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // the client behind (its stages seldom wait for the socket), the server with CPU to
        // spare: more text
        assert!(close(text_share(0.0, 0.05, 0.0, 0.5), TEXT_STEP));
        assert!(close(text_share(0.98, 0.0, 0.0, 0.5), 1.0));
        // the link or the server behind: less
        assert!(close(text_share(0.5, 0.6, 0.0, 0.5), 0.5 - TEXT_STEP));
        assert!(close(text_share(0.03, 0.9, 0.0, 0.5), 0.0));
        // the server's loads using nearly all its CPUs, its buffers not yet full: less
        assert!(close(text_share(0.5, 0.0, 0.0, 0.95), 0.5 - TEXT_STEP));
        // in between: as it is
        assert!(close(text_share(0.5, 0.2, 0.0, 0.5), 0.5));
        assert!(close(text_share(0.5, 0.0, 0.0, 0.85), 0.5));
        // a server busy with queries gets none
        assert!(close(text_share(0.8, 0.0, 0.3, 0.2), 0.0));
        let taken = |share: f64| {
            let gate = TextGate::default();
            gate.set(share);
            (0..10).map(|_| gate.take()).collect::<Vec<_>>()
        };
        assert!(taken(0.0).iter().all(|t| !t));
        assert!(taken(1.0).iter().all(|&t| t));
        let half = taken(0.5);
        assert_eq!(half, [false, true].repeat(5));
        assert_eq!(taken(0.3).iter().filter(|&&t| t).count(), 3);
    }

    #[test]
    fn auto_sends_lz4_from_a_busy_link_until_the_link_has_room() {
        // the stages wait for a link carrying near its bandwidth: on
        assert!(squeeze(false, 0.5, true));
        // waiting less, or the link carrying less, but not both: as it is
        assert!(squeeze(true, 0.05, true));
        assert!(squeeze(true, 0.2, false));
        assert!(!squeeze(false, 0.2, true));
        // they seldom wait, and the link has room: off
        assert!(!squeeze(true, 0.05, false));
        // waiting for a link far from its bandwidth (the server behind): not on
        assert!(!squeeze(false, 0.5, false));
    }

    #[test]
    fn small_pushes_are_cut_into_at_least_min_partitions() {
        let opts = PushOptions::new("http://127.0.0.1:1", "t", Mode::All);
        let mib = |n: u64| n << 20;
        // lineitem SF1 (725 MiB, 73 fragments): 15 partitions of 5
        assert_eq!(partition_fragments(&opts, mib(725)), 5);
        // 320 MB: 31 fragments in 16 partitions of 2
        assert_eq!(partition_fragments(&opts, 319_748_676), 2);
        // a large file: the paper's 50
        assert_eq!(partition_fragments(&opts, mib(100_000)), 50);
        // a small one: one fragment a partition, an empty one too
        assert_eq!(partition_fragments(&opts, mib(3)), 1);
        assert_eq!(partition_fragments(&opts, 0), 1);
        // no lower bound: the given size
        let fixed = PushOptions {
            min_partitions: 1,
            ..opts
        };
        assert_eq!(partition_fragments(&fixed, mib(725)), 50);
    }

    #[test]
    fn frames_over_the_limit_are_cut_into_ranges_that_fit() {
        const LIMIT: usize = 1000;
        // 300 bytes of framing per payload, 7 per item: 10_000 items need about 100 frames
        let encode = |_: usize, n: usize| Ok(vec![0u8; 300 + 7 * n]);
        for first in [10_000, 5_000, 80] {
            let (out, rx) = outbox();
            let pieces = send_in_frames(
                &out,
                LIMIT,
                10_000,
                first,
                encode,
                |piece, _, n| fragment(piece, n),
                |at| format!("row {at}"),
            )
            .unwrap();
            let sent = frames(out, rx);
            assert_eq!(pieces, sent.len() as u64);
            let mut rows = 0;
            for (k, (frame, body, size)) in sent.iter().enumerate() {
                assert!(*size <= LIMIT, "frame {k}: {size} bytes");
                let Frame::Fragment {
                    fragment, rows: n, ..
                } = frame
                else {
                    panic!("{frame:?}");
                };
                assert_eq!(*fragment, 10 + k as u64);
                assert_eq!(*body, 300 + 7 * *n as usize);
                rows += n;
            }
            assert_eq!(rows, 10_000, "first {first}");
            // no more frames than twice what the items need
            assert!(
                sent.len() < 2 * 10_000 * 7 / (LIMIT - 400),
                "{}",
                sent.len()
            );
        }
        // nothing to send is still one frame (an empty dictionary)
        let (out, rx) = outbox();
        assert_eq!(
            send_in_frames(
                &out,
                LIMIT,
                0,
                0,
                encode,
                |piece, _, n| fragment(piece, n),
                |_| String::new()
            )
            .unwrap(),
            1
        );
        assert_eq!(frames(out, rx).len(), 1);
        // one item larger than a frame is an error that names it
        let (out, _rx) = outbox();
        let err = send_in_frames(
            &out,
            LIMIT,
            3,
            3,
            // item 1 is 2000 bytes, the others 10
            |at, n| {
                Ok(vec![
                    0u8;
                    10 * n + if at <= 1 && at + n > 1 { 1990 } else { 0 }
                ])
            },
            |piece, _, n| fragment(piece, n),
            |at| format!("row {} of the push", at + 1),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("row 2 of the push alone needs a frame"),
            "{err}"
        );
        assert!(err.contains("at most 1000 bytes"), "{err}");
    }
}
