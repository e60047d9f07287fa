//! zstd: frames found without decoding them, and the walk that groups whole frames into
//! runs (one job each).

use zstd::zstd_safe;

use super::{MAX_BLOCK, MAX_WINDOW, Settings, ZSTD_FRAME, ZSTD_SKIPPABLE};

/// One zstd frame found without decoding it.
pub(super) struct Frame {
    /// Where it ends.
    pub(super) end: usize,
    /// The content size it declares (0 for a skippable frame), when it declares one.
    pub(super) content: Option<u64>,
    /// Whether a thread decodes it exactly as the streaming decoder does: a current-format or
    /// skippable frame whose window the streaming decoder accepts.
    plain: bool,
}

/// The whole zstd frame that starts at `at`, or None when none does (truncated, corrupt
/// or not a frame: the streaming decoder says which).
pub(super) fn frame_at(data: &[u8], at: usize) -> Option<Frame> {
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
pub(super) fn content_bound(frame: &[u8]) -> Option<usize> {
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
pub(super) struct Run {
    /// Where its first frame starts.
    pub(super) start: usize,
    /// Where its last frame ends.
    pub(super) end: usize,
    /// The reader decodes it itself (one frame the threads do not decode).
    pub(super) stream: bool,
}

/// The walk over a file's zstd frames that cuts them into runs.
#[derive(Debug, Default)]
pub(super) struct FrameWalk {
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
    pub(super) fn next_run(&mut self, data: &[u8], settings: &Settings) -> Option<Run> {
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
