//! Index-backed scans: which filters an index of a table snapshot can answer, the plan that
//! answers them, and [`IndexScanExec`], which gathers the matching rows of the snapshot.
//!
//! A filter is read as *constraints* on table columns, each in the column's own type:
//! `In(values)` (`=`, `IN`, `OR` of equalities; no value: no row matches) or
//! `Range(lo, hi)` (`<`, `<=`, `>`, `>=`, `BETWEEN`). Conjunctions add constraints, and the
//! constraints on one column are intersected. An index with key columns `k0, k1, ...` then
//! answers:
//!
//! ```text
//!   k0 = v0 AND k1 = v1 AND ... (every key column)  point lookups       any index
//!   k0 = v0 AND ... AND ki = vi (leading columns)   prefix scans        ART
//!   k0 = v0 AND ... AND ki IN/>/</BETWEEN ...       range per prefix    ART
//!   any key column constrained to no value          nothing to read     any index
//! ```
//!
//! `IN` lists on several columns expand to the cartesian product of their values. Because
//! the provider reports every such filter `Inexact`, DataFusion keeps its `FilterExec` above
//! the scan: the rows gathered here only have to be a superset. They are exact anyway for
//! the constraints the plan uses.
//!
//! Literals are converted to the column's type before they are encoded as keys. The
//! conversion never widens what matches into wrong rows: a comparison with a value the
//! column cannot hold (`int_col = 3.5`, `int_col < 1e12`) becomes the equivalent
//! comparison with a value it can hold (`int_col <= 3`, no bound at all) or matches
//! nothing; a comparison whose conversion cannot be made exact is not pushed down.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use arrow::array::{Array, ArrayRef, new_null_array};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use wireload_storage::{IndexDef, RowId, TableDef, TableIndex, TableVersion};

/// At most this many keys (the product of the `IN` list sizes) are looked up for one scan;
/// the equality prefix stops before the column that would pass it.
const MAX_KEYS: usize = 10_000;

/// A comparison of a column with a literal, the column on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn of(op: Operator) -> Option<Self> {
        Some(match op {
            Operator::Eq => Cmp::Eq,
            Operator::Lt => Cmp::Lt,
            Operator::LtEq => Cmp::Le,
            Operator::Gt => Cmp::Gt,
            Operator::GtEq => Cmp::Ge,
            _ => return None,
        })
    }

    /// The comparison with its sides swapped: `5 < a` is `a > 5`.
    fn flip(self) -> Self {
        match self {
            Cmp::Eq => Cmp::Eq,
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
        }
    }
}

/// What filters say about the values of one column, in the column's type. NULL never
/// satisfies a constraint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Constraint {
    /// The column equals one of these values (distinct, ascending); none: no row matches.
    In(Vec<ScalarValue>),
    /// The column lies between the bounds.
    Range(Bound<ScalarValue>, Bound<ScalarValue>),
}

impl Constraint {
    fn nothing() -> Self {
        Constraint::In(Vec::new())
    }

    fn one(v: ScalarValue) -> Self {
        Constraint::In(vec![v])
    }

    fn compare(cmp: Cmp, v: ScalarValue) -> Self {
        use Bound::*;
        match cmp {
            Cmp::Eq => Constraint::one(v),
            Cmp::Lt => Constraint::Range(Unbounded, Excluded(v)),
            Cmp::Le => Constraint::Range(Unbounded, Included(v)),
            Cmp::Gt => Constraint::Range(Excluded(v), Unbounded),
            Cmp::Ge => Constraint::Range(Included(v), Unbounded),
        }
    }

    /// Values distinct and ascending.
    fn values(mut v: Vec<ScalarValue>) -> Self {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v.dedup();
        Constraint::In(v)
    }

    /// True for a range without bounds (any non-NULL value): nothing an index can use.
    fn is_everything(&self) -> bool {
        matches!(self, Constraint::Range(Bound::Unbounded, Bound::Unbounded))
    }

    /// The values satisfying both. Where two values do not compare, keeps a superset.
    fn and(self, other: Constraint) -> Constraint {
        use Constraint::*;
        match (self, other) {
            (In(a), In(b)) => In(a.into_iter().filter(|v| b.contains(v)).collect()),
            (In(a), Range(lo, hi)) | (Range(lo, hi), In(a)) => In(a
                .into_iter()
                .filter(|v| above(v, &lo) && below(v, &hi))
                .collect()),
            (Range(lo1, hi1), Range(lo2, hi2)) => {
                let lo = tighter(lo1, lo2, std::cmp::Ordering::Greater);
                let hi = tighter(hi1, hi2, std::cmp::Ordering::Less);
                match (&lo, &hi) {
                    (Bound::Included(l), Bound::Included(h)) if l == h => {
                        Constraint::one(l.clone())
                    }
                    (
                        Bound::Included(l) | Bound::Excluded(l),
                        Bound::Included(h) | Bound::Excluded(h),
                    ) if l.partial_cmp(h).is_some_and(|o| o.is_ge()) => Constraint::nothing(),
                    _ => Range(lo, hi),
                }
            }
        }
    }

    /// The values satisfying either, when both are value lists.
    fn or(self, other: Constraint) -> Option<Constraint> {
        match (self, other) {
            (Constraint::In(mut a), Constraint::In(b)) => {
                a.extend(b);
                Some(Constraint::values(a))
            }
            _ => None,
        }
    }
}

/// True when `v` satisfies the lower bound `lo` (or does not compare with it).
fn above(v: &ScalarValue, lo: &Bound<ScalarValue>) -> bool {
    match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => v.partial_cmp(l).is_none_or(|o| o.is_ge()),
        Bound::Excluded(l) => v.partial_cmp(l).is_none_or(|o| o.is_gt()),
    }
}

/// True when `v` satisfies the upper bound `hi` (or does not compare with it).
fn below(v: &ScalarValue, hi: &Bound<ScalarValue>) -> bool {
    match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => v.partial_cmp(h).is_none_or(|o| o.is_le()),
        Bound::Excluded(h) => v.partial_cmp(h).is_none_or(|o| o.is_lt()),
    }
}

/// Of two bounds on the same side, the one admitting fewer values: the one further in
/// direction `toward` (Greater for lower bounds), the exclusive one on a tie.
fn tighter(
    a: Bound<ScalarValue>,
    b: Bound<ScalarValue>,
    toward: std::cmp::Ordering,
) -> Bound<ScalarValue> {
    use Bound::*;
    let (va, vb) = match (&a, &b) {
        (Unbounded, _) => return b,
        (_, Unbounded) => return a,
        (Included(x) | Excluded(x), Included(y) | Excluded(y)) => (x, y),
    };
    match va.partial_cmp(vb) {
        Some(o) if o == toward => a,
        Some(std::cmp::Ordering::Equal) => match a {
            Excluded(_) => a,
            _ => b,
        },
        Some(_) => b,
        // either one is a superset of the intersection
        None => a,
    }
}

/// One constraint on one table column.
#[derive(Debug, Clone, PartialEq)]
struct Atom {
    column: usize,
    constraint: Constraint,
}

/// The constraints of a filter, one per conjunct that is a comparison of a key-able column
/// with literals; conjuncts of other shapes are left out (the rest still holds).
fn atoms(expr: &Expr, schema: &Schema, out: &mut Vec<Atom>) {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            atoms(left, schema, out);
            atoms(right, schema, out);
        }
        _ => out.extend(atom(expr, schema)),
    }
}

/// The constraint `expr` places on one column, when it is exactly one.
fn atom(expr: &Expr, schema: &Schema) -> Option<Atom> {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let (a, b) = (atom(left, schema)?, atom(right, schema)?);
            if a.column != b.column {
                return None;
            }
            Some(Atom {
                column: a.column,
                constraint: a.constraint.or(b.constraint)?,
            })
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let cmp = Cmp::of(*op)?;
            let (column, ty, lit, cmp) = match column_of(left, schema) {
                Some((c, ty)) => (c, ty, literal_of(right)?, cmp),
                None => {
                    let (c, ty) = column_of(right, schema)?;
                    (c, ty, literal_of(left)?, cmp.flip())
                }
            };
            let constraint = convert(schema.field(column).data_type(), &ty, lit, cmp)?;
            Some(Atom { column, constraint })
        }
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let (column, ty) = column_of(expr, schema)?;
            let col_ty = schema.field(column).data_type();
            let mut values = Vec::with_capacity(list.len());
            for item in list {
                match convert(col_ty, &ty, literal_of(item)?, Cmp::Eq)? {
                    Constraint::In(v) => values.extend(v),
                    Constraint::Range(..) => return None,
                }
            }
            Some(Atom {
                column,
                constraint: Constraint::values(values),
            })
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let (column, ty) = column_of(expr, schema)?;
            let col_ty = schema.field(column).data_type();
            let lo = convert(col_ty, &ty, literal_of(low)?, Cmp::Ge)?;
            let hi = convert(col_ty, &ty, literal_of(high)?, Cmp::Le)?;
            Some(Atom {
                column,
                constraint: lo.and(hi),
            })
        }
        _ => None,
    }
}

/// The table column `expr` reads, seen through lossless casts, and the type of `expr`.
fn column_of(expr: &Expr, schema: &Schema) -> Option<(usize, DataType)> {
    let (inner, to) = match expr {
        Expr::Column(c) => {
            let i = schema.index_of(&c.name).ok()?;
            return Some((i, schema.field(i).data_type().clone()));
        }
        Expr::Cast(c) => (&c.expr, c.field.data_type()),
        Expr::TryCast(c) => (&c.expr, c.field.data_type()),
        _ => return None,
    };
    let (i, from) = column_of(inner, schema)?;
    lossless(&from, to).then(|| (i, to.clone()))
}

/// The value of a literal, possibly cast (a dictionary literal's value: comparing a
/// dictionary column compares its values).
fn literal_of(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(ScalarValue::Dictionary(_, v), _) => Some(v.as_ref().clone()),
        Expr::Literal(v, _) => Some(v.clone()),
        Expr::Cast(c) => literal_of(&c.expr)?.cast_to(c.field.data_type()).ok(),
        Expr::TryCast(c) => literal_of(&c.expr)?.cast_to(c.field.data_type()).ok(),
        _ => None,
    }
}

/// True when a column of type `t` can be looked up in an index. Floating-point columns
/// cannot: SQL equality of floats (`-0.0 = 0.0`) is not equality of encoded keys.
fn keyable(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Decimal128(..)
            | Date32
            | Date64
            | Timestamp(..)
            | Utf8
            | LargeUtf8
            | Utf8View
    )
}

/// The smallest and largest value of an integer type, or (in units of the scale) of a
/// decimal type.
fn range_of(t: &DataType) -> Option<(i128, i128)> {
    use DataType::*;
    Some(match t {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt8 => (0, u8::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        UInt64 => (0, u64::MAX.into()),
        Decimal128(p, s) if *s >= 0 => {
            let m = pow10(i32::from(*p))?;
            (1 - m, m - 1)
        }
        _ => return None,
    })
}

/// The scale of an integer (0) or decimal type: a value `v` of the type is `v / 10^scale`.
fn scale_of(t: &DataType) -> Option<i8> {
    match t {
        DataType::Decimal128(_, s) if *s >= 0 => Some(*s),
        t if t.is_integer() => Some(0),
        _ => None,
    }
}

fn pow10(e: i32) -> Option<i128> {
    10i128.checked_pow(u32::try_from(e).ok()?)
}

/// True when casting `from` to `to` maps distinct values to distinct values and keeps their
/// order, so that comparing the cast column is comparing the column.
fn lossless(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if from == to {
        return true;
    }
    let strings = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    match (from, to) {
        (a, b) if strings(a) && strings(b) => true,
        (Date32, Date64) => true,
        (Float32, Float64) => true,
        (a, Float64) if a.is_integer() => {
            range_of(a).is_some_and(|(lo, hi)| lo >= -(1 << 53) && hi <= 1 << 53)
        }
        (a, Float32) if a.is_integer() => {
            range_of(a).is_some_and(|(lo, hi)| lo >= -(1 << 24) && hi <= 1 << 24)
        }
        (a, b) if a.is_integer() && (b.is_integer() || matches!(b, Decimal128(..))) => {
            match (range_of(a), range_of(b), scale_of(b)) {
                (Some((lo, hi)), Some((blo, bhi)), Some(s)) => pow10(i32::from(s))
                    .and_then(|m| Some((lo.checked_mul(m)?, hi.checked_mul(m)?)))
                    .is_some_and(|(lo, hi)| lo >= blo && hi <= bhi),
                _ => false,
            }
        }
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            *s1 >= 0
                && s2 >= s1
                && i32::from(*p2) - i32::from(*s2) >= i32::from(*p1) - i32::from(*s1)
        }
        _ => false,
    }
}

/// `column cmp lit` as a constraint on a column of type `col_ty`, where the comparison is
/// made in type `ty` (the column cast losslessly to `ty`, or `col_ty` itself). None when it
/// cannot be converted exactly.
fn convert(col_ty: &DataType, ty: &DataType, lit: ScalarValue, cmp: Cmp) -> Option<Constraint> {
    if !keyable(col_ty) || lit.data_type() != *ty {
        return None;
    }
    if lit.is_null() {
        // a comparison with NULL is never true
        return Some(Constraint::nothing());
    }
    if let (Some(scale), Some((min, max))) = (scale_of(col_ty), range_of(col_ty)) {
        // integers and decimals: inclusive bounds, so that `a > 5 AND a < 6` is seen empty
        return convert_scaled(col_ty, scale, (min, max), &lit, cmp);
    }
    if col_ty == ty {
        return Some(Constraint::compare(cmp, lit));
    }
    // other lossless casts (strings, dates): the literal must round-trip
    let exact = (|| {
        let cast = cast_with_options(
            &lit.to_array().ok()?,
            col_ty,
            &CastOptions {
                safe: true,
                ..Default::default()
            },
        )
        .ok()?;
        if cast.is_null(0) {
            return None;
        }
        let v = ScalarValue::try_from_array(&cast, 0).ok()?;
        (v.cast_to(ty).ok()? == lit).then_some(v)
    })();
    match (exact, cmp) {
        (Some(v), _) => Some(Constraint::compare(cmp, v)),
        // the cast is injective: a value it does not produce equals no cast column value
        (None, Cmp::Eq) => Some(Constraint::nothing()),
        (None, _) => None,
    }
}

/// [`convert`] for an integer or decimal column: the literal is scaled to the column's
/// units, rounded in the direction that keeps the comparison equivalent, and clamped to the
/// column's range.
fn convert_scaled(
    col_ty: &DataType,
    scale: i8,
    (min, max): (i128, i128),
    lit: &ScalarValue,
    cmp: Cmp,
) -> Option<Constraint> {
    let (floor, ceil) = scaled(lit, scale)?;
    let value = |v: i128| scalar_of(col_ty, v);
    // inclusive bounds, in the column's units
    let (lo, hi) = match cmp {
        Cmp::Eq => {
            return Some(if floor == ceil && (min..=max).contains(&floor) {
                Constraint::one(value(floor)?)
            } else {
                Constraint::nothing()
            });
        }
        Cmp::Lt => (None, Some(ceil.saturating_sub(1))),
        Cmp::Le => (None, Some(floor)),
        Cmp::Gt => (Some(floor.saturating_add(1)), None),
        Cmp::Ge => (Some(ceil), None),
    };
    if lo.is_some_and(|l| l > max) || hi.is_some_and(|h| h < min) {
        return Some(Constraint::nothing());
    }
    let bound = |b: Option<i128>| match b {
        Some(v) => value(v).map(Bound::Included),
        None => Some(Bound::Unbounded),
    };
    Some(Constraint::Range(
        bound(lo.filter(|&l| l > min))?,
        bound(hi.filter(|&h| h < max))?,
    ))
}

/// The literal times `10^scale`, rounded down and up (saturating); None for NaN and
/// non-numeric literals.
fn scaled(lit: &ScalarValue, scale: i8) -> Option<(i128, i128)> {
    use ScalarValue::*;
    // v * 10^e, saturating
    let times = |v: i128, e: i32| {
        let x = v
            .checked_mul(pow10(e)?)
            .unwrap_or(if v < 0 { i128::MIN } else { i128::MAX });
        Some((x, x))
    };
    let int = |v: i128| times(v, i32::from(scale));
    let float = |x: f64| {
        // `as` saturates (infinities included); only integer columns take float literals
        (scale == 0 && !x.is_nan()).then(|| (x.floor() as i128, x.ceil() as i128))
    };
    match *lit {
        Int8(Some(v)) => int(v.into()),
        Int16(Some(v)) => int(v.into()),
        Int32(Some(v)) => int(v.into()),
        Int64(Some(v)) => int(v.into()),
        UInt8(Some(v)) => int(v.into()),
        UInt16(Some(v)) => int(v.into()),
        UInt32(Some(v)) => int(v.into()),
        UInt64(Some(v)) => int(v.into()),
        Float32(Some(x)) => float(x.into()),
        Float64(Some(x)) => float(x),
        Decimal128(Some(v), _, s) => {
            let e = i32::from(scale) - i32::from(s);
            if e >= 0 {
                times(v, e)
            } else {
                let d = pow10(-e)?;
                let floor = v.div_euclid(d);
                Some((floor, floor + i128::from(v.rem_euclid(d) != 0)))
            }
        }
        _ => None,
    }
}

/// The value `v` (in units of the scale) of an integer or decimal type.
fn scalar_of(t: &DataType, v: i128) -> Option<ScalarValue> {
    use ScalarValue as S;
    Some(match t {
        DataType::Int8 => S::Int8(Some(v.try_into().ok()?)),
        DataType::Int16 => S::Int16(Some(v.try_into().ok()?)),
        DataType::Int32 => S::Int32(Some(v.try_into().ok()?)),
        DataType::Int64 => S::Int64(Some(v.try_into().ok()?)),
        DataType::UInt8 => S::UInt8(Some(v.try_into().ok()?)),
        DataType::UInt16 => S::UInt16(Some(v.try_into().ok()?)),
        DataType::UInt32 => S::UInt32(Some(v.try_into().ok()?)),
        DataType::UInt64 => S::UInt64(Some(v.try_into().ok()?)),
        DataType::Decimal128(p, s) => S::Decimal128(Some(v), *p, *s),
        _ => return None,
    })
}

/// The constraints of all `filters` on each column, intersected.
pub(crate) fn constraints<'a>(
    filters: impl IntoIterator<Item = &'a Expr>,
    schema: &Schema,
) -> BTreeMap<usize, Constraint> {
    let mut out = Vec::new();
    for f in filters {
        atoms(f, schema, &mut out);
    }
    merge(out)
}

/// The columns `filter` constrains (conjuncts of other shapes left out).
pub(crate) fn constrained_columns(filter: &Expr, schema: &Schema) -> Vec<usize> {
    let mut out = Vec::new();
    atoms(filter, schema, &mut out);
    out.into_iter().map(|a| a.column).collect()
}

fn merge(atoms: impl IntoIterator<Item = Atom>) -> BTreeMap<usize, Constraint> {
    let mut by_column: BTreeMap<usize, Constraint> = BTreeMap::new();
    for a in atoms {
        let c = match by_column.remove(&a.column) {
            Some(prev) => prev.and(a.constraint),
            None => a.constraint,
        };
        by_column.insert(a.column, c);
    }
    by_column
}

/// How one index answers the constraints.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// Position of the index in the snapshot's index list.
    index: usize,
    /// Values of the leading key columns, one list per column (their cartesian product is
    /// looked up); every key column: point lookups, fewer: prefix scans.
    eq: Vec<Vec<ScalarValue>>,
    /// A range on the key column after `eq`.
    range: Option<(Bound<ScalarValue>, Bound<ScalarValue>)>,
    /// A key column is constrained to no value: no row matches.
    empty: bool,
}

impl Plan {
    /// Key columns the plan uses.
    fn used(&self) -> usize {
        self.eq.len() + usize::from(self.empty || self.range.is_some())
    }

    /// Higher is better: nothing to read, then point lookups on a unique index, then the
    /// longest equality prefix, then a range.
    fn rank(&self, ix: &TableIndex) -> (u8, usize, bool, bool) {
        let full = self.eq.len() == ix.def.columns.len();
        let class = if self.empty {
            4
        } else if full && ix.def.unique {
            3
        } else if !self.eq.is_empty() {
            2
        } else {
            1
        };
        (class, self.eq.len(), self.range.is_some(), ix.def.unique)
    }
}

/// How index `index` (number `n` of the snapshot) answers `cons`, if it can.
fn plan_for(n: usize, ix: &TableIndex, cons: &BTreeMap<usize, Constraint>) -> Option<Plan> {
    let mut plan = Plan {
        index: n,
        eq: Vec::new(),
        range: None,
        empty: false,
    };
    let mut keys = 1usize;
    for c in &ix.def.columns {
        match cons.get(c) {
            Some(Constraint::In(v)) if v.is_empty() => {
                plan.empty = true;
                return Some(plan);
            }
            Some(Constraint::In(v)) if keys.saturating_mul(v.len()) <= MAX_KEYS => {
                keys *= v.len();
                plan.eq.push(v.clone());
            }
            _ => break,
        }
    }
    let p = plan.eq.len();
    if p == ix.def.columns.len() {
        return Some(plan);
    }
    if !ix.index.is_ordered() {
        // a hash index finds whole keys only
        return None;
    }
    match cons.get(&ix.def.columns[p]) {
        Some(c @ Constraint::Range(lo, hi)) if !c.is_everything() => {
            plan.range = Some((lo.clone(), hi.clone()));
            Some(plan)
        }
        _ if p > 0 => Some(plan),
        _ => None,
    }
}

/// The best plan over the snapshot's indexes (the first of equally good ones).
fn best_plan(version: &TableVersion, cons: &BTreeMap<usize, Constraint>) -> Option<Plan> {
    let mut best: Option<(Plan, (u8, usize, bool, bool))> = None;
    for (n, ix) in version.indexes.iter().enumerate() {
        if let Some(plan) = plan_for(n, ix, cons) {
            let rank = plan.rank(ix);
            if best.as_ref().is_none_or(|(_, r)| rank > *r) {
                best = Some((plan, rank));
            }
        }
    }
    best.map(|(p, _)| p)
}

/// For each filter: `Inexact` when an index of `version` can use it (together with the other
/// filters), else `Unsupported`.
pub(crate) fn pushdown(
    schema: &Schema,
    version: &TableVersion,
    filters: &[&Expr],
) -> Vec<TableProviderFilterPushDown> {
    let unsupported = vec![TableProviderFilterPushDown::Unsupported; filters.len()];
    if version.indexes.is_empty() {
        return unsupported;
    }
    let per_filter: Vec<Vec<Atom>> = filters
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            atoms(f, schema, &mut out);
            out
        })
        .collect();
    let cons = merge(per_filter.iter().flatten().cloned());
    let mut used = BTreeSet::new();
    for (n, ix) in version.indexes.iter().enumerate() {
        if let Some(plan) = plan_for(n, ix, &cons) {
            used.extend(ix.def.columns[..plan.used()].iter().copied());
        }
    }
    if used.is_empty() {
        return unsupported;
    }
    per_filter
        .iter()
        .map(|atoms| {
            if atoms.iter().any(|a| used.contains(&a.column)) {
                TableProviderFilterPushDown::Inexact
            } else {
                TableProviderFilterPushDown::Unsupported
            }
        })
        .collect()
}

/// Encoded keys of the leading `columns.len()` key columns of `def`, one per row of
/// `columns`; None when the index cannot encode them.
fn encode(def: &IndexDef, table: &TableDef, columns: &[ArrayRef]) -> Option<Vec<Vec<u8>>> {
    let prefix = IndexDef {
        columns: def.columns[..columns.len()].to_vec(),
        ..def.clone()
    };
    let encoder = prefix.encoder(&table.schema).ok()?;
    let keys = encoder.encode(columns).ok()?;
    Some((0..keys.len()).map(|i| keys.get(i).to_vec()).collect())
}

/// The cartesian product of `eq`, as one array per column.
fn product(eq: &[Vec<ScalarValue>]) -> Option<(usize, Vec<ArrayRef>)> {
    let n: usize = eq.iter().map(Vec::len).product();
    let mut columns = Vec::with_capacity(eq.len());
    // column i repeats each value `inner` times, the whole sequence `n / (inner * len)` times
    let mut inner = n;
    for values in eq {
        inner /= values.len();
        let column = (0..n).map(|r| values[(r / inner) % values.len()].clone());
        columns.push(ScalarValue::iter_to_array(column).ok()?);
    }
    Some((n, columns))
}

/// `n` copies of `v`.
fn repeat(v: &ScalarValue, n: usize) -> Option<ArrayRef> {
    v.to_array_of_size(n).ok()
}

/// The rows `plan` selects, sorted; None when they are more than `max_rows` (or the keys
/// cannot be encoded).
fn gather(
    table: &TableDef,
    version: &TableVersion,
    plan: &Plan,
    max_rows: usize,
) -> Option<Vec<RowId>> {
    if plan.empty {
        return Some(Vec::new());
    }
    let ix = &version.indexes[plan.index];
    let index = &ix.index;
    let (n, eq_columns) = product(&plan.eq)?;
    let mut entries = Vec::new();
    match &plan.range {
        None => {
            let keys = encode(&ix.def, table, &eq_columns)?;
            let full = plan.eq.len() == ix.def.columns.len();
            for k in &keys {
                if full {
                    index.lookup(k, &mut entries);
                } else if !index.prefix(k, &mut entries) {
                    return None;
                }
                if entries.len() > max_rows {
                    return None;
                }
            }
        }
        Some((lo, hi)) => {
            let p = plan.eq.len();
            let column = ix.def.columns[p];
            let col_ty = table.arrow_schema.field(column).data_type();
            // keys of the prefix followed by `v` in the range column, one per combination
            let with = |last: ArrayRef| -> Option<Vec<Vec<u8>>> {
                let mut cols = eq_columns.clone();
                cols.push(last);
                encode(&ix.def, table, &cols)
            };
            let bound_keys = |b: &Bound<ScalarValue>| match b {
                Bound::Included(v) | Bound::Excluded(v) => with(repeat(v, n)?).map(Some),
                Bound::Unbounded => Some(None),
            };
            let lo_keys = bound_keys(lo)?;
            let hi_keys = bound_keys(hi)?;
            let prefix_keys = if p > 0 {
                Some(encode(&ix.def, table, &eq_columns)?)
            } else {
                None
            };
            // NULLs of a nullable column of a non-unique index have keys of their own: keep
            // them out of the open side of the range
            let nullable = !ix.def.unique && table.schema.columns[column].nullable;
            let null_keys = if nullable {
                Some(with(new_null_array(col_ty, n))?)
            } else {
                None
            };
            let nulls_first = match (&null_keys, lo_keys.as_ref().or(hi_keys.as_ref())) {
                (Some(nk), Some(bk)) if n > 0 => nk[0] < bk[0],
                _ => false,
            };
            for i in 0..n {
                let open = |nulls_here: bool| match (&null_keys, &prefix_keys) {
                    (Some(nk), _) if nulls_here => Bound::Excluded(nk[i].as_slice()),
                    (_, Some(pk)) => Bound::Included(pk[i].as_slice()),
                    _ => Bound::Unbounded,
                };
                let lo_b = match (lo, &lo_keys) {
                    (Bound::Included(_), Some(k)) => Bound::Included(k[i].as_slice()),
                    (Bound::Excluded(_), Some(k)) => Bound::Excluded(k[i].as_slice()),
                    _ => open(nulls_first),
                };
                let hi_b = match (hi, &hi_keys) {
                    (Bound::Included(_), Some(k)) => Bound::Included(k[i].as_slice()),
                    (Bound::Excluded(_), Some(k)) => Bound::Excluded(k[i].as_slice()),
                    _ => open(!nulls_first),
                };
                if !index.range(lo_b, hi_b, &mut entries) || entries.len() > max_rows {
                    return None;
                }
            }
        }
    }
    let mut rows: Vec<RowId> = entries.iter().map(|&e| index.row_id(e)).collect();
    rows.sort_unstable();
    rows.dedup();
    Some(rows)
}

/// A literal for EXPLAIN: strings quoted.
fn show(v: &ScalarValue) -> String {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => format!("'{}'", s.replace('\'', "''")),
        v => v.to_string(),
    }
}

/// The plan's keys for EXPLAIN: `a = 1 AND b IN (2, 3) AND c >= 4`.
fn describe(plan: &Plan, ix: &TableIndex, table: &TableDef) -> String {
    let name = |i: usize| table.schema.columns[ix.def.columns[i]].name.as_str();
    let mut parts = Vec::new();
    for (i, values) in plan.eq.iter().enumerate() {
        parts.push(match values.as_slice() {
            [v] => format!("{} = {}", name(i), show(v)),
            vs => {
                let mut list: Vec<String> = vs.iter().take(8).map(show).collect();
                if vs.len() > 8 {
                    list.push(format!("... {} more", vs.len() - 8));
                }
                format!("{} IN ({})", name(i), list.join(", "))
            }
        });
    }
    let p = plan.eq.len();
    if plan.empty {
        parts.push(format!("{} matches no value", name(p)));
    }
    if let Some((lo, hi)) = &plan.range {
        match lo {
            Bound::Included(v) => parts.push(format!("{} >= {}", name(p), show(v))),
            Bound::Excluded(v) => parts.push(format!("{} > {}", name(p), show(v))),
            Bound::Unbounded => {}
        }
        match hi {
            Bound::Included(v) => parts.push(format!("{} <= {}", name(p), show(v))),
            Bound::Excluded(v) => parts.push(format!("{} < {}", name(p), show(v))),
            Bound::Unbounded => {}
        }
    }
    parts.join(" AND ")
}

/// How an index of one snapshot answers a scan's filters: chosen when the scan is planned
/// (no lookups), looked up when it runs ([`IndexAccess::lookup`]).
#[derive(Debug, Clone)]
pub(crate) struct IndexAccess {
    plan: Plan,
    /// the index's name
    pub index: String,
    /// ART or HASH
    pub kind: wireload_storage::IndexKind,
    /// the keys looked up, as `a = 1 AND b IN (2, 3)`
    pub keys: String,
    /// at most one row per key: every key column has a value and the index is unique
    pub points: Option<usize>,
}

impl IndexAccess {
    /// The best index access of `version` for `filters`, if an index can answer them.
    pub(crate) fn choose(
        table: &TableDef,
        version: &TableVersion,
        filters: &[Expr],
    ) -> Option<Self> {
        if version.indexes.is_empty() || filters.is_empty() {
            return None;
        }
        let cons = constraints(filters, &table.arrow_schema);
        let plan = best_plan(version, &cons)?;
        let ix = &version.indexes[plan.index];
        let full = plan.eq.len() == ix.def.columns.len();
        let points = if plan.empty {
            Some(0)
        } else if full && ix.def.unique {
            Some(plan.eq.iter().map(Vec::len).product())
        } else {
            None
        };
        Some(IndexAccess {
            index: ix.def.name.clone(),
            kind: ix.def.kind,
            keys: describe(&plan, ix, table),
            points,
            plan,
        })
    }

    /// The rows of `version` the access selects, sorted by row id (table order); None when
    /// they are more than `max_rows` or the keys cannot be encoded.
    pub(crate) fn lookup(
        &self,
        table: &TableDef,
        version: &TableVersion,
        max_rows: usize,
    ) -> Option<Vec<RowId>> {
        gather(table, version, &self.plan, max_rows)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use arrow::datatypes::Field;
    use datafusion::prelude::{cast, col, lit};
    use wireload_storage::IndexKind;
    use wireload_types::SqlType;

    use Bound::{Excluded, Included, Unbounded};
    use Constraint::{In, Range};

    /// a INT NOT NULL, b BIGINT, s TEXT, d DECIMAL(10,2), day DATE, f DOUBLE
    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("b", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("d", DataType::Decimal128(10, 2), true),
            Field::new("day", DataType::Date32, true),
            Field::new("f", DataType::Float64, true),
        ])
    }

    fn cons(filters: &[Expr]) -> Vec<(usize, Constraint)> {
        constraints(filters, &schema()).into_iter().collect()
    }

    fn one(e: Expr) -> Option<Constraint> {
        let mut c = cons(&[e]);
        assert!(c.len() <= 1, "{c:?}");
        c.pop().map(|(_, c)| c)
    }

    fn i32s(v: &[i32]) -> Constraint {
        In(v.iter().map(|&x| ScalarValue::Int32(Some(x))).collect())
    }

    fn a(v: i32) -> ScalarValue {
        ScalarValue::Int32(Some(v))
    }

    fn dec(v: i128) -> ScalarValue {
        ScalarValue::Decimal128(Some(v), 10, 2)
    }

    #[test]
    fn equalities_and_lists() {
        assert_eq!(one(col("a").eq(lit(5))), Some(i32s(&[5])));
        assert_eq!(one(lit(5).eq(col("a"))), Some(i32s(&[5])));
        assert_eq!(
            one(col("a").in_list(
                vec![lit(3), lit(1), lit(3), lit(ScalarValue::Int32(None))],
                false
            )),
            Some(i32s(&[1, 3]))
        );
        assert_eq!(one(col("a").in_list(vec![lit(3)], true)), None);
        assert_eq!(
            one(col("a").eq(lit(1)).or(col("a").eq(lit(2)))),
            Some(i32s(&[1, 2]))
        );
        assert_eq!(one(col("a").eq(lit(1)).or(col("b").eq(lit(2i64)))), None);
        assert_eq!(one(col("a").eq(lit(1)).or(col("a").gt(lit(2)))), None);
        assert_eq!(one(col("a").not_eq(lit(1))), None);
        assert_eq!(
            one(col("s").eq(lit("x"))),
            Some(In(vec![ScalarValue::from("x")]))
        );
        // NULL matches nothing
        assert_eq!(
            one(col("a").eq(lit(ScalarValue::Int32(None)))),
            Some(In(vec![]))
        );
        assert_eq!(
            one(col("a").lt(lit(ScalarValue::Int32(None)))),
            Some(In(vec![]))
        );
        // not a column compared with a literal
        assert_eq!(one((col("a") + lit(0)).eq(lit(5))), None);
        assert_eq!(one(col("a").eq(col("b"))), None);
        // floating-point columns are never pushed
        assert_eq!(one(col("f").eq(lit(1.0))), None);
    }

    #[test]
    fn ranges() {
        assert_eq!(
            one(col("a").lt(lit(5))),
            Some(Range(Unbounded, Included(a(4))))
        );
        assert_eq!(
            one(lit(5).lt(col("a"))),
            Some(Range(Included(a(6)), Unbounded))
        );
        assert_eq!(
            one(col("a").between(lit(2), lit(7))),
            Some(Range(Included(a(2)), Included(a(7))))
        );
        assert_eq!(one(col("a").not_between(lit(2), lit(7))), None);
        // other types keep exclusive bounds
        let x = ScalarValue::from("x");
        assert_eq!(
            one(col("s").lt(lit("x"))),
            Some(Range(Unbounded, Excluded(x.clone())))
        );
        assert_eq!(
            one(col("s").gt(lit("x")).and(col("s").lt_eq(lit("x")))),
            Some(In(vec![]))
        );
        assert_eq!(
            one(col("s").gt_eq(lit("x")).and(col("s").lt_eq(lit("x")))),
            Some(In(vec![x]))
        );
        assert_eq!(one(col("a").between(lit(7), lit(2))), Some(In(vec![])));
        assert_eq!(one(col("a").between(lit(7), lit(7))), Some(i32s(&[7])));
    }

    #[test]
    fn conjunctions_intersect() {
        let c = cons(&[col("a").gt_eq(lit(3)), col("a").lt_eq(lit(3))]);
        assert_eq!(c, vec![(0, i32s(&[3]))]);
        let c = cons(&[col("a").gt(lit(5)).and(col("a").lt(lit(3)))]);
        assert_eq!(c, vec![(0, In(vec![]))]);
        let c = cons(&[col("a").gt(lit(5)).and(col("a").lt(lit(6)))]);
        assert_eq!(c, vec![(0, In(vec![]))]);
        let c = cons(&[
            col("a").in_list(vec![lit(1), lit(5), lit(9)], false),
            col("a").gt(lit(4)),
        ]);
        assert_eq!(c, vec![(0, i32s(&[5, 9]))]);
        let c = cons(&[col("a").between(lit(2), lit(7)).and(col("a").lt(lit(5)))]);
        assert_eq!(c, vec![(0, Range(Included(a(2)), Included(a(4))))]);
        let c = cons(&[col("a").gt_eq(lit(5)).and(col("a").gt(lit(5)))]);
        assert_eq!(c, vec![(0, Range(Included(a(6)), Unbounded))]);
        // a conjunct of another shape leaves the rest usable
        let c = cons(&[(col("a") + lit(1)).eq(lit(2)).and(col("b").eq(lit(3i64)))]);
        assert_eq!(c, vec![(1, In(vec![ScalarValue::Int64(Some(3))]))]);
    }

    #[test]
    fn lossless_casts_of_the_column() {
        let wide = || cast(col("a"), DataType::Int64);
        assert_eq!(one(wide().eq(lit(5i64))), Some(i32s(&[5])));
        assert_eq!(one(wide().eq(lit(1_000_000_000_000i64))), Some(In(vec![])));
        assert_eq!(
            one(wide().lt(lit(1_000_000_000_000i64))),
            Some(Range(Unbounded, Unbounded))
        );
        assert_eq!(one(wide().gt(lit(1_000_000_000_000i64))), Some(In(vec![])));
        assert_eq!(
            one(wide().gt(lit(-1_000_000_000_000i64))),
            Some(Range(Unbounded, Unbounded))
        );
        assert_eq!(
            one(wide().lt_eq(lit(i64::from(i32::MIN)))),
            Some(Range(Unbounded, Included(a(i32::MIN))))
        );
        assert_eq!(one(wide().lt(lit(i64::from(i32::MIN)))), Some(In(vec![])));
        let float = || cast(col("a"), DataType::Float64);
        assert_eq!(one(float().eq(lit(3.5))), Some(In(vec![])));
        assert_eq!(one(float().eq(lit(3.0))), Some(i32s(&[3])));
        assert_eq!(
            one(float().lt(lit(3.5))),
            Some(Range(Unbounded, Included(a(3))))
        );
        assert_eq!(
            one(float().lt(lit(3.0))),
            Some(Range(Unbounded, Included(a(2))))
        );
        assert_eq!(
            one(float().gt(lit(3.5))),
            Some(Range(Included(a(4)), Unbounded))
        );
        assert_eq!(
            one(float().gt_eq(lit(-0.5))),
            Some(Range(Included(a(0)), Unbounded))
        );
        assert_eq!(
            one(float().lt_eq(lit(-0.5))),
            Some(Range(Unbounded, Included(a(-1))))
        );
        assert_eq!(
            one(float().lt(lit(f64::INFINITY))),
            Some(Range(Unbounded, Unbounded))
        );
        assert_eq!(one(float().gt(lit(f64::INFINITY))), Some(In(vec![])));
        assert_eq!(one(float().lt(lit(f64::NAN))), None);
        assert_eq!(one(float().gt(lit(1e12))), Some(In(vec![])));
        // not lossless: narrowing, BIGINT to DOUBLE, DECIMAL to DOUBLE, to text
        assert_eq!(one(cast(col("a"), DataType::Int16).eq(lit(5i16))), None);
        assert_eq!(one(cast(col("b"), DataType::Float64).eq(lit(5.0))), None);
        assert_eq!(one(cast(col("d"), DataType::Float64).eq(lit(5.0))), None);
        assert_eq!(one(cast(col("a"), DataType::Utf8).eq(lit("5"))), None);
        // decimals: the literal rounded to the column's scale, in the right direction
        let d = || cast(col("d"), DataType::Decimal128(12, 3));
        let l = |v: i128| lit(ScalarValue::Decimal128(Some(v), 12, 3));
        assert_eq!(one(d().eq(l(1230))), Some(In(vec![dec(123)])));
        assert_eq!(one(d().eq(l(1234))), Some(In(vec![])));
        assert_eq!(
            one(d().lt(l(1234))),
            Some(Range(Unbounded, Included(dec(123))))
        );
        assert_eq!(
            one(d().gt(l(-1234))),
            Some(Range(Included(dec(-123)), Unbounded))
        );
        assert_eq!(one(d().gt(l(999_999_999_999))), Some(In(vec![])));
        let int_dec = cast(col("a"), DataType::Decimal128(12, 2));
        assert_eq!(
            one(int_dec.gt_eq(lit(ScalarValue::Decimal128(Some(250), 12, 2)))),
            Some(Range(Included(a(3)), Unbounded))
        );
        // strings and dates: the literal must round-trip
        assert_eq!(
            one(cast(col("s"), DataType::Utf8View).eq(lit(ScalarValue::Utf8View(Some("x".into()))))),
            Some(In(vec![ScalarValue::from("x")]))
        );
        let day = || cast(col("day"), DataType::Date64);
        assert_eq!(
            one(day().eq(lit(ScalarValue::Date64(Some(86_400_000))))),
            Some(In(vec![ScalarValue::Date32(Some(1))]))
        );
        assert_eq!(
            one(day().eq(lit(ScalarValue::Date64(Some(86_400_001))))),
            Some(In(vec![]))
        );
        assert_eq!(
            one(day().lt(lit(ScalarValue::Date64(Some(86_400_001))))),
            None
        );
        // a cast literal is folded
        assert_eq!(
            one(col("a").eq(cast(lit(5i64), DataType::Int32))),
            Some(i32s(&[5]))
        );
    }

    fn index(name: &str, columns: &[usize], unique: bool, kind: IndexKind) -> TableIndex {
        TableIndex::empty(IndexDef {
            name: name.into(),
            columns: columns.to_vec(),
            unique,
            primary: false,
            kind,
        })
    }

    /// Indexes: pk ART UNIQUE (a, b), s_hash HASH (s), b_art ART (b), ab_hash HASH (a, b).
    fn version() -> TableVersion {
        let mut v = TableVersion::empty(1, Arc::new(schema()));
        v.indexes = vec![
            index("pk", &[0, 1], true, IndexKind::Art),
            index("s_hash", &[2], false, IndexKind::Hash),
            index("b_art", &[1], false, IndexKind::Art),
            index("ab_hash", &[0, 1], false, IndexKind::Hash),
        ];
        v
    }

    fn plan(filters: &[Expr]) -> Option<(String, usize, bool, bool)> {
        let v = version();
        let p = best_plan(&v, &constraints(filters, &schema()))?;
        Some((
            v.indexes[p.index].def.name.clone(),
            p.eq.len(),
            p.range.is_some(),
            p.empty,
        ))
    }

    fn pushed(filters: &[Expr]) -> Vec<bool> {
        let refs: Vec<&Expr> = filters.iter().collect();
        pushdown(&schema(), &version(), &refs)
            .into_iter()
            .map(|p| match p {
                TableProviderFilterPushDown::Inexact => true,
                TableProviderFilterPushDown::Unsupported => false,
                TableProviderFilterPushDown::Exact => panic!("never exact"),
            })
            .collect()
    }

    #[test]
    fn plans() {
        let (a, b, s) = (|| col("a"), || col("b"), || col("s"));
        assert_eq!(
            plan(&[a().eq(lit(1)), b().eq(lit(2i64))]),
            Some(("pk".into(), 2, false, false))
        );
        assert_eq!(
            plan(&[a().eq(lit(1))]),
            Some(("pk".into(), 1, false, false))
        );
        assert_eq!(
            plan(&[a().eq(lit(1)), b().gt(lit(2i64))]),
            Some(("pk".into(), 1, true, false))
        );
        assert_eq!(plan(&[a().gt(lit(1))]), Some(("pk".into(), 0, true, false)));
        assert_eq!(
            plan(&[b().eq(lit(1i64))]),
            Some(("b_art".into(), 1, false, false))
        );
        assert_eq!(
            plan(&[b().lt(lit(1i64))]),
            Some(("b_art".into(), 0, true, false))
        );
        assert_eq!(
            plan(&[s().eq(lit("x"))]),
            Some(("s_hash".into(), 1, false, false))
        );
        assert_eq!(plan(&[s().gt(lit("x"))]), None);
        assert_eq!(plan(&[a().not_eq(lit(1))]), None);
        assert_eq!(
            plan(&[cast(a(), DataType::Float64).eq(lit(1.5))]),
            Some(("pk".into(), 0, false, true))
        );
        assert_eq!(
            plan(&[s().eq(lit(ScalarValue::Utf8(None)))]),
            Some(("s_hash".into(), 0, false, true))
        );
        // an unbounded range is no plan
        assert_eq!(
            plan(&[cast(a(), DataType::Int64).lt(lit(1e12 as i64))]),
            None
        );
        // too many keys: the prefix stops before the column that would pass MAX_KEYS
        let many: Vec<Expr> = (0..200).map(|i| lit(i as i64)).collect();
        let list: Vec<Expr> = (0..100).map(lit).collect();
        assert_eq!(
            plan(&[a().in_list(list, false), b().in_list(many, false)]),
            Some(("pk".into(), 1, false, false))
        );
    }

    #[test]
    fn pushdown_marks_what_an_index_uses() {
        let (a, b, s, f) = (|| col("a"), || col("b"), || col("s"), || col("f"));
        assert_eq!(
            pushed(&[a().eq(lit(1)), b().eq(lit(2i64)), f().gt(lit(0.0))]),
            [true, true, false]
        );
        assert_eq!(pushed(&[s().gt(lit("x"))]), [false]);
        assert_eq!(
            pushed(&[s().eq(lit("x")), (a() + lit(1)).eq(lit(3))]),
            [true, false]
        );
        assert_eq!(pushed(&[b().gt(lit(1i64)).and(a().lt(lit(3)))]), [true]);
        let empty = TableVersion::empty(1, Arc::new(schema()));
        assert_eq!(
            pushdown(&schema(), &empty, &[&a().eq(lit(1))]),
            [TableProviderFilterPushDown::Unsupported]
        );
    }

    #[test]
    fn describe_keys() {
        let v = version();
        let def = TableDef::new(
            "t",
            wireload_types::TableSchema {
                columns: [
                    ("a", SqlType::Integer, false),
                    ("b", SqlType::BigInt, true),
                    ("s", SqlType::Text, true),
                    (
                        "d",
                        SqlType::Decimal {
                            precision: 10,
                            scale: 2,
                        },
                        true,
                    ),
                    ("day", SqlType::Date, true),
                    ("f", SqlType::Double, true),
                ]
                .into_iter()
                .map(|(name, ty, nullable)| wireload_types::ColumnDef {
                    name: name.into(),
                    ty,
                    nullable,
                })
                .collect(),
            },
            wireload_storage::Partitioning::Single,
        )
        .unwrap();
        let show_plan = |filters: &[Expr]| {
            let p = best_plan(&v, &constraints(filters, &schema())).unwrap();
            describe(&p, &v.indexes[p.index], &def)
        };
        assert_eq!(
            show_plan(&[col("a").eq(lit(7)), col("b").eq(lit(2i64))]),
            "a = 7 AND b = 2"
        );
        assert_eq!(
            show_plan(&[
                col("a").in_list(vec![lit(2), lit(1)], false),
                col("b").between(lit(1i64), lit(9i64))
            ]),
            "a IN (1, 2) AND b >= 1 AND b <= 9"
        );
        assert_eq!(show_plan(&[col("s").eq(lit("it's"))]), "s = 'it''s'");
    }

    #[test]
    fn cartesian_product() {
        let (n, cols) = product(&[vec![a(1), a(2)], vec![a(7), a(8), a(9)]]).unwrap();
        assert_eq!(n, 6);
        let col = |i: usize| {
            let c = cols[i]
                .as_any()
                .downcast_ref::<arrow::array::Int32Array>()
                .unwrap();
            c.values().to_vec()
        };
        assert_eq!(col(0), [1, 1, 1, 2, 2, 2]);
        assert_eq!(col(1), [7, 8, 9, 7, 8, 9]);
        let (n, cols) = product(&[]).unwrap();
        assert_eq!((n, cols.len()), (1, 0));
    }
}
