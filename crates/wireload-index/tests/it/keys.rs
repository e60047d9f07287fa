//! Key encoding: byte order equals SQL order, prefix-freeness, composite prefixes, NULLs.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Date64Array, Decimal128Array, Float32Array,
    Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, LargeStringArray, StringArray,
    StringViewArray, TimestampNanosecondArray, TimestampSecondArray, UInt8Array, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use proptest::prelude::*;
use wireload_index::keys::KeysBuilder;
use wireload_index::{KeyEncoder, KeyError, Keys};

fn encode(types: &[(DataType, bool)], columns: &[ArrayRef]) -> Keys {
    KeyEncoder::new(types)
        .expect("supported")
        .encode(columns)
        .expect("encodes")
}

/// Asserts, for every pair of rows, `cmp(key i, key j) == oracle(i, j)` and that distinct
/// keys are not prefixes of one another.
fn check_order(keys: &Keys, n: usize, oracle: impl Fn(usize, usize) -> Ordering) {
    assert_eq!(keys.len(), n);
    for i in 0..n {
        for j in 0..n {
            let (ki, kj) = (keys.get(i), keys.get(j));
            assert_eq!(
                ki.cmp(kj),
                oracle(i, j),
                "rows {i} and {j}: keys {ki:02x?} and {kj:02x?}"
            );
            if ki != kj {
                assert!(
                    !kj.starts_with(ki),
                    "key {ki:02x?} is a prefix of {kj:02x?}"
                );
            }
        }
    }
}

/// Checks one column type: not nullable (without NULLs) and nullable (with NULLs).
fn check_column<T: Clone>(
    ty: DataType,
    vals: &[Option<T>],
    make: impl Fn(Vec<Option<T>>) -> ArrayRef,
    cmp: impl Fn(&T, &T) -> Ordering,
) {
    let cmp_opt = |a: &Option<T>, b: &Option<T>| match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => cmp(a, b),
    };
    // nullable, with NULLs
    let keys = encode(&[(ty.clone(), true)], &[make(vals.to_vec())]);
    check_order(&keys, vals.len(), |i, j| cmp_opt(&vals[i], &vals[j]));
    for (i, v) in vals.iter().enumerate() {
        if v.is_none() {
            assert_eq!(keys.get(i), &[0u8][..]);
        }
    }
    // not nullable: the NULLs dropped
    let some: Vec<Option<T>> = vals.iter().filter(|v| v.is_some()).cloned().collect();
    let enc = KeyEncoder::new(&[(ty.clone(), false)]).unwrap();
    let keys = enc.encode(&[make(some.clone())]).unwrap();
    check_order(&keys, some.len(), |i, j| cmp_opt(&some[i], &some[j]));
    if let Some(w) = enc.width() {
        assert_eq!(keys.width(), Some(w), "{ty}: fixed-width keys");
    }
    // a sliced array encodes like its values
    if vals.len() > 2 {
        let arr = make(vals.to_vec()).slice(1, vals.len() - 2);
        let sliced = encode(&[(ty.clone(), true)], &[arr]);
        let whole = encode(&[(ty, true)], &[make(vals.to_vec())]);
        for i in 0..vals.len() - 2 {
            assert_eq!(sliced.get(i), whole.get(i + 1));
        }
    }
}

fn norm_f64(v: f64) -> f64 {
    if v.is_nan() {
        f64::NAN.abs()
    } else if v == 0.0 {
        0.0
    } else {
        v
    }
}

fn cmp_f64(a: &f64, b: &f64) -> Ordering {
    norm_f64(*a).total_cmp(&norm_f64(*b))
}

fn cmp_f32(a: &f32, b: &f32) -> Ordering {
    cmp_f64(&(*a as f64), &(*b as f64))
}

fn f64_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::NAN),
        Just(-f64::NAN),
        Just(f64::from_bits(0x7ff0_0000_0000_0001)),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MIN_POSITIVE),
        Just(-f64::MIN_POSITIVE),
        (-3i32..3).prop_map(|v| v as f64),
        any::<f64>(),
    ]
}

fn f32_strategy() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::NAN),
        Just(-f32::NAN),
        Just(f32::from_bits(0x7f80_0001)),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        (-3i32..3).prop_map(|v| v as f32),
        any::<f32>(),
    ]
}

/// Short strings over an alphabet with NUL, low and high characters: many prefixes and ties.
fn string_strategy(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['\0', '\u{1}', 'a', 'b', 'é', '\u{10ffff}']),
        0..max,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn bytes_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, 0x61, 0xfe, 0xff]), 0..6)
}

fn vals<T: std::fmt::Debug>(s: impl Strategy<Value = T>) -> impl Strategy<Value = Vec<Option<T>>> {
    prop::collection::vec(prop::option::weighted(0.85, s), 0..60)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bool_order(v in vals(any::<bool>())) {
        check_column(DataType::Boolean, &v, |v| Arc::new(BooleanArray::from(v)), Ord::cmp);
    }

    #[test]
    fn int8_order(v in vals(any::<i8>())) {
        check_column(DataType::Int8, &v, |v| Arc::new(Int8Array::from(v)), Ord::cmp);
    }

    #[test]
    fn int16_order(v in vals(any::<i16>())) {
        check_column(DataType::Int16, &v, |v| Arc::new(Int16Array::from(v)), Ord::cmp);
    }

    #[test]
    fn int32_order(v in vals(prop_oneof![Just(i32::MIN), Just(i32::MAX), -2i32..2, any::<i32>()])) {
        check_column(DataType::Int32, &v, |v| Arc::new(Int32Array::from(v)), Ord::cmp);
    }

    #[test]
    fn int64_order(v in vals(prop_oneof![Just(i64::MIN), Just(i64::MAX), -2i64..2, any::<i64>()])) {
        check_column(DataType::Int64, &v, |v| Arc::new(Int64Array::from(v)), Ord::cmp);
    }

    #[test]
    fn uint_order(
        a in vals(any::<u8>()),
        b in vals(any::<u16>()),
        c in vals(prop_oneof![Just(u32::MAX), 0u32..3, any::<u32>()]),
        d in vals(prop_oneof![Just(u64::MAX), 0u64..3, any::<u64>()]),
    ) {
        check_column(DataType::UInt8, &a, |v| Arc::new(UInt8Array::from(v)), Ord::cmp);
        check_column(DataType::UInt16, &b, |v| Arc::new(UInt16Array::from(v)), Ord::cmp);
        check_column(DataType::UInt32, &c, |v| Arc::new(UInt32Array::from(v)), Ord::cmp);
        check_column(DataType::UInt64, &d, |v| Arc::new(UInt64Array::from(v)), Ord::cmp);
    }

    #[test]
    fn float_order(a in vals(f32_strategy()), b in vals(f64_strategy())) {
        check_column(DataType::Float32, &a, |v| Arc::new(Float32Array::from(v)), cmp_f32);
        check_column(DataType::Float64, &b, |v| Arc::new(Float64Array::from(v)), cmp_f64);
    }

    #[test]
    fn decimal_order(
        small in vals(-999_999_999_999_999_999i128..=999_999_999_999_999_999),
        big in vals(prop_oneof![
            Just(-(10i128.pow(38) - 1)),
            Just(10i128.pow(38) - 1),
            -2i128..2,
            -(10i128.pow(38) - 1)..10i128.pow(38),
        ]),
    ) {
        let ty = DataType::Decimal128(18, 3);
        let t = ty.clone();
        check_column(ty, &small, move |v| Arc::new(Decimal128Array::from(v).with_data_type(t.clone())), Ord::cmp);
        let ty = DataType::Decimal128(38, 0);
        let t = ty.clone();
        check_column(ty, &big, move |v| Arc::new(Decimal128Array::from(v).with_data_type(t.clone())), Ord::cmp);
    }

    #[test]
    fn temporal_order(a in vals(any::<i32>()), b in vals(any::<i64>()), c in vals(any::<i64>())) {
        check_column(DataType::Date32, &a, |v| Arc::new(Date32Array::from(v)), Ord::cmp);
        check_column(DataType::Date64, &b, |v| Arc::new(Date64Array::from(v)), Ord::cmp);
        check_column(
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            &c,
            |v| Arc::new(TimestampNanosecondArray::from(v).with_timezone("UTC")),
            Ord::cmp,
        );
        check_column(
            DataType::Timestamp(TimeUnit::Second, None),
            &c,
            |v| Arc::new(TimestampSecondArray::from(v)),
            Ord::cmp,
        );
    }

    #[test]
    fn string_order(v in vals(string_strategy(6)), long in vals(string_strategy(20))) {
        let cmp = |a: &String, b: &String| a.as_bytes().cmp(b.as_bytes());
        check_column(DataType::Utf8, &v, |v| Arc::new(StringArray::from(v)), cmp);
        check_column(DataType::LargeUtf8, &v, |v| Arc::new(LargeStringArray::from(v)), cmp);
        // views: inline (≤ 12 bytes) and out-of-line strings
        check_column(DataType::Utf8View, &long, |v| Arc::new(StringViewArray::from(v)), cmp);
        // the same strings in every string type encode alike
        let a = encode(&[(DataType::Utf8, true)], &[Arc::new(StringArray::from(long.clone()))]);
        let b = encode(&[(DataType::Utf8View, true)], &[Arc::new(StringViewArray::from(long.clone()))]);
        for i in 0..long.len() {
            prop_assert_eq!(a.get(i), b.get(i));
        }
    }

    #[test]
    fn binary_order(v in vals(bytes_strategy())) {
        check_column(
            DataType::Binary,
            &v,
            |v| Arc::new(BinaryArray::from(v.iter().map(|x| x.as_deref()).collect::<Vec<_>>())),
            Ord::cmp,
        );
    }

    /// Composite keys: tuple order, prefix-freeness, and the encoding of the leading columns
    /// is a prefix of the full key exactly for rows with equal leading values.
    #[test]
    fn composite(rows in prop::collection::vec(
        (prop::option::weighted(0.8, -3i32..3), prop::option::weighted(0.8, string_strategy(4)), f64_strategy(), any::<bool>()),
        0..50,
    )) {
        let types = [
            (DataType::Int32, true),
            (DataType::Utf8, true),
            (DataType::Float64, false),
            (DataType::Boolean, false),
        ];
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>())),
            Arc::new(StringArray::from(rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>())),
            Arc::new(Float64Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())),
            Arc::new(BooleanArray::from(rows.iter().map(|r| r.3).collect::<Vec<_>>())),
        ];
        let enc = KeyEncoder::new(&types).unwrap();
        prop_assert_eq!(enc.width(), None);
        let keys = enc.encode(&cols).unwrap();
        let cmp_row = |i: usize, j: usize, k: usize| {
            let (a, b) = (&rows[i], &rows[j]);
            let parts = [
                a.0.cmp(&b.0),
                a.1.as_ref().map(|s| s.as_bytes()).cmp(&b.1.as_ref().map(|s| s.as_bytes())),
                cmp_f64(&a.2, &b.2),
                a.3.cmp(&b.3),
            ];
            parts[..k].iter().copied().fold(Ordering::Equal, Ordering::then)
        };
        check_order(&keys, rows.len(), |i, j| cmp_row(i, j, 4));
        for k in 1..=4 {
            let pre = enc.encode_prefix(&cols, k).unwrap();
            let pre2 = enc.prefix(k).encode(&cols[..k]).unwrap();
            for i in 0..rows.len() {
                prop_assert!(keys.get(i).starts_with(pre.get(i)));
                prop_assert_eq!(pre.get(i), pre2.get(i));
                for j in 0..rows.len() {
                    prop_assert_eq!(
                        keys.get(j).starts_with(pre.get(i)),
                        cmp_row(i, j, k) == Ordering::Equal,
                        "rows {} {} on {} columns", i, j, k
                    );
                }
            }
        }
        for i in 0..rows.len() {
            let mut one = vec![7u8];
            enc.encode_row(&cols, i, &mut one).unwrap();
            prop_assert_eq!(&one[1..], keys.get(i));
        }
    }

    /// Fixed-width composites are written a column at a time into one strided buffer.
    #[test]
    fn composite_fixed(rows in prop::collection::vec((any::<i16>(), any::<u8>(), -2i64..2, any::<u32>()), 0..60)) {
        let types = [
            (DataType::Int16, false),
            (DataType::UInt8, false),
            (DataType::Int64, true),
            (DataType::UInt32, false),
        ];
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int16Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>())),
            Arc::new(UInt8Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>())),
            Arc::new(Int64Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())),
            Arc::new(UInt32Array::from(rows.iter().map(|r| r.3).collect::<Vec<_>>())),
        ];
        let enc = KeyEncoder::new(&types).unwrap();
        prop_assert_eq!(enc.width(), None); // nullable column
        prop_assert_eq!(enc.prefix(2).width(), Some(3));
        let keys = enc.encode(&cols).unwrap();
        // no NULL in the batch: stored fixed-width, the nullable column with its marker
        prop_assert_eq!(keys.width(), Some(2 + 1 + 1 + 8 + 4));
        check_order(&keys, rows.len(), |i, j| rows[i].cmp(&rows[j]));
        let pre = enc.encode_prefix(&cols, 2).unwrap();
        for i in 0..rows.len() {
            prop_assert!(keys.get(i).starts_with(pre.get(i)));
        }
    }
}

#[test]
fn golden_encodings() {
    let keys = encode(
        &[(DataType::Int32, false)],
        &[Arc::new(Int32Array::from(vec![5, -1, i32::MIN]))],
    );
    assert_eq!(keys.width(), Some(4));
    assert_eq!(keys.get(0), [0x80, 0, 0, 5]);
    assert_eq!(keys.get(1), [0x7f, 0xff, 0xff, 0xff]);
    assert_eq!(keys.get(2), [0, 0, 0, 0]);

    let keys = encode(
        &[(DataType::Utf8, false)],
        &[Arc::new(StringArray::from(vec!["a\0b", "", "\0"]))],
    );
    assert_eq!(keys.get(0), [0x61, 0, 0xff, 0x62, 0, 0]);
    assert_eq!(keys.get(1), [0, 0]);
    assert_eq!(keys.get(2), [0, 0xff, 0, 0]);

    let keys = encode(
        &[(DataType::Int8, true), (DataType::Utf8, true)],
        &[
            Arc::new(Int8Array::from(vec![Some(3), None])),
            Arc::new(StringArray::from(vec![None, Some("x")])),
        ],
    );
    assert_eq!(keys.get(0), [1, 0x83, 0]);
    assert_eq!(keys.get(1), [0, 1, b'x', 0, 0]);

    let keys = encode(
        &[(DataType::Boolean, false), (DataType::UInt16, false)],
        &[
            Arc::new(BooleanArray::from(vec![true])),
            Arc::new(UInt16Array::from(vec![0x1234])),
        ],
    );
    assert_eq!(keys.get(0), [1, 0x12, 0x34]);

    // p ≤ 18: 8 bytes; p > 18: 16 bytes
    let d = |p: u8| -> ArrayRef {
        Arc::new(
            Decimal128Array::from(vec![-1i128])
                .with_precision_and_scale(p, 2)
                .unwrap(),
        )
    };
    let k18 = encode(&[(DataType::Decimal128(18, 2), false)], &[d(18)]);
    assert_eq!(k18.get(0), [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    let k19 = encode(&[(DataType::Decimal128(19, 2), false)], &[d(19)]);
    assert_eq!(k19.get(0).len(), 16);
}

#[test]
fn float_zero_and_nan() {
    let v = vec![
        -0.0,
        0.0,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::INFINITY,
        f64::NEG_INFINITY,
        -1.5,
        1.5,
    ];
    let keys = encode(
        &[(DataType::Float64, false)],
        &[Arc::new(Float64Array::from(v))],
    );
    assert_eq!(keys.get(0), keys.get(1), "-0.0 == 0.0");
    assert_eq!(keys.get(2), keys.get(3), "one NaN");
    assert_eq!(keys.get(2), keys.get(4), "one NaN");
    assert!(keys.get(2) > keys.get(5), "NaN above +inf");
    assert!(keys.get(6) < keys.get(7) && keys.get(7) < keys.get(0));
    assert!(keys.get(0) < keys.get(8) && keys.get(8) < keys.get(5));

    let keys = encode(
        &[(DataType::Float32, false)],
        &[Arc::new(Float32Array::from(vec![
            -0.0f32,
            0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
        ]))],
    );
    assert_eq!(keys.get(0), keys.get(1));
    assert_eq!(keys.get(2), keys.get(3));
    assert!(keys.get(2) > keys.get(4));
}

#[test]
fn null_in_not_nullable_column() {
    let enc = KeyEncoder::new(&[(DataType::Int32, false), (DataType::Utf8, false)]).unwrap();
    let err = enc
        .encode(&[
            Arc::new(Int32Array::from(vec![1, 2, 3])),
            Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])),
        ])
        .unwrap_err();
    assert_eq!(err, KeyError::Null { row: 2, column: 1 });
    // NULLs sort first in a nullable column
    let keys = encode(
        &[(DataType::Int64, true)],
        &[Arc::new(Int64Array::from(vec![Some(i64::MIN), None]))],
    );
    assert!(keys.get(1) < keys.get(0));
    assert_eq!(keys.width(), None);
}

#[test]
fn unsupported_types() {
    for ty in [
        DataType::Float16,
        DataType::Null,
        DataType::Decimal256(40, 2),
        DataType::Time32(TimeUnit::Second),
        DataType::Interval(IntervalUnit::DayTime),
        DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
    ] {
        let err = KeyEncoder::new(&[(DataType::Int32, false), (ty.clone(), true)]).unwrap_err();
        assert_eq!(err, KeyError::Unsupported(ty));
    }
}

#[test]
fn type_mismatch() {
    let enc = KeyEncoder::new(&[(DataType::Int32, false), (DataType::Utf8View, false)]).unwrap();
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![1]));
    let err = enc
        .encode(&[Arc::new(Int64Array::from(vec![1])), ints.clone()])
        .unwrap_err();
    assert_eq!(
        err,
        KeyError::TypeMismatch {
            column: 0,
            declared: DataType::Int32,
            found: DataType::Int64
        }
    );
    // every string type encodes alike, so any of them may stand for another
    let a = enc
        .encode(&[ints.clone(), Arc::new(StringArray::from(vec!["x"]))])
        .unwrap();
    let b = enc
        .encode(&[ints, Arc::new(StringViewArray::from(vec!["x"]))])
        .unwrap();
    assert_eq!(a.get(0), b.get(0));
    // a timestamp of another unit, a decimal of another scale: no
    let enc = KeyEncoder::new(&[(DataType::Timestamp(TimeUnit::Second, None), false)]).unwrap();
    let ns: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1]));
    assert!(matches!(
        enc.encode(&[ns]),
        Err(KeyError::TypeMismatch { .. })
    ));
    let enc = KeyEncoder::new(&[(DataType::Decimal128(10, 2), false)]).unwrap();
    let d: ArrayRef = Arc::new(
        Decimal128Array::from(vec![1i128])
            .with_precision_and_scale(10, 3)
            .unwrap(),
    );
    assert!(matches!(
        enc.encode(&[d]),
        Err(KeyError::TypeMismatch { .. })
    ));
    // another precision of the same scale encodes as the column's
    let d: ArrayRef = Arc::new(
        Decimal128Array::from(vec![-12345i128, 1 << 70])
            .with_precision_and_scale(38, 2)
            .unwrap(),
    );
    let d10: ArrayRef = Arc::new(
        Decimal128Array::from(vec![-12345i128])
            .with_precision_and_scale(10, 2)
            .unwrap(),
    );
    assert_eq!(
        enc.encode(&[d.slice(0, 1)]).unwrap().get(0),
        enc.encode(&[d10]).unwrap().get(0)
    );
    assert_eq!(
        enc.encode(&[d]).unwrap_err(),
        KeyError::OutOfRange { row: 1, column: 0 }
    );
}

#[test]
fn decimal_out_of_range() {
    let arr: ArrayRef = Arc::new(
        Decimal128Array::from(vec![Some(1), None, Some(1i128 << 70)])
            .with_data_type(DataType::Decimal128(10, 0)),
    );
    let err = KeyEncoder::new(&[(DataType::Decimal128(10, 0), true)])
        .unwrap()
        .encode(&[arr])
        .unwrap_err();
    assert_eq!(err, KeyError::OutOfRange { row: 2, column: 0 });
}

#[test]
fn keys_builder_and_parts() {
    let mut b = KeysBuilder::new();
    b.push(b"ab");
    b.push(b"cd");
    let k = b.finish();
    assert_eq!(k.width(), Some(2));
    assert_eq!(k.get(1), b"cd");

    let mut b = KeysBuilder::with_capacity(3, 8);
    for key in [&b"a"[..], b"", b"xyz"] {
        b.push(key);
    }
    assert_eq!(b.len(), 3);
    let k = b.finish();
    assert_eq!(k.width(), None);
    assert_eq!(k.iter().collect::<Vec<_>>(), vec![&b"a"[..], b"", b"xyz"]);

    let k = Keys::from_parts(b"abc".to_vec(), vec![0, 1, 3]);
    assert_eq!((k.len(), k.get(0), k.get(1)), (2, &b"a"[..], &b"bc"[..]));
    assert!(Keys::default().is_empty());
    assert_eq!(KeysBuilder::new().finish().len(), 0);
}

/// Encoding 10M Int32 keys (run with `--release -- --ignored`).
#[test]
#[ignore]
fn timing_int32() {
    let n = 10_000_000;
    let arr: ArrayRef = Arc::new(Int32Array::from_iter_values(0..n as i32));
    let enc = KeyEncoder::new(&[(DataType::Int32, false)]).unwrap();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let keys = enc.encode(std::slice::from_ref(&arr)).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(keys.len(), n);
    }
    println!("encode 10M Int32 keys: {:.2} ms", best * 1e3);
    let arr: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..n / 10).map(|i| format!("customer#{i:09}")),
    ));
    let enc = KeyEncoder::new(&[(DataType::Utf8, false)]).unwrap();
    let t = std::time::Instant::now();
    let keys = enc.encode(&[arr]).unwrap();
    println!(
        "encode 1M 18-byte Utf8 keys: {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(keys.len(), n / 10);
}
