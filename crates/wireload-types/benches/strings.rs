//! `Utf8` (offsets + bytes) against `Utf8View` (16-byte views, strings over 12 bytes in a
//! data buffer) for the loader's string columns: the cost of building each from CSV field
//! slices, their memory, and query kernels over them (equality with a constant, `LIKE`,
//! sort). TPC-H lineitem's text columns; median of 7 runs, ns per row.
//!
//! `cargo bench -p wireload-types --bench strings` (lineitem from `WIRELOAD_BENCH_CSV`,
//! default `/dev/shm/wireload-tpch-sf0.1/lineitem.tbl`, else generated at SF 0.1)

use std::fmt::Write;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, Scalar, StringArray, StringViewArray, make_view};
use arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow::compute::kernels::cmp::eq;
use arrow::compute::kernels::comparison::like;
use arrow::compute::sort_to_indices;
use tpchgen::generators::LineItemGenerator;

const RUNS: usize = 7;

/// Median nanoseconds per row of `f` over `rows` rows.
fn ns_per_row<T>(rows: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut t: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64() * 1e9 / rows as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[RUNS / 2]
}

/// The input text and the byte ranges of column `col` of every record.
fn column(text: &[u8], col: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for line in memchr::memchr_iter(b'\n', text).scan(0usize, |start, end| {
        let s = *start;
        *start = end + 1;
        Some((s, end))
    }) {
        let mut fs = line.0;
        for (k, d) in memchr::memchr_iter(b'|', &text[line.0..line.1]).enumerate() {
            if k == col {
                out.push((fs, line.0 + d));
                break;
            }
            fs = line.0 + d + 1;
        }
    }
    out
}

/// A `StringArray` built as the loader builds it: offsets and bytes appended per field.
fn build_utf8(text: &[u8], fields: &[(usize, usize)]) -> StringArray {
    let bytes: usize = fields.iter().map(|(s, e)| e - s).sum();
    let mut offsets: Vec<i32> = Vec::with_capacity(fields.len() + 1);
    let mut data: Vec<u8> = Vec::with_capacity(bytes);
    offsets.push(0);
    for &(s, e) in fields {
        data.extend_from_slice(&text[s..e]);
        offsets.push(data.len() as i32);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: the benchmark's input is ASCII (TPC-H text), so every value is valid UTF-8.
    unsafe { StringArray::new_unchecked(offsets, Buffer::from_vec(data), None) }
}

/// A `StringViewArray` built the same way: a view per field, long strings into one buffer.
fn build_view(text: &[u8], fields: &[(usize, usize)]) -> StringViewArray {
    let long: usize = fields.iter().map(|(s, e)| e - s).filter(|&n| n > 12).sum();
    let mut views: Vec<u128> = Vec::with_capacity(fields.len());
    let mut data: Vec<u8> = Vec::with_capacity(long);
    for &(s, e) in fields {
        let v = &text[s..e];
        views.push(make_view(v, 0, data.len() as u32));
        if v.len() > 12 {
            data.extend_from_slice(v);
        }
    }
    let buffers = if data.is_empty() {
        vec![]
    } else {
        vec![Buffer::from_vec(data)]
    };
    // SAFETY: as above, valid UTF-8; views point into `buffers[0]` at the offsets written.
    unsafe { StringViewArray::new_unchecked(ScalarBuffer::from(views), buffers, None) }
}

fn main() {
    let path = std::env::var("WIRELOAD_BENCH_CSV")
        .unwrap_or_else(|_| "/dev/shm/wireload-tpch-sf0.1/lineitem.tbl".into());
    let text = std::fs::read(&path).unwrap_or_else(|_| {
        let mut t = String::new();
        for r in LineItemGenerator::new(0.1, 1, 1).iter() {
            writeln!(t, "{r}").unwrap();
        }
        t.into_bytes()
    });
    println!("input: {:.1} MB of lineitem", text.len() as f64 / 1e6);
    println!(
        "{:<16} {:>7} {:>6} | {:>11} {:>11} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9}",
        "column",
        "rows",
        "avg B",
        "MB Utf8",
        "MB View",
        "build U8",
        "build V",
        "eq U8",
        "eq V",
        "like U8",
        "like V",
        "sort U8",
        "sort V"
    );
    // l_returnflag, l_shipinstruct, l_shipmode, l_comment
    let cases = [
        (8, "l_returnflag", "R", "%R%"),
        (13, "l_shipinstruct", "DELIVER IN PERSON", "%PERSON%"),
        (14, "l_shipmode", "AIR", "%AIR%"),
        (15, "l_comment", "carefully regular", "%special%requests%"),
    ];
    for (col, name, constant, pattern) in cases {
        let fields = column(&text, col);
        let rows = fields.len();
        let avg = fields.iter().map(|(s, e)| e - s).sum::<usize>() as f64 / rows as f64;
        let utf8 = build_utf8(&text, &fields);
        let view = build_view(&text, &fields);
        assert_eq!(utf8.len(), view.len());
        for i in (0..rows).step_by(997) {
            assert_eq!(utf8.value(i), view.value(i));
        }
        let mb = |a: &dyn Array| a.get_array_memory_size() as f64 / 1e6;
        let b_u = ns_per_row(rows, || build_utf8(&text, &fields));
        let b_v = ns_per_row(rows, || build_view(&text, &fields));
        let u: ArrayRef = Arc::new(utf8);
        let v: ArrayRef = Arc::new(view);
        let cu = Scalar::new(StringArray::from(vec![constant]));
        let cv = Scalar::new(StringViewArray::from(vec![constant]));
        let pu = Scalar::new(StringArray::from(vec![pattern]));
        let pv = Scalar::new(StringViewArray::from(vec![pattern]));
        assert_eq!(
            eq(&u, &cu).unwrap().true_count(),
            eq(&v, &cv).unwrap().true_count()
        );
        assert_eq!(
            like(&u, &pu).unwrap().true_count(),
            like(&v, &pv).unwrap().true_count()
        );
        let e_u = ns_per_row(rows, || eq(&u, &cu).unwrap());
        let e_v = ns_per_row(rows, || eq(&v, &cv).unwrap());
        let l_u = ns_per_row(rows, || like(&u, &pu).unwrap());
        let l_v = ns_per_row(rows, || like(&v, &pv).unwrap());
        let s_u = ns_per_row(rows, || sort_to_indices(&u, None, None).unwrap());
        let s_v = ns_per_row(rows, || sort_to_indices(&v, None, None).unwrap());
        println!(
            "{name:<16} {rows:>7} {avg:>6.1} | {:>11.1} {:>11.1} | {b_u:>9.2} {b_v:>9.2} | {e_u:>9.2} {e_v:>9.2} | {l_u:>9.2} {l_v:>9.2} | {s_u:>9.1} {s_v:>9.1}",
            mb(u.as_ref()),
            mb(v.as_ref()),
        );
    }
}
