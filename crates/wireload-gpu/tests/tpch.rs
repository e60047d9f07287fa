//! TPC-H at SF 0.01 through the GPU engine (reference passes; the emulated kernels on a
//! slice of every table) equals the CPU loader's load, array for array.

mod common;

use std::fmt::Write;
use std::sync::Arc;

use arrow::array::Array;
use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;
use tpchgen::generators::*;
use wireload_gpu::{Emulator, GpuOptions, PassMode, load_into_on, load_into_reference};
use wireload_load::{Dialect, LoadControl, LoadOptions, Source, load_into};
use wireload_storage::Table;

fn text<T: std::fmt::Display>(rows: impl Iterator<Item = T>) -> String {
    let mut s = String::new();
    for r in rows {
        writeln!(s, "{r}").unwrap();
    }
    s
}

/// The 8 tables: name, columns, `.tbl` text.
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

fn dialect() -> Dialect {
    Dialect {
        delimiter: b'|',
        ..Dialect::default()
    }
}

fn source(data: &str) -> Source {
    Source::Bytes {
        name: "t.tbl".into(),
        data: Arc::from(data.as_bytes().to_vec()),
    }
}

/// The table's rows as one batch.
fn contents(t: &Table) -> RecordBatch {
    let snap = t.snapshot();
    let batches: Vec<_> = snap.chunks().cloned().collect();
    concat_batches(&t.def().arrow_schema, &batches).unwrap()
}

/// Fails with the first column that differs.
fn assert_same(name: &str, got: &RecordBatch, want: &RecordBatch) {
    assert_eq!(got.num_rows(), want.num_rows(), "{name}: rows");
    for c in 0..want.num_columns() {
        let (g, w) = (got.column(c), want.column(c));
        assert_eq!(g.as_ref(), w.as_ref(), "{name}: column {c}");
        assert_eq!(g.null_count(), 0, "{name}: column {c} has no NULLs");
    }
}

#[test]
fn tpch_through_the_reference_passes_equals_the_cpu_loader() {
    for (name, schema, data) in tables(0.01) {
        let cpu = common::table(schema);
        let opts = LoadOptions {
            dialect: dialect(),
            ..LoadOptions::default()
        };
        load_into(&cpu, &source(&data), &opts, &LoadControl::default()).unwrap();
        let want = contents(&cpu);
        for (partition, mode) in [(256 << 10, PassMode::Auto), (1 << 20, PassMode::Quoted)] {
            let t = common::table(schema);
            let gopts = GpuOptions {
                partition,
                mode,
                ..GpuOptions::default()
            };
            let report = load_into_reference(
                &t,
                &source(&data),
                &dialect(),
                &gopts,
                &LoadControl::default(),
            )
            .unwrap();
            assert_eq!(report.cpu, 0, "{name}: no partition went to the CPU loader");
            assert_eq!(report.fallbacks, 0, "{name}: TPC-H has only fast shapes");
            assert_same(name, &contents(&t), &want);
        }
    }
}

#[test]
fn tpch_through_the_emulated_kernels_equals_the_cpu_loader() {
    for (name, schema, data) in tables(0.01) {
        // the first 300 records of each table (the emulator runs a thread per fiber)
        let end = data
            .match_indices('\n')
            .nth(299)
            .map_or(data.len(), |(i, _)| i + 1);
        let data = &data[..end];
        let cpu = common::table(schema);
        let opts = LoadOptions {
            dialect: dialect(),
            ..LoadOptions::default()
        };
        load_into(&cpu, &source(data), &opts, &LoadControl::default()).unwrap();
        let t = common::table(schema);
        let gopts = GpuOptions {
            partition: 16 << 10,
            chunk: 256,
            ..GpuOptions::default()
        };
        let dev = Arc::new(Emulator::new(64));
        let report = load_into_on(
            &dev,
            &t,
            &source(data),
            &dialect(),
            &gopts,
            &LoadControl::default(),
        )
        .unwrap();
        assert_eq!((report.cpu, report.quoted), (0, 0), "{name}");
        assert_same(name, &contents(&t), &contents(&cpu));
    }
}
