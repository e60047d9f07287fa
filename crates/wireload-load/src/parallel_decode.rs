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

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::compressed::Codec;

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

mod frames;
mod jobs;
mod members;
mod reader;

#[cfg(any(test, feature = "testing"))]
pub(crate) mod oracle;
#[cfg(test)]
mod tests;

use frames::{FrameWalk, Run, content_bound, frame_at};
use jobs::{Outcome, Plan, Shared, Spare, State, lock, spawn};
use members::{candidate, gzip_header, member, plausible};
pub(crate) use reader::{ParallelReader, Part};
