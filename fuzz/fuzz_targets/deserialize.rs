//! Deserializers never panic, and an accepted value survives a builder round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wireload_types::{ColumnBuilder, Field, SqlType};

fuzz_target!(|input: &[u8]| {
    let types = [
        "BOOLEAN", "SMALLINT", "INTEGER", "BIGINT", "REAL", "DOUBLE", "DECIMAL(15,2)", "DECIMAL(38,10)",
        "DECIMAL(1,0)", "DATE", "TIMESTAMP", "CHAR(3)", "VARCHAR(5)", "TEXT",
    ];
    for t in types {
        let ty: SqlType = t.parse().unwrap();
        let mut b = ColumnBuilder::new(&ty, true, 1, 0);
        let ok = b.append_fields(std::iter::once(Field::unquoted(input)), b"\\N").is_ok();
        let array = b.finish();
        assert_eq!(array.len(), usize::from(ok));
    }
});
