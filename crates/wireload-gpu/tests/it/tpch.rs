//! TPC-H at SF 0.01 through the GPU engine (reference passes; the emulated kernels on a
//! slice of every table) equals the CPU loader's load, array for array, into plain tables
//! and into dictionary tables (decoded).

use crate::common;

use std::fmt::Write;
use std::sync::Arc;

use crate::common::column;
use arrow::array::Array;
use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;
use tpchgen::generators::*;
use wireload_gpu::testing::{Emulator, load_into_on, load_into_reference};
use wireload_gpu::{GpuOptions, PassMode};
use wireload_load::{Dialect, LoadControl, LoadOptions, Source, load_into};
use wireload_storage::{Catalog, Compression, Partitioning, Table, TableDef, plain_batch};
use wireload_types::ColumnDef;
use wireload_types::SqlType::{self, BigInt, Char, Date, Integer, Varchar};

/// TPC-H's money columns.
const MONEY: SqlType = SqlType::Decimal {
    precision: 15,
    scale: 2,
};

fn varchar(n: u32) -> SqlType {
    Varchar(Some(n))
}

fn cols(defs: &[(&str, SqlType)]) -> Vec<ColumnDef> {
    defs.iter().map(|&(name, ty)| column(name, ty)).collect()
}

fn text<T: std::fmt::Display>(rows: impl Iterator<Item = T>) -> String {
    let mut s = String::new();
    for r in rows {
        writeln!(s, "{r}").unwrap();
    }
    s
}

/// The 8 tables: name, columns, `.tbl` text.
fn tables(sf: f64) -> Vec<(&'static str, Vec<ColumnDef>, String)> {
    vec![
        (
            "region",
            cols(&[
                ("r_regionkey", Integer),
                ("r_name", Char(25)),
                ("r_comment", varchar(152)),
            ]),
            text(RegionGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "nation",
            cols(&[
                ("n_nationkey", Integer),
                ("n_name", Char(25)),
                ("n_regionkey", Integer),
                ("n_comment", varchar(152)),
            ]),
            text(NationGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "supplier",
            cols(&[
                ("s_suppkey", Integer),
                ("s_name", Char(25)),
                ("s_address", varchar(40)),
                ("s_nationkey", Integer),
                ("s_phone", Char(15)),
                ("s_acctbal", MONEY),
                ("s_comment", varchar(101)),
            ]),
            text(SupplierGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "customer",
            cols(&[
                ("c_custkey", Integer),
                ("c_name", varchar(25)),
                ("c_address", varchar(40)),
                ("c_nationkey", Integer),
                ("c_phone", Char(15)),
                ("c_acctbal", MONEY),
                ("c_mktsegment", Char(10)),
                ("c_comment", varchar(117)),
            ]),
            text(CustomerGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "part",
            cols(&[
                ("p_partkey", Integer),
                ("p_name", varchar(55)),
                ("p_mfgr", Char(25)),
                ("p_brand", Char(10)),
                ("p_type", varchar(25)),
                ("p_size", Integer),
                ("p_container", Char(10)),
                ("p_retailprice", MONEY),
                ("p_comment", varchar(23)),
            ]),
            text(PartGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "partsupp",
            cols(&[
                ("ps_partkey", Integer),
                ("ps_suppkey", Integer),
                ("ps_availqty", Integer),
                ("ps_supplycost", MONEY),
                ("ps_comment", varchar(199)),
            ]),
            text(PartSuppGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "orders",
            cols(&[
                ("o_orderkey", BigInt),
                ("o_custkey", Integer),
                ("o_orderstatus", Char(1)),
                ("o_totalprice", MONEY),
                ("o_orderdate", Date),
                ("o_orderpriority", Char(15)),
                ("o_clerk", Char(15)),
                ("o_shippriority", Integer),
                ("o_comment", varchar(79)),
            ]),
            text(OrderGenerator::new(sf, 1, 1).iter()),
        ),
        (
            "lineitem",
            cols(&[
                ("l_orderkey", BigInt),
                ("l_partkey", Integer),
                ("l_suppkey", Integer),
                ("l_linenumber", Integer),
                ("l_quantity", MONEY),
                ("l_extendedprice", MONEY),
                ("l_discount", MONEY),
                ("l_tax", MONEY),
                ("l_returnflag", Char(1)),
                ("l_linestatus", Char(1)),
                ("l_shipdate", Date),
                ("l_commitdate", Date),
                ("l_receiptdate", Date),
                ("l_shipinstruct", Char(25)),
                ("l_shipmode", Char(10)),
                ("l_comment", varchar(44)),
            ]),
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

/// The table's rows as one batch (dictionary columns decoded).
fn contents(t: &Table) -> RecordBatch {
    let snap = t.snapshot();
    let batches: Vec<_> = snap
        .live_chunks()
        .unwrap()
        .iter()
        .map(|b| plain_batch(b).unwrap())
        .collect();
    concat_batches(&t.def().arrow_schema, &batches).unwrap()
}

/// A new table of `columns`, every column `COMPRESSION dictionary`.
fn dictionary_table(columns: &[ColumnDef]) -> Arc<Table> {
    let schema = wireload_types::TableSchema {
        columns: columns.to_vec(),
    };
    let def = TableDef::new("t", schema, Partitioning::Single)
        .unwrap()
        .with_compression(vec![Compression::Dictionary; columns.len()])
        .unwrap();
    Catalog::default().create_table(def, false).unwrap()
}

/// True when every column of `t` is stored in dictionaries.
fn all_dictionaries(t: &Table) -> bool {
    t.snapshot()
        .stored_as
        .iter()
        .all(|e| *e == wireload_storage::StoredAs::Dictionary)
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
        let cpu = common::table(&schema);
        let opts = LoadOptions {
            dialect: dialect(),
            ..LoadOptions::default()
        };
        load_into(&cpu, &source(&data), &opts, &LoadControl::default()).unwrap();
        let want = contents(&cpu);
        for (partition, mode, dictionaries) in [
            (256 << 10, PassMode::Auto, false),
            (1 << 20, PassMode::Quoted, false),
            (256 << 10, PassMode::Auto, true),
        ] {
            let t = if dictionaries {
                dictionary_table(&schema)
            } else {
                common::table(&schema)
            };
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
            assert_eq!(all_dictionaries(&t), dictionaries, "{name}");
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
        let cpu = common::table(&schema);
        let opts = LoadOptions {
            dialect: dialect(),
            ..LoadOptions::default()
        };
        load_into(&cpu, &source(data), &opts, &LoadControl::default()).unwrap();
        let gopts = GpuOptions {
            partition: 16 << 10,
            chunk: 256,
            ..GpuOptions::default()
        };
        let dev = Arc::new(Emulator::new(64));
        for t in [common::table(&schema), dictionary_table(&schema)] {
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
}
