//! Deserializers never panic, an accepted value survives a builder round trip, and every
//! SWAR fast path returns exactly what its scalar twin (`deser::scalar`) returns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wireload_types::deser::{self, scalar};
use wireload_types::{ColumnBuilder, Field, SqlType};

fuzz_target!(|input: &[u8]| {
    let dec = |precision, scale| SqlType::Decimal { precision, scale };
    let types = [
        SqlType::Boolean,
        SqlType::SmallInt,
        SqlType::Integer,
        SqlType::BigInt,
        SqlType::Real,
        SqlType::Double,
        dec(15, 2),
        dec(38, 10),
        dec(1, 0),
        SqlType::Date,
        SqlType::Timestamp,
        SqlType::Char(3),
        SqlType::Varchar(Some(5)),
        SqlType::Text,
    ];
    for ty in types {
        let mut b = ColumnBuilder::new(&ty, true, 1, 0);
        let ok = b
            .append_fields(std::iter::once(Field::unquoted(input)), b"\\N")
            .is_ok();
        let array = b.finish();
        assert_eq!(array.len(), usize::from(ok));
    }
    assert_eq!(deser::parse_i16(input), scalar::parse_i16(input));
    assert_eq!(deser::parse_i32(input), scalar::parse_i32(input));
    assert_eq!(deser::parse_i64(input), scalar::parse_i64(input));
    assert_eq!(
        deser::parse_f64(input).map(f64::to_bits),
        scalar::parse_f64(input).map(f64::to_bits)
    );
    assert_eq!(
        deser::parse_f32(input).map(f32::to_bits),
        scalar::parse_f32(input).map(f32::to_bits)
    );
    for (p, s) in [(15, 2), (38, 10), (1, 0), (10, 10), (18, 4)] {
        assert_eq!(
            deser::parse_decimal(input, p, s),
            scalar::parse_decimal(input, p, s)
        );
    }
    assert_eq!(deser::parse_date(input), scalar::parse_date(input));
    assert_eq!(
        deser::parse_timestamp(input),
        scalar::parse_timestamp(input)
    );
});
