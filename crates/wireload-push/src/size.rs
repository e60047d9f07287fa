//! The `SL_S` decision of the Shared Loading paper for one fragment column: encode it on
//! the client when its estimated dictionary plus codes take fewer bytes than the plain
//! column. Distinct values come from a [`Hll`] sketch, so nothing is sorted to decide.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Int16Type, Int32Type, Int64Type,
    TimeUnit, TimestampMicrosecondType, ToByteSlice,
};

use crate::hll::Hll;

/// What a fragment column holds, as far as the decision needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnEstimate {
    /// Rows of the fragment.
    pub rows: usize,
    /// NULL rows.
    pub nulls: usize,
    /// Estimated distinct non-NULL values.
    pub distinct: f64,
    /// Bytes of one value for fixed-width types; None for text.
    pub width: Option<usize>,
    /// Bytes of the non-NULL values (text: their UTF-8 bytes; fixed width: rows x width).
    pub value_bytes: usize,
}

/// The estimate of `column`, or None for a type that is never dictionary-encoded (REAL,
/// DOUBLE, BOOLEAN) or not a column type of ours.
pub fn estimate(column: &dyn Array, precision: u8) -> Option<ColumnEstimate> {
    let mut hll = Hll::new(precision);
    let (width, value_bytes) = match column.data_type() {
        DataType::Int16 => fixed::<Int16Type>(column, &mut hll),
        DataType::Int32 => fixed::<Int32Type>(column, &mut hll),
        DataType::Int64 => fixed::<Int64Type>(column, &mut hll),
        DataType::Decimal128(..) => fixed::<Decimal128Type>(column, &mut hll),
        DataType::Date32 => fixed::<Date32Type>(column, &mut hll),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            fixed::<TimestampMicrosecondType>(column, &mut hll)
        }
        DataType::Utf8 => {
            let strings = column.as_string::<i32>();
            let mut bytes = 0;
            for s in strings.iter().flatten() {
                hll.insert(s.as_bytes());
                bytes += s.len();
            }
            (None, bytes)
        }
        _ => return None,
    };
    Some(ColumnEstimate {
        rows: column.len(),
        nulls: column.null_count(),
        distinct: hll.estimate(),
        width,
        value_bytes,
    })
}

/// Hashes the non-NULL values of a fixed-width column into `hll`: (width, value bytes).
fn fixed<T: ArrowPrimitiveType>(column: &dyn Array, hll: &mut Hll) -> (Option<usize>, usize) {
    let values = column.as_primitive::<T>();
    let width = std::mem::size_of::<T::Native>();
    let mut live = 0;
    for (i, v) in values.values().iter().enumerate() {
        if values.is_valid(i) {
            hll.insert(v.to_byte_slice());
            live += 1;
        }
    }
    (Some(width), live * width)
}

/// Bytes of the codes of one row for a dictionary of `entries` entries (1, 2 or 4).
pub fn code_width(entries: f64) -> usize {
    if entries <= 256.0 {
        1
    } else if entries <= 65_536.0 {
        2
    } else {
        4
    }
}

impl ColumnEstimate {
    /// Bytes of the plain column: values (text: plus 4-byte offsets) and, with NULLs, the
    /// validity bitmap.
    pub fn plain_bytes(&self) -> usize {
        let values = match self.width {
            Some(w) => self.rows * w,
            None => self.value_bytes + 4 * (self.rows + 1),
        };
        values + self.validity_bytes()
    }

    /// Estimated bytes of the column dictionary-encoded: the dictionary (its values, text
    /// with offsets) and the codes (with the validity bitmap).
    pub fn encoded_bytes(&self) -> usize {
        let distinct = self.distinct.max(1.0);
        let entries = distinct.ceil() as usize;
        let dictionary = match self.width {
            Some(w) => entries * w,
            None => {
                let live = (self.rows - self.nulls).max(1);
                let average = self.value_bytes as f64 / live as f64;
                (distinct * average).ceil() as usize + 4 * (entries + 1)
            }
        };
        dictionary + self.rows * code_width(distinct) + self.validity_bytes()
    }

    /// True when the dictionary plus codes are estimated smaller than the plain column.
    pub fn worth_encoding(&self) -> bool {
        self.rows > 0 && self.encoded_bytes() < self.plain_bytes()
    }

    fn validity_bytes(&self) -> usize {
        if self.nulls > 0 {
            self.rows.div_ceil(8)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Date32Array, Float64Array, Int64Array, StringArray};

    use super::*;
    use crate::hll::DEFAULT_PRECISION;

    fn of(a: ArrayRef) -> ColumnEstimate {
        estimate(a.as_ref(), DEFAULT_PRECISION).unwrap()
    }

    #[test]
    fn repeated_values_are_worth_encoding_unique_ones_are_not() {
        let flags: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..10_000).map(|i| ["A", "N", "R"][i % 3]),
        ));
        let e = of(flags);
        assert!((e.distinct - 3.0).abs() < 0.5, "{e:?}");
        assert!(e.worth_encoding(), "{e:?}");
        assert!(e.encoded_bytes() < e.plain_bytes() / 4);

        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10_000));
        let e = of(keys);
        assert!((e.distinct / 10_000.0 - 1.0).abs() < 0.06, "{e:?}");
        assert!(!e.worth_encoding(), "{e:?}");

        let comments: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..10_000).map(|i| format!("a comment that is unique, number {i}")),
        ));
        assert!(!of(comments).worth_encoding());
    }

    #[test]
    fn dates_with_nulls() {
        let days: ArrayRef = Arc::new(Date32Array::from_iter(
            (0..20_000).map(|i| (i % 7 != 0).then_some(10_000 + (i % 2_500))),
        ));
        let e = of(days);
        assert_eq!(e.nulls, 2_858);
        assert_eq!(e.value_bytes, (20_000 - 2_858) * 4);
        assert!((e.distinct / 2_500.0 - 1.0).abs() < 0.06, "{e:?}");
        // 2-byte codes and a 10 KB dictionary against 4-byte values
        assert!(e.worth_encoding(), "{e:?}");
    }

    #[test]
    fn floats_are_never_encoded() {
        let f: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 1.0]));
        assert!(estimate(f.as_ref(), DEFAULT_PRECISION).is_none());
    }

    #[test]
    fn code_widths() {
        assert_eq!(code_width(1.0), 1);
        assert_eq!(code_width(256.0), 1);
        assert_eq!(code_width(257.0), 2);
        assert_eq!(code_width(65_536.0), 2);
        assert_eq!(code_width(70_000.0), 4);
    }
}
