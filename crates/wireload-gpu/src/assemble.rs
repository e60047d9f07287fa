//! From a partition's buffers to an Arrow record batch: the fields the kernels left to the
//! host are parsed here with the CPU loader's parsers and patched in; strings are checked
//! (offsets, UTF-8) before they become an Arrow array.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array,
    Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::record_batch::RecordBatch;
use wireload_types::{SqlType, ValueError, deser};

use crate::buffers::{ColumnOut, PartitionBuffers};
use crate::layout::{Fallback, fallback, kind};
use crate::plan::{ColumnPlan, Plan};

/// Why a partition goes to the CPU loader instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuReason {
    /// The passes flagged an error: the CPU loader names it.
    Error,
    /// More fields were left to the host than the fallback list holds.
    Overflow,
    /// A field left to the host is invalid: the CPU loader names it.
    Invalid,
}

/// The text of a fallback entry (RANGE entries unescaped here), or None when its place
/// is not in the partition.
fn fallback_text<'a>(
    f: &'a Fallback,
    part: &'a [u8],
    quote: Option<u8>,
    scratch: &'a mut Vec<u8>,
) -> Option<&'a [u8]> {
    if f.kind == fallback::TEXT {
        return f.text.get(..f.len as usize);
    }
    let raw = part.get(f.start as usize..f.end as usize)?;
    match quote {
        Some(q) if raw.len() >= 2 && raw[0] == q && raw[raw.len() - 1] == q => {
            scratch.clear();
            let inner = &raw[1..raw.len() - 1];
            let mut i = 0;
            while i < inner.len() {
                scratch.push(inner[i]);
                i += if inner[i] == q { 2 } else { 1 };
            }
            Some(scratch.as_slice())
        }
        _ => Some(raw),
    }
}

/// Parses `text` for column `cp` and writes its value at `row` of `values`.
fn patch(
    cp: &ColumnPlan,
    values: &mut MutableBuffer,
    row: usize,
    text: &[u8],
) -> Result<(), ValueError> {
    let out = values.as_slice_mut();
    let mut put = |bytes: &[u8]| {
        let n = bytes.len();
        out[row * n..(row + 1) * n].copy_from_slice(bytes);
    };
    match cp.def.ty {
        SqlType::Boolean => {
            if deser::parse_bool(text)? {
                let w = row / 8;
                out[w] |= 1 << (row % 8);
            }
        }
        SqlType::SmallInt => put(&deser::parse_i16(text)?.to_le_bytes()),
        SqlType::Integer => put(&deser::parse_i32(text)?.to_le_bytes()),
        SqlType::BigInt => put(&deser::parse_i64(text)?.to_le_bytes()),
        SqlType::Real => put(&deser::parse_f32(text)?.to_le_bytes()),
        SqlType::Double => put(&deser::parse_f64(text)?.to_le_bytes()),
        SqlType::Decimal { precision, scale } => {
            put(&deser::parse_decimal(text, precision, scale)?.to_le_bytes())
        }
        SqlType::Date => put(&deser::parse_date(text)?.to_le_bytes()),
        SqlType::Timestamp => put(&deser::parse_timestamp(text)?.to_le_bytes()),
        SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text => {
            unreachable!("strings have no tape")
        }
    }
    Ok(())
}

/// The NULL buffer of `validity` (None when every row is valid).
fn nulls(validity: &[u32], rows: usize) -> Option<NullBuffer> {
    let set: usize = validity.iter().map(|w| w.count_ones() as usize).sum();
    if set == rows {
        return None;
    }
    let bits = BooleanBuffer::new(Buffer::from_slice_ref(validity), 0, rows);
    Some(NullBuffer::new(bits))
}

/// A string column rebuilt with the declared length applied to the rows in `long` (the
/// CPU loader's rule: excess characters must be spaces, which are dropped).
fn fix_lengths(
    cp: &ColumnPlan,
    col: &ColumnOut,
    rows: usize,
    long: &[usize],
) -> Result<ColumnOut, ValueError> {
    let n = match cp.def.ty {
        SqlType::Char(n) | SqlType::Varchar(Some(n)) => n,
        _ => unreachable!("only bounded strings have length fallbacks"),
    };
    let v = col.values.as_slice();
    let mut values = MutableBuffer::with_capacity(v.len());
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0u32);
    let mut k = 0;
    for r in 0..rows {
        let s = &v[col.offsets[r] as usize..col.offsets[r + 1] as usize];
        if k < long.len() && long[k] == r {
            k += 1;
            let t = match cp.def.ty {
                SqlType::Char(_) => deser::parse_char(s, n)?,
                _ => deser::parse_varchar(s, n)?,
            };
            values.extend_from_slice(t.as_bytes());
        } else {
            values.extend_from_slice(s);
        }
        offsets.push(values.len() as u32);
    }
    Ok(ColumnOut {
        values,
        validity: col.validity.clone(),
        offsets,
    })
}

/// A string array from the kernels' offsets and bytes, after checking them: offsets rise
/// within the bytes, every offset is at a character boundary, and the bytes are UTF-8.
fn string_array(col: ColumnOut, rows: usize) -> Option<ArrayRef> {
    let v = col.values.as_slice();
    let o = &col.offsets;
    if o.len() != rows + 1 || o[0] != 0 || o[rows] as usize != v.len() || o[rows] > i32::MAX as u32
    {
        return None;
    }
    if o.windows(2).any(|w| w[0] > w[1]) {
        return None;
    }
    // a valid whole, cut at character starts, is valid in every piece
    let boundary = |i: u32| (i as usize) == v.len() || (v[i as usize] & 0xC0) != 0x80;
    if !o.iter().all(|&i| boundary(i)) || simdutf8::basic::from_utf8(v).is_err() {
        return None;
    }
    let offsets: Vec<i32> = o.iter().map(|&x| x as i32).collect();
    let nulls = nulls(&col.validity, rows);
    let values: Buffer = col.values.into();
    // SAFETY: the offsets start at 0, never decrease and end at the byte length (checked
    // above, all below i32::MAX); the bytes are UTF-8 and every offset is at a character
    // start, so every value is UTF-8.
    let array = unsafe {
        StringArray::new_unchecked(
            OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
            values,
            nulls,
        )
    };
    Some(Arc::new(array))
}

/// The batch a partition's buffers hold, with the fallback fields parsed on the host;
/// `part` is the partition's input.
pub fn assemble(
    plan: &Plan,
    part: &[u8],
    mut b: PartitionBuffers,
) -> Result<RecordBatch, CpuReason> {
    if b.has_error() {
        return Err(CpuReason::Error);
    }
    if b.overflowed() {
        return Err(CpuReason::Overflow);
    }
    let rows = b.rows;
    let quote = plan.quote();
    let mut scratch = Vec::new();
    let mut long: Vec<Vec<usize>> = vec![Vec::new(); plan.ncols()];
    for f in &b.fallbacks {
        let c = f.col as usize;
        let cp = plan.columns.get(c).ok_or(CpuReason::Invalid)?;
        if f.row as usize >= rows {
            return Err(CpuReason::Invalid);
        }
        if f.kind == fallback::STRING {
            long[c].push(f.row as usize);
            continue;
        }
        if cp.kind == kind::STR {
            return Err(CpuReason::Invalid);
        }
        let text = fallback_text(f, part, quote, &mut scratch).ok_or(CpuReason::Invalid)?;
        patch(cp, &mut b.columns[c].values, f.row as usize, text)
            .map_err(|_| CpuReason::Invalid)?;
    }
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(plan.ncols());
    for (c, (cp, col)) in plan.columns.iter().zip(b.columns).enumerate() {
        let array: ArrayRef = if cp.kind == kind::STR {
            let col = if long[c].is_empty() {
                col
            } else {
                long[c].sort_unstable();
                fix_lengths(cp, &col, rows, &long[c]).map_err(|_| CpuReason::Invalid)?
            };
            string_array(col, rows).ok_or(CpuReason::Invalid)?
        } else {
            let nulls = nulls(&col.validity, rows);
            let values: Buffer = col.values.into();
            match cp.def.ty {
                SqlType::Boolean => Arc::new(BooleanArray::new(
                    BooleanBuffer::new(values, 0, rows),
                    nulls,
                )),
                SqlType::SmallInt => {
                    Arc::new(Int16Array::new(ScalarBuffer::new(values, 0, rows), nulls))
                }
                SqlType::Integer => {
                    Arc::new(Int32Array::new(ScalarBuffer::new(values, 0, rows), nulls))
                }
                SqlType::BigInt => {
                    Arc::new(Int64Array::new(ScalarBuffer::new(values, 0, rows), nulls))
                }
                SqlType::Real => {
                    Arc::new(Float32Array::new(ScalarBuffer::new(values, 0, rows), nulls))
                }
                SqlType::Double => {
                    Arc::new(Float64Array::new(ScalarBuffer::new(values, 0, rows), nulls))
                }
                SqlType::Decimal { precision, scale } => Arc::new(
                    Decimal128Array::new(ScalarBuffer::new(values, 0, rows), nulls)
                        .with_precision_and_scale(precision, scale as i8)
                        .map_err(|_| CpuReason::Invalid)?,
                ),
                SqlType::Date => {
                    Arc::new(Date32Array::new(ScalarBuffer::new(values, 0, rows), nulls))
                }
                SqlType::Timestamp => Arc::new(TimestampMicrosecondArray::new(
                    ScalarBuffer::new(values, 0, rows),
                    nulls,
                )),
                SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text => unreachable!(),
            }
        };
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::clone(&plan.arrow_schema), arrays).map_err(|_| CpuReason::Invalid)
}
