//! The reader: hands out the threads' results in file order, and decodes itself whatever
//! they could not.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use flate2::bufread::{GzDecoder, MultiGzDecoder};

use super::{
    Bytes, FrameWalk, MAX_REGION, MIN_REGION, Outcome, Plan, Run, Settings, Shared, Spare, State,
    Tail, gzip_header, lock, plausible, slice, spawn,
};
use crate::compressed::{Codec, describe};

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
    pub(super) settings: Settings,
    /// Where the compressed bytes handed out are counted.
    consumed: Arc<AtomicU64>,
    /// Compressed bytes counted so far (the offset they reach).
    counted: usize,
    /// The threads' side, once they run.
    pub(super) shared: Option<Arc<Shared>>,
    /// The decoder threads.
    pub(super) threads: Vec<JoinHandle<()>>,
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
    pub(super) first: bool,
    /// gzip: decoded bytes of the first member.
    first_decoded: usize,
    /// gzip: the last region whose outcome the reader took.
    looked: Option<usize>,
    /// gzip: speculative chains taken and refused (they did not start where the verified
    /// chain ended).
    pub(super) chains: (usize, usize),
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
    pub(super) fn bgzf_region(&self) -> Option<usize> {
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
