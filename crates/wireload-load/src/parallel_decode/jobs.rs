//! The jobs and the decoder threads: how a file's work is cut, what the reader shares
//! with its threads, and what a thread makes of a job.

use std::collections::BTreeMap;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use zstd::zstd_safe;

use super::{Bytes, Run, Settings, candidate, content_bound, frame_at, member, slice};

/// How the jobs of a file are cut.
#[derive(Debug, Clone, Copy)]
pub(super) enum Plan {
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
pub(super) enum Outcome {
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
pub(super) struct State {
    /// zstd: the runs planned so far, in file order.
    pub(super) runs: Vec<Run>,
    /// Jobs that exist so far (zstd: `runs.len()`; gzip: the regions).
    pub(super) planned: usize,
    /// The next job a thread takes.
    pub(super) next: usize,
    /// Jobs below this may start.
    pub(super) limit: usize,
    /// The job the reader is at: results of earlier jobs are dropped.
    pub(super) current: usize,
    /// Results not taken yet, by job.
    pub(super) results: BTreeMap<usize, Outcome>,
}

/// What a reader shares with its decoder threads.
pub(super) struct Shared {
    /// The compressed file.
    pub(super) bytes: Bytes,
    /// How its jobs are cut.
    pub(super) plan: Plan,
    /// Sizes and limits.
    pub(super) settings: Settings,
    /// Jobs and results.
    pub(super) state: Mutex<State>,
    /// A result arrived (the reader waits on it).
    pub(super) done: Condvar,
    /// Jobs may start, or the threads are to stop (the threads wait on it).
    pub(super) work: Condvar,
    /// The reader is gone: the threads end.
    pub(super) stop: AtomicBool,
    /// gzip: the reader has settled everything before this offset (a job looks for members
    /// from here on; a region that ends before it is of no use).
    pub(super) claimed: AtomicUsize,
    /// Buffers the consumer gave back, to decode into again.
    pub(super) spare: Spare,
}

/// Buffers given back to decode into again (a few: more are dropped).
#[derive(Clone, Default)]
pub(super) struct Spare(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spare {
    /// Most buffers kept.
    const KEPT: usize = 4;

    /// Keeps `buf` (when fewer than [`Spare::KEPT`] wait).
    pub(super) fn give(&self, buf: Vec<u8>) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < Self::KEPT && buf.capacity() > 0 {
            kept.push(buf);
        }
    }

    /// A kept buffer as it was given (or a new, empty one).
    pub(super) fn pop(&self) -> Vec<u8> {
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
pub(super) fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts up to `n` decoder threads on `shared`.
pub(super) fn spawn(shared: &Arc<Shared>, n: usize) -> Vec<JoinHandle<()>> {
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
pub(super) fn decode_run(
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
pub(super) fn decode_region(shared: &Shared, job: usize, region: usize, bgzf: bool) -> Outcome {
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
