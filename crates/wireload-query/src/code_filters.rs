//! Filters evaluated on dictionary codes: because a partition's dictionary is sorted, the
//! rows satisfying `col < v`, `col BETWEEN a AND b` or `col = v` are the rows whose code lies
//! in one range, and `col IN (...)` a set of codes. The constant is translated to codes once
//! per dictionary run (a binary search in its dictionary); the scan then tests each row's
//! code and drops the other rows before anything is decoded. A chunk whose dictionary holds
//! no matching value is not read at all.
//!
//! ```text
//!   dictionary:  [AIR, FOB, MAIL, RAIL, SHIP, TRUCK]     (codes 0..6)
//!   col >= 'MAIL' AND col < 'SHIP'      ->  codes 2..4
//!   col IN ('AIR', 'RAIL')              ->  codes {0, 3}
//!   col = 'BOAT'                        ->  no code: the partition is skipped
//! ```
//!
//! The provider reports these filters `Inexact`: DataFusion filters the rows again, so a
//! test the scan cannot make (a plain chunk, a constant it cannot translate) only costs
//! time. A NULL code never passes (a comparison with NULL is not true).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use arrow::array::{Array, ArrayData, ArrayRef, AsArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{
    ArrowDictionaryKeyType, DataType, Schema, UInt8Type, UInt16Type, UInt32Type,
};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Expr;
use wireload_storage::dictionary::lower_bound;
use wireload_storage::{StoredAs, TableVersion, coded_against};

use crate::index::{Constraint, constrained_columns, constraints};

/// The codes of one dictionary that satisfy a constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodeSet {
    /// Codes `lo..hi` (empty when `lo >= hi`).
    Range(u32, u32),
    /// The codes whose entry is true (as many as the dictionary has entries).
    Set(BooleanBuffer),
}

impl CodeSet {
    /// True when no code satisfies it.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            CodeSet::Range(lo, hi) => lo >= hi,
            CodeSet::Set(bits) => bits.count_set_bits() == 0,
        }
    }

    /// The codes of `dictionary` satisfying `constraint`, or None when the constraint's
    /// values do not compare with the dictionary's.
    pub(crate) fn of(dictionary: &ArrayRef, constraint: &Constraint) -> Option<CodeSet> {
        let entries = u32::try_from(dictionary.len()).ok()?;
        let position = |v: &ScalarValue| -> Option<(u32, bool)> {
            let (at, exact) = lower_bound(dictionary, &v.to_array().ok()?).ok()?;
            Some((u32::try_from(at).ok()?, exact))
        };
        match constraint {
            Constraint::Range(lo, hi) => {
                let lo = match lo {
                    Bound::Unbounded => 0,
                    Bound::Included(v) => position(v)?.0,
                    Bound::Excluded(v) => {
                        let (at, exact) = position(v)?;
                        at + u32::from(exact)
                    }
                };
                let hi = match hi {
                    Bound::Unbounded => entries,
                    Bound::Included(v) => {
                        let (at, exact) = position(v)?;
                        at + u32::from(exact)
                    }
                    Bound::Excluded(v) => position(v)?.0,
                };
                Some(CodeSet::Range(lo, hi.max(lo)))
            }
            Constraint::In(values) => {
                let mut codes = Vec::with_capacity(values.len());
                for v in values {
                    let (at, exact) = position(v)?;
                    if exact {
                        codes.push(at);
                    }
                }
                codes.sort_unstable();
                codes.dedup();
                Some(match (codes.first(), codes.last()) {
                    (None, _) | (_, None) => CodeSet::Range(0, 0),
                    (Some(&lo), Some(&hi)) if (hi - lo) as usize + 1 == codes.len() => {
                        CodeSet::Range(lo, hi + 1)
                    }
                    _ => {
                        let mut bits = vec![false; entries as usize];
                        for c in codes {
                            bits[c as usize] = true;
                        }
                        CodeSet::Set(BooleanBuffer::from(bits))
                    }
                })
            }
        }
    }

    /// For each row of `column` (a dictionary array), whether its code is in the set (a NULL
    /// never is); None when `column` is not a dictionary array.
    pub(crate) fn test(&self, column: &dyn Array) -> Option<BooleanBuffer> {
        let DataType::Dictionary(key, _) = column.data_type() else {
            return None;
        };
        match key.as_ref() {
            DataType::UInt8 => Some(self.test_keys::<UInt8Type>(column)),
            DataType::UInt16 => Some(self.test_keys::<UInt16Type>(column)),
            DataType::UInt32 => Some(self.test_keys::<UInt32Type>(column)),
            _ => None,
        }
    }

    fn test_keys<K>(&self, column: &dyn Array) -> BooleanBuffer
    where
        K: ArrowDictionaryKeyType,
        K::Native: Into<u32>,
    {
        let keys = column.as_dictionary::<K>().keys();
        let codes = keys.values();
        let found = match self {
            CodeSet::Range(lo, hi) => {
                // one unsigned comparison per row: codes below `lo` wrap to large numbers
                let (lo, width) = (*lo, hi.saturating_sub(*lo));
                BooleanBuffer::collect_bool(codes.len(), |i| {
                    codes[i].into().wrapping_sub(lo) < width
                })
            }
            CodeSet::Set(bits) => BooleanBuffer::collect_bool(codes.len(), |i| {
                let c = codes[i].into() as usize;
                c < bits.len() && bits.value(c)
            }),
        };
        match keys.nulls() {
            Some(nulls) => &found & nulls.inner(),
            None => found,
        }
    }
}

/// The code tests of one chunk: (column, codes), all of which a row must pass.
pub(crate) type ChunkTests = Vec<(usize, CodeSet)>;

/// For each filter, true when it constrains a column `version` stores in dictionaries (the
/// scan can test it on codes).
pub(crate) fn pushdown(schema: &Schema, version: &TableVersion, filters: &[&Expr]) -> Vec<bool> {
    filters
        .iter()
        .map(|f| {
            constrained_columns(f, schema)
                .into_iter()
                .any(|c| version.stored_as.get(c) == Some(&StoredAs::Dictionary))
        })
        .collect()
}

/// The code tests `filters` give each chunk of each partition of `version` (`schema`: the
/// table's value types), against the dictionary the chunk's column is coded with: the
/// chunks of one dictionary run share their tests. A chunk whose column is plain gets no
/// test of it.
pub(crate) fn plan(
    schema: &Schema,
    version: &TableVersion,
    filters: &[Expr],
) -> Vec<Vec<Arc<ChunkTests>>> {
    let cons: BTreeMap<usize, Constraint> = constraints(filters, schema)
        .into_iter()
        .filter(|(c, _)| version.stored_as.get(*c) == Some(&StoredAs::Dictionary))
        .collect();
    version
        .partitions
        .iter()
        .map(|p| {
            // the dictionaries of the run before and its tests
            let mut run: Option<(Vec<Option<ArrayData>>, Arc<ChunkTests>)> = None;
            p.chunks
                .iter()
                .map(|chunk| {
                    let data: Vec<Option<ArrayData>> = cons
                        .keys()
                        .map(|&c| coded_against(chunk.column(c)))
                        .collect();
                    if let Some((before, tests)) = &run
                        && same_dictionaries(before, &data)
                    {
                        return Arc::clone(tests);
                    }
                    let tests: ChunkTests = cons
                        .iter()
                        .filter_map(|(&c, constraint)| {
                            let dictionary = chunk.column(c).as_any_dictionary_opt()?.values();
                            Some((c, CodeSet::of(dictionary, constraint)?))
                        })
                        .collect();
                    let tests = Arc::new(tests);
                    run = Some((data, Arc::clone(&tests)));
                    tests
                })
                .collect()
        })
        .collect()
}

/// True when `now` are the same dictionaries (the same buffers) as `before`.
fn same_dictionaries(before: &[Option<ArrayData>], now: &[Option<ArrayData>]) -> bool {
    before.iter().zip(now).all(|(b, n)| match (b, n) {
        (Some(b), Some(n)) => b.ptr_eq(n),
        (None, None) => true,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{DictionaryArray, Int64Array, StringArray, UInt8Array, UInt16Array};

    use super::*;

    fn dict() -> ArrayRef {
        Arc::new(StringArray::from(vec![
            "AIR", "FOB", "MAIL", "RAIL", "SHIP", "TRUCK",
        ]))
    }

    fn s(v: &str) -> ScalarValue {
        ScalarValue::Utf8(Some(v.into()))
    }

    fn range(lo: Bound<ScalarValue>, hi: Bound<ScalarValue>) -> Option<CodeSet> {
        CodeSet::of(&dict(), &Constraint::Range(lo, hi))
    }

    #[test]
    fn ranges_become_code_ranges() {
        use Bound::*;
        assert_eq!(
            range(Included(s("MAIL")), Excluded(s("SHIP"))),
            Some(CodeSet::Range(2, 4))
        );
        assert_eq!(
            range(Excluded(s("MAIL")), Included(s("SHIP"))),
            Some(CodeSet::Range(3, 5))
        );
        // constants between and outside the entries
        assert_eq!(
            range(Included(s("B")), Unbounded),
            Some(CodeSet::Range(1, 6))
        );
        assert_eq!(
            range(Unbounded, Excluded(s("A"))),
            Some(CodeSet::Range(0, 0))
        );
        assert_eq!(
            range(Excluded(s("Z")), Unbounded),
            Some(CodeSet::Range(6, 6))
        );
        assert_eq!(
            range(Included(s("T")), Included(s("B"))),
            Some(CodeSet::Range(5, 5))
        );
        // a constant of another type does not translate
        assert_eq!(
            range(Included(ScalarValue::Int64(Some(1))), Unbounded),
            None
        );
    }

    #[test]
    fn lists_become_ranges_or_sets() {
        let of =
            |v: &[&str]| CodeSet::of(&dict(), &Constraint::In(v.iter().map(|x| s(x)).collect()));
        assert_eq!(of(&["FOB", "MAIL"]), Some(CodeSet::Range(1, 3)));
        assert_eq!(of(&["BOAT"]), Some(CodeSet::Range(0, 0)));
        assert!(of(&["BOAT"]).unwrap().is_empty());
        assert_eq!(
            of(&["AIR", "RAIL", "ZEPPELIN"]),
            Some(CodeSet::Set(BooleanBuffer::from(vec![
                true, false, false, true, false, false
            ])))
        );
    }

    #[test]
    fn tests_codes_of_every_width_and_skips_nulls() {
        let values = dict();
        let narrow = DictionaryArray::new(
            UInt8Array::from(vec![Some(0), Some(2), None, Some(3), Some(5)]),
            Arc::clone(&values),
        );
        let wide = DictionaryArray::new(
            UInt16Array::from(vec![Some(0), Some(2), None, Some(3), Some(5)]),
            Arc::clone(&values),
        );
        let expect = |set: CodeSet, want: &[bool]| {
            for column in [&narrow as &dyn Array, &wide] {
                let got: Vec<bool> = set.test(column).unwrap().iter().collect();
                assert_eq!(got, want, "{set:?} on {}", column.data_type());
            }
        };
        expect(CodeSet::Range(2, 4), &[false, true, false, true, false]);
        expect(CodeSet::Range(0, 6), &[true, true, false, true, true]);
        expect(CodeSet::Range(3, 3), &[false; 5]);
        expect(
            CodeSet::Set(BooleanBuffer::from(vec![
                true, false, false, false, false, true,
            ])),
            &[true, false, false, false, true],
        );
        // a plain column cannot be tested on codes
        assert!(
            CodeSet::Range(0, 1)
                .test(&Int64Array::from(vec![1]))
                .is_none()
        );
    }

    #[test]
    fn each_dictionary_run_gets_tests_against_its_own_dictionary() {
        use arrow::datatypes::Field;
        use arrow::record_batch::RecordBatch;
        use datafusion::prelude::{col, lit};
        use wireload_storage::Partition;

        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
        let coded = |values: &ArrayRef, codes: Vec<u8>| {
            let column = DictionaryArray::new(UInt8Array::from(codes), Arc::clone(values));
            RecordBatch::try_from_iter([("s", Arc::new(column) as ArrayRef)]).unwrap()
        };
        // a sealed run of two chunks, then an open run of one
        let (first, second): (ArrayRef, ArrayRef) =
            (dict(), Arc::new(StringArray::from(vec!["RAIL", "SHIP"])));
        let plain = RecordBatch::try_from_iter([(
            "s",
            Arc::new(StringArray::from(vec!["MAIL"])) as ArrayRef,
        )])
        .unwrap();
        let chunks = vec![
            coded(&first, vec![2, 0]),
            coded(&first, vec![1]),
            coded(&second, vec![0, 1]),
            plain,
        ];
        let mut version = TableVersion::empty(1, Arc::clone(&schema));
        version.stored_as = vec![StoredAs::Dictionary];
        version.partitions[0] = Partition::new(chunks);
        let tests = plan(&schema, &version, &[col("s").eq(lit("MAIL"))]);
        let t = &tests[0];
        assert_eq!(t.len(), 4);
        assert_eq!(*t[0], vec![(0, CodeSet::Range(2, 3))]);
        assert!(Arc::ptr_eq(&t[0], &t[1]), "one run, one plan");
        // no MAIL in the second run's dictionary: no code passes
        assert!(t[2][0].1.is_empty());
        // a plain chunk gets no test
        assert!(t[3].is_empty());
    }
}
