//! Typed loads of TPC-H SF 0.01 equal what `arrow-csv` reads from the same text, column by column.

use crate::common;

use std::fmt::Write;
use std::io::Cursor;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema};
use tpchgen::generators::*;
use wireload_load::{Dialect, LoadOptions, MergeStrategy};
use wireload_storage::Partitioning;

fn text<T: std::fmt::Display>(rows: impl Iterator<Item = T>) -> String {
    let mut s = String::new();
    for r in rows {
        writeln!(s, "{r}").unwrap();
    }
    s
}

fn tables(sf: f64) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "region",
            "r_regionkey INTEGER, r_name CHAR(25), r_comment VARCHAR(152)",
            text(RegionGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "nation",
            "n_nationkey INTEGER, n_name CHAR(25), n_regionkey INTEGER, n_comment VARCHAR(152)",
            text(NationGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "supplier",
            "s_suppkey INTEGER, s_name CHAR(25), s_address VARCHAR(40), s_nationkey INTEGER, s_phone CHAR(15), s_acctbal DECIMAL(15,2), s_comment VARCHAR(101)",
            text(SupplierGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "customer",
            "c_custkey INTEGER, c_name VARCHAR(25), c_address VARCHAR(40), c_nationkey INTEGER, c_phone CHAR(15), c_acctbal DECIMAL(15,2), c_mktsegment CHAR(10), c_comment VARCHAR(117)",
            text(CustomerGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "part",
            "p_partkey INTEGER, p_name VARCHAR(55), p_mfgr CHAR(25), p_brand CHAR(10), p_type VARCHAR(25), p_size INTEGER, p_container CHAR(10), p_retailprice DECIMAL(15,2), p_comment VARCHAR(23)",
            text(PartGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "partsupp",
            "ps_partkey INTEGER, ps_suppkey INTEGER, ps_availqty INTEGER, ps_supplycost DECIMAL(15,2), ps_comment VARCHAR(199)",
            text(PartSuppGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "orders",
            "o_orderkey BIGINT, o_custkey INTEGER, o_orderstatus CHAR(1), o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority CHAR(15), o_clerk CHAR(15), o_shippriority INTEGER, o_comment VARCHAR(79)",
            text(OrderGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "lineitem",
            "l_orderkey BIGINT, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, l_shipinstruct CHAR(25), l_shipmode CHAR(10), l_comment VARCHAR(44)",
            text(LineItemGenerator::new(sf, 1, 1).iter()),
        ),
    ]
}

#[test]
fn tpch_sf001_typed_loads_equal_arrow_csv() {
    for (name, schema, data) in tables(0.01) {
        let t = common::table(schema, Partitioning::Single);
        let arrow_schema = t.def().arrow_schema.clone();
        // arrow-csv sees the trailing '|' as one more (empty) column
        let mut fields: Vec<Field> = arrow_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("trailing", DataType::Utf8, true));
        let reader = arrow_csv::ReaderBuilder::new(Arc::new(Schema::new(fields)))
            .with_delimiter(b'|')
            .with_header(false)
            .with_batch_size(1 << 20)
            .build(Cursor::new(data.as_bytes()))
            .unwrap();
        let expected: Vec<_> = reader.map(|b| b.unwrap()).collect();
        let expected = arrow::compute::concat_batches(&expected[0].schema(), &expected).unwrap();
        for (merge, chunk, threads) in [
            (MergeStrategy::Chunk, 64 << 10, 2),
            (MergeStrategy::Copy, 1 << 20, 1),
            (MergeStrategy::Insert, 100_000, 3),
        ] {
            let t = common::table(schema, Partitioning::Single);
            let opts = LoadOptions {
                dialect: Dialect {
                    delimiter: b'|',
                    ..Dialect::default()
                },
                chunk_size: Some(chunk),
                threads: Some(threads),
                merge,
                ..LoadOptions::default()
            };
            let report = common::load(&t, data.as_bytes(), &opts).unwrap();
            assert_eq!(report.rows as usize, expected.num_rows(), "{name}");
            let snap = t.snapshot();
            let batches = snap.live_chunks().unwrap();
            let got = arrow::compute::concat_batches(&arrow_schema, &batches).unwrap();
            for c in 0..got.num_columns() {
                let (g, e): (&ArrayRef, &ArrayRef) = (got.column(c), expected.column(c));
                assert_eq!(
                    g.as_ref(),
                    e.as_ref(),
                    "{name} column {} ({merge:?})",
                    arrow_schema.field(c).name()
                );
            }
        }
    }
}
