// CUDAFastCSV's passes (Kumaigorodski, Lutz, Markl, BTW 2021) for wireload: count,
// scan, index (FieldsIndex), tapes, column-wise deserialization; and the quoted mode's
// quote-context prefix sums, sentinels and stream compaction.
//
// ADVICE FOR HACKERS
// - This file is compiled twice: by NVRTC at run time for the GPU present, and by the host
//   C++ compiler together with simt.h, which runs every kernel on the CPU (the emulator the
//   tests use). Use only what simt.h provides: no CUDA headers, no standard library.
// - Warp collectives (__shfl_*_sync, __ballot_sync, __syncwarp) are always called by all
//   32 lanes with the full mask, from warp-uniform control flow. The emulator enforces it.
// - A partition's input is zero-padded to a multiple of the chunk size plus 128 bytes, so
//   every 4-byte load of a step is in bounds and bytes past n are never delimiters.
// - The byte classes and rules here are defined once more, in plain Rust, by
//   src/reference.rs; both must produce the same bytes for every pass.
// - Semantics (the CPU loader's): '\n' and '\r' end records; a record delimiter right
//   after another one (or at the partition start) ends an empty line, which is skipped
//   (so the first field of a record starts after any '\r' and '\n' bytes before it);
//   a record may end with one extra, empty, unquoted field (a trailing delimiter); an
//   unquoted field equal to the NULL string is NULL; a quoted field is never NULL.
#ifndef WL_LAYOUT_INCLUDED
#include "layout.h"
#endif

#define WL_FULL 0xffffffffu

__device__ __forceinline__ u32 wl_min(u32 a, u32 b) { return a < b ? a : b; }
__device__ __forceinline__ u32 wl_max(u32 a, u32 b) { return a > b ? a : b; }

__device__ __forceinline__ bool wl_is_nl(u32 b) { return b == 10u || b == 13u; }

// ---------------------------------------------------------------------------------------
// Byte classes of one step: 32 lanes x 4 bytes
// ---------------------------------------------------------------------------------------

// Bit k of field/record/quote is set when byte k of the lane's word is a field delimiter,
// a record delimiter (not ending an empty line) or a quote. `prev` is the byte before the
// word. Candidates ignore quoting: the quoted mode decides later which ones count.
struct Classes {
    u32 field;
    u32 record;
    u32 quote;
};

__device__ __forceinline__ Classes wl_classify(u32 w, u32 prev, const KDialect& d) {
    Classes c;
    c.field = 0;
    c.record = 0;
    c.quote = 0;
    u32 p = prev;
#pragma unroll
    for (u32 k = 0; k < 4; k++) {
        u32 b = (w >> (8 * k)) & 0xffu;
        if (b == d.delim) c.field |= 1u << k;
        if (wl_is_nl(b) && !wl_is_nl(p)) c.record |= 1u << k;
        if (d.has_quote && b == d.quote) c.quote |= 1u << k;
        p = b;
    }
    return c;
}

// The byte before this lane's word: the last byte of the previous lane's word, or for
// lane 0 the last byte of the previous step (`carry`).
__device__ __forceinline__ u32 wl_prev_byte(u32 w, u32 lane, u32 carry) {
    u32 up = __shfl_up_sync(WL_FULL, w, 1);
    return lane == 0 ? carry : (up >> 24);
}

__device__ __forceinline__ u32 wl_load_word(const u8* p) { return *(const u32*)p; }

// One lane's part of a 128-byte step: its 4 bytes at i0, the byte before them, and their
// classes. Every lane of the warp must call it (it shuffles).
struct Step {
    u32 i0;
    u32 w;
    u32 prev;
    Classes c;
};

__device__ __forceinline__ Step wl_step(const u8* in, u32 off, u32 lane, u32 carry,
                                        const KDialect& d) {
    Step s;
    s.i0 = off + lane * 4;
    s.w = wl_load_word(in + s.i0);
    s.prev = wl_prev_byte(s.w, lane, carry);
    s.c = wl_classify(s.w, s.prev, d);
    return s;
}

// The byte before the step that follows one whose lanes hold `w` (its last byte).
__device__ __forceinline__ u32 wl_next_carry(u32 w) { return __shfl_sync(WL_FULL, w, 31) >> 24; }

// The byte before chunk `base` (a record delimiter before the partition).
__device__ __forceinline__ u32 wl_chunk_carry(const u8* in, u32 base) {
    return base == 0 ? 10u : (u32)in[base - 1];
}

// Field delimiters after the last record delimiter among 4 bytes (all when none).
__device__ __forceinline__ u32 wl_tail4(u32 field, u32 record) {
    if (record == 0) return __popc(field);
    u32 hi = 31u - (u32)__clz((int)record);
    return __popc(field >> (hi + 1u));
}

// (count, records, tail) of one step packed in 10-bit fields, combined in order.
__device__ __forceinline__ u32 wl_pack3(u32 c, u32 r, u32 t) { return c | (r << 10) | (t << 20); }
__device__ __forceinline__ u32 wl_seg(u32 a, u32 b) {
    u32 c = (a & 0x3ffu) + (b & 0x3ffu);
    u32 br = (b >> 10) & 0x3ffu;
    u32 r = ((a >> 10) & 0x3ffu) + br;
    u32 t = br ? (b >> 20) : (a >> 20) + (b >> 20);
    return wl_pack3(c, r, t);
}

// Inclusive scan of packed (count, records, tail) over the warp's lanes, in lane order.
__device__ __forceinline__ u32 wl_warp_seg_scan(u32 x, u32 lane) {
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        u32 y = __shfl_up_sync(WL_FULL, x, d);
        if (lane >= d) x = wl_seg(y, x);
    }
    return x;
}

// Inclusive sum over the warp's lanes.
__device__ __forceinline__ u32 wl_warp_sum_scan(u32 x, u32 lane) {
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        u32 y = __shfl_up_sync(WL_FULL, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

__device__ __forceinline__ u32 wl_warp_sum(u32 x) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(WL_FULL, x, d);
    return x;
}

__device__ __forceinline__ u32 wl_warp_max(u32 x) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) x = wl_max(x, __shfl_xor_sync(WL_FULL, x, d));
    return x;
}


// ---------------------------------------------------------------------------------------
// ChunkCount combination and ordered block-level reductions and scans
// ---------------------------------------------------------------------------------------

__device__ __forceinline__ ChunkCount wl_cc_zero() {
    ChunkCount z;
    z.fields = 0;
    z.records = 0;
    z.tail = 0;
    z.quotes = 0;
    z.last = 0;
    return z;
}

__device__ __forceinline__ ChunkCount wl_cc_combine(ChunkCount a, ChunkCount b) {
    ChunkCount r;
    r.fields = a.fields + b.fields;
    r.records = a.records + b.records;
    r.tail = b.records ? b.tail : a.tail + b.tail;
    r.quotes = a.quotes + b.quotes;
    r.last = wl_max(a.last, b.last);
    return r;
}

// `f` applied to every field of `v` (how a ChunkCount goes through a warp shuffle).
template <class F>
__device__ __forceinline__ ChunkCount wl_cc_each(ChunkCount v, F f) {
    ChunkCount r;
    r.fields = f(v.fields);
    r.records = f(v.records);
    r.tail = f(v.tail);
    r.quotes = f(v.quotes);
    r.last = f(v.last);
    return r;
}

__device__ __forceinline__ ChunkCount wl_cc_shfl_up(ChunkCount v, u32 d) {
    return wl_cc_each(v, [&](u32 x) { return __shfl_up_sync(WL_FULL, x, d); });
}

// Exclusive scan of the threads' values in thread order; *total gets the combination of
// all. Every thread of the block must call it.
__device__ ChunkCount wl_block_scan_cc(ChunkCount v, ChunkCount* total) {
    __shared__ ChunkCount s_warp[WL_MAX_BLOCK / 32];
    u32 lane = threadIdx.x & 31u;
    u32 warp = threadIdx.x >> 5;
    u32 warps = blockDim.x >> 5;
    ChunkCount x = v;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        ChunkCount y = wl_cc_shfl_up(x, d);
        if (lane >= d) x = wl_cc_combine(y, x);
    }
    ChunkCount excl = wl_cc_shfl_up(x, 1);
    if (lane == 0) excl = wl_cc_zero();
    if (lane == 31) s_warp[warp] = x;
    __syncthreads();
    ChunkCount before = wl_cc_zero();
    ChunkCount all = wl_cc_zero();
    for (u32 w = 0; w < warps; w++) {
        if (w < warp) before = wl_cc_combine(before, s_warp[w]);
        all = wl_cc_combine(all, s_warp[w]);
    }
    __syncthreads();
    *total = all;
    return wl_cc_combine(before, excl);
}

// The combination of in[from..to), computed by the whole block (every thread must call).
__device__ ChunkCount wl_block_reduce_cc(const ChunkCount* in, u32 from, u32 to) {
    u32 len = to > from ? to - from : 0;
    u32 per = (len + blockDim.x - 1) / blockDim.x;
    u32 a = from + wl_min(len, threadIdx.x * per);
    u32 b = from + wl_min(len, (threadIdx.x + 1) * per);
    ChunkCount acc = wl_cc_zero();
    for (u32 i = a; i < b; i++) acc = wl_cc_combine(acc, in[i]);
    ChunkCount total;
    wl_block_scan_cc(acc, &total);
    return total;
}

__device__ __forceinline__ ChunkCount wl_cc_unpack3(u32 x) {
    ChunkCount s;
    s.fields = x & 0x3ffu;
    s.records = (x >> 10) & 0x3ffu;
    s.tail = x >> 20;
    s.quotes = 0;
    s.last = 0;
    return s;
}

// Exclusive sum of the threads' values in thread order; *total gets the sum of all.
__device__ u32 wl_block_scan_u32(u32 v, u32* total) {
    __shared__ u32 s_warp[WL_MAX_BLOCK / 32];
    u32 lane = threadIdx.x & 31u;
    u32 warp = threadIdx.x >> 5;
    u32 warps = blockDim.x >> 5;
    u32 x = wl_warp_sum_scan(v, lane);
    if (lane == 31) s_warp[warp] = x;
    __syncthreads();
    u32 before = 0;
    u32 all = 0;
    for (u32 w = 0; w < warps; w++) {
        if (w < warp) before += s_warp[w];
        all += s_warp[w];
    }
    __syncthreads();
    *total = all;
    return before + x - v;
}

// The sum of in[from..to), computed by the whole block (every thread must call).
__device__ u32 wl_block_reduce_u32(const u32* in, u32 from, u32 to) {
    u32 sum = 0;
    for (u32 i = from + threadIdx.x; i < to; i += blockDim.x) sum += in[i];
    u32 total;
    wl_block_scan_u32(sum, &total);
    return total;
}

// ---------------------------------------------------------------------------------------
// Pass 1: delimiters and quotes per chunk (one warp per chunk, 128 bytes per step)
// ---------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256) wl_count(const CountArgs a) {
    const u8* in = (const u8*)a.input;
    ChunkCount* counts = (ChunkCount*)a.counts;
    u32 lane = threadIdx.x & 31u;
    u32 warps = blockDim.x >> 5;
    for (u32 chunk = blockIdx.x * warps + (threadIdx.x >> 5); chunk < a.nchunks;
         chunk += gridDim.x * warps) {
        u32 base = chunk * a.chunk;
        u32 end = wl_min(base + a.chunk, a.n);
        u32 carry = wl_chunk_carry(in, base);
        ChunkCount acc = wl_cc_zero();
        u32 quotes = 0;
        u32 last = 0;
        for (u32 off = base; off < end; off += 128) {
            auto [i0, w, prev, c] = wl_step(in, off, lane, carry, a.d);
            u32 delims = c.field | c.record;
            u32 x = wl_pack3(__popc(delims), __popc(c.record), wl_tail4(c.field, c.record));
            x = wl_warp_seg_scan(x, lane);
            acc = wl_cc_combine(acc, wl_cc_unpack3(__shfl_sync(WL_FULL, x, 31)));
            quotes += __popc(c.quote);
            if (delims) last = wl_max(last, i0 + 32u - (u32)__clz((int)delims));
            carry = wl_next_carry(w);
        }
        acc.quotes = wl_warp_sum(quotes);
        acc.last = wl_warp_max(last);
        if (lane == 0) counts[chunk] = acc;
    }
}

// ---------------------------------------------------------------------------------------
// Pass 2: exclusive scan of ChunkCounts (tiles reduced, then scanned with their prefix)
// ---------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256) wl_scan_partial(const ScanArgs a) {
    u32 from = blockIdx.x * a.tile;
    u32 to = wl_min(from + a.tile, a.n);
    ChunkCount t = wl_block_reduce_cc((const ChunkCount*)a.in, from, to);
    if (threadIdx.x == 0) ((ChunkCount*)a.partials)[blockIdx.x] = t;
}

extern "C" __global__ void __launch_bounds__(256) wl_scan_finish(const ScanArgs a) {
    const ChunkCount* in = (const ChunkCount*)a.in;
    ChunkCount* out = (ChunkCount*)a.out;
    ChunkCount prefix = wl_block_reduce_cc((const ChunkCount*)a.partials, 0, blockIdx.x);
    u32 from = blockIdx.x * a.tile;
    u32 to = wl_min(from + a.tile, a.n);
    u32 len = to - from;
    u32 per = (len + blockDim.x - 1) / blockDim.x;
    u32 s = from + wl_min(len, threadIdx.x * per);
    u32 e = from + wl_min(len, (threadIdx.x + 1) * per);
    ChunkCount mine = wl_cc_zero();
    for (u32 i = s; i < e; i++) mine = wl_cc_combine(mine, in[i]);
    ChunkCount block_total;
    ChunkCount run = wl_cc_combine(prefix, wl_block_scan_cc(mine, &block_total));
    for (u32 i = s; i < e; i++) {
        ChunkCount v = in[i];
        out[i] = run;
        run = wl_cc_combine(run, v);
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
        *(ChunkCount*)a.total = wl_cc_combine(prefix, block_total);
}

// ---------------------------------------------------------------------------------------
// Fields to tapes and spans (both modes)
// ---------------------------------------------------------------------------------------

// Records an error at field `col` of `row`; the first in input order wins.
__device__ __forceinline__ void wl_report(Status* st, u32 row, u32 col) {
    atomicMin(&st->error_at, ((u64)row << 16) | (col < 0xffffu ? col : 0xffffu));
}

__device__ __forceinline__ void wl_report_pos(Status* st, u32 pos) {
    atomicMin(&st->error_pos, (u64)pos);
}

__device__ bool wl_is_null(const u8* in, u32 s, u32 e, const KDialect& d) {
    if (e - s != d.null_len) return false;
    for (u32 i = 0; i < d.null_len; i++)
        if (in[s + i] != d.null[i]) return false;
    return true;
}

__device__ void wl_push_fallback(Status* st, Fallback* fb, u32 cap, const Fallback& f) {
    u32 k = atomicAdd(&st->fallbacks, 1u);
    if (k < cap) fb[k] = f;
}

__device__ void wl_clear_cell(u32* cell, u32 words, u32 first) {
    cell[0] = first;
    for (u32 w = 1; w < words; w++) cell[w] = 0;
}

// Writes field `c` of `row`: its bytes are [rs, re) of the input, its text [cs, ce)
// (quotes stripped when `quoted`). Strings get a span; the other kinds a tape cell: the
// text zero-padded to the width, WL_CELL_NULL, or WL_CELL_RANGE plus a fallback entry
// when the text does not fit the cell (too long, a NUL or quote byte, a first byte of
// 0xFE or 0xFF).
__device__ void wl_write_field(const u8* in, const ColumnDesc& col, u32 c, u32 row, u32 rs,
                               u32 re, u32 cs, u32 ce, bool quoted, const KDialect& d,
                               Status* st, Fallback* fb, u32 cap) {
    bool null = !quoted && wl_is_null(in, cs, ce, d);
    if (col.kind == WL_STR) {
        Span sp;
        sp.start = cs;
        if (null) {
            sp.len = WL_SPAN_NULL;
        } else {
            u32 nq = 0;
            if (quoted)
                for (u32 i = cs; i < ce; i++) nq += in[i] == d.quote ? 1u : 0u;
            sp.len = (ce - cs - nq / 2) | (nq ? WL_SPAN_ESCAPED : 0u);
        }
        ((Span*)col.spans)[row] = sp;
        return;
    }
    u32* cell = (u32*)(col.tape + (u64)row * col.width);
    u32 words = col.width >> 2;
    if (null) {
        wl_clear_cell(cell, words, WL_CELL_NULL);
        return;
    }
    u32 len = ce - cs;
    bool fits = len <= col.width && !(len > 0 && in[cs] >= 0xFEu);
    if (fits) {
        for (u32 w = 0; w < words; w++) {
            u32 v = 0;
            for (u32 k = 0; k < 4; k++) {
                u32 i = w * 4 + k;
                if (i < len) {
                    u32 b = in[cs + i];
                    if (b == 0 || (d.has_quote && b == d.quote)) fits = false;
                    v |= b << (8 * k);
                }
            }
            cell[w] = v;
        }
    }
    if (!fits) {
        wl_clear_cell(cell, words, WL_CELL_RANGE);
        Fallback f;
        f.row = row;
        f.col = (u16)c;
        f.kind = (u8)WL_FB_RANGE;
        f.len = 0;
        f.start = rs;
        f.end = re;
        for (u32 k = 0; k < WL_MAX_WIDTH; k++) f.text[k] = 0;
        wl_push_fallback(st, fb, cap, f);
    }
}

// ---------------------------------------------------------------------------------------
// Pass 3, fast mode: FieldsIndex in shared memory, fields straight to tapes and spans
// ---------------------------------------------------------------------------------------

// A field of the fast mode: [s, e) ends at a field (or, `rec`, record) delimiter at e.
__device__ void wl_fast_field(const IndexFastArgs& a, const u8* in, u32 s, u32 e, u32 row,
                              u32 col, bool rec) {
    Status* st = (Status*)a.status;
    if (row >= a.rows) {
        wl_report(st, row, col);
        return;
    }
    if (col < a.ncols) {
        // a record that ends before its last column has too few fields
        if (rec && col + 1 < a.ncols) wl_report(st, row, col + 1);
        // the first field starts after the empty lines before its record
        if (col == 0)
            while (s < e && wl_is_nl(in[s])) s++;
        wl_write_field(in, ((const ColumnDesc*)a.cols)[col], col, row, s, e, s, e, false, a.d, st,
                       (Fallback*)a.fallbacks, a.fallback_cap);
    } else if (!(col == a.ncols && rec && s == e)) {
        // too many fields (one empty trailing field is allowed)
        wl_report(st, row, a.ncols);
    }
}

extern "C" __global__ void __launch_bounds__(256) wl_index_fast(const IndexFastArgs a) {
    __shared__ u32 s_pos[WL_MAX_BLOCK / 32][128];
    __shared__ u32 s_row[WL_MAX_BLOCK / 32][128];
    __shared__ u32 s_col[WL_MAX_BLOCK / 32][128];
    const u8* in = (const u8*)a.input;
    const ChunkCount* prefix = (const ChunkCount*)a.prefix;
    u32 lane = threadIdx.x & 31u;
    u32 warp = threadIdx.x >> 5;
    u32 warps = blockDim.x >> 5;
    u32* pos = s_pos[warp];
    u32* rows = s_row[warp];
    u32* cols = s_col[warp];
    for (u32 chunk = blockIdx.x * warps + warp; chunk < a.nchunks; chunk += gridDim.x * warps) {
        ChunkCount p = prefix[chunk];
        u32 row = p.records; // row of the chunk's first field
        u32 col = p.tail;    // its column
        u32 start = p.last;  // where it starts
        u32 base = chunk * a.chunk;
        u32 end = wl_min(base + a.chunk, a.n);
        u32 carry = wl_chunk_carry(in, base);
        for (u32 off = base; off < end; off += 128) {
            auto [i0, w, prev, c] = wl_step(in, off, lane, carry, a.d);
            u32 delims = c.field | c.record;
            u32 x = wl_pack3(__popc(delims), __popc(c.record), wl_tail4(c.field, c.record));
            u32 incl = wl_warp_seg_scan(x, lane);
            u32 excl = __shfl_up_sync(WL_FULL, incl, 1);
            if (lane == 0) excl = 0;
            u32 total = __shfl_sync(WL_FULL, incl, 31);
            // the FieldsIndex of this step: every delimiter with the row and column of the
            // field it ends
            u32 k = excl & 0x3ffu;
            u32 er = (excl >> 10) & 0x3ffu;
            u32 r = row + er;
            u32 cc = er ? (excl >> 20) : col + (excl >> 20);
            for (u32 b = 0; b < 4; b++) {
                if ((delims >> b) & 1u) {
                    bool isrec = ((c.record >> b) & 1u) != 0;
                    pos[k] = i0 + b;
                    rows[k] = r;
                    cols[k] = cc | (isrec ? WL_RECORD_BIT : 0u);
                    k++;
                    if (isrec) {
                        r++;
                        cc = 0;
                    } else {
                        cc++;
                    }
                }
            }
            __syncwarp();
            u32 nd = total & 0x3ffu;
            for (u32 e = lane; e < nd; e += 32) {
                u32 cv = cols[e];
                wl_fast_field(a, in, e == 0 ? start : pos[e - 1] + 1, pos[e], rows[e],
                              cv & ~WL_RECORD_BIT, (cv & WL_RECORD_BIT) != 0);
            }
            if (nd) start = pos[nd - 1] + 1;
            u32 tr = (total >> 10) & 0x3ffu;
            row += tr;
            col = tr ? (total >> 20) : col + (total >> 20);
            carry = wl_next_carry(w);
            __syncwarp();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pass 3, quoted mode: FieldsIndex with sentinels for quoted delimiters, quote checks
// ---------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256) wl_index_quoted(const IndexQuotedArgs a) {
    const u8* in = (const u8*)a.input;
    const ChunkCount* prefix = (const ChunkCount*)a.prefix;
    u32* index = (u32*)a.index;
    Status* st = (Status*)a.status;
    u32 lane = threadIdx.x & 31u;
    u32 warps = blockDim.x >> 5;
    for (u32 chunk = blockIdx.x * warps + (threadIdx.x >> 5); chunk < a.nchunks;
         chunk += gridDim.x * warps) {
        ChunkCount p = prefix[chunk];
        u32 k0 = p.fields; // FieldsIndex slot of the chunk's first candidate
        u32 q0 = p.quotes; // quotes before the chunk
        u32 base = chunk * a.chunk;
        u32 end = wl_min(base + a.chunk, a.n);
        u32 carry = wl_chunk_carry(in, base);
        for (u32 off = base; off < end; off += 128) {
            auto [i0, w, prev, c] = wl_step(in, off, lane, carry, a.d);
            u32 down = __shfl_down_sync(WL_FULL, w, 1);
            u32 next = lane == 31 ? (u32)in[off + 128] : (down & 0xffu);
            u32 delims = c.field | c.record;
            u32 x = (u32)__popc(delims) | ((u32)__popc(c.quote) << 16);
            u32 incl = wl_warp_sum_scan(x, lane);
            u32 excl = incl - x;
            u32 total = __shfl_sync(WL_FULL, incl, 31);
            u32 k = k0 + (excl & 0xffffu);
            u32 parity = (q0 + (excl >> 16)) & 1u;
            for (u32 b = 0; b < 4; b++) {
                u32 i = i0 + b;
                if ((c.quote >> b) & 1u) {
                    if (parity == 0) {
                        // an opening quote starts a field, or follows a closing quote
                        // (a doubled quote inside a quoted field)
                        u32 pb = b == 0 ? prev : (w >> (8 * (b - 1))) & 0xffu;
                        if (!(pb == a.d.delim || wl_is_nl(pb) || pb == a.d.quote))
                            wl_report_pos(st, i);
                    } else {
                        // a closing quote ends the field, or is doubled
                        u32 nb = b == 3 ? next : (w >> (8 * (b + 1))) & 0xffu;
                        if (!(i + 1 >= a.n || nb == a.d.delim || wl_is_nl(nb) || nb == a.d.quote))
                            wl_report_pos(st, i);
                    }
                    parity ^= 1u;
                }
                if ((delims >> b) & 1u) {
                    index[k] = parity ? WL_INVALID : (i | (((c.record >> b) & 1u) ? WL_RECORD_BIT : 0u));
                    k++;
                }
            }
            k0 += total & 0xffffu;
            q0 += total >> 16;
            carry = wl_next_carry(w);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pass 4, quoted mode: stream compaction of the FieldsIndex
// ---------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256) wl_compact_count(const CompactCountArgs a) {
    const u32* index = (const u32*)a.index;
    u32 from = blockIdx.x * a.tile;
    u32 to = wl_min(from + a.tile, a.entries);
    ChunkCount mine = wl_cc_zero();
    for (u32 i = from + threadIdx.x; i < to; i += blockDim.x) {
        u32 e = index[i];
        if (e != WL_INVALID) {
            mine.fields++;
            mine.records += e >> 31;
        }
    }
    ChunkCount total;
    wl_block_scan_cc(mine, &total);
    if (threadIdx.x == 0) ((ChunkCount*)a.counts)[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(256) wl_compact_scatter(const CompactScatterArgs a) {
    const u32* index = (const u32*)a.index;
    u32* out = (u32*)a.out;
    u32* row_end = (u32*)a.row_end;
    u32 from = blockIdx.x * a.tile;
    u32 to = wl_min(from + a.tile, a.entries);
    u32 len = to - from;
    u32 per = (len + blockDim.x - 1) / blockDim.x;
    u32 s = from + wl_min(len, threadIdx.x * per);
    u32 e = from + wl_min(len, (threadIdx.x + 1) * per);
    ChunkCount mine = wl_cc_zero();
    for (u32 i = s; i < e; i++) {
        u32 v = index[i];
        if (v != WL_INVALID) {
            mine.fields++;
            mine.records += v >> 31;
        }
    }
    ChunkCount total;
    ChunkCount excl = wl_block_scan_cc(mine, &total);
    ChunkCount p = ((const ChunkCount*)a.prefix)[blockIdx.x];
    u32 j = p.fields + excl.fields;
    u32 r = p.records + excl.records;
    for (u32 i = s; i < e; i++) {
        u32 v = index[i];
        if (v != WL_INVALID) {
            out[j] = v;
            if (v & WL_RECORD_BIT) row_end[r++] = j;
            j++;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pass 5, quoted mode: fields of each (row, column) to tapes and spans
// ---------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256) wl_fields_quoted(const FieldsQuotedArgs a) {
    const u8* in = (const u8*)a.input;
    const u32* index = (const u32*)a.index;
    const u32* row_end = (const u32*)a.row_end;
    const ColumnDesc* cols = (const ColumnDesc*)a.cols;
    Status* st = (Status*)a.status;
    u64 total = (u64)a.rows * a.ncols;
    for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (u64)gridDim.x * blockDim.x) {
        u32 r = (u32)(t / a.ncols);
        u32 c = (u32)(t % a.ncols);
        u32 first = r == 0 ? 0 : row_end[r - 1] + 1;
        u32 last = row_end[r];
        u32 nf = last - first + 1;
        bool ok = nf == a.ncols;
        if (!ok && nf == a.ncols + 1) {
            // one empty, unquoted trailing field
            u32 le = index[last] & ~WL_RECORD_BIT;
            u32 ls = (index[last - 1] & ~WL_RECORD_BIT) + 1;
            ok = ls == le;
        }
        if (!ok) {
            if (c == 0) wl_report(st, r, nf < a.ncols ? nf : a.ncols);
            continue;
        }
        u32 j = first + c;
        u32 fe = index[j] & ~WL_RECORD_BIT;
        u32 fs = j == 0 ? 0 : (index[j - 1] & ~WL_RECORD_BIT) + 1;
        // the first field starts after the empty lines before its record
        if (c == 0)
            while (fs < fe && wl_is_nl(in[fs])) fs++;
        bool quoted = a.d.has_quote && fe > fs && in[fs] == a.d.quote;
        u32 cs = fs;
        u32 ce = fe;
        if (quoted) {
            cs = fs + 1;
            ce = fe - 1 > cs ? fe - 1 : cs;
        }
        wl_write_field(in, cols[c], c, r, fs, fe, cs, ce, quoted, a.d, st, (Fallback*)a.fallbacks,
                       a.fallback_cap);
    }
}

// ---------------------------------------------------------------------------------------
// Pass 6: column-wise deserialization of the tapes (one thread per row, one column per
// blockIdx.y). The fast shapes only; every other text becomes a fallback entry, and the
// host parses it with the CPU loader's parser (which also names invalid values).
// ---------------------------------------------------------------------------------------

__device__ const u64 WL_P10[20] = {1ull,
                                   10ull,
                                   100ull,
                                   1000ull,
                                   10000ull,
                                   100000ull,
                                   1000000ull,
                                   10000000ull,
                                   100000000ull,
                                   1000000000ull,
                                   10000000000ull,
                                   100000000000ull,
                                   1000000000000ull,
                                   10000000000000ull,
                                   100000000000000ull,
                                   1000000000000000ull,
                                   10000000000000000ull,
                                   100000000000000000ull,
                                   1000000000000000000ull,
                                   10000000000000000000ull};

// Powers of ten that doubles (up to 1e22) and floats (up to 1e10) hold exactly.
__device__ const double WL_P10D[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
__device__ const float WL_P10F[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                      1e6f, 1e7f, 1e8f, 1e9f, 1e10f};

__device__ __forceinline__ u32 wl_digit(u32 b) { return b - 48u; }

// `[+-]digits[.digits]`, at least one digit before the point and after it when there is
// one, at most 19 digits: the digits as one integer `m`, the count after the point.
__device__ bool wl_plain_decimal(const u8* t, u32 len, bool* neg, u64* m, u32* nint, u32* nfrac,
                                 u32* sig) {
    u32 i = 0;
    *neg = false;
    if (len > 0 && (t[0] == '-' || t[0] == '+')) {
        *neg = t[0] == '-';
        i = 1;
    }
    u64 v = 0;
    u32 s = 0;
    u32 from = i;
    while (i < len && wl_digit(t[i]) <= 9u) {
        u32 d = wl_digit(t[i]);
        v = v * 10 + d;
        if (d || s) s++;
        i++;
    }
    *nint = i - from;
    *sig = s;
    *nfrac = 0;
    if (*nint == 0) return false;
    if (i < len) {
        if (t[i] != '.') return false;
        i++;
        u32 f = i;
        while (i < len && wl_digit(t[i]) <= 9u) {
            v = v * 10 + wl_digit(t[i]);
            i++;
        }
        *nfrac = i - f;
        if (*nfrac == 0 || i != len) return false;
    }
    if (*nint + *nfrac > 19) return false;
    *m = v;
    return true;
}

// SMALLINT, INTEGER, BIGINT: `[+-]` and 1 to 18 digits, within the type's range.
__device__ bool wl_parse_int(const u8* t, u32 len, u64 max_pos, i64* out) {
    u32 i = 0;
    bool neg = false;
    if (len > 0 && (t[0] == '-' || t[0] == '+')) {
        neg = t[0] == '-';
        i = 1;
    }
    if (i == len || len - i > 18) return false;
    u64 m = 0;
    for (; i < len; i++) {
        u32 d = wl_digit(t[i]);
        if (d > 9u) return false;
        m = m * 10 + d;
    }
    if (m > max_pos + (neg ? 1u : 0u)) return false;
    *out = neg ? -(i64)m : (i64)m;
    return true;
}

// DECIMAL(p, s): a plain decimal of at most 18 digits with at most s after the point
// (no rounding) and at most p - s significant digits before it; 128-bit two's complement.
__device__ bool wl_parse_dec(const u8* t, u32 len, u32 prec, u32 scale, u64* lo, u64* hi) {
    bool neg;
    u64 m;
    u32 nint, nfrac, sig;
    if (!wl_plain_decimal(t, len, &neg, &m, &nint, &nfrac, &sig)) return false;
    if (nint + nfrac > 18 || nfrac > scale || sig > prec - scale) return false;
    u32 sh = scale - nfrac;
    if (sh > 19) return false;
    u64 p = WL_P10[sh];
    u64 l = m * p;
    u64 h = __umul64hi(m, p);
    if (neg) {
        l = ~l + 1;
        h = ~h + (l == 0 ? 1ull : 0ull);
    }
    *lo = l;
    *hi = h;
    return true;
}

// DOUBLE: a plain decimal whose digits a double holds exactly, divided by an exact power
// of ten (one correctly rounded operation: Clinger's fast path).
__device__ bool wl_parse_f64(const u8* t, u32 len, double* out) {
    bool neg;
    u64 m;
    u32 nint, nfrac, sig;
    if (!wl_plain_decimal(t, len, &neg, &m, &nint, &nfrac, &sig)) return false;
    if (m > (1ull << 53) || nfrac > 22) return false;
    double v = (double)m;
    if (nfrac) v = v / WL_P10D[nfrac];
    *out = neg ? -v : v;
    return true;
}

// REAL: as DOUBLE, with what a float holds exactly.
__device__ bool wl_parse_f32(const u8* t, u32 len, float* out) {
    bool neg;
    u64 m;
    u32 nint, nfrac, sig;
    if (!wl_plain_decimal(t, len, &neg, &m, &nint, &nfrac, &sig)) return false;
    if (m > (1ull << 24) || nfrac > 10) return false;
    float v = (float)(u32)m;
    if (nfrac) v = v / WL_P10F[nfrac];
    *out = neg ? -v : v;
    return true;
}

// Whether t is `word` (given in lower case) written all in lower or all in upper case.
__device__ bool wl_is_word(const u8* t, u32 len, const char* word) {
    bool lower = true;
    bool upper = true;
    for (u32 i = 0; i < len; i++) {
        u32 w = (u8)word[i];
        if (w == 0) return false;
        u32 up = (w >= 'a' && w <= 'z') ? w - 32u : w;
        lower = lower && t[i] == w;
        upper = upper && t[i] == up;
    }
    return word[len] == 0 && (lower || upper);
}

// BOOLEAN: t true y yes on 1 and f false n no off 0, all lower or all upper case.
__device__ bool wl_parse_bool(const u8* t, u32 len, bool* out) {
    if (wl_is_word(t, len, "t") || wl_is_word(t, len, "true") || wl_is_word(t, len, "y") ||
        wl_is_word(t, len, "yes") || wl_is_word(t, len, "on") || wl_is_word(t, len, "1")) {
        *out = true;
        return true;
    }
    if (wl_is_word(t, len, "f") || wl_is_word(t, len, "false") || wl_is_word(t, len, "n") ||
        wl_is_word(t, len, "no") || wl_is_word(t, len, "off") || wl_is_word(t, len, "0")) {
        *out = false;
        return true;
    }
    return false;
}

__device__ __forceinline__ bool wl_two(const u8* t, u32 i, u32* v) {
    u32 a = wl_digit(t[i]);
    u32 b = wl_digit(t[i + 1]);
    *v = a * 10 + b;
    return a <= 9u && b <= 9u;
}

// Days from 1970-01-01 to a valid proleptic Gregorian date (year >= 1).
__device__ i32 wl_days_from_civil(i32 y, u32 m, u32 d) {
    y -= m <= 2 ? 1 : 0;
    i32 era = y / 400;
    u32 yoe = (u32)(y - era * 400);
    u32 mp = m > 2 ? m - 3 : m + 9;
    u32 doy = (153 * mp + 2) / 5 + d - 1;
    u32 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (i32)doe - 719468;
}

// `YYYY-MM-DD` at the start of t, year 1 to 9999, a day of that month.
__device__ bool wl_ymd(const u8* t, i32* days) {
    u32 y1, y2, m, d;
    if (!wl_two(t, 0, &y1) || !wl_two(t, 2, &y2) || t[4] != '-' || !wl_two(t, 5, &m) ||
        t[7] != '-' || !wl_two(t, 8, &d))
        return false;
    u32 y = y1 * 100 + y2;
    if (y < 1 || m < 1 || m > 12 || d < 1) return false;
    u32 dim = 31;
    if (m == 4 || m == 6 || m == 9 || m == 11) dim = 30;
    if (m == 2) dim = ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0) ? 29 : 28;
    if (d > dim) return false;
    *days = wl_days_from_civil((i32)y, m, d);
    return true;
}

// DATE: exactly `YYYY-MM-DD`.
__device__ bool wl_parse_date(const u8* t, u32 len, i32* out) {
    return len == 10 && wl_ymd(t, out);
}

// TIMESTAMP: `YYYY-MM-DD HH:MM:SS[.f]` (or T for the space), 1 to 6 fraction digits,
// hours below 24 and seconds below 60; microseconds since 1970.
__device__ bool wl_parse_ts(const u8* t, u32 len, i64* out) {
    if (!(len == 19 || (len >= 21 && len <= 26 && t[19] == '.'))) return false;
    i32 days;
    u32 h, mi, s;
    if (!wl_ymd(t, &days) || !(t[10] == ' ' || t[10] == 'T') || !wl_two(t, 11, &h) ||
        t[13] != ':' || !wl_two(t, 14, &mi) || t[16] != ':' || !wl_two(t, 17, &s))
        return false;
    if (h > 23 || mi > 59 || s > 59) return false;
    u64 frac = 0;
    if (len > 19) {
        for (u32 i = 20; i < len; i++) {
            u32 d = wl_digit(t[i]);
            if (d > 9u) return false;
            frac = frac * 10 + d;
        }
        frac *= WL_P10[26 - len];
    }
    *out = (i64)days * 86400000000ll + (i64)((h * 60 + mi) * 60 + s) * 1000000ll + (i64)frac;
    return true;
}

// Stores a zero value (NULL slots and values the host will patch).
__device__ void wl_store_zero(const ColumnDesc& col, u32 row) {
    switch (col.kind) {
    case WL_I16: ((i16*)col.values)[row] = 0; break;
    case WL_I32:
    case WL_DATE: ((i32*)col.values)[row] = 0; break;
    case WL_F32: ((u32*)col.values)[row] = 0; break;
    case WL_I64:
    case WL_TS:
    case WL_F64: ((u64*)col.values)[row] = 0; break;
    case WL_DEC:
        if (col.precision <= 18) {
            ((u64*)col.values)[row] = 0;
        } else {
            ((u64*)col.values)[2 * (u64)row] = 0;
            ((u64*)col.values)[2 * (u64)row + 1] = 0;
        }
        break;
    default: break;
    }
}

extern "C" __global__ void __launch_bounds__(256) wl_deserialize(const DeserializeArgs a) {
    u32 c = ((const u32*)a.col_ids)[blockIdx.y];
    const ColumnDesc col = ((const ColumnDesc*)a.cols)[c];
    Status* st = (Status*)a.status;
    Fallback* fb = (Fallback*)a.fallbacks;
    u32 lane = threadIdx.x & 31u;
    u32 stride = gridDim.x * blockDim.x;
    for (u32 base = blockIdx.x * blockDim.x; base < a.rows; base += stride) {
        u32 row = base + threadIdx.x;
        bool active = row < a.rows;
        u8 t[WL_MAX_WIDTH];
        u32 len = 0;
        u32 state = 0; // 0: text, 1: NULL, 2: in the fallback list already
        if (active) {
            const u32* cell = (const u32*)(col.tape + (u64)row * col.width);
            len = col.width;
            for (u32 w = 0; w < col.width / 4; w++) {
                u32 v = cell[w];
                for (u32 k = 0; k < 4; k++) {
                    u32 b = (v >> (8 * k)) & 0xffu;
                    t[w * 4 + k] = (u8)b;
                    if (b == 0 && len == col.width) len = w * 4 + k;
                }
            }
            if (t[0] == WL_CELL_NULL) state = 1;
            if (t[0] == WL_CELL_RANGE) state = 2;
        }
        bool ok = true;
        bool bit = false;
        if (active && state == 0) {
            switch (col.kind) {
            case WL_BOOL: ok = wl_parse_bool(t, len, &bit); break;
            case WL_I16: {
                i64 v;
                ok = wl_parse_int(t, len, 32767ull, &v);
                if (ok) ((i16*)col.values)[row] = (i16)v;
            } break;
            case WL_I32: {
                i64 v;
                ok = wl_parse_int(t, len, 2147483647ull, &v);
                if (ok) ((i32*)col.values)[row] = (i32)v;
            } break;
            case WL_I64: {
                i64 v;
                ok = wl_parse_int(t, len, 999999999999999999ull, &v);
                if (ok) ((i64*)col.values)[row] = v;
            } break;
            case WL_F32: {
                float v;
                ok = wl_parse_f32(t, len, &v);
                if (ok) ((float*)col.values)[row] = v;
            } break;
            case WL_F64: {
                double v;
                ok = wl_parse_f64(t, len, &v);
                if (ok) ((double*)col.values)[row] = v;
            } break;
            case WL_DEC: {
                u64 lo, hi;
                ok = wl_parse_dec(t, len, col.precision, col.scale, &lo, &hi);
                // up to 18 digits travel as 64 bits (the host widens them to 128)
                if (ok && col.precision <= 18) {
                    ((u64*)col.values)[row] = lo;
                } else if (ok) {
                    ((u64*)col.values)[2 * (u64)row] = lo;
                    ((u64*)col.values)[2 * (u64)row + 1] = hi;
                }
            } break;
            case WL_DATE: {
                i32 v;
                ok = wl_parse_date(t, len, &v);
                if (ok) ((i32*)col.values)[row] = v;
            } break;
            case WL_TS: {
                i64 v;
                ok = wl_parse_ts(t, len, &v);
                if (ok) ((i64*)col.values)[row] = v;
            } break;
            default: ok = false; break;
            }
            if (!ok) {
                Fallback f;
                f.row = row;
                f.col = (u16)c;
                f.kind = (u8)WL_FB_TEXT;
                f.len = (u8)len;
                f.start = 0;
                f.end = 0;
                for (u32 k = 0; k < WL_MAX_WIDTH; k++) f.text[k] = k < len ? t[k] : 0;
                wl_push_fallback(st, fb, a.fallback_cap, f);
            }
        }
        if (active && (state != 0 || !ok)) wl_store_zero(col, row);
        if (active && state == 1 && !col.nullable) wl_report(st, row, c);
        bool valid = active && state != 1;
        u32 vb = __ballot_sync(WL_FULL, valid);
        u32 bb = __ballot_sync(WL_FULL, active && state == 0 && ok && bit);
        u32 first = row - lane;
        if (lane == 0 && first < a.rows) {
            ((u32*)col.validity)[first >> 5] = vb;
            if (col.kind == WL_BOOL) ((u32*)col.values)[first >> 5] = bb;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pass 7: strings (lengths, offsets by an exclusive scan, gather with unescaping and
// UTF-8 and length checks)
// ---------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(256) wl_string_lengths(const StringArgs a) {
    u32 c = ((const u32*)a.col_ids)[blockIdx.y];
    const ColumnDesc col = ((const ColumnDesc*)a.cols)[c];
    const Span* spans = (const Span*)col.spans;
    u32* lens = (u32*)col.offsets;
    for (u32 row = blockIdx.x * blockDim.x + threadIdx.x; row < a.rows;
         row += gridDim.x * blockDim.x) {
        u32 l = spans[row].len;
        lens[row] = (l & WL_SPAN_NULL) ? 0u : (l & WL_SPAN_LEN);
    }
}

extern "C" __global__ void __launch_bounds__(256) wl_offsets_partial(const OffsetsArgs a) {
    u32 c = ((const u32*)a.col_ids)[blockIdx.y];
    const u32* lens = (const u32*)((const ColumnDesc*)a.cols)[c].offsets;
    u32 from = blockIdx.x * a.tile;
    u32 to = wl_min(from + a.tile, a.rows);
    u32 sum = wl_block_reduce_u32(lens, from, to);
    if (threadIdx.x == 0) ((u32*)a.partials)[blockIdx.y * a.tiles + blockIdx.x] = sum;
}

extern "C" __global__ void __launch_bounds__(256) wl_offsets_finish(const OffsetsArgs a) {
    u32 c = ((const u32*)a.col_ids)[blockIdx.y];
    u32* off = (u32*)((const ColumnDesc*)a.cols)[c].offsets;
    u32 prefix =
        wl_block_reduce_u32((const u32*)a.partials + (u64)blockIdx.y * a.tiles, 0, blockIdx.x);
    u32 from = blockIdx.x * a.tile;
    u32 to = wl_min(from + a.tile, a.rows);
    u32 len = to - from;
    u32 per = (len + blockDim.x - 1) / blockDim.x;
    u32 s = from + wl_min(len, threadIdx.x * per);
    u32 e = from + wl_min(len, (threadIdx.x + 1) * per);
    u32 mine = 0;
    for (u32 i = s; i < e; i++) mine += off[i];
    u32 total;
    u32 run = prefix + wl_block_scan_u32(mine, &total);
    for (u32 i = s; i < e; i++) {
        u32 v = off[i];
        off[i] = run;
        run += v;
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) off[a.rows] = prefix + total;
}

// Checks that s[0..len) is UTF-8; counts its characters.
__device__ bool wl_utf8(const u8* s, u32 len, u32* chars) {
    u32 n = 0;
    u32 i = 0;
    while (i < len) {
        u32 b0 = s[i];
        n++;
        if (b0 < 0x80u) {
            i++;
            continue;
        }
        u32 need;
        u32 lo = 0x80u;
        u32 hi = 0xBFu;
        if (b0 >= 0xC2u && b0 <= 0xDFu) {
            need = 1;
        } else if (b0 >= 0xE0u && b0 <= 0xEFu) {
            need = 2;
            if (b0 == 0xE0u) lo = 0xA0u;
            if (b0 == 0xEDu) hi = 0x9Fu;
        } else if (b0 >= 0xF0u && b0 <= 0xF4u) {
            need = 3;
            if (b0 == 0xF0u) lo = 0x90u;
            if (b0 == 0xF4u) hi = 0x8Fu;
        } else {
            return false;
        }
        if (i + need >= len) return false;
        for (u32 k = 1; k <= need; k++) {
            u32 b = s[i + k];
            u32 l = k == 1 ? lo : 0x80u;
            u32 h = k == 1 ? hi : 0xBFu;
            if (b < l || b > h) return false;
        }
        i += need + 1;
    }
    *chars = n;
    return true;
}

extern "C" __global__ void __launch_bounds__(256) wl_string_gather(const StringArgs a) {
    const u8* in = (const u8*)a.input;
    u32 c = ((const u32*)a.col_ids)[blockIdx.y];
    const ColumnDesc col = ((const ColumnDesc*)a.cols)[c];
    const Span* spans = (const Span*)col.spans;
    const u32* off = (const u32*)col.offsets;
    u8* values = (u8*)col.values;
    Status* st = (Status*)a.status;
    u32 lane = threadIdx.x & 31u;
    u32 stride = gridDim.x * blockDim.x;
    for (u32 base = blockIdx.x * blockDim.x; base < a.rows; base += stride) {
        u32 row = base + threadIdx.x;
        bool active = row < a.rows;
        bool valid = false;
        if (active) {
            Span sp = spans[row];
            if (sp.len & WL_SPAN_NULL) {
                if (!col.nullable) wl_report(st, row, c);
            } else {
                valid = true;
                u32 len = sp.len & WL_SPAN_LEN;
                u8* dst = values + off[row];
                u32 src = sp.start;
                // spans come from the fields pass and lie in the input; should one not,
                // the row is an error rather than a read out of bounds
                bool inside = src <= a.n && len <= a.n - src;
                if (inside && (sp.len & WL_SPAN_ESCAPED)) {
                    // a doubled quote stands for one
                    for (u32 o = 0; o < len; o++) {
                        if (src >= a.n) {
                            inside = false;
                            break;
                        }
                        u8 b = in[src];
                        dst[o] = b;
                        src += (a.d.has_quote && b == a.d.quote) ? 2 : 1;
                    }
                } else if (inside) {
                    for (u32 o = 0; o < len; o++) dst[o] = in[src + o];
                }
                u32 chars;
                if (!inside) {
                    wl_report(st, row, c);
                } else if (!wl_utf8(dst, len, &chars)) {
                    wl_report(st, row, c);
                } else if (col.max_chars && chars > col.max_chars) {
                    Fallback f;
                    f.row = row;
                    f.col = (u16)c;
                    f.kind = (u8)WL_FB_STRING;
                    f.len = 0;
                    f.start = 0;
                    f.end = 0;
                    for (u32 k = 0; k < WL_MAX_WIDTH; k++) f.text[k] = 0;
                    wl_push_fallback(st, (Fallback*)a.fallbacks, a.fallback_cap, f);
                }
            }
        }
        u32 vb = __ballot_sync(WL_FULL, valid);
        u32 first = row - lane;
        if (lane == 0 && first < a.rows) ((u32*)col.validity)[first >> 5] = vb;
    }
}
