//! The GPU passes in plain, sequential Rust: count, scan, index (the FieldsIndex, with
//! sentinels and compaction in quoted mode), tapes, deserialization and strings. Each
//! function produces exactly the bytes its kernel in `kernels/csv.cu` produces; the tests
//! compare the two (on the emulator in CI, on a GPU when there is one), and compare what
//! this reference loads with what the CPU loader loads.

use arrow::buffer::MutableBuffer;

use crate::buffers::{ColumnOut, PartitionBuffers, Trace, bitmap_words};
use crate::layout::{
    CELL_NULL, CELL_RANGE, ChunkCount, ColumnDesc, Fallback, INVALID, KDialect, MAX_WIDTH, NONE,
    RECORD_BIT, SPAN_ESCAPED, SPAN_LEN, SPAN_NULL, Span, Status, fallback, kind,
};
use crate::plan::{GpuOptions, PassMode, Plan};

/// The classes of byte `i`: field delimiter, record delimiter (not ending an empty line),
/// quote.
#[inline]
fn classify(input: &[u8], i: usize, d: &KDialect) -> (bool, bool, bool) {
    let b = input[i];
    let prev = if i == 0 { b'\n' } else { input[i - 1] };
    let nl = |x: u8| x == b'\n' || x == b'\r';
    (
        b == d.delim,
        nl(b) && !nl(prev),
        d.has_quote != 0 && b == d.quote,
    )
}

/// `wl_report`: an error at field `col` of `row`, the first in input order kept.
fn report(status: &mut Status, row: usize, col: u32) {
    let key = ((row as u64) << 16) | col.min(0xffff) as u64;
    status.error_at = status.error_at.min(key);
}

/// Pass 1: delimiters and quotes of each `chunk`-byte chunk of `input`.
pub fn count(input: &[u8], chunk: usize, d: &KDialect) -> Vec<ChunkCount> {
    input
        .chunks(chunk)
        .enumerate()
        .map(|(c, bytes)| {
            let base = c * chunk;
            let mut cc = ChunkCount::default();
            for i in base..base + bytes.len() {
                let (f, r, q) = classify(input, i, d);
                if f || r {
                    cc.fields += 1;
                    cc.last = i as u32 + 1;
                }
                if r {
                    cc.records += 1;
                    cc.tail = 0;
                } else if f {
                    cc.tail += 1;
                }
                cc.quotes += q as u32;
            }
            cc
        })
        .collect()
}

/// Pass 2: the exclusive scan of `counts`, and their combination.
pub fn scan(counts: &[ChunkCount]) -> (Vec<ChunkCount>, ChunkCount) {
    let mut run = ChunkCount::default();
    let prefix = counts
        .iter()
        .map(|&c| {
            let before = run;
            run = run.combine(c);
            before
        })
        .collect();
    (prefix, run)
}

/// The outputs the index and field passes write into.
struct Sink<'a> {
    input: &'a [u8],
    plan: &'a Plan,
    descs: Vec<ColumnDesc>,
    tapes: Vec<Vec<u8>>,
    spans: Vec<Vec<Span>>,
    status: Status,
    fallbacks: Fallbacks,
}

/// The fallback list: counts every entry, keeps the first `cap` (the kernels keep `cap`
/// of them too, which ones depending on the order threads run in).
#[derive(Debug, Default)]
struct Fallbacks {
    cap: usize,
    list: Vec<Fallback>,
}

impl Fallbacks {
    fn push(&mut self, status: &mut Status, f: Fallback) {
        status.fallbacks += 1;
        if self.list.len() < self.cap {
            self.list.push(f);
        }
    }
}

impl Sink<'_> {
    fn report(&mut self, row: u32, col: u32) {
        report(&mut self.status, row as usize, col);
    }

    fn push(&mut self, f: Fallback) {
        self.fallbacks.push(&mut self.status, f);
    }

    /// `wl_write_field`.
    #[allow(clippy::too_many_arguments)]
    fn write_field(&mut self, c: u32, row: u32, rs: u32, re: u32, cs: u32, ce: u32, quoted: bool) {
        let d = &self.plan.dialect;
        let input = self.input;
        let text = &input[cs as usize..ce as usize];
        let null = !quoted && text == self.plan.null();
        let desc = self.descs[c as usize];
        if desc.kind == kind::STR {
            let len = if null {
                SPAN_NULL
            } else {
                let nq = if quoted {
                    text.iter().filter(|&&b| b == d.quote).count() as u32
                } else {
                    0
                };
                (ce - cs - nq / 2) | if nq > 0 { SPAN_ESCAPED } else { 0 }
            };
            self.spans[c as usize][row as usize] = Span { start: cs, len };
            return;
        }
        let width = desc.width as usize;
        let cell = &mut self.tapes[c as usize][row as usize * width..(row as usize + 1) * width];
        cell.fill(0);
        if null {
            cell[0] = CELL_NULL;
            return;
        }
        let fits = text.len() <= width
            && text.first().is_none_or(|&b| b < 0xFE)
            && !text
                .iter()
                .any(|&b| b == 0 || (d.has_quote != 0 && b == d.quote));
        if fits {
            cell[..text.len()].copy_from_slice(text);
        } else {
            cell[0] = CELL_RANGE;
            self.push(Fallback {
                row,
                col: c as u16,
                kind: fallback::RANGE,
                start: rs,
                end: re,
                ..Fallback::default()
            });
        }
    }
}

/// Where a record's first field starts: after the `\r` and `\n` bytes of the empty lines
/// before it (between `s` and the field's end `e`).
fn after_empty_lines(input: &[u8], mut s: u32, e: u32) -> u32 {
    while s < e && matches!(input[s as usize], b'\n' | b'\r') {
        s += 1;
    }
    s
}

/// Pass 3, fast mode: every field to its tape or span.
fn index_fast(sink: &mut Sink<'_>, rows: u32) {
    let input = sink.input;
    let d = sink.plan.dialect;
    let ncols = sink.plan.ncols() as u32;
    let (mut row, mut col, mut start) = (0u32, 0u32, 0u32);
    for i in 0..input.len() {
        let (f, r, _) = classify(input, i, &d);
        if !(f || r) {
            continue;
        }
        let e = i as u32;
        // wl_fast_field
        if row >= rows {
            sink.report(row, col);
        } else if col < ncols {
            if r && col + 1 < ncols {
                sink.report(row, col + 1);
            }
            let s = if col == 0 {
                after_empty_lines(input, start, e)
            } else {
                start
            };
            sink.write_field(col, row, s, e, s, e, false);
        } else if !(col == ncols && r && start == e) {
            sink.report(row, ncols);
        }
        start = e + 1;
        if r {
            row += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
}

/// Pass 3, quoted mode: the FieldsIndex with sentinels, and the quote checks.
fn index_quoted(input: &[u8], d: &KDialect, entries: usize, status: &mut Status) -> Vec<u32> {
    let mut index = Vec::with_capacity(entries);
    let nl = |x: u8| x == b'\n' || x == b'\r';
    let n = input.len();
    let mut parity = 0u32;
    for i in 0..n {
        let (f, r, q) = classify(input, i, d);
        if q {
            let ok = if parity == 0 {
                let pb = if i == 0 { b'\n' } else { input[i - 1] };
                pb == d.delim || nl(pb) || pb == d.quote
            } else {
                let nb = input.get(i + 1).copied().unwrap_or(0);
                i + 1 >= n || nb == d.delim || nl(nb) || nb == d.quote
            };
            if !ok {
                status.error_pos = status.error_pos.min(i as u64);
            }
            parity ^= 1;
        }
        if f || r {
            index.push(if parity != 0 {
                INVALID
            } else {
                i as u32 | if r { RECORD_BIT } else { 0 }
            });
        }
    }
    index
}

/// Pass 4, quoted mode: the FieldsIndex without sentinels, and each row's last entry.
fn compact(index: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut out = Vec::new();
    let mut row_end = Vec::new();
    for &e in index {
        if e != INVALID {
            if e & RECORD_BIT != 0 {
                row_end.push(out.len() as u32);
            }
            out.push(e);
        }
    }
    (out, row_end)
}

/// Pass 5, quoted mode: the field of every (row, column).
fn fields_quoted(sink: &mut Sink<'_>, index: &[u32], row_end: &[u32]) {
    let input = sink.input;
    let d = sink.plan.dialect;
    let ncols = sink.plan.ncols() as u32;
    let pos = |j: u32| index[j as usize] & !RECORD_BIT;
    for r in 0..row_end.len() as u32 {
        let first = if r == 0 {
            0
        } else {
            row_end[r as usize - 1] + 1
        };
        let last = row_end[r as usize];
        let nf = last - first + 1;
        let ok = nf == ncols || (nf == ncols + 1 && pos(last - 1) + 1 == pos(last));
        if !ok {
            sink.report(r, nf.min(ncols));
            continue;
        }
        for c in 0..ncols {
            let j = first + c;
            let fe = pos(j);
            let mut fs = if j == 0 { 0 } else { pos(j - 1) + 1 };
            if c == 0 {
                fs = after_empty_lines(input, fs, fe);
            }
            let quoted = d.has_quote != 0 && fe > fs && input[fs as usize] == d.quote;
            let (cs, ce) = if quoted {
                let cs = fs + 1;
                (cs, if fe - 1 > cs { fe - 1 } else { cs })
            } else {
                (fs, fe)
            };
            sink.write_field(c, r, fs, fe, cs, ce, quoted);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The fast parsers of pass 6, as csv.cu writes them
// ---------------------------------------------------------------------------------------

const P10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// Powers of ten a double holds exactly (the kernels' table).
const P10D: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];
/// Powers of ten a float holds exactly.
const P10F: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

#[inline]
fn digit(b: u8) -> u32 {
    (b as u32).wrapping_sub(48)
}

/// `wl_plain_decimal`: (negative, digits as one integer, digits before and after the
/// point, significant digits before the point).
fn plain_decimal(t: &[u8]) -> Option<(bool, u64, u32, u32, u32)> {
    let len = t.len();
    let mut i = 0;
    let mut neg = false;
    if len > 0 && (t[0] == b'-' || t[0] == b'+') {
        neg = t[0] == b'-';
        i = 1;
    }
    let mut v = 0u64;
    let mut s = 0u32;
    let from = i;
    while i < len && digit(t[i]) <= 9 {
        let d = digit(t[i]);
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        if d != 0 || s != 0 {
            s += 1;
        }
        i += 1;
    }
    let nint = (i - from) as u32;
    if nint == 0 {
        return None;
    }
    let mut nfrac = 0u32;
    if i < len {
        if t[i] != b'.' {
            return None;
        }
        i += 1;
        let f = i;
        while i < len && digit(t[i]) <= 9 {
            v = v.wrapping_mul(10).wrapping_add(digit(t[i]) as u64);
            i += 1;
        }
        nfrac = (i - f) as u32;
        if nfrac == 0 || i != len {
            return None;
        }
    }
    if nint + nfrac > 19 {
        return None;
    }
    Some((neg, v, nint, nfrac, s))
}

fn parse_int(t: &[u8], max_pos: u64) -> Option<i64> {
    let len = t.len();
    let mut i = 0;
    let mut neg = false;
    if len > 0 && (t[0] == b'-' || t[0] == b'+') {
        neg = t[0] == b'-';
        i = 1;
    }
    if i == len || len - i > 18 {
        return None;
    }
    let mut m = 0u64;
    for &b in &t[i..] {
        let d = digit(b);
        if d > 9 {
            return None;
        }
        m = m * 10 + d as u64;
    }
    if m > max_pos + neg as u64 {
        return None;
    }
    Some(if neg {
        (m as i64).wrapping_neg()
    } else {
        m as i64
    })
}

fn parse_dec(t: &[u8], prec: u32, scale: u32) -> Option<i128> {
    let (neg, m, nint, nfrac, sig) = plain_decimal(t)?;
    if nint + nfrac > 18 || nfrac > scale || sig > prec - scale {
        return None;
    }
    let sh = scale - nfrac;
    if sh > 19 {
        return None;
    }
    let v = m as i128 * P10[sh as usize] as i128;
    Some(if neg { -v } else { v })
}

fn parse_f64(t: &[u8]) -> Option<f64> {
    let (neg, m, _, nfrac, _) = plain_decimal(t)?;
    if m > 1 << 53 || nfrac > 22 {
        return None;
    }
    let mut v = m as f64;
    if nfrac > 0 {
        v /= P10D[nfrac as usize];
    }
    Some(if neg { -v } else { v })
}

fn parse_f32(t: &[u8]) -> Option<f32> {
    let (neg, m, _, nfrac, _) = plain_decimal(t)?;
    if m > 1 << 24 || nfrac > 10 {
        return None;
    }
    let mut v = m as u32 as f32;
    if nfrac > 0 {
        v /= P10F[nfrac as usize];
    }
    Some(if neg { -v } else { v })
}

fn is_word(t: &[u8], word: &str) -> bool {
    t == word.as_bytes() || t == word.to_ascii_uppercase().as_bytes()
}

fn parse_bool(t: &[u8]) -> Option<bool> {
    if ["t", "true", "y", "yes", "on", "1"]
        .iter()
        .any(|w| is_word(t, w))
    {
        return Some(true);
    }
    if ["f", "false", "n", "no", "off", "0"]
        .iter()
        .any(|w| is_word(t, w))
    {
        return Some(false);
    }
    None
}

fn two(t: &[u8], i: usize) -> Option<u32> {
    let (a, b) = (digit(t[i]), digit(t[i + 1]));
    (a <= 9 && b <= 9).then(|| a * 10 + b)
}

fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = y - (m <= 2) as i32;
    let era = y / 400;
    let yoe = (y - era * 400) as u32;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe as i32 - 719468
}

fn ymd(t: &[u8]) -> Option<i32> {
    let (y1, y2) = (two(t, 0)?, two(t, 2)?);
    if t[4] != b'-' || t[7] != b'-' {
        return None;
    }
    let (m, d) = (two(t, 5)?, two(t, 8)?);
    let y = y1 * 100 + y2;
    if y < 1 || !(1..=12).contains(&m) || d < 1 {
        return None;
    }
    let dim = match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    };
    (d <= dim).then(|| days_from_civil(y as i32, m, d))
}

fn parse_date(t: &[u8]) -> Option<i32> {
    if t.len() != 10 {
        return None;
    }
    ymd(t)
}

fn parse_ts(t: &[u8]) -> Option<i64> {
    let len = t.len();
    if !(len == 19 || ((21..=26).contains(&len) && t[19] == b'.')) {
        return None;
    }
    let days = ymd(t)?;
    if !(t[10] == b' ' || t[10] == b'T') || t[13] != b':' || t[16] != b':' {
        return None;
    }
    let (h, mi, s) = (two(t, 11)?, two(t, 14)?, two(t, 17)?);
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let mut frac = 0u64;
    if len > 19 {
        for &b in &t[20..] {
            let d = digit(b);
            if d > 9 {
                return None;
            }
            frac = frac * 10 + d as u64;
        }
        frac *= P10[26 - len];
    }
    Some(days as i64 * 86_400_000_000 + ((h * 60 + mi) * 60 + s) as i64 * 1_000_000 + frac as i64)
}

/// The fast parse of `text` for a column of `kind` into its value bytes (and, for
/// BOOLEAN, the bit); `None` sends the field to the host.
fn fast_value(desc: &ColumnDesc, text: &[u8]) -> Option<([u8; 16], bool)> {
    let mut v = [0u8; 16];
    let mut bit = false;
    match desc.kind {
        kind::BOOL => bit = parse_bool(text)?,
        kind::I16 => v[..2].copy_from_slice(&(parse_int(text, 32767)? as i16).to_le_bytes()),
        kind::I32 => {
            v[..4].copy_from_slice(&(parse_int(text, 2_147_483_647)? as i32).to_le_bytes())
        }
        kind::I64 => {
            v[..8].copy_from_slice(&parse_int(text, 999_999_999_999_999_999)?.to_le_bytes())
        }
        kind::F32 => v[..4].copy_from_slice(&parse_f32(text)?.to_le_bytes()),
        kind::F64 => v[..8].copy_from_slice(&parse_f64(text)?.to_le_bytes()),
        kind::DEC => v.copy_from_slice(&parse_dec(text, desc.precision, desc.scale)?.to_le_bytes()),
        kind::DATE => v[..4].copy_from_slice(&parse_date(text)?.to_le_bytes()),
        kind::TS => v[..8].copy_from_slice(&parse_ts(text)?.to_le_bytes()),
        _ => return None,
    }
    Some((v, bit))
}

/// Pass 6: the tape of column `c` into values, validity and fallbacks.
fn deserialize(
    c: u32,
    desc: &ColumnDesc,
    tape: &[u8],
    rows: usize,
    status: &mut Status,
    fallbacks: &mut Fallbacks,
    size: usize,
) -> ColumnOut {
    let width = desc.width as usize;
    let words = bitmap_words(rows);
    let mut validity = vec![0u32; words];
    let value_bytes = if desc.kind == kind::BOOL {
        words * 4
    } else {
        rows * size
    };
    let mut values = MutableBuffer::from_len_zeroed(value_bytes);
    let mut bits = vec![0u32; words];
    let out = values.as_slice_mut();
    for row in 0..rows {
        let cell = &tape[row * width..(row + 1) * width];
        let len = cell.iter().position(|&b| b == 0).unwrap_or(width);
        match cell[0] {
            CELL_NULL => {
                if desc.nullable == 0 {
                    report(status, row, c);
                }
                continue;
            }
            CELL_RANGE => {}
            _ => match fast_value(desc, &cell[..len]) {
                Some((v, bit)) => {
                    if bit {
                        bits[row / 32] |= 1 << (row % 32);
                    }
                    if desc.kind != kind::BOOL {
                        out[row * size..(row + 1) * size].copy_from_slice(&v[..size]);
                    }
                }
                None => {
                    let mut text = [0u8; MAX_WIDTH];
                    text[..len].copy_from_slice(&cell[..len]);
                    fallbacks.push(
                        status,
                        Fallback {
                            row: row as u32,
                            col: c as u16,
                            kind: fallback::TEXT,
                            len: len as u8,
                            text,
                            ..Fallback::default()
                        },
                    );
                }
            },
        }
        validity[row / 32] |= 1 << (row % 32);
    }
    if desc.kind == kind::BOOL {
        out.copy_from_slice(bytemuck::cast_slice(&bits));
    }
    ColumnOut {
        values,
        validity,
        offsets: Vec::new(),
    }
}

/// `wl_utf8`: the character count of valid UTF-8.
fn utf8_chars(s: &[u8]) -> Option<u32> {
    std::str::from_utf8(s)
        .ok()
        .map(|t| t.chars().count() as u32)
}

/// Pass 7: a string column's offsets, bytes, validity and fallbacks.
fn strings(
    c: u32,
    desc: &ColumnDesc,
    input: &[u8],
    d: &KDialect,
    spans: &[Span],
    status: &mut Status,
    fallbacks: &mut Fallbacks,
) -> ColumnOut {
    let rows = spans.len();
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut total = 0u32;
    for sp in spans {
        offsets.push(total);
        if sp.len & SPAN_NULL == 0 {
            total += sp.len & SPAN_LEN;
        }
    }
    offsets.push(total);
    let mut values = MutableBuffer::from_len_zeroed(total as usize);
    let mut validity = vec![0u32; bitmap_words(rows)];
    let out = values.as_slice_mut();
    for (row, sp) in spans.iter().enumerate() {
        if sp.len & SPAN_NULL != 0 {
            if desc.nullable == 0 {
                report(status, row, c);
            }
            continue;
        }
        validity[row / 32] |= 1 << (row % 32);
        let len = (sp.len & SPAN_LEN) as usize;
        let dst = &mut out[offsets[row] as usize..offsets[row] as usize + len];
        let mut src = sp.start as usize;
        if sp.len & SPAN_ESCAPED != 0 {
            for o in dst.iter_mut() {
                let b = input[src];
                *o = b;
                src += if d.has_quote != 0 && b == d.quote {
                    2
                } else {
                    1
                };
            }
        } else {
            dst.copy_from_slice(&input[src..src + len]);
        }
        match utf8_chars(dst) {
            None => report(status, row, c),
            Some(chars) if desc.max_chars != 0 && chars > desc.max_chars => fallbacks.push(
                status,
                Fallback {
                    row: row as u32,
                    col: c as u16,
                    kind: fallback::STRING,
                    ..Fallback::default()
                },
            ),
            Some(_) => {}
        }
    }
    ColumnOut {
        values,
        validity,
        offsets,
    }
}

/// Runs every pass over one partition (`input`: whole records, the last one ended by a
/// record delimiter) and returns what the kernels would return, with the intermediates
/// when `trace`.
pub fn run(input: &[u8], plan: &Plan, opts: &GpuOptions, trace: bool) -> PartitionBuffers {
    let d = plan.dialect;
    let counts = count(input, opts.chunk, &d);
    let (prefix, total) = scan(&counts);
    let mut tr = Trace {
        total,
        ..Trace::default()
    };
    if total.quotes % 2 == 1 {
        if trace {
            tr.counts = counts;
            tr.prefix = prefix;
        }
        return PartitionBuffers::unterminated(trace.then_some(tr));
    }
    let quoted = opts.mode == PassMode::Quoted || (d.has_quote != 0 && total.quotes > 0);
    let mut status = Status::default();
    let (rows, index, compacted, row_end) = if quoted {
        let index = index_quoted(input, &d, total.fields as usize, &mut status);
        let (compacted, row_end) = compact(&index);
        (row_end.len(), index, compacted, row_end)
    } else {
        (total.records as usize, Vec::new(), Vec::new(), Vec::new())
    };
    let descs: Vec<ColumnDesc> = plan.columns.iter().map(|c| c.desc()).collect();
    let mut sink = Sink {
        input,
        plan,
        tapes: plan
            .columns
            .iter()
            .map(|c| {
                vec![
                    0u8;
                    if c.has_tape() {
                        rows * c.width as usize
                    } else {
                        0
                    }
                ]
            })
            .collect(),
        spans: plan
            .columns
            .iter()
            .map(|c| vec![Span::default(); if c.has_tape() { 0 } else { rows }])
            .collect(),
        descs,
        status,
        fallbacks: Fallbacks {
            cap: opts.fallbacks,
            list: Vec::new(),
        },
    };
    if quoted {
        fields_quoted(&mut sink, &compacted, &row_end);
    } else {
        index_fast(&mut sink, rows as u32);
    }
    let Sink {
        descs,
        tapes,
        spans,
        mut status,
        mut fallbacks,
        ..
    } = sink;
    if status.error_at != NONE || status.error_pos != NONE {
        // a flagged error ends the passes (see `Workspace::parse`)
        if trace {
            tr.counts = counts;
            tr.prefix = prefix;
            tr.index = index;
            tr.compacted = compacted;
            tr.row_end = row_end;
        }
        return PartitionBuffers::flagged(rows, quoted, status, trace.then_some(tr));
    }
    let columns = plan
        .columns
        .iter()
        .enumerate()
        .map(|(c, cp)| {
            if cp.has_tape() {
                deserialize(
                    c as u32,
                    &descs[c],
                    &tapes[c],
                    rows,
                    &mut status,
                    &mut fallbacks,
                    cp.value_size(),
                )
            } else {
                strings(
                    c as u32,
                    &descs[c],
                    input,
                    &d,
                    &spans[c],
                    &mut status,
                    &mut fallbacks,
                )
            }
        })
        .collect();
    if trace {
        tr.counts = counts;
        tr.prefix = prefix;
        tr.index = index;
        tr.compacted = compacted;
        tr.row_end = row_end;
        tr.tapes = tapes;
        tr.spans = spans;
    }
    PartitionBuffers {
        rows,
        quoted,
        unterminated: false,
        status,
        fallbacks: fallbacks.list,
        columns,
        trace: trace.then_some(tr),
    }
}
