// The memory layout shared by the CUDA kernels (csv.cu), the CPU emulator (simt.h,
// emulate.cpp) and the Rust side (src/layout.rs mirrors every struct here; a test compares
// their sizes and field offsets through the emulator).
//
// ADVICE FOR HACKERS
// - Every struct is plain data with explicit padding, so C, CUDA and Rust agree on it.
// - Positions are byte offsets into one partition of input, which is below 2 GiB: a
//   position fits 31 bits and bit 31 of a FieldsIndex entry marks a record delimiter.
// - A kernel argument struct is passed by value as the kernel's only parameter.
// - Change a struct here, change it in src/layout.rs in the same commit.
#ifndef WL_LAYOUT_INCLUDED
#define WL_LAYOUT_INCLUDED

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;

// A FieldsIndex entry's bit that marks a record (not field) delimiter.
#define WL_RECORD_BIT 0x80000000u
// A FieldsIndex entry for a delimiter inside quotes (the paper's sentinel).
#define WL_INVALID 0xFFFFFFFFu
// "No error" in Status.
#define WL_NONE 0xFFFFFFFFFFFFFFFFull

// Span flag: the field is SQL NULL.
#define WL_SPAN_NULL 0x80000000u
// Span flag: the field was quoted and holds doubled quotes to unescape.
#define WL_SPAN_ESCAPED 0x40000000u
// The length bits of Span.len.
#define WL_SPAN_LEN 0x3FFFFFFFu

// First byte of a tape cell whose field is NULL.
#define WL_CELL_NULL 0xFEu
// First byte of a tape cell whose field did not fit (too long, a NUL byte, a quote, or a
// first byte of 0xFE/0xFF): its place in the input is in the fallback list.
#define WL_CELL_RANGE 0xFFu

// Column kinds (the physical type a column is deserialized into).
#define WL_BOOL 1u
#define WL_I16 2u
#define WL_I32 3u
#define WL_I64 4u
#define WL_F32 5u
#define WL_F64 6u
#define WL_DEC 7u
#define WL_DATE 8u
#define WL_TS 9u
#define WL_STR 10u

// Fallback kinds: where the host finds the text it must parse itself.
#define WL_FB_TEXT 1u
#define WL_FB_RANGE 2u
#define WL_FB_STRING 3u

// Largest tape cell, and the text a fallback entry carries.
#define WL_MAX_WIDTH 48u
// Longest NULL string the kernels compare fields with.
#define WL_MAX_NULL 64u
// Threads per block of every kernel (8 warps); the emulator also runs 32 and 64.
#define WL_MAX_BLOCK 256u

// What one chunk holds (count pass), or what lies before it (after the scan).
//   fields:  delimiters that end a field (field delimiters and record delimiters)
//   records: record delimiters
//   tail:    field delimiters after the last record delimiter (all of them if none);
//            after the scan: the column number of the chunk's first field
//   quotes:  quote characters
//   last:    1 + position of the last delimiter (0: none); after the scan: where the
//            field that holds the chunk's first byte starts
// Combining a then b: sums, except tail = b.records ? b.tail : a.tail + b.tail and
// last = max(a.last, b.last).
struct ChunkCount {
    u32 fields;
    u32 records;
    u32 tail;
    u32 quotes;
    u32 last;
};

// One string field: where its text starts in the partition (after an opening quote), and
// its length after unescaping, with WL_SPAN_* flags.
struct Span {
    u32 start;
    u32 len;
};

// A field the kernels leave to the host (a shape the fast parsers do not take, a value
// that may be invalid, or a string longer than its declared length).
struct Fallback {
    u32 row;
    u16 col;
    u8 kind;   // WL_FB_*
    u8 len;    // WL_FB_TEXT: bytes of text
    u32 start; // WL_FB_RANGE: the field's bytes in the partition, quotes included
    u32 end;
    u8 text[WL_MAX_WIDTH];
};

// Errors and counters of one partition's passes.
struct Status {
    u64 error_at;    // first (row << 16 | column) with a wrong field count (the column of the
                     // first missing or extra field), a NULL in a NOT NULL column or bad UTF-8
    u64 error_pos;   // first misplaced quote (opening inside a field, or text after a closing one)
    u32 fallbacks;   // fallback entries wanted (more than the list holds when it overflowed)
    u32 pad;
};

// One table column as the kernels see it. Device pointers are 64-bit addresses.
struct ColumnDesc {
    u32 kind;      // WL_* kind
    u32 width;     // tape cell bytes (numeric kinds; a multiple of 4, at most WL_MAX_WIDTH)
    u32 nullable;  // 0: NOT NULL
    u32 max_chars; // CHAR(n)/VARCHAR(n): n; 0: unbounded
    u32 precision; // DECIMAL
    u32 scale;     // DECIMAL
    u32 pad0;
    u32 pad1;
    u64 tape;      // numeric: rows * width bytes
    u64 values;    // numeric: rows values (BOOL: bit words; DECIMAL up to precision 18:
                   // 64-bit); strings: the bytes
    u64 validity;  // one bit per row, in 32-bit words
    u64 spans;     // strings: a Span per row
    u64 offsets;   // strings: rows + 1 i32 offsets (lengths before the scan)
};

// The dialect bytes the kernels need.
struct KDialect {
    u8 delim;
    u8 quote;     // meaningful when has_quote
    u8 has_quote;
    u8 null_len;  // bytes of null[]
    u32 pad;
    u8 null[WL_MAX_NULL];
};

// wl_count: one warp per chunk.
struct CountArgs {
    u64 input;   // n bytes, zero-padded to a multiple of chunk plus 128 bytes
    u64 counts;  // ChunkCount per chunk
    u32 n;
    u32 chunk;   // bytes per chunk, a multiple of 128
    u32 nchunks;
    u32 pad;
    KDialect d;
};

// wl_scan_partial / wl_scan_finish: exclusive scan of ChunkCounts in tiles.
struct ScanArgs {
    u64 in;       // ChunkCount[n]
    u64 out;      // ChunkCount[n], exclusive prefix (may equal in)
    u64 partials; // ChunkCount per tile
    u64 total;    // one ChunkCount: the combination of all n
    u32 n;
    u32 tile;     // elements per block, blockDim * per-thread count
};

// wl_index_fast: one warp per chunk, fields written to tapes and spans.
struct IndexFastArgs {
    u64 input;
    u64 prefix;    // ChunkCount per chunk, from the scan
    u64 cols;      // ColumnDesc[ncols]
    u64 status;    // Status
    u64 fallbacks; // Fallback[fallback_cap]
    u32 n;
    u32 chunk;
    u32 nchunks;
    u32 ncols;
    u32 rows;      // records in the partition
    u32 fallback_cap;
    KDialect d;
};

// wl_index_quoted: one warp per chunk, the FieldsIndex with sentinels.
struct IndexQuotedArgs {
    u64 input;
    u64 prefix;    // ChunkCount per chunk, from the scan
    u64 index;     // u32 per delimiter candidate
    u64 status;
    u32 n;
    u32 chunk;
    u32 nchunks;
    u32 pad;
    KDialect d;
};

// wl_compact_count: valid entries and record delimiters per tile of the FieldsIndex.
struct CompactCountArgs {
    u64 index;
    u64 counts;   // ChunkCount per tile (fields: valid entries, records: record delimiters)
    u32 entries;
    u32 tile;
};

// wl_compact_scatter: the FieldsIndex without sentinels, and where each record ends.
struct CompactScatterArgs {
    u64 index;
    u64 prefix;   // ChunkCount per tile, from the scan
    u64 out;      // u32 per valid entry
    u64 row_end;  // u32 per record: index in out of its record delimiter
    u32 entries;
    u32 tile;
};

// wl_fields_quoted: one thread per (row, column), fields written to tapes and spans.
struct FieldsQuotedArgs {
    u64 input;
    u64 index;     // compacted FieldsIndex
    u64 row_end;
    u64 cols;
    u64 status;
    u64 fallbacks;
    u32 rows;
    u32 ncols;
    u32 entries;   // valid entries
    u32 fallback_cap;
    KDialect d;
};

// wl_deserialize: blockIdx.y picks a numeric column from col_ids, threads walk its rows.
struct DeserializeArgs {
    u64 cols;
    u64 col_ids;   // u32 column numbers
    u64 status;
    u64 fallbacks;
    u32 rows;
    u32 fallback_cap;
};

// wl_string_lengths, wl_string_gather: blockIdx.y picks a string column from col_ids.
struct StringArgs {
    u64 input;
    u64 cols;
    u64 col_ids;
    u64 status;
    u64 fallbacks;
    u32 rows;
    u32 fallback_cap;
    u32 n;         // bytes of input: no span reaches past them
    u32 pad;
    KDialect d;
};

// wl_offsets_partial / wl_offsets_finish: exclusive sum of each string column's lengths
// (in its offsets array, in place), the total at offsets[rows].
struct OffsetsArgs {
    u64 cols;
    u64 col_ids;
    u64 partials;  // u32 per (column, tile)
    u32 rows;
    u32 tile;
    u32 tiles;
    u32 pad;
};

// Kernel numbers, the order of the emulator's table and of src/layout.rs's Kernel enum.
#define WL_K_COUNT 0
#define WL_K_SCAN_PARTIAL 1
#define WL_K_SCAN_FINISH 2
#define WL_K_INDEX_FAST 3
#define WL_K_INDEX_QUOTED 4
#define WL_K_COMPACT_COUNT 5
#define WL_K_COMPACT_SCATTER 6
#define WL_K_FIELDS_QUOTED 7
#define WL_K_DESERIALIZE 8
#define WL_K_STRING_LENGTHS 9
#define WL_K_OFFSETS_PARTIAL 10
#define WL_K_OFFSETS_FINISH 11
#define WL_K_STRING_GATHER 12
#define WL_KERNELS 13

#endif
