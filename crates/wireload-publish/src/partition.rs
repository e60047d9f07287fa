//! Hash partitioning: which partition a row belongs to, from its typed key value.

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, TimeUnit, TimestampMicrosecondType,
};
use arrow::record_batch::RecordBatch;
use wireload_storage::Partitioning;

/// Mixes a 64-bit value into a well-spread hash.
#[inline(always)]
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Hash of a byte string (FNV-1a, then mixed).
#[inline(always)]
fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &c in b {
        h = (h ^ c as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

/// Maps a hash onto `0..n` without division bias worth caring about.
#[inline(always)]
fn bucket(h: u64, n: usize) -> u32 {
    ((h as u128 * n as u128) >> 64) as u32
}

/// Writes the partition of every row of `key` into `out` (NULL keys go to partition 0).
/// Equal values always land in the same partition, whatever their text was.
pub fn partition_ids(key: &ArrayRef, n: usize, out: &mut Vec<u32>) {
    out.clear();
    out.reserve(key.len());
    macro_rules! prim {
        ($t:ty, $conv:expr) => {{
            let a = key.as_primitive::<$t>();
            for i in 0..a.len() {
                out.push(if a.is_null(i) {
                    0
                } else {
                    bucket(mix($conv(a.value(i))), n)
                });
            }
        }};
    }
    match key.data_type() {
        DataType::Int16 => prim!(Int16Type, |v: i16| v as i64 as u64),
        DataType::Int32 => prim!(Int32Type, |v: i32| v as i64 as u64),
        DataType::Int64 => prim!(Int64Type, |v: i64| v as u64),
        DataType::Date32 => prim!(Date32Type, |v: i32| v as i64 as u64),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            prim!(TimestampMicrosecondType, |v: i64| v as u64)
        }
        DataType::Decimal128(_, _) => prim!(Decimal128Type, |v: i128| (v as u64)
            ^ ((v >> 64) as u64).rotate_left(17)),
        DataType::Float32 => prim!(Float32Type, |v: f32| canonical_f64(v as f64)),
        DataType::Float64 => prim!(Float64Type, canonical_f64),
        DataType::Boolean => {
            let a = key.as_boolean();
            for i in 0..a.len() {
                out.push(if a.is_null(i) {
                    0
                } else {
                    bucket(mix(a.value(i) as u64), n)
                });
            }
        }
        DataType::Utf8 => {
            let a = key.as_string::<i32>();
            for i in 0..a.len() {
                out.push(if a.is_null(i) {
                    0
                } else {
                    bucket(hash_bytes(a.value(i).as_bytes()), n)
                });
            }
        }
        other => unreachable!("no partitioning for {other}"),
    }
}

/// Bits of a float with -0.0 and NaN made canonical, so equal values hash equally.
fn canonical_f64(v: f64) -> u64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

/// `batch` split into the table's partitions (rows of each in batch order); with
/// `track`, also the batch row of every partition row (None for a single partition, where
/// they are the same).
#[allow(clippy::type_complexity)]
pub(crate) fn split_partitions(
    batch: &RecordBatch,
    partitioning: Partitioning,
    track: bool,
) -> Result<(Vec<RecordBatch>, Option<Vec<Vec<u32>>>), arrow::error::ArrowError> {
    let Partitioning::Hash { column, count } = partitioning else {
        return Ok((vec![batch.clone()], None));
    };
    let mut ids = Vec::new();
    partition_ids(batch.column(column), count, &mut ids);
    // counting sort of row indices by partition
    let mut starts = vec![0u32; count + 1];
    for &p in &ids {
        starts[p as usize + 1] += 1;
    }
    for p in 0..count {
        starts[p + 1] += starts[p];
    }
    let mut order = vec![0u32; ids.len()];
    let mut next = starts.clone();
    for (row, &p) in ids.iter().enumerate() {
        order[next[p as usize] as usize] = row as u32;
        next[p as usize] += 1;
    }
    let taken = track.then(|| {
        (0..count)
            .map(|p| order[starts[p] as usize..starts[p + 1] as usize].to_vec())
            .collect()
    });
    let order = UInt32Array::from(order);
    let parts = (0..count)
        .map(|p| {
            let (a, b) = (starts[p] as usize, starts[p + 1] as usize);
            take_record_batch(batch, &order.slice(a, b - a))
        })
        .collect::<Result<_, _>>()?;
    Ok((parts, taken))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, StringArray};

    use super::*;

    #[test]
    fn equal_values_share_a_partition_across_widths_and_spread_evenly() {
        let a: ArrayRef = Arc::new(Int32Array::from_iter_values(0..10_000));
        let b: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10_000));
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        partition_ids(&a, 8, &mut pa);
        partition_ids(&b, 8, &mut pb);
        assert_eq!(pa, pb);
        let mut counts = [0usize; 8];
        for p in pa {
            counts[p as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 1000 && c < 1500), "{counts:?}");
    }

    #[test]
    fn null_keys_go_to_partition_zero() {
        let a: ArrayRef = Arc::new(StringArray::from(vec![None, Some("x"), None]));
        let mut p = Vec::new();
        partition_ids(&a, 4, &mut p);
        assert_eq!((p[0], p[2]), (0, 0));
    }
}
