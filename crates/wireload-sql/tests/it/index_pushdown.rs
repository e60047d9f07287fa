//! Index-backed filter pushdown: every query gives the same rows with and without it, point
//! lookups show an `IndexScanExec` in EXPLAIN (whose lookups run only when the plan runs:
//! EXPLAIN ANALYZE shows the rows found), and an index scan reads one snapshot.
//!
//! Each table is queried under three names: its own (default pushdown), `<t>_idx` (an index
//! scan whenever an index applies, however many rows it selects) and `<t>_scan` (no
//! pushdown: the whole snapshot, filtered by DataFusion).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::common::{Row, db, lit, query, rows_of, run};
use wireload_sql::{Database, SnapshotTable};
use wireload_storage::{IndexDef, IndexKind, Partitioning, TableDef};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `lo..hi`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() as usize % items.len()]
    }
}

const WORDS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "b",
    "it's",
    "m",
    "mango",
    "z",
    "zz",
    "\u{e9}t\u{e9}",
    "A",
];

/// Writes `text` to `name` in `dir`; returns the path as a SQL literal.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    lit(path.to_str().unwrap())
}

/// CSV of `t (a, b, s)`: a in 0..50 (keys a*1000+b, distinct (a, b)), s a word or NULL.
fn t_rows(rng: &mut Rng, a_range: std::ops::Range<i64>, b_range: std::ops::Range<i64>) -> String {
    let mut out = String::new();
    for a in a_range {
        for b in b_range.clone() {
            if rng.int(0, 10) < 3 {
                continue;
            }
            let s = match rng.int(0, 8) {
                0 => String::new(),
                _ => format!("\"{}\"", rng.pick(WORDS).replace('"', "\"\"")),
            };
            writeln!(out, "{a},{b},{s}").unwrap();
        }
    }
    out
}

/// CSV of `u (id, s, n)`: distinct non-NULL s.
fn u_rows(n: i64) -> String {
    (0..n)
        .map(|i| format!("{i},w{:04},{}\n", (i * 7919) % n, i % 13))
        .collect()
}

/// CSV of `h (a, v)`.
fn h_rows(n: i64) -> String {
    (0..n)
        .map(|i| format!("{},v{}\n", i * 3 - 600, i % 17))
        .collect()
}

/// Registers `<name>_idx` and `<name>_scan` for table `name`.
fn register_variants(db: &Database, name: &str) {
    let table = db.catalog().table(name).expect("the table exists");
    db.session()
        .register_table(
            format!("{name}_idx"),
            Arc::new(SnapshotTable::new(Arc::clone(&table)).with_index_fraction(1.0)),
        )
        .unwrap();
    db.session()
        .register_table(
            format!("{name}_scan"),
            Arc::new(SnapshotTable::new(table).without_index_pushdown()),
        )
        .unwrap();
}

/// The EXPLAIN text of `sql`.
async fn explain(db: &Database, sql: &str) -> String {
    query(db, &format!("EXPLAIN {sql}"))
        .await
        .iter()
        .flatten()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tables t, u, h made with SQL DDL, loaded in two COPYs each (several chunks).
async fn setup_sql(db: &Database, dir: &Path) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let t1 = file(dir, "t1.csv", &t_rows(&mut rng, 0..30, 0..40));
    let t2 = file(dir, "t2.csv", &t_rows(&mut rng, 30..50, 0..40));
    let u = file(dir, "u.csv", &u_rows(1500));
    let h = file(dir, "h.csv", &h_rows(1200));
    run(
        db,
        &format!(
            "CREATE TABLE t (a INT, b INT, s TEXT, PRIMARY KEY (a, b));
             CREATE INDEX t_s ON t (s);
             COPY t FROM {t1} WITH (CHUNK_SIZE 4096);
             COPY t FROM {t2} WITH (CHUNK_SIZE 4096);
             CREATE TABLE u (id INT NOT NULL, s TEXT NOT NULL, n INT, UNIQUE (s));
             COPY u FROM {u} WITH (CHUNK_SIZE 4096);
             CREATE TABLE h (a INT, v TEXT, PRIMARY KEY (a) USING HASH) PARTITION BY HASH (a) PARTITIONS 4;
             COPY h FROM {h} WITH (CHUNK_SIZE 4096)"
        ),
    )
    .await
    .unwrap();
}

/// The same tables made through the catalog API (no SQL DDL for keys needed).
async fn setup_catalog(db: &Database, dir: &Path) {
    let ix = |name: &str, columns: &[usize], unique: bool, kind: IndexKind| IndexDef {
        name: name.into(),
        columns: columns.to_vec(),
        unique,
        primary: unique && name.ends_with("pkey"),
        kind,
    };
    let table = |name: &str, cols: &str, partitioning, indexes: Vec<IndexDef>| {
        let def = TableDef::new(
            name,
            wireload_sql::parse_columns(cols).unwrap(),
            partitioning,
        )
        .unwrap()
        .with_indexes(indexes)
        .unwrap();
        db.catalog().create_table(def, false).unwrap();
    };
    table(
        "t",
        "a INT NOT NULL, b INT NOT NULL, s TEXT",
        Partitioning::Single,
        vec![
            ix("t_pkey", &[0, 1], true, IndexKind::Art),
            ix("t_s", &[2], false, IndexKind::Art),
        ],
    );
    table(
        "u",
        "id INT NOT NULL, s TEXT NOT NULL, n INT",
        Partitioning::Single,
        vec![ix("u_s_key", &[1], true, IndexKind::Art)],
    );
    table(
        "h",
        "a INT NOT NULL, v TEXT",
        Partitioning::Hash {
            column: 0,
            count: 4,
        },
        vec![ix("h_pkey", &[0], true, IndexKind::Hash)],
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let t1 = file(dir, "t1.csv", &t_rows(&mut rng, 0..30, 0..40));
    let t2 = file(dir, "t2.csv", &t_rows(&mut rng, 30..50, 0..40));
    let u = file(dir, "u.csv", &u_rows(1500));
    let h = file(dir, "h.csv", &h_rows(1200));
    run(
        db,
        &format!(
            "COPY t FROM {t1} WITH (CHUNK_SIZE 4096);
             COPY t FROM {t2} WITH (CHUNK_SIZE 4096);
             COPY u FROM {u} WITH (CHUNK_SIZE 4096);
             COPY h FROM {h} WITH (CHUNK_SIZE 4096)"
        ),
    )
    .await
    .unwrap();
}

/// A random predicate on table `t (a, b, s)`.
fn t_predicate(rng: &mut Rng) -> String {
    let a = |rng: &mut Rng| rng.int(-5, 55);
    let b = |rng: &mut Rng| rng.int(-3, 43);
    let s = |rng: &mut Rng| lit(rng.pick(WORDS));
    let list = |rng: &mut Rng, f: &dyn Fn(&mut Rng) -> String| {
        let n = rng.int(1, 6);
        (0..n).map(|_| f(rng)).collect::<Vec<_>>().join(", ")
    };
    match rng.int(0, 30) {
        0 => format!("a = {}", a(rng)),
        1 => format!("a = {} AND b = {}", a(rng), b(rng)),
        2 => format!("b = {} AND a = {}", b(rng), a(rng)),
        3 => format!("b = {}", b(rng)),
        4 => format!("a IN ({})", list(rng, &|r| a(r).to_string())),
        5 => format!(
            "a IN ({}) AND b IN ({})",
            list(rng, &|r| a(r).to_string()),
            list(rng, &|r| b(r).to_string())
        ),
        6 => format!("a BETWEEN {} AND {}", a(rng), a(rng)),
        7 => format!("a < {}", a(rng)),
        8 => format!("a >= {} AND a <= {}", a(rng), a(rng)),
        9 => format!("{} > a", a(rng)),
        10 => format!("a = {} AND b > {}", a(rng), b(rng)),
        11 => format!("a = {} AND b BETWEEN {} AND {}", a(rng), b(rng), b(rng)),
        12 => format!("a = {}.5", a(rng)),
        13 => format!("a < {}.5", a(rng)),
        14 => format!("a > {}.5 AND a <= {}", a(rng), a(rng)),
        15 => [
            "a = 10000000000000",
            "a < 10000000000000",
            "a > -10000000000000",
            "a > 10000000000000",
        ][rng.int(0, 4) as usize]
            .to_string(),
        16 => [
            "a = NULL",
            "a IN (1, NULL)",
            "s = NULL",
            "a = 1 AND b = NULL",
        ][rng.int(0, 4) as usize]
            .to_string(),
        17 => format!("s = {}", s(rng)),
        18 => format!("s IN ({})", list(rng, &s)),
        19 => format!("s > {}", s(rng)),
        20 => format!("s < {}", s(rng)),
        21 => format!("s BETWEEN {} AND {}", s(rng), s(rng)),
        22 => format!("a = {} OR a = {}", a(rng), a(rng)),
        23 => format!("CAST(a AS BIGINT) = {}", a(rng)),
        24 => format!("a = {} AND s = {}", a(rng), s(rng)),
        25 => format!("a + 0 = {}", a(rng)),
        26 => format!("a = {} AND b = {} AND s IS NULL", a(rng), b(rng)),
        27 => format!(
            "a IN ({}) AND b < {}",
            list(rng, &|r| a(r).to_string()),
            b(rng)
        ),
        28 => format!("a = {} AND (b = {} OR b = {})", a(rng), b(rng), b(rng)),
        _ => format!("a > {} AND a < {} AND b >= {}", a(rng), a(rng), b(rng)),
    }
}

/// A random predicate on table `u (id, s, n)`.
fn u_predicate(rng: &mut Rng) -> String {
    let s = |rng: &mut Rng| lit(&format!("w{:04}", rng.int(-5, 1510)));
    match rng.int(0, 6) {
        0 => format!("s = {}", s(rng)),
        1 => format!("s IN ({}, {}, {})", s(rng), s(rng), s(rng)),
        2 => format!("s BETWEEN {} AND {}", s(rng), s(rng)),
        3 => format!("s > {} AND s < {}", s(rng), s(rng)),
        4 => format!("s = {} AND n = {}", s(rng), rng.int(0, 13)),
        _ => format!("id = {}", rng.int(0, 1500)),
    }
}

/// A random predicate on table `h (a, v)`.
fn h_predicate(rng: &mut Rng) -> String {
    let a = |rng: &mut Rng| rng.int(-700, 3000);
    match rng.int(0, 5) {
        0 => format!("a = {}", a(rng)),
        1 => format!("a IN ({}, {}, {})", a(rng), a(rng), a(rng)),
        2 => format!("a < {}", a(rng)),
        3 => format!("a = {} AND v = 'v{}'", a(rng), rng.int(0, 17)),
        _ => format!("CAST(a AS DOUBLE) = {}.5", a(rng)),
    }
}

/// Sorted rows of `SELECT * FROM {table} WHERE {pred}`.
async fn rows(db: &Database, table: &str, pred: &str) -> Vec<Row> {
    let mut r = query(db, &format!("SELECT * FROM {table} WHERE {pred}")).await;
    r.sort();
    r
}

/// Runs `count` random predicates on `table` under its three names; returns how many the
/// `_idx` variant answered with an index scan.
async fn compare(
    db: &Database,
    table: &str,
    count: usize,
    seed: u64,
    predicate: fn(&mut Rng) -> String,
) -> usize {
    let mut rng = Rng(seed);
    let mut index_scans = 0;
    for _ in 0..count {
        let pred = predicate(&mut rng);
        let expected = rows(db, &format!("{table}_scan"), &pred).await;
        let plain = rows(db, table, &pred).await;
        let indexed = rows(db, &format!("{table}_idx"), &pred).await;
        for (got, how) in [(&plain, "default pushdown"), (&indexed, "index scan")] {
            if *got != expected {
                let missing: Vec<_> = expected.iter().filter(|r| !got.contains(r)).collect();
                let extra: Vec<_> = got.iter().filter(|r| !expected.contains(r)).collect();
                panic!(
                    "{table} WHERE {pred}: {how} gave {} rows, the full scan {}\n\
                     missing (first 5): {:?}\nextra (first 5): {:?}",
                    got.len(),
                    expected.len(),
                    &missing[..missing.len().min(5)],
                    &extra[..extra.len().min(5)]
                );
            }
        }
        let plan = explain(db, &format!("SELECT * FROM {table}_idx WHERE {pred}")).await;
        if plan.contains("IndexScanExec") {
            index_scans += 1;
        }
    }
    index_scans
}

async fn check_same_results(db: &Database) {
    for t in ["t", "u", "h"] {
        register_variants(db, t);
    }
    let t = compare(db, "t", 400, 1, t_predicate).await;
    assert!(t > 200, "only {t} of 400 predicates on t used an index");
    let u = compare(db, "u", 80, 2, u_predicate).await;
    assert!(u > 40, "only {u} of 80 predicates on u used an index");
    let h = compare(db, "h", 80, 3, h_predicate).await;
    assert!(h > 30, "only {h} of 80 predicates on h used an index");
}

async fn check_explain(db: &Database) {
    let point = explain(db, "SELECT * FROM t WHERE a = 7 AND b = 3").await;
    assert!(
        point.contains("IndexScanExec: table=t, index=")
            && point.contains("(ART), keys: a = 7 AND b = 3, version="),
        "EXPLAIN shows the plan without running the lookups: {point}"
    );
    let hash = explain(db, "ANALYZE SELECT v FROM h WHERE a = 3").await;
    assert!(
        hash.contains("IndexScanExec: table=h, index=")
            && hash.contains("(HASH), keys: a = 3, rows=1")
            && hash.contains("index_rows=1"),
        "{hash}"
    );
    let list = explain(
        db,
        "ANALYZE SELECT * FROM u WHERE s IN ('w0001', 'w0002', 'nope')",
    )
    .await;
    assert!(
        list.contains("keys: s IN ('nope', 'w0001', 'w0002'), rows=2"),
        "{list}"
    );
    let nothing = explain(db, "ANALYZE SELECT * FROM t WHERE a = 7.5").await;
    assert!(nothing.contains("rows=0"), "{nothing}");
    for unindexed in [
        "SELECT * FROM t WHERE b = 3",
        "SELECT * FROM t WHERE a + 0 = 7",
        "SELECT * FROM h WHERE a < 3",
    ] {
        let plan = explain(db, unindexed).await;
        assert!(
            !plan.contains("IndexScanExec") && plan.contains("SnapshotScanExec"),
            "{unindexed}: {plan}"
        );
    }
    let tree = explain(db, "FORMAT TREE SELECT * FROM h WHERE a = 3").await;
    assert!(
        tree.contains("IndexScanExec") && tree.contains("keys: a = 3"),
        "{tree}"
    );
    let verbose = explain(db, "VERBOSE SELECT * FROM h WHERE a = 3").await;
    assert!(
        verbose.contains("(HASH), keys: a = 3, version="),
        "{verbose}"
    );
    // an index scan that would select more than a quarter of the rows reads the whole
    // snapshot instead: decided when it runs
    let wide = explain(db, "SELECT * FROM t WHERE a >= 0").await;
    assert!(wide.contains("IndexScanExec"), "{wide}");
    let ran = explain(db, "ANALYZE SELECT * FROM t WHERE a >= 0").await;
    assert!(
        ran.contains("more rows than an index scan reads") && ran.contains("index_fallbacks=1"),
        "{ran}"
    );
    // the scan without pushdown never uses an index
    let off = explain(db, "SELECT * FROM t_scan WHERE a = 7 AND b = 3").await;
    assert!(!off.contains("IndexScanExec"), "{off}");
}

/// True when some index scan of `plan` has run its lookups.
fn probed(plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> bool {
    if let Some(scan) = plan.downcast_ref::<wireload_sql::SnapshotScanExec>() {
        return scan.index_probed();
    }
    plan.children().into_iter().any(probed)
}

/// A plan made before a COPY reads the snapshot it was planned on: the index scan's rows
/// and chunks are that version's.
async fn check_snapshot(db: &Database, dir: &Path) {
    let before = query(db, "SELECT count(*) FROM t WHERE a = 7").await;
    let sql = "SELECT a, b FROM t WHERE a = 7 ORDER BY b";
    let plan = db
        .session()
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    assert!(shown.contains("IndexScanExec"), "{shown}");
    assert!(!probed(&plan), "planning runs no index lookup");
    let more = file(
        dir,
        "more.csv",
        &(100..110)
            .map(|b| format!("7,{b},new\n"))
            .collect::<String>(),
    );
    run(db, &format!("COPY t FROM {more}")).await.unwrap();
    let old = datafusion::physical_plan::collect(Arc::clone(&plan), db.session().task_ctx())
        .await
        .unwrap();
    assert!(probed(&plan), "running the plan ran the lookups");
    let old = rows_of(&old);
    assert_eq!(old.len().to_string(), before[0][0].clone().unwrap());
    assert!(
        old.iter()
            .all(|r| r[1].as_deref().unwrap().parse::<i64>().unwrap() < 100)
    );
    let new = query(db, sql).await;
    assert_eq!(new.len(), old.len() + 10);
    assert_eq!(new[..old.len()], old[..]);
    assert_eq!(
        query(db, "SELECT s FROM t WHERE a = 7 AND b = 105").await,
        vec![vec![Some("new".to_string())]]
    );
}

#[tokio::test]
async fn same_rows_with_and_without_pushdown_sql_ddl() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(3);
    setup_sql(&db, dir.path()).await;
    check_same_results(&db).await;
}

#[tokio::test]
async fn same_rows_with_and_without_pushdown_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(3);
    setup_catalog(&db, dir.path()).await;
    check_same_results(&db).await;
}

#[tokio::test]
async fn explain_shows_index_scans_sql_ddl() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    setup_sql(&db, dir.path()).await;
    register_variants(&db, "t");
    check_explain(&db).await;
}

#[tokio::test]
async fn explain_shows_index_scans_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    setup_catalog(&db, dir.path()).await;
    register_variants(&db, "t");
    check_explain(&db).await;
}

#[tokio::test]
async fn index_scan_reads_its_snapshot_sql_ddl() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    setup_sql(&db, dir.path()).await;
    check_snapshot(&db, dir.path()).await;
}

#[tokio::test]
async fn index_scan_reads_its_snapshot_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    setup_catalog(&db, dir.path()).await;
    check_snapshot(&db, dir.path()).await;
}

#[tokio::test]
async fn limits_projections_and_small_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    setup_catalog(&db, dir.path()).await;
    register_variants(&db, "t");
    run(&db, "SET datafusion.execution.batch_size = 3")
        .await
        .unwrap();
    for pred in ["a IN (1, 2, 3, 40)", "a = 9 AND b > 4", "s = 'abc'"] {
        for table in ["t_idx", "t_scan"] {
            let plan = explain(&db, &format!("SELECT b FROM {table} WHERE {pred}")).await;
            assert_eq!(table == "t_idx", plan.contains("IndexScanExec"), "{plan}");
        }
        let all = rows(&db, "t_scan", pred).await;
        assert_eq!(rows(&db, "t_idx", pred).await, all, "{pred}");
        let b = query(
            &db,
            &format!("SELECT b, a FROM t_idx WHERE {pred} ORDER BY a, b"),
        )
        .await;
        assert_eq!(b.len(), all.len());
        let limited = query(
            &db,
            &format!("SELECT count(*) FROM (SELECT a FROM t_idx WHERE {pred} LIMIT 5)"),
        )
        .await;
        assert_eq!(
            limited[0][0].as_deref(),
            Some(all.len().min(5).to_string().as_str())
        );
        let counted = query(&db, &format!("SELECT count(*) FROM t_idx WHERE {pred}")).await;
        assert_eq!(
            counted[0][0].as_deref(),
            Some(all.len().to_string().as_str())
        );
    }
}

/// Pushdown follows the indexes of the snapshot: one created after the load is used, a
/// dropped one no longer.
#[tokio::test]
async fn created_and_dropped_indexes_sql_ddl() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    setup_sql(&db, dir.path()).await;
    let by_s = "SELECT * FROM t WHERE s = 'abc'";
    let before = rows(&db, "t", "s = 'abc'").await;
    assert!(
        explain(&db, by_s)
            .await
            .contains("index=t_s (ART), keys: s = 'abc'")
    );
    run(&db, "DROP INDEX t_s").await.unwrap();
    let plan = explain(&db, by_s).await;
    assert!(!plan.contains("IndexScanExec"), "{plan}");
    assert_eq!(rows(&db, "t", "s = 'abc'").await, before);

    let by_n = "SELECT * FROM u WHERE n = 3";
    assert!(!explain(&db, by_n).await.contains("IndexScanExec"));
    let before = rows(&db, "u", "n = 3").await;
    run(&db, "CREATE INDEX u_n ON u (n) USING HASH")
        .await
        .unwrap();
    let plan = explain(&db, by_n).await;
    assert!(plan.contains("index=u_n (HASH), keys: n = 3"), "{plan}");
    assert_eq!(rows(&db, "u", "n = 3").await, before);
    assert_eq!(before.len(), 116);
}
