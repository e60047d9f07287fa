//! Parallel decoding of a compressed file with several zstd frames or gzip members: a few
//! threads of its own decode frames (members) ahead, and a [`Read`] hands their bytes out
//! strictly in file order, so the loader's reading thread consumes it like any decoder.
//!
//! ADVICE FOR HACKERS (the invariants to keep):
//!
//! - The threads' results are a shortcut, never the authority. The reader hands out what a
//!   thread decoded only when it starts exactly where everything handed out so far ends;
//!   whatever a thread could not decode (a corrupt, truncated or oversized frame or member,
//!   a part it was unsure of) the reader decodes itself, from that offset, with the decoder
//!   [`Codec::decoder`] uses. The output and the errors are therefore those of the
//!   sequential decoder: no error of a thread ever reaches the caller. (zstd's detail of
//!   an error, after "zstd stream is corrupt:", may differ: it depends on the buffers the
//!   frames before left the decoder, and the reader starts a fresh one where it decodes a
//!   run itself.)
//! - zstd: frames are found without decoding (`ZSTD_findFrameCompressedSize`, which knows
//!   skippable frames) as the reader goes; a job is a run of whole frames. A frame the
//!   threads cannot decode exactly as the streaming decoder does (a legacy format, a window
//!   above the streaming decoder's limit, a declared size above [`MAX_UNIT`]) is decoded by
//!   the reader itself; from where the walk meets something that is not a whole frame, the
//!   reader decodes the rest (and reports what is wrong with it).
//! - gzip: members are not indexed. The reader decodes the first member itself; when more
//!   follow, job k speculates in region k of the file: it decodes a chain of members from
//!   the first plausible header there until the chain passes the region's end. The reader
//!   takes the chain only when it starts exactly at the offset where the verified chain
//!   (from the file's start) ended, and each member ends where flate2 found its end, so a
//!   false header inside compressed data (or a whole gzip member stored inside another)
//!   never counts. Where no chain fits, the reader decodes member by member. BGZF files
//!   (`BC` extra field) are known to have many members from their first header.
//! - Memory: at most `ahead` jobs wait decoded, each holding at most `max_unit` bytes
//!   (aiming at `job_bytes`; zstd runs double up to `run_bytes`); a frame or member above
//!   that is streamed by the reader. A consumer that takes jobs whole
//!   ([`ParallelReader::next_part`]) gives their buffers back to be decoded into again.
//! - Progress: a job's compressed bytes count when its decoded bytes are all handed out
//!   (or its buffer is), a part the reader decodes itself as its decoder consumes it:
//!   monotonic, ending at the file's size.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use flate2::bufread::{GzDecoder, MultiGzDecoder};
use zstd::zstd_safe;

use crate::compressed::{Codec, describe};

/// Most decoder threads of one reader.
const MAX_THREADS: usize = 8;
/// Most decoded bytes one job holds: a frame or member above it is streamed instead.
const MAX_UNIT: usize = 64 << 20;
/// Decoded bytes a job aims at (a zstd run at first).
const JOB_BYTES: usize = 2 << 20;
/// Decoded bytes a zstd run grows to (each run aims at twice the last): a consumer's block.
const RUN_BYTES: usize = 16 << 20;
/// Smallest gzip region (and half the smallest file the threads decode).
const MIN_REGION: usize = 64 << 10;
/// Largest gzip region.
const MAX_REGION: usize = 16 << 20;
/// Compressed bytes a decoder is given per read of its input.
const INPUT_WINDOW: usize = 1 << 20;
/// Most bytes one zstd block decodes to (`ZSTD_BLOCKSIZE_MAX`).
const MAX_BLOCK: usize = 128 << 10;
/// Largest zstd window the streaming decoder accepts by default (`ZSTD_WINDOWLOG_LIMIT_DEFAULT`).
const MAX_WINDOW: u64 = 1 << 27;
/// Longest gzip header field (file name, comment) flate2 accepts.
const MAX_HEADER_FIELD: usize = 65535;
/// The magic number of a zstd frame.
const ZSTD_FRAME: u32 = 0xFD2F_B528;
/// The magic numbers of skippable zstd frames (the low four bits are free).
const ZSTD_SKIPPABLE: u32 = 0x184D_2A50;
/// The first bytes of a gzip member compressed with deflate.
const GZIP_HEADER: [u8; 3] = [0x1f, 0x8b, 0x08];

/// The bytes of a compressed file (a memory map), shared with the decoder threads.
pub(crate) type Bytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// The slice of `bytes`.
fn slice(bytes: &Bytes) -> &[u8] {
    (**bytes).as_ref()
}

/// A reader that decodes the compressed regular `file` (gzip or zstd, `codec`) on several
/// threads, adding the compressed bytes it hands out to `consumed`; None when that would
/// gain nothing (one zstd frame, too few frames to share out, a small file, one CPU): the
/// caller then streams it with [`Codec::decoder`]. Jobs decoded whole keep `front` bytes of
/// room before their bytes ([`ParallelReader::next_part`]).
pub(crate) fn open(
    file: &File,
    codec: Codec,
    consumed: &Arc<AtomicU64>,
    front: usize,
) -> io::Result<Option<ParallelReader>> {
    let settings = Settings::for_machine(front);
    if settings.threads < 2 || file.metadata()?.len() < 2 * MIN_REGION as u64 {
        return Ok(None);
    }
    // SAFETY: the map is read-only and private to this load; wireload never writes the
    // file. Another process truncating it while we read is outside what a memory-mapped
    // reader can defend against (as for every mmap-based loader).
    let map = unsafe { memmap2::Mmap::map(file) }?;
    #[cfg(unix)]
    {
        // Advice only: a failure changes nothing but speed.
        let _ = map.advise(memmap2::Advice::Sequential);
    }
    Ok(ParallelReader::new(
        Arc::new(map),
        codec,
        Arc::clone(consumed),
        settings,
    ))
}

/// How a [`ParallelReader`] shares out its work.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Decoder threads.
    pub(crate) threads: usize,
    /// Jobs decoded ahead of the one being handed out.
    pub(crate) ahead: usize,
    /// Most decoded bytes a job holds.
    pub(crate) max_unit: usize,
    /// Decoded bytes a job aims at (a zstd run: the first one).
    pub(crate) job_bytes: usize,
    /// zstd: decoded bytes a run grows to (at least `job_bytes`).
    pub(crate) run_bytes: usize,
    /// gzip: the size of a region, or None to size regions by the first member's ratio.
    pub(crate) region: Option<usize>,
    /// Room kept in front of a job's decoded bytes (for what the consumer puts before them).
    pub(crate) front: usize,
}

impl Settings {
    /// Up to [`MAX_THREADS`] threads, at most the machine's parallelism, two jobs each ahead;
    /// `front` bytes of room before each job's bytes.
    pub(crate) fn for_machine(front: usize) -> Settings {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS);
        Settings {
            threads,
            ahead: 2 * threads,
            max_unit: MAX_UNIT,
            job_bytes: JOB_BYTES,
            run_bytes: RUN_BYTES,
            region: None,
            front,
        }
    }
}

/// A [`BufRead`] of `bytes[pos..end]` that tells how far it was read.
struct Tail {
    /// The whole file.
    bytes: Bytes,
    /// Where the next read starts.
    pos: usize,
    /// Where the bytes end.
    end: usize,
}

impl Tail {
    /// The bytes of `bytes` from `pos` to `end`.
    fn new(bytes: &Bytes, pos: usize, end: usize) -> Tail {
        Tail {
            bytes: Arc::clone(bytes),
            pos,
            end,
        }
    }
}

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Tail {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let to = self.end.min(self.pos + INPUT_WINDOW);
        Ok(&slice(&self.bytes)[self.pos..to])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }
}

/// One zstd frame found without decoding it.
struct Frame {
    /// Where it ends.
    end: usize,
    /// The content size it declares (0 for a skippable frame), when it declares one.
    content: Option<u64>,
    /// Whether a thread decodes it exactly as the streaming decoder does: a current-format or
    /// skippable frame whose window the streaming decoder accepts.
    plain: bool,
}

/// The whole zstd frame that starts at `at`, or None when none does (truncated, corrupt
/// or not a frame: the streaming decoder says which).
fn frame_at(data: &[u8], at: usize) -> Option<Frame> {
    let rest = &data[at..];
    let size = zstd_safe::find_frame_compressed_size(rest).ok()?;
    if size == 0 || size > rest.len() {
        return None;
    }
    let content = zstd_safe::get_frame_content_size(rest).ok()?;
    let magic = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
    let plain = magic & 0xFFFF_FFF0 == ZSTD_SKIPPABLE
        || (magic == ZSTD_FRAME && window(rest).is_some_and(|w| w <= MAX_WINDOW));
    Some(Frame {
        end: at + size,
        content,
        plain,
    })
}

/// The most bytes the whole zstd frame `frame` (current format or skippable) decodes to:
/// each block's size from its header, a compressed block counted at the most a block holds.
fn content_bound(frame: &[u8]) -> Option<usize> {
    let magic = u32::from_le_bytes(frame.get(..4)?.try_into().ok()?);
    if magic & 0xFFFF_FFF0 == ZSTD_SKIPPABLE {
        return Some(0);
    }
    if magic != ZSTD_FRAME {
        return None;
    }
    let descriptor = *frame.get(4)?;
    let single = descriptor & 0x20 != 0;
    let dictionary = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let size_field = [usize::from(single), 2, 4, 8][usize::from(descriptor >> 6)];
    let mut pos = 5 + usize::from(!single) + dictionary + size_field;
    let mut bound = 0usize;
    loop {
        let header = frame.get(pos..pos + 3)?;
        let header = u32::from(header[0]) | u32::from(header[1]) << 8 | u32::from(header[2]) << 16;
        let size = (header >> 3) as usize;
        let (decoded, stored) = match (header >> 1) & 3 {
            0 => (size, size),
            1 => (size, 1),
            2 => (MAX_BLOCK, size),
            _ => return None,
        };
        bound = bound.checked_add(decoded)?;
        pos += 3 + stored;
        if pos > frame.len() {
            return None;
        }
        if header & 1 != 0 {
            return Some(bound);
        }
    }
}

/// The window size a current-format zstd frame declares (0 for a single-segment frame,
/// whose window is its content size).
fn window(frame: &[u8]) -> Option<u64> {
    let descriptor = *frame.get(4)?;
    if descriptor & 0x20 != 0 {
        return Some(0);
    }
    let byte = *frame.get(5)?;
    let base = 1u64 << (10 + (byte >> 3));
    Some(base + (base >> 3) * u64::from(byte & 7))
}

/// A run of whole zstd frames: one job.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Where its first frame starts.
    start: usize,
    /// Where its last frame ends.
    end: usize,
    /// The reader decodes it itself (one frame the threads do not decode).
    stream: bool,
}

/// The walk over a file's zstd frames that cuts them into runs.
#[derive(Debug, Default)]
struct FrameWalk {
    /// Where the next frame starts.
    pos: usize,
    /// Something that is not a whole frame starts at `pos`.
    stuck: bool,
    /// Decoded bytes the next run aims at (0 before the first).
    target: usize,
}

impl FrameWalk {
    /// The next run: frames up to about `job_bytes` decoded the first time and twice the
    /// last after, up to `run_bytes` (never above `max_unit`), or a frame the threads do not
    /// decode alone; None at the end of the frames.
    fn next_run(&mut self, data: &[u8], settings: &Settings) -> Option<Run> {
        let start = self.pos;
        let target = match self.target {
            0 => settings.job_bytes,
            target => target,
        };
        self.target = target
            .saturating_mul(2)
            .min(settings.run_bytes.max(settings.job_bytes));
        let mut estimate = 0usize;
        while !self.stuck && self.pos < data.len() {
            let Some(frame) = frame_at(data, self.pos) else {
                self.stuck = true;
                break;
            };
            let fits = frame.plain
                && frame
                    .content
                    .is_none_or(|size| size <= settings.max_unit as u64);
            if !fits {
                if self.pos > start {
                    break;
                }
                self.pos = frame.end;
                return Some(Run {
                    start,
                    end: frame.end,
                    stream: true,
                });
            }
            // an undeclared size: what its blocks can hold, or some times its compressed
            // size when less
            let size = frame.content.map_or_else(
                || {
                    let bound = content_bound(&data[self.pos..frame.end]);
                    let guess = (frame.end - self.pos).saturating_mul(8);
                    bound.map_or(guess, |bound| bound.min(guess))
                },
                |size| size as usize,
            );
            if self.pos > start && estimate.saturating_add(size) > settings.max_unit {
                break;
            }
            estimate = estimate.saturating_add(size);
            self.pos = frame.end;
            if estimate >= target {
                break;
            }
        }
        (self.pos > start).then_some(Run {
            start,
            end: self.pos,
            stream: false,
        })
    }
}

/// What a gzip header that parses tells.
struct GzipHeader {
    /// Where the header ends (the deflate stream starts).
    end: usize,
    /// A BGZF member's size (its `BC` extra subfield), when it has one.
    bgzf: Option<usize>,
}

/// The gzip header at `at` when it parses as flate2 parses it (and names a known OS).
fn gzip_header(data: &[u8], at: usize) -> Option<GzipHeader> {
    let fixed = data.get(at..at.checked_add(10)?)?;
    let flags = fixed[3];
    if fixed[..3] != GZIP_HEADER || flags & 0xe0 != 0 || (fixed[9] > 13 && fixed[9] != 255) {
        return None;
    }
    let mut end = at + 10;
    let mut bgzf = None;
    if flags & 0x04 != 0 {
        let length = data.get(end..end + 2)?;
        let length = usize::from(u16::from_le_bytes([length[0], length[1]]));
        bgzf = bgzf_size(data.get(end + 2..end + 2 + length)?);
        end += 2 + length;
    }
    for field in [0x08, 0x10] {
        // file name, comment: up to a NUL
        if flags & field != 0 {
            let text = &data[end..(end + MAX_HEADER_FIELD + 1).min(data.len())];
            end += memchr::memchr(0, text)? + 1;
        }
    }
    if flags & 0x02 != 0 {
        let stored = data.get(end..end + 2)?;
        let mut crc = flate2::Crc::new();
        crc.update(&data[at..end]);
        if crc.sum() as u16 != u16::from_le_bytes([stored[0], stored[1]]) {
            return None;
        }
        end += 2;
    }
    Some(GzipHeader { end, bgzf })
}

/// The member size a BGZF `BC` subfield of a gzip `extra` field gives.
fn bgzf_size(extra: &[u8]) -> Option<usize> {
    let mut rest = extra;
    while rest.len() >= 4 {
        let length = usize::from(u16::from_le_bytes([rest[2], rest[3]]));
        let field = rest.get(4..4 + length)?;
        if rest[..2] == *b"BC" && length == 2 {
            return Some(usize::from(u16::from_le_bytes([field[0], field[1]])) + 1);
        }
        rest = &rest[4 + length..];
    }
    None
}

/// Whether a gzip member plausibly starts at `at`: its header parses, there is room for a
/// deflate stream and a trailer, the first block is of a known type; for `bgzf`, it is a
/// BGZF member followed by the end or another member.
fn plausible(data: &[u8], at: usize, bgzf: bool) -> bool {
    let Some(header) = gzip_header(data, at) else {
        return false;
    };
    let room = header.end + 10 <= data.len();
    let block = data.get(header.end).is_some_and(|b| (b >> 1) & 3 != 3);
    let bgzf = !bgzf
        || header.bgzf.is_some_and(|size| {
            let next = at + size;
            next == data.len() || data.get(next..next + 2) == Some(&GZIP_HEADER[..2])
        });
    room && block && bgzf
}

/// The first offset in `from..to` where a gzip member plausibly starts.
fn candidate(data: &[u8], from: usize, to: usize, bgzf: bool) -> Option<usize> {
    let window = &data[from..(to + GZIP_HEADER.len() - 1).min(data.len())];
    memchr::memmem::find_iter(window, &GZIP_HEADER)
        .map(|i| from + i)
        .take_while(|&at| at < to)
        .find(|&at| plausible(data, at, bgzf))
}

/// Decodes the gzip member at `at` onto `out` with flate2 (header, deflate, CRC32 and
/// ISIZE checked): where it ends, or Err with the bytes it decoded when it fails or would
/// decode more than `cap` bytes.
fn member(bytes: &Bytes, at: usize, cap: usize, out: &mut Vec<u8>) -> Result<usize, usize> {
    let end = slice(bytes).len();
    let mut decoder = GzDecoder::new(Tail::new(bytes, at, end));
    let before = out.len();
    let read = (&mut decoder).take(cap as u64 + 1).read_to_end(out);
    let n = out.len() - before;
    match read {
        Ok(_) if n <= cap => Ok(decoder.get_ref().pos),
        _ => Err(n),
    }
}

/// How the jobs of a file are cut.
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// zstd: job k is the run `State::runs[k]`.
    Zstd,
    /// gzip: job k speculates in region k, `[k * region, (k + 1) * region)`.
    Gzip {
        /// Bytes of a region.
        region: usize,
        /// Members are BGZF members (a candidate must be one).
        bgzf: bool,
    },
}

/// What a thread made of a job.
enum Outcome {
    /// Whole frames or members from `start` to `end`, decoded.
    Decoded {
        /// Where the first frame or member starts.
        start: usize,
        /// Where the last ends.
        end: usize,
        /// Their decoded bytes, after `Settings::front` bytes of room.
        data: Vec<u8>,
    },
    /// Nothing the reader can use: it decodes this part itself.
    Nothing,
}

/// The jobs and results the reader and its threads share, under [`Shared::state`].
struct State {
    /// zstd: the runs planned so far, in file order.
    runs: Vec<Run>,
    /// Jobs that exist so far (zstd: `runs.len()`; gzip: the regions).
    planned: usize,
    /// The next job a thread takes.
    next: usize,
    /// Jobs below this may start.
    limit: usize,
    /// The job the reader is at: results of earlier jobs are dropped.
    current: usize,
    /// Results not taken yet, by job.
    results: BTreeMap<usize, Outcome>,
}

/// What a reader shares with its decoder threads.
struct Shared {
    /// The compressed file.
    bytes: Bytes,
    /// How its jobs are cut.
    plan: Plan,
    /// Sizes and limits.
    settings: Settings,
    /// Jobs and results.
    state: Mutex<State>,
    /// A result arrived (the reader waits on it).
    done: Condvar,
    /// Jobs may start, or the threads are to stop (the threads wait on it).
    work: Condvar,
    /// The reader is gone: the threads end.
    stop: AtomicBool,
    /// gzip: the reader has settled everything before this offset (a job looks for members
    /// from here on; a region that ends before it is of no use).
    claimed: AtomicUsize,
    /// Buffers the consumer gave back, to decode into again.
    spare: Spare,
}

/// Buffers given back to decode into again (a few: more are dropped).
#[derive(Clone, Default)]
struct Spare(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spare {
    /// Most buffers kept.
    const KEPT: usize = 4;

    /// Keeps `buf` (when fewer than [`Spare::KEPT`] wait).
    fn give(&self, buf: Vec<u8>) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < Self::KEPT && buf.capacity() > 0 {
            kept.push(buf);
        }
    }

    /// A kept buffer as it was given (or a new, empty one).
    fn pop(&self) -> Vec<u8> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        kept.unwrap_or_default()
    }

    /// A buffer holding `front` bytes of room and nothing else.
    fn take(&self, front: usize) -> Vec<u8> {
        let mut buf = self.pop();
        buf.clear();
        buf.resize(front, 0);
        buf
    }
}

/// Locks `state`, whatever a panicking holder left (the threads catch their panics).
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts up to `n` decoder threads on `shared`.
fn spawn(shared: &Arc<Shared>, n: usize) -> Vec<JoinHandle<()>> {
    (0..n)
        .filter_map(|i| {
            let shared = Arc::clone(shared);
            std::thread::Builder::new()
                .name(format!("wireload-decode-{i}"))
                .spawn(move || work(&shared))
                .ok()
        })
        .collect()
}

/// A decoder thread: takes jobs in order while the reader's window allows, until stopped.
fn work(shared: &Shared) {
    let mut context = None;
    loop {
        let (job, run) = {
            let mut state = lock(&shared.state);
            loop {
                if shared.stop.load(Relaxed) {
                    return;
                }
                if state.next < state.limit.min(state.planned) {
                    break;
                }
                state = shared
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            let job = state.next;
            state.next += 1;
            (job, state.runs.get(job).copied())
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| match shared.plan {
            Plan::Zstd => run.map_or(Outcome::Nothing, |run| {
                let out = shared.spare.take(shared.settings.front);
                decode_run(&shared.bytes, run, &shared.settings, &mut context, out)
            }),
            Plan::Gzip { region, bgzf } => decode_region(shared, job, region, bgzf),
        }))
        .unwrap_or_else(|_| {
            context = None;
            Outcome::Nothing
        });
        let mut state = lock(&shared.state);
        if job >= state.current {
            state.results.insert(job, outcome);
            shared.done.notify_all();
        }
    }
}

/// Decodes the zstd frames of `run` (with a reused context) after what `out` holds (the
/// front room), or Nothing when any of them does not decode or would exceed `max_unit`
/// bytes.
fn decode_run(
    bytes: &Bytes,
    run: Run,
    settings: &Settings,
    context: &mut Option<zstd_safe::DCtx<'static>>,
    mut out: Vec<u8>,
) -> Outcome {
    if run.stream {
        return Outcome::Nothing;
    }
    let data = slice(bytes);
    let front = out.len();
    let mut pos = run.start;
    while pos < run.end {
        let Some(frame) = frame_at(data, pos) else {
            return Outcome::Nothing;
        };
        let src = &data[pos..frame.end];
        let room = settings.max_unit - (out.len() - front).min(settings.max_unit);
        // a declared size is exact; without one, the blocks' headers bound it
        let (want, exact) = match frame.content {
            Some(size) => (usize::try_from(size).unwrap_or(usize::MAX), true),
            None => match content_bound(src) {
                Some(bound) => (bound.min(room), false),
                None => return Outcome::Nothing,
            },
        };
        if want > room {
            return Outcome::Nothing;
        }
        let from = out.len();
        out.reserve(want);
        let context = context.get_or_insert_with(zstd_safe::DCtx::create);
        // decoded straight into the vector's spare room: nothing zero-filled, nothing copied
        let mut cursor = io::Cursor::new(&mut out);
        cursor.set_position(from as u64);
        match context.decompress(&mut cursor, src) {
            Ok(n) if (if exact { n == want } else { n <= room }) => {}
            _ => {
                *context = zstd_safe::DCtx::create();
                return Outcome::Nothing;
            }
        }
        pos = frame.end;
    }
    Outcome::Decoded {
        start: run.start,
        end: run.end,
        data: out,
    }
}

/// Speculates in gzip region `job`: the chain of members from the first plausible header in
/// the region (at or after what the reader claimed) that decodes, up to the first member end
/// past the region; a false start is dropped and the next candidate tried, within a budget.
fn decode_region(shared: &Shared, job: usize, region: usize, bgzf: bool) -> Outcome {
    let data = slice(&shared.bytes);
    let len = data.len();
    let lo = job.saturating_mul(region).min(len);
    let hi = lo.saturating_add(region).min(len);
    let Settings {
        max_unit, front, ..
    } = shared.settings;
    let moot = || shared.stop.load(Relaxed) || shared.claimed.load(Relaxed) >= hi;
    let mut from = lo.max(shared.claimed.load(Relaxed));
    // decoded bytes (and a toll per try) spent on false starts
    let mut spent = 0usize;
    while from < hi && spent <= max_unit && !moot() {
        let Some(at) = candidate(data, from, hi, bgzf) else {
            break;
        };
        let mut out = shared.spare.take(front);
        let mut end = at;
        loop {
            let kept = out.len();
            let room = max_unit - (kept - front).min(max_unit);
            match member(&shared.bytes, end, room, &mut out) {
                Ok(next) => end = next,
                Err(n) => {
                    out.truncate(kept);
                    if end == at {
                        spent = spent.saturating_add(n + (4 << 10));
                    }
                    break;
                }
            }
            if end >= hi || moot() {
                break;
            }
        }
        if end > at {
            return Outcome::Decoded {
                start: at,
                end,
                data: out,
            };
        }
        shared.spare.give(out);
        from = at + 1;
    }
    Outcome::Nothing
}

/// A sequential decoder the reader runs itself over part of the file.
enum Stream {
    /// One gzip member.
    Member(Box<GzDecoder<Tail>>),
    /// Every gzip member to the end of the file.
    Members(Box<MultiGzDecoder<Tail>>),
    /// zstd frames (to the end of their [`Tail`]).
    Frames(Box<zstd::stream::read::Decoder<'static, Tail>>),
}

impl Stream {
    /// The gzip member at `at`.
    fn member(bytes: &Bytes, at: usize) -> Stream {
        let end = slice(bytes).len();
        Stream::Member(Box::new(GzDecoder::new(Tail::new(bytes, at, end))))
    }

    /// The gzip members from `at` to the end.
    fn members(bytes: &Bytes, at: usize) -> Stream {
        let end = slice(bytes).len();
        Stream::Members(Box::new(MultiGzDecoder::new(Tail::new(bytes, at, end))))
    }

    /// The zstd frames in `start..end`.
    fn frames(bytes: &Bytes, start: usize, end: usize) -> io::Result<Stream> {
        let decoder = zstd::stream::read::Decoder::with_buffer(Tail::new(bytes, start, end))?;
        Ok(Stream::Frames(Box::new(decoder)))
    }

    /// Decodes into `buf`.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Member(d) => d.read(buf),
            Stream::Members(d) => d.read(buf),
            Stream::Frames(d) => d.read(buf),
        }
    }

    /// The offset in the file up to which it consumed its input.
    fn pos(&self) -> usize {
        match self {
            Stream::Member(d) => d.get_ref().pos,
            Stream::Members(d) => d.get_ref().pos,
            Stream::Frames(d) => d.get_ref().pos,
        }
    }
}

/// What the reader is doing.
enum Now {
    /// Between two parts, at `ParallelReader::next`.
    Between,
    /// Handing out a job's decoded bytes (from `at`, `Settings::front` at first); then the
    /// reader is at `end`.
    Buffer {
        /// The decoded bytes.
        data: Vec<u8>,
        /// How many are handed out.
        at: usize,
        /// Where the job's compressed bytes end.
        end: usize,
    },
    /// Decoding part of the file itself.
    Stream(Stream),
    /// Everything is handed out.
    End,
}

/// A [`Read`] of a compressed file's decoded bytes, decoded on threads of its own (see the
/// module's documentation).
pub(crate) struct ParallelReader {
    /// The file's format.
    codec: Codec,
    /// The compressed file.
    bytes: Bytes,
    /// Sizes and limits.
    settings: Settings,
    /// Where the compressed bytes handed out are counted.
    consumed: Arc<AtomicU64>,
    /// Compressed bytes counted so far (the offset they reach).
    counted: usize,
    /// The threads' side, once they run.
    shared: Option<Arc<Shared>>,
    /// The decoder threads.
    threads: Vec<JoinHandle<()>>,
    /// Everything before this offset is handed out, or being handed out by `now`.
    next: usize,
    /// What the reader is doing.
    now: Now,
    /// zstd: the next run to hand out.
    run: usize,
    /// zstd: runs planned so far.
    planned: usize,
    /// zstd: the walk that plans the runs.
    walk: FrameWalk,
    /// gzip: the first member is still to be decoded (by the reader; threads start after).
    first: bool,
    /// gzip: decoded bytes of the first member.
    first_decoded: usize,
    /// gzip: the last region whose outcome the reader took.
    looked: Option<usize>,
    /// gzip: speculative chains taken and refused (they did not start where the verified
    /// chain ended).
    chains: (usize, usize),
    /// The error the reader failed with: every later read fails with it too.
    failed: Option<(io::ErrorKind, String)>,
    /// Buffers given back, for the threads to decode into.
    spare: Spare,
}

/// What a [`ParallelReader`] gives next when its parts are taken whole.
pub(crate) enum Part {
    /// A job's decoded bytes (never none), after `front` bytes of room.
    Decoded(Vec<u8>),
    /// Bytes the reader decodes itself: [`ParallelReader::read_part`] reads them.
    Stream,
    /// Nothing more.
    End,
}

impl ParallelReader {
    /// A reader of `bytes` (a whole compressed file), or None when `codec` is zstd and the
    /// frames are too few to share out (or a thread cannot start).
    pub(crate) fn new(
        bytes: Bytes,
        codec: Codec,
        consumed: Arc<AtomicU64>,
        settings: Settings,
    ) -> Option<ParallelReader> {
        let mut reader = ParallelReader {
            codec,
            bytes,
            settings,
            consumed,
            counted: 0,
            shared: None,
            threads: Vec::new(),
            next: 0,
            now: Now::Between,
            run: 0,
            planned: 0,
            walk: FrameWalk::default(),
            first: codec == Codec::Gzip,
            first_decoded: 0,
            looked: None,
            chains: (0, 0),
            failed: None,
            spare: Spare::default(),
        };
        let data = slice(&reader.bytes);
        match codec {
            Codec::Zstd => {
                let runs: Vec<Run> = (0..2)
                    .map_while(|_| reader.walk.next_run(data, &settings))
                    .collect();
                if runs.len() < 2 || runs.iter().any(|r| r.stream) {
                    return None;
                }
                reader.planned = runs.len();
                let planned = runs.len();
                if !reader.start(Plan::Zstd, runs, 0, planned) {
                    return None;
                }
            }
            Codec::Gzip => {
                if let Some(region) = reader.bgzf_region() {
                    let regions = data.len().div_ceil(region);
                    let plan = Plan::Gzip { region, bgzf: true };
                    reader.first = !reader.start(plan, Vec::new(), 0, regions);
                }
            }
        }
        Some(reader)
    }

    /// The size of gzip regions when the file starts with two BGZF members (None else).
    fn bgzf_region(&self) -> Option<usize> {
        let data = slice(&self.bytes);
        let size = gzip_header(data, 0)?.bgzf?;
        if size < 18 || size >= data.len() || !plausible(data, size, true) {
            return None;
        }
        let trailer = &data[size - 4..size];
        let decoded = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let region = self.region(size, decoded as usize);
        (data.len().div_ceil(region) >= 2).then_some(region)
    }

    /// The size of gzip regions for members of `compressed` bytes decoding to `decoded`:
    /// about `job_bytes` decoded each.
    fn region(&self, compressed: usize, decoded: usize) -> usize {
        self.settings.region.unwrap_or_else(|| {
            let region =
                self.settings.job_bytes as u128 * compressed as u128 / decoded.max(1) as u128;
            usize::try_from(region)
                .unwrap_or(MAX_REGION)
                .clamp(MIN_REGION, MAX_REGION)
        })
    }

    /// Starts the threads on `plan` (`runs` planned for zstd), jobs from `first` on, of
    /// `planned`; false when none could start.
    fn start(&mut self, plan: Plan, runs: Vec<Run>, first: usize, planned: usize) -> bool {
        let state = State {
            runs,
            planned,
            next: first,
            limit: first + 1 + self.settings.ahead,
            current: first,
            results: BTreeMap::new(),
        };
        let shared = Arc::new(Shared {
            bytes: Arc::clone(&self.bytes),
            plan,
            settings: self.settings,
            state: Mutex::new(state),
            done: Condvar::new(),
            work: Condvar::new(),
            stop: AtomicBool::new(false),
            claimed: AtomicUsize::new(self.next),
            spare: self.spare.clone(),
        });
        self.threads = spawn(&shared, self.settings.threads.max(1));
        if self.threads.is_empty() {
            return false;
        }
        self.shared = Some(shared);
        true
    }

    /// Adds the compressed bytes up to `pos` not counted yet to the progress.
    fn count(&mut self, pos: usize) {
        if pos > self.counted {
            self.consumed
                .fetch_add((pos - self.counted) as u64, Relaxed);
            self.counted = pos;
        }
    }

    /// The outcome of `job`, waited for; moves the window of jobs to it.
    fn outcome(&self, shared: &Shared, job: usize) -> Outcome {
        let mut state = lock(&shared.state);
        if state.current < job {
            state.current = job;
            state.results = state.results.split_off(&job);
        }
        state.limit = state.limit.max(job + 1 + self.settings.ahead);
        state.next = state.next.max(job);
        shared.work.notify_all();
        loop {
            if let Some(outcome) = state.results.remove(&job) {
                return outcome;
            }
            if self.threads.iter().all(JoinHandle::is_finished) {
                // no thread left to decode it (cannot happen unless they died)
                return Outcome::Nothing;
            }
            state = shared
                .done
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// What to do at `next`, between two parts.
    fn advance(&mut self) -> io::Result<Now> {
        if self.next >= slice(&self.bytes).len() {
            return Ok(Now::End);
        }
        match self.codec {
            Codec::Zstd => self.advance_zstd(),
            Codec::Gzip => Ok(self.advance_gzip()),
        }
    }

    /// zstd: hands out the next run's decoded bytes, or decodes it (or the rest) itself.
    fn advance_zstd(&mut self) -> io::Result<Now> {
        let Some(shared) = self.shared.clone() else {
            return Ok(Now::Stream(Stream::frames(
                &self.bytes,
                self.next,
                slice(&self.bytes).len(),
            )?));
        };
        // plan the window's runs
        let data = slice(&self.bytes);
        let mut more = Vec::new();
        while self.planned + more.len() < self.run + 1 + self.settings.ahead {
            match self.walk.next_run(data, &self.settings) {
                Some(run) => more.push(run),
                None => break,
            }
        }
        let run = {
            let mut state = lock(&shared.state);
            if !more.is_empty() {
                state.runs.extend(more);
                state.planned = state.runs.len();
                self.planned = state.planned;
                shared.work.notify_all();
            }
            state.runs.get(self.run).copied()
        };
        let Some(run) = run.filter(|run| run.start == self.next) else {
            // the frames end before the file: the sequential decoder decodes the rest (and
            // says what is wrong with it), as it would if a run did not start where the
            // last one ended (which cannot happen)
            return Ok(Now::Stream(Stream::frames(
                &self.bytes,
                self.next,
                data.len(),
            )?));
        };
        let job = self.run;
        self.run += 1;
        if let Outcome::Decoded { start, end, data } = self.outcome(&shared, job)
            && start == self.next
        {
            let at = self.settings.front;
            return Ok(Now::Buffer { data, at, end });
        }
        Ok(Now::Stream(Stream::frames(
            &self.bytes,
            run.start,
            run.end,
        )?))
    }

    /// gzip: hands out a chain that starts at `next`, or decodes the member there itself.
    fn advance_gzip(&mut self) -> Now {
        let at = self.next;
        if self.first {
            return Now::Stream(Stream::member(&self.bytes, at));
        }
        let Some(shared) = self.shared.clone() else {
            return Now::Stream(Stream::members(&self.bytes, at));
        };
        let Plan::Gzip { region, .. } = shared.plan else {
            unreachable!("a gzip reader's plan is gzip")
        };
        let job = at / region;
        if self.looked.is_none_or(|looked| job > looked) {
            self.looked = Some(job);
            match self.outcome(&shared, job) {
                Outcome::Decoded { start, end, data } if start == at => {
                    shared.claimed.store(end, Relaxed);
                    self.chains.0 += 1;
                    let at = self.settings.front;
                    return Now::Buffer { data, at, end };
                }
                Outcome::Decoded { .. } => self.chains.1 += 1,
                Outcome::Nothing => {}
            }
        }
        shared.claimed.store(at + 1, Relaxed);
        Now::Stream(Stream::member(&self.bytes, at))
    }

    /// gzip: after the first member (which ended at `next`), starts the threads when more
    /// members follow that are worth sharing out.
    fn after_first_member(&mut self) {
        self.first = false;
        let len = slice(&self.bytes).len();
        if self.next >= len || self.first_decoded > self.settings.max_unit {
            return;
        }
        let region = self.region(self.next, self.first_decoded);
        if len - self.next < 2 * region {
            return;
        }
        let plan = Plan::Gzip {
            region,
            bgzf: false,
        };
        self.start(plan, Vec::new(), self.next / region, len.div_ceil(region));
    }

    /// The next part, for a consumer that takes decoded jobs whole instead of reading
    /// their bytes: a job's buffer, or word that the reader decodes the next bytes itself.
    pub(crate) fn next_part(&mut self) -> io::Result<Part> {
        self.check()?;
        loop {
            match &mut self.now {
                Now::Buffer { .. } => {
                    let Now::Buffer { mut data, at, end } =
                        std::mem::replace(&mut self.now, Now::Between)
                    else {
                        unreachable!("matched a buffer")
                    };
                    self.count(end);
                    self.next = end;
                    // (part of it was read already only when `read` was called before)
                    data.drain(self.settings.front..at);
                    if data.len() > self.settings.front {
                        return Ok(Part::Decoded(data));
                    }
                    self.spare.give(data);
                }
                Now::Stream(_) => return Ok(Part::Stream),
                Now::Between => self.step()?,
                Now::End => return Ok(Part::End),
            }
        }
    }

    /// Reads bytes the reader decodes itself (after [`Part::Stream`]); 0 at the end of
    /// them (or for an empty `buf`), where [`ParallelReader::next_part`] says what follows.
    pub(crate) fn read_part(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.check()?;
        let Now::Stream(stream) = &mut self.now else {
            return Ok(0);
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let read = stream.read(buf);
        let pos = stream.pos();
        self.count(pos);
        match read {
            Ok(0) => {
                self.next = pos;
                self.now = Now::Between;
                if self.first {
                    self.after_first_member();
                }
                Ok(0)
            }
            Ok(n) => {
                if self.first {
                    self.first_decoded += n;
                }
                Ok(n)
            }
            Err(e) => Err(self.fail(describe(self.codec, e))),
        }
    }

    /// Takes back a buffer of a part the consumer is done with, to decode into again.
    pub(crate) fn give(&self, buf: Vec<u8>) {
        self.spare.give(buf);
    }

    /// A buffer given back, as it was given (or a new, empty one).
    pub(crate) fn spare_buffer(&self) -> Vec<u8> {
        self.spare.pop()
    }

    /// The error the reader failed with, again.
    fn check(&self) -> io::Result<()> {
        match &self.failed {
            Some((kind, message)) => Err(io::Error::new(*kind, message.clone())),
            None => Ok(()),
        }
    }

    /// Moves on from between two parts to the next.
    fn step(&mut self) -> io::Result<()> {
        match self.advance() {
            Ok(now) => {
                self.now = now;
                Ok(())
            }
            Err(e) => Err(self.fail(describe(self.codec, e))),
        }
    }

    /// Fails this read and every later one with `e`.
    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = Some((e.kind(), e.to_string()));
        self.now = Now::End;
        e
    }
}

impl Read for ParallelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.check()?;
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match &mut self.now {
                Now::Buffer { data, at, end } => {
                    if *at < data.len() {
                        let n = (data.len() - *at).min(buf.len());
                        buf[..n].copy_from_slice(&data[*at..*at + n]);
                        *at += n;
                        return Ok(n);
                    }
                    let end = *end;
                    self.count(end);
                    self.next = end;
                    if let Now::Buffer { data, .. } = std::mem::replace(&mut self.now, Now::Between)
                    {
                        self.spare.give(data);
                    }
                }
                Now::Stream(_) => match self.read_part(buf)? {
                    0 => {}
                    n => return Ok(n),
                },
                Now::Between => self.step()?,
                Now::End => return Ok(0),
            }
        }
    }
}

impl Drop for ParallelReader {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            let _state = lock(&shared.state);
            shared.stop.store(true, Relaxed);
            shared.work.notify_all();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(any(test, feature = "testing"))]
pub(crate) mod oracle;

#[cfg(test)]
mod tests {
    use super::oracle::{drain, drain_parts, reader, same, sequential};
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn settings(threads: usize, ahead: usize, job_bytes: usize, region: usize) -> Settings {
        Settings {
            threads,
            ahead,
            max_unit: MAX_UNIT,
            job_bytes,
            run_bytes: job_bytes,
            region: Some(region),
            front: 5,
        }
    }

    /// `rows` lines of CSV-like text from `seed`.
    fn text(seed: u64, rows: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = Vec::new();
        for i in 0..rows {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(format!("{i},w{},{}\n", x % 1000, x % 97).as_bytes());
        }
        out
    }

    fn gzip_at(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        gzip_at(data, 1)
    }

    /// A BGZF member of `data` (`BC` subfield with the member's size less one).
    fn bgzf(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        let body = e.finish().unwrap();
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let size = 18 + body.len() + 8;
        let mut m = vec![0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 255, 6, 0, b'B', b'C', 2, 0];
        m.extend_from_slice(&u16::try_from(size - 1).unwrap().to_le_bytes());
        m.extend_from_slice(&body);
        m.extend_from_slice(&crc.sum().to_le_bytes());
        m.extend_from_slice(&(data.len() as u32).to_le_bytes());
        m
    }

    /// A zstd frame of `data`, declaring its size or not, with a checksum or not.
    fn zstd_frame(data: &[u8], level: i32, size: bool, checksum: bool) -> Vec<u8> {
        let mut e = zstd::stream::Encoder::new(Vec::new(), level).unwrap();
        e.include_checksum(checksum).unwrap();
        e.include_contentsize(size).unwrap();
        if size {
            e.set_pledged_src_size(Some(data.len() as u64)).unwrap();
        }
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(data, 3).unwrap()
    }

    /// A skippable zstd frame holding `payload`.
    fn skippable(magic_low: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = (ZSTD_SKIPPABLE | u32::from(magic_low & 15))
            .to_le_bytes()
            .to_vec();
        f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// `data` cut in pieces of `piece` bytes, each compressed by `compress`, concatenated.
    fn pieces(data: &[u8], piece: usize, compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
        data.chunks(piece).flat_map(compress).collect()
    }

    #[test]
    fn many_small_members_and_frames_decode_as_the_sequential_decoder() {
        let data = text(1, 20_000);
        let gz = pieces(&data, 5000, gzip);
        let z = pieces(&data, 5000, zstd);
        for threads in [1, 2, 4] {
            for ahead in [0, 1, 8] {
                for region in [100, 4096, 50_000] {
                    let s = settings(threads, ahead, 10_000, region);
                    let ((taken, _), took) = same(Codec::Gzip, &gz, s);
                    assert!(took && taken > 0, "gzip, {s:?}");
                    assert!(same(Codec::Zstd, &z, s).1, "zstd, {s:?}");
                }
            }
        }
    }

    #[test]
    fn one_frame_falls_back_and_one_member_starts_no_thread() {
        let data = text(2, 20_000);
        let s = settings(2, 4, 1000, 1000);
        assert!(reader(Codec::Zstd, &zstd(&data), s).is_none());
        // a frame too large to buffer, then small ones: the first two runs must be decoded
        let mut big = zstd(&data);
        big.extend(pieces(&data[..5000], 1000, zstd));
        let small = Settings {
            max_unit: 10_000,
            ..s
        };
        assert!(reader(Codec::Zstd, &big, small).is_none());
        let gz = gzip(&data);
        let (mut r, _) = reader(Codec::Gzip, &gz, s).unwrap();
        assert_eq!(drain(&mut r), (data, None));
        assert!(r.shared.is_none() && r.threads.is_empty());
    }

    #[test]
    fn skippable_and_empty_frames_between_frames() {
        let data = text(3, 5000);
        let mut z = Vec::new();
        for (i, piece) in data.chunks(3000).enumerate() {
            // a skippable frame whose payload looks like a zstd frame
            z.extend(skippable(i as u8, &zstd(b"not part of the output")));
            z.extend(zstd_frame(piece, 1, i % 2 == 0, i % 3 == 0));
            z.extend(zstd(b""));
            z.extend(skippable(15, b""));
        }
        for threads in [1, 3] {
            for job_bytes in [1, 5000, 1 << 20] {
                let s = settings(threads, 3, job_bytes, 0);
                let took = same(Codec::Zstd, &z, s).1;
                assert_eq!(took, job_bytes < 1 << 20, "{s:?}");
            }
        }
    }

    #[test]
    fn a_frame_bound_covers_what_the_frame_decodes_to() {
        let mut x = 7u64;
        let noise: Vec<u8> = (0..300_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let inputs = [
            text(12, 40_000),
            noise,
            vec![0; 400_000],
            b"a".to_vec(),
            Vec::new(),
        ];
        for data in &inputs {
            for level in [-5, 1, 3, 19] {
                for (size, checksum) in [(false, false), (false, true), (true, true)] {
                    let frame = zstd_frame(data, level, size, checksum);
                    let bound = content_bound(&frame).unwrap();
                    let blocks = data.len().div_ceil(MAX_BLOCK).max(1);
                    assert!(bound >= data.len(), "{} bytes, level {level}", data.len());
                    // (the fast levels cut full blocks; higher ones may split them)
                    assert!(
                        level > 3 || bound <= blocks * MAX_BLOCK,
                        "{} bytes, level {level}",
                        data.len()
                    );
                    // cut short anywhere in the blocks: no bound
                    assert_eq!(content_bound(&frame[..frame.len() - 5]), None);
                }
            }
        }
        assert_eq!(content_bound(&skippable(3, b"payload")), Some(0));
        assert_eq!(content_bound(b"not a frame"), None);
        // a reserved block type
        let mut frame = zstd_frame(b"abc", 3, false, false);
        let header = frame.len() - 3 - 3;
        frame[header] |= 6;
        assert_eq!(content_bound(&frame), None);
    }

    #[test]
    fn frames_without_a_declared_size_are_decoded_by_the_threads() {
        let data = text(13, 30_000);
        let mut z = Vec::new();
        for piece in data.chunks(100_000) {
            z.extend(zstd_frame(piece, 3, false, true));
            z.extend(zstd_frame(b"", 1, false, false));
        }
        let bytes: Bytes = Arc::new(z.clone());
        let s = settings(1, 1, 1 << 20, 0);
        let run = Run {
            start: 0,
            end: z.len(),
            stream: false,
        };
        let Outcome::Decoded {
            start,
            end,
            data: got,
        } = decode_run(&bytes, run, &s, &mut None, vec![1; s.front])
        else {
            panic!("not decoded");
        };
        assert_eq!((start, end), (0, z.len()));
        assert!(got[..s.front] == [1; 5] && got[s.front..] == data);
        // above the limit: left to the reader
        let tight = Settings {
            max_unit: data.len() - 1,
            ..s
        };
        assert!(matches!(
            decode_run(&bytes, run, &tight, &mut None, vec![0; s.front]),
            Outcome::Nothing
        ));
        for threads in [1, 2] {
            assert!(same(Codec::Zstd, &z, settings(threads, 2, 50_000, 0)).1);
        }
        // taken whole: every run is a part of its own
        let (mut r, _) = reader(Codec::Zstd, &z, settings(2, 2, 1, 0)).unwrap();
        let ((got, error), whole) = drain_parts(&mut r);
        assert!(error.is_none() && got == data);
        assert_eq!(whole, data.len().div_ceil(100_000));
    }

    /// Inputs the `decode` fuzz target found (4 knob bytes, then the file), each named
    /// after what it showed.
    #[test]
    fn fuzz_regressions() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/regressions/decode");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let input = std::fs::read(entry.unwrap().path()).unwrap();
            let (knobs, file) = input.split_at(4);
            oracle::check(file, [knobs[0], knobs[1], knobs[2], knobs[3]]);
            n += 1;
        }
        assert!(n > 0);
    }

    #[test]
    fn the_fuzz_oracle_takes_every_knob() {
        let data = text(14, 3000);
        let inputs = [
            pieces(&data, 4000, gzip),
            pieces(&data, 4000, |p| zstd_frame(p, 1, false, true)),
            b"not compressed".to_vec(),
        ];
        for input in &inputs {
            for knob in [0u8, 1, 7, 8, 13, 31, 37, 64, 200, 255] {
                oracle::check(input, [knob, knob.rotate_left(3), knob ^ 0x5a, knob / 3]);
            }
        }
    }

    #[test]
    fn a_file_that_starts_with_a_skippable_frame_is_zstd() {
        // pzstd's layout: each frame after a skippable frame that holds its size
        let data = text(11, 20_000);
        let mut z = Vec::new();
        for piece in data.chunks(30_000) {
            let frame = zstd_frame(piece, 3, false, true);
            z.extend(skippable(0, &(frame.len() as u32).to_le_bytes()));
            z.extend(frame);
        }
        assert_eq!(Codec::sniff(&z), Some(Codec::Zstd));
        assert_eq!(sequential(Codec::Zstd, &z), (data, None));
        for threads in [1, 2] {
            assert!(same(Codec::Zstd, &z, settings(threads, 2, 1, 0)).1);
        }
    }

    #[test]
    fn empty_members_decode_as_the_sequential_decoder() {
        let data = text(4, 3000);
        let mut gz = Vec::new();
        for piece in data.chunks(2000) {
            gz.extend(gzip(b""));
            gz.extend(gzip(piece));
            gz.extend(gzip(b""));
        }
        for region in [20, 50, 333, 4000] {
            same(Codec::Gzip, &gz, settings(2, 2, 1000, region));
        }
        // only empty members
        let empty: Vec<u8> = (0..50).flat_map(|_| gzip(b"")).collect();
        same(Codec::Gzip, &empty, settings(2, 2, 1000, 64));
    }

    #[test]
    fn bgzf_members_are_shared_out_from_the_start() {
        let data = text(5, 30_000);
        let mut gz = pieces(&data, 20_000, bgzf);
        // the BGZF end-of-file marker: an empty member
        gz.extend(bgzf(b""));
        let region = {
            let bytes: Bytes = Arc::new(gz.clone());
            let r = ParallelReader::new(
                bytes,
                Codec::Gzip,
                Arc::default(),
                Settings {
                    region: None,
                    ..settings(2, 2, 50_000, 0)
                },
            )
            .unwrap();
            assert!(!r.first, "threads start before the first member is decoded");
            r.bgzf_region().unwrap()
        };
        assert!(region >= MIN_REGION);
        for region in [100, 7000, 100_000] {
            let ((taken, _), _) = same(Codec::Gzip, &gz, settings(2, 3, 10_000, region));
            assert!(taken > 0);
        }
    }

    /// A stored (uncompressed) member whose payload holds a whole valid gzip member after
    /// `before` bytes: where the embedded member starts in the returned member.
    fn stored_with_fake(before: usize) -> (Vec<u8>, usize) {
        let fake = gzip(b"a member inside a member\n");
        let mut payload = vec![b'x'; before];
        payload.extend_from_slice(&fake);
        payload.extend_from_slice(&[b'y'; 300]);
        let outer = gzip_at(&payload, 0);
        let at = memchr::memmem::find(&outer[3..], &fake).unwrap() + 3;
        (outer, at)
    }

    #[test]
    fn a_header_inside_a_stored_member_never_counts() {
        let data = text(6, 2000);
        let head = gzip(&data[..1000]);
        let (outer, inner) = stored_with_fake(700);
        let mut gz = head.clone();
        gz.extend_from_slice(&outer);
        gz.extend(pieces(&data[1000..], 3000, gzip));
        let fake = head.len() + inner;
        // a thread that speculates at the region split finds the embedded member and
        // decodes it (it is valid)...
        let region = fake;
        let shared = Shared {
            bytes: Arc::new(gz.clone()),
            plan: Plan::Gzip {
                region,
                bgzf: false,
            },
            settings: settings(1, 1, 1000, region),
            state: Mutex::new(State {
                runs: Vec::new(),
                planned: 0,
                next: 0,
                limit: 0,
                current: 0,
                results: BTreeMap::new(),
            }),
            done: Condvar::new(),
            work: Condvar::new(),
            stop: AtomicBool::new(false),
            claimed: AtomicUsize::new(head.len()),
            spare: Spare::default(),
        };
        match decode_region(&shared, 1, region, false) {
            Outcome::Decoded { start, data, .. } => {
                assert_eq!(start, fake);
                assert!(data[shared.settings.front..].starts_with(b"a member inside a member\n"));
            }
            Outcome::Nothing => panic!("the embedded member decodes"),
        }
        // ...and the reader refuses it: the output is the sequential decoder's
        for region in [fake, fake - 1, fake / 2, fake / 3, 64] {
            for threads in [1, 2, 4] {
                same(Codec::Gzip, &gz, settings(threads, 4, 1000, region));
            }
        }
        // a fake header that does not decode, at every offset of a region
        let mut payload = data[..500].to_vec();
        payload.extend_from_slice(&[0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 255, 0x1f, 0x8b, 8, 0]);
        payload.extend_from_slice(&data[500..1500]);
        let mut gz = head.clone();
        gz.extend(gzip_at(&payload, 0));
        gz.extend(gzip(&data[1500..]));
        for region in (40..600).step_by(37) {
            same(Codec::Gzip, &gz, settings(2, 4, 1000, region));
        }
    }

    #[test]
    fn truncated_last_member_or_frame_fails_as_the_sequential_decoder() {
        let data = text(7, 20_000);
        let gz = pieces(&data, 4000, gzip);
        let z = pieces(&data, 4000, zstd);
        for cut in [1, 4, 8, 9, 20, 100, 1000] {
            let s = settings(2, 3, 5000, 999);
            same(Codec::Gzip, &gz[..gz.len() - cut], s);
            same(Codec::Zstd, &z[..z.len() - cut], s);
        }
        // the sequential decoder's texts
        let s = settings(2, 3, 5000, 999);
        let (mut r, _) = reader(Codec::Gzip, &gz[..gz.len() - 4], s).unwrap();
        assert_eq!(drain(&mut r).1.unwrap(), "gzip stream is truncated");
        let (mut r, _) = reader(Codec::Zstd, &z[..z.len() - 3], s).unwrap();
        assert_eq!(drain(&mut r).1.unwrap(), "zstd stream is truncated");
    }

    #[test]
    fn a_corrupt_middle_member_or_frame_fails_after_the_members_before_it() {
        let data = text(8, 20_000);
        let piece = 4000;
        let members: Vec<Vec<u8>> = data.chunks(piece).map(gzip).collect();
        let middle = members.len() / 2;
        let before: usize = members[..middle].iter().map(Vec::len).sum();
        let mut gz = members.concat();
        // the CRC of the middle member
        gz[before + members[middle].len() - 8] ^= 1;
        let good = &data[..middle * piece];
        for threads in [1, 2, 4] {
            for region in [50, 999, 10_000] {
                let s = settings(threads, 3, 5000, region);
                same(Codec::Gzip, &gz, s);
                let (mut r, _) = reader(Codec::Gzip, &gz, s).unwrap();
                let (out, err) = drain(&mut r);
                assert!(out.starts_with(good));
                assert!(err.unwrap().starts_with("gzip stream is corrupt: "));
            }
        }
        let frames: Vec<Vec<u8>> = data
            .chunks(piece)
            .map(|p| zstd_frame(p, 3, true, true))
            .collect();
        let before: usize = frames[..middle].iter().map(Vec::len).sum();
        let mut z = frames.concat();
        // the checksum of the middle frame
        z[before + frames[middle].len() - 1] ^= 1;
        for threads in [1, 2, 4] {
            let s = settings(threads, 3, 3000, 0);
            same(Codec::Zstd, &z, s);
            let (mut r, _) = reader(Codec::Zstd, &z, s).unwrap();
            let (out, err) = drain(&mut r);
            assert!(out.starts_with(good));
            assert!(err.unwrap().starts_with("zstd stream is corrupt: "));
        }
    }

    #[test]
    fn members_and_frames_above_the_limit_are_streamed() {
        let data = text(9, 30_000);
        let gz = pieces(&data, 50_000, gzip);
        let z: Vec<u8> = data
            .chunks(50_000)
            .flat_map(|p| zstd_frame(p, 1, false, false))
            .collect();
        for max_unit in [1000, 60_000, 200_000] {
            let s = Settings {
                max_unit,
                ..settings(2, 2, 1000, 5000)
            };
            same(Codec::Gzip, &gz, s);
            same(Codec::Zstd, &z, s);
        }
    }

    #[test]
    fn trailing_garbage_fails_as_the_sequential_decoder() {
        let data = text(10, 5000);
        for tail in [&b"\0\0\0\0"[..], b"hello, world", &[0; 40], &[0x1f, 0x8b]] {
            let mut gz = pieces(&data, 2000, gzip);
            gz.extend_from_slice(tail);
            let mut z = pieces(&data, 2000, zstd);
            z.extend_from_slice(tail);
            let s = settings(2, 2, 3000, 500);
            same(Codec::Gzip, &gz, s);
            same(Codec::Zstd, &z, s);
        }
    }

    /// One member or frame of a generated input.
    #[derive(Debug, Clone)]
    struct Piece {
        rows: usize,
        seed: u64,
        level: u32,
        /// gzip: a stored member embedding a whole member; zstd: a skippable frame first.
        odd: bool,
    }

    fn piece() -> impl Strategy<Value = Piece> {
        (0usize..400, any::<u64>(), 0u32..4, any::<bool>()).prop_map(|(rows, seed, level, odd)| {
            Piece {
                rows,
                seed,
                level,
                odd,
            }
        })
    }

    /// What is done to a generated input.
    #[derive(Debug, Clone)]
    enum Damage {
        None,
        Truncate(usize),
        Flip(usize, u8),
        Append(Vec<u8>),
    }

    fn damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            3 => Just(Damage::None),
            1 => (1usize..200).prop_map(Damage::Truncate),
            1 => (any::<usize>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
            1 => proptest::collection::vec(any::<u8>(), 1..30).prop_map(Damage::Append),
        ]
    }

    fn damaged(mut input: Vec<u8>, damage: &Damage) -> Vec<u8> {
        match damage {
            Damage::None => {}
            Damage::Truncate(n) => input.truncate(input.len().saturating_sub(*n).max(1)),
            Damage::Flip(at, x) => {
                let at = at % input.len();
                input[at] ^= x;
            }
            Damage::Append(junk) => input.extend_from_slice(junk),
        }
        input
    }

    fn any_settings() -> impl Strategy<Value = Settings> {
        (
            1usize..5,
            0usize..6,
            1usize..20_000,
            16usize..5000,
            1usize..4,
            prop::sample::select(vec![0, 1, 64]),
            0usize..4,
        )
            .prop_map(
                |(threads, ahead, job_bytes, region, unit, front, grow)| Settings {
                    threads,
                    ahead,
                    max_unit: [5000, 40_000, MAX_UNIT][unit - 1],
                    job_bytes,
                    run_bytes: job_bytes << grow,
                    region: Some(region),
                    front,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn gzip_decodes_as_the_sequential_decoder(
            pieces in proptest::collection::vec(piece(), 1..12),
            damage in damage(),
            settings in any_settings(),
        ) {
            let mut input = Vec::new();
            for p in &pieces {
                let data = text(p.seed, p.rows);
                if p.odd {
                    let mut payload = data.clone();
                    payload.extend(gzip(&data[..data.len() / 2]));
                    payload.extend_from_slice(&data);
                    input.extend(gzip_at(&payload, 0));
                } else {
                    input.extend(gzip_at(&data, p.level));
                }
            }
            same(Codec::Gzip, &damaged(input, &damage), settings);
        }

        #[test]
        fn zstd_decodes_as_the_sequential_decoder(
            pieces in proptest::collection::vec(piece(), 1..12),
            damage in damage(),
            settings in any_settings(),
        ) {
            let mut input = Vec::new();
            for p in &pieces {
                let data = text(p.seed, p.rows);
                if p.odd {
                    input.extend(skippable(p.seed as u8, &zstd(&data)));
                }
                input.extend(zstd_frame(&data, p.level as i32 + 1, p.seed % 2 == 0, p.seed % 3 == 0));
            }
            same(Codec::Zstd, &damaged(input, &damage), settings);
        }
    }

    /// Not a test: times the sequential and the parallel decoder over the files named in
    /// `WIRELOAD_DECODE_BENCH` (comma-separated), three runs each, and prints the medians.
    #[test]
    #[ignore]
    fn measure_decoding() {
        let Ok(files) = std::env::var("WIRELOAD_DECODE_BENCH") else {
            return;
        };
        let median = |mut runs: Vec<f64>| {
            runs.sort_by(f64::total_cmp);
            runs[runs.len() / 2]
        };
        let drain_all = |reader: &mut dyn Read| {
            let mut buf = vec![0; 16 << 20];
            let mut total = 0u64;
            loop {
                match reader.read(&mut buf).unwrap() {
                    0 => return total,
                    n => total += n as u64,
                }
            }
        };
        for path in files.split(',') {
            let file = File::open(path).unwrap();
            let head = crate::compressed::read_head(&mut &file).unwrap();
            let codec = Codec::sniff(&head).unwrap();
            let mut times = [Vec::new(), Vec::new()];
            let mut sizes = [0, 0];
            for _ in 0..3 {
                for (i, parallel) in [false, true].into_iter().enumerate() {
                    let t0 = std::time::Instant::now();
                    let consumed = Arc::new(AtomicU64::new(0));
                    let file = File::open(path).unwrap();
                    let mut reader = if parallel {
                        let reader = open(&file, codec, &consumed, 0).unwrap();
                        Box::new(reader.expect("parallel")) as crate::compressed::BoxedReader
                    } else {
                        codec
                            .decoder(crate::compressed::Counting::new(file, consumed))
                            .unwrap()
                    };
                    sizes[i] = drain_all(&mut reader);
                    times[i].push(t0.elapsed().as_secs_f64());
                }
            }
            assert_eq!(sizes[0], sizes[1]);
            let [s, p] = times.map(median);
            println!(
                "{path}: {} compressed bytes, {} decoded; sequential {s:.3} s, parallel {p:.3} s ({} threads)",
                std::fs::metadata(path).unwrap().len(),
                sizes[0],
                Settings::for_machine(0).threads,
            );
        }
    }
}
