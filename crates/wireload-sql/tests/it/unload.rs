//! Unload and reload through SQL: COPY ... TO in every format, COPY ... FROM Arrow and
//! Parquet, EXPORT / IMPORT DATABASE with damaged files.

use std::path::Path;

use crate::common::{db, fail, lit, query, run};
use wireload_sql::{Database, StatementOutput};

/// A table with every type, NULLs, empty strings, quotes, newlines, unicode and extremes.
const CREATE_ALL: &str = "CREATE TABLE everything (
    id INT NOT NULL, b BOOLEAN, s SMALLINT, i INTEGER, g BIGINT, r REAL, d DOUBLE PRECISION,
    m DECIMAL(38,4), dt DATE, ts TIMESTAMP, c CHAR(4), v VARCHAR(12), t TEXT)";

const ROWS: &str = "1,true,-32768,-2147483648,-9223372036854775808,1.5,-0.0,-1234567890123456789012345678901234.5678,0001-01-01,1970-01-01 00:00:00,ab,\"x,y\",\"multi\nline \"\"quoted\"\"\"
2,false,32767,2147483647,9223372036854775807,3.4028235e38,1.7976931348623157e308,9999999999999999999999999999999999.9999,9999-12-31,2262-04-11 23:47:16.854775,\"\",\"\",\"\"
3,,,,,,,,,,,,
4,true,0,0,0,NaN,-Infinity,0.0001,2024-02-29,1969-12-31 23:59:59.999999,é,ünïcødé,\"日本語, 🎉\"
";

async fn everything(db: &Database, dir: &Path) {
    let src = dir.join("everything.csv");
    std::fs::write(&src, ROWS).unwrap();
    run(
        db,
        &format!(
            "{CREATE_ALL}; COPY everything FROM {}",
            lit(src.to_str().unwrap())
        ),
    )
    .await
    .unwrap();
}

async fn all_rows(db: &Database, table: &str) -> Vec<crate::common::Row> {
    query(db, &format!("SELECT * FROM {table} ORDER BY id")).await
}

#[tokio::test]
async fn every_format_round_trips_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    everything(&db, dir.path()).await;
    let want = all_rows(&db, "everything").await;
    assert_eq!(want.len(), 4);
    let formats = [
        ("a.csv", "(FORMAT csv)", "(FORMAT csv)"),
        (
            "b.csv",
            "(FORMAT csv, HEADER, DELIMITER '|', NULL '\\N')",
            "(FORMAT csv, HEADER, DELIMITER '|', NULL '\\N')",
        ),
        (
            "c.csv",
            "(FORMAT csv, QUOTE '''', ESCAPE '\\', DELIMITER E'\\t')",
            "(FORMAT csv, QUOTE '''', ESCAPE '\\', DELIMITER E'\\t')",
        ),
        ("d.arrow", "(FORMAT arrow)", "(FORMAT arrow)"),
        (
            "e.arrow",
            "(FORMAT arrow, COMPRESSION zstd)",
            "(FORMAT arrow)",
        ),
        (
            "f.arrow",
            "(FORMAT arrow, COMPRESSION none)",
            "(FORMAT arrow)",
        ),
        ("g.parquet", "(FORMAT parquet)", "(FORMAT parquet)"),
    ];
    for (i, (file, out_opts, in_opts)) in formats.iter().enumerate() {
        let path = lit(dir.path().join(file).to_str().unwrap());
        let out = run(&db, &format!("COPY everything TO {path} WITH {out_opts}"))
            .await
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        match &out[0] {
            StatementOutput::Unloaded(s) => {
                assert_eq!(s.rows, 4, "{file}");
                assert!(s.bytes > 0, "{file}");
                assert_eq!(s.source, "everything");
            }
            other => panic!("{file}: {other:?}"),
        }
        let copy = format!("copy{i}");
        run(
            &db,
            &format!(
                "{}; COPY {copy} FROM {path} WITH {in_opts}",
                CREATE_ALL.replace("everything", &copy)
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(all_rows(&db, &copy).await, want, "{file}");
    }
}

#[tokio::test]
async fn copy_query_and_column_subsets() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    everything(&db, dir.path()).await;
    let csv = dir.path().join("q.csv");
    run(
        &db,
        &format!(
            "COPY (SELECT id, v, id * 2 AS twice FROM everything WHERE id > 1 ORDER BY id) TO {} (HEADER)",
            lit(csv.to_str().unwrap())
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "id,v,twice\n2,\"\",4\n3,,6\n4,ünïcødé,8\n"
    );
    let cols = dir.path().join("cols.csv");
    run(
        &db,
        &format!("COPY everything (v, id) TO {}", lit(cols.to_str().unwrap())),
    )
    .await
    .unwrap();
    let text = std::fs::read_to_string(&cols).unwrap();
    assert!(text.starts_with("\"x,y\",1\n\"\",2\n,3\n"), "{text}");
    assert!(
        fail(
            &db,
            &format!("COPY everything (nope) TO {}", lit(cols.to_str().unwrap()))
        )
        .await
        .contains("\"nope\"")
    );
}

#[tokio::test]
async fn binary_loads_check_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    everything(&db, dir.path()).await;
    let arrow = lit(dir.path().join("e.arrow").to_str().unwrap());
    run(&db, &format!("COPY everything TO {arrow} (FORMAT arrow)"))
        .await
        .unwrap();
    // a narrower table: wrong column count
    run(&db, "CREATE TABLE narrow (id INT)").await.unwrap();
    let msg = fail(&db, &format!("COPY narrow FROM {arrow} (FORMAT arrow)")).await;
    assert!(msg.contains("13 columns"), "{msg}");
    assert!(msg.contains("table \"narrow\" is unchanged"), "{msg}");
    // a NOT NULL column receiving the NULLs of row 3
    run(
        &db,
        &CREATE_ALL
            .replace("everything", "strict")
            .replace("b BOOLEAN", "b BOOLEAN NOT NULL"),
    )
    .await
    .unwrap();
    let msg = fail(&db, &format!("COPY strict FROM {arrow} (FORMAT arrow)")).await;
    assert!(msg.contains("row 3") && msg.contains("NOT NULL"), "{msg}");
    // a shorter VARCHAR
    run(
        &db,
        &CREATE_ALL
            .replace("everything", "short")
            .replace("VARCHAR(12)", "VARCHAR(3)"),
    )
    .await
    .unwrap();
    let msg = fail(&db, &format!("COPY short FROM {arrow} (FORMAT arrow)")).await;
    assert!(msg.contains("row 4") && msg.contains("(v)"), "{msg}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM short").await[0][0].as_deref(),
        Some("0")
    );
    // a wrong type
    run(
        &db,
        &CREATE_ALL
            .replace("everything", "typed")
            .replace("dt DATE", "dt TEXT"),
    )
    .await
    .unwrap();
    let msg = fail(&db, &format!("COPY typed FROM {arrow} (FORMAT arrow)")).await;
    assert!(msg.contains("\"dt\"") && msg.contains("Date32"), "{msg}");
    // a file that is not Arrow
    let junk = dir.path().join("junk.arrow");
    std::fs::write(&junk, b"definitely not arrow").unwrap();
    let msg = fail(
        &db,
        &format!(
            "COPY everything FROM {} (FORMAT arrow)",
            lit(junk.to_str().unwrap())
        ),
    )
    .await;
    assert!(msg.contains("junk.arrow"), "{msg}");
    assert_eq!(all_rows(&db, "everything").await.len(), 4);
}

#[tokio::test]
async fn partitioned_tables_reload_into_their_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(3);
    let src = dir.path().join("kv.csv");
    let text: String = (0..20_000).map(|i| format!("{i},v{}\n", i % 97)).collect();
    std::fs::write(&src, text).unwrap();
    run(
        &db,
        &format!(
            "CREATE TABLE kv (k BIGINT NOT NULL, v TEXT) PARTITION BY HASH (k) PARTITIONS 4;
             COPY kv FROM {}",
            lit(src.to_str().unwrap())
        ),
    )
    .await
    .unwrap();
    let p = lit(dir.path().join("kv.parquet").to_str().unwrap());
    run(
        &db,
        &format!(
            "COPY kv TO {p} (FORMAT parquet);
             CREATE TABLE kv2 (k BIGINT NOT NULL, v TEXT) PARTITION BY HASH (k) PARTITIONS 4;
             COPY kv2 FROM {p} (FORMAT parquet)"
        ),
    )
    .await
    .unwrap();
    let a = db.catalog().table("kv").unwrap().snapshot();
    let b = db.catalog().table("kv2").unwrap().snapshot();
    for (pa, pb) in a.partitions.iter().zip(&b.partitions) {
        assert_eq!(pa.num_rows(), pb.num_rows());
    }
    assert_eq!(
        query(&db, "SELECT sum(k), count(DISTINCT v) FROM kv2").await,
        query(&db, "SELECT sum(k), count(DISTINCT v) FROM kv").await
    );
}

#[tokio::test]
async fn export_and_import_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db1 = db(2);
    everything(&db1, dir.path()).await;
    run(
        &db1,
        "CREATE TABLE \"Mixed Case\" (k INT NOT NULL, v TEXT) PARTITION BY HASH (k) PARTITIONS 3;
         CREATE TABLE empty (x INT)",
    )
    .await
    .unwrap();
    let src = dir.path().join("kv.csv");
    std::fs::write(
        &src,
        (0..1000).map(|i| format!("{i},v{i}\n")).collect::<String>(),
    )
    .unwrap();
    run(
        &db1,
        &format!("COPY \"Mixed Case\" FROM {}", lit(src.to_str().unwrap())),
    )
    .await
    .unwrap();
    let export = dir.path().join("exp");
    let out = run(
        &db1,
        &format!("EXPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    assert!(
        matches!(&out[0], StatementOutput::Done(m) if m.contains("3 tables, 1004 rows")),
        "{out:?}"
    );
    assert!(export.join("manifest.json").is_file());
    assert!(export.join("schema.sql").is_file());
    // no temporary directory left beside it
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty());
    // a second export to the same place is refused
    let msg = fail(
        &db1,
        &format!("EXPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await;
    assert!(msg.contains("not empty"), "{msg}");

    let db2 = db(3);
    run(
        &db2,
        &format!("IMPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    assert_eq!(
        all_rows(&db2, "everything").await,
        all_rows(&db1, "everything").await
    );
    assert_eq!(
        query(&db2, "SELECT count(*), sum(k) FROM \"Mixed Case\"").await,
        query(&db1, "SELECT count(*), sum(k) FROM \"Mixed Case\"").await
    );
    let t = db2.catalog().table("Mixed Case").unwrap();
    assert_eq!(t.snapshot().partitions.len(), 3);
    assert_eq!(
        db2.catalog().table("everything").unwrap().def().schema,
        db1.catalog().table("everything").unwrap().def().schema
    );
    assert_eq!(
        query(&db2, "SELECT count(*) FROM empty").await[0][0].as_deref(),
        Some("0")
    );
    // importing again: the tables exist, nothing changes
    let msg = fail(
        &db2,
        &format!("IMPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await;
    assert!(msg.contains("already exists"), "{msg}");
}

#[tokio::test]
async fn damaged_exports_are_refused_by_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let db1 = db(2);
    everything(&db1, dir.path()).await;
    run(&db1, "CREATE TABLE other (x INT)").await.unwrap();
    let export = dir.path().join("exp");
    run(
        &db1,
        &format!("EXPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    let data: Vec<_> = std::fs::read_dir(&export)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "arrow"))
        .collect();
    let victim = data
        .iter()
        .find(|p| p.to_string_lossy().contains("everything"))
        .unwrap()
        .clone();
    let good = std::fs::read(&victim).unwrap();
    let import = format!("IMPORT DATABASE {}", lit(export.to_str().unwrap()));
    let name = victim.file_name().unwrap().to_string_lossy().to_string();
    // truncated
    std::fs::write(&victim, &good[..good.len() / 2]).unwrap();
    let db2 = db(2);
    let msg = fail(&db2, &import).await;
    assert!(msg.contains(&name) && msg.contains("truncated"), "{msg}");
    assert!(db2.catalog().table_names().is_empty(), "nothing imported");
    // one flipped byte
    let mut flipped = good.clone();
    let at = flipped.len() / 3;
    flipped[at] ^= 0x40;
    std::fs::write(&victim, &flipped).unwrap();
    let msg = fail(&db2, &import).await;
    assert!(msg.contains(&name) && msg.contains("CRC-32"), "{msg}");
    assert!(db2.catalog().table_names().is_empty(), "nothing imported");
    // missing manifest
    std::fs::write(&victim, &good).unwrap();
    let manifest = export.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, &text[..text.len() / 2]).unwrap();
    let msg = fail(&db2, &import).await;
    assert!(
        msg.contains("manifest.json") && msg.contains("damaged"),
        "{msg}"
    );
    std::fs::remove_file(&manifest).unwrap();
    let msg = fail(&db2, &import).await;
    assert!(msg.contains("not a wireload export"), "{msg}");
    assert!(db2.catalog().table_names().is_empty(), "nothing imported");
    // restored, it imports
    std::fs::write(&manifest, &text).unwrap();
    run(&db2, &import).await.unwrap();
    assert_eq!(db2.catalog().table_names(), vec!["everything", "other"]);
}

/// An export written before manifest version 2 (definitions as SQL text only) still imports:
/// its CREATE TABLE and CREATE INDEX statements go through the SQL front end.
#[tokio::test]
async fn imports_version_1_exports() {
    let dir = tempfile::tempdir().unwrap();
    let db1 = db(2);
    let src = dir.path().join("k.csv");
    std::fs::write(
        &src,
        (0..500)
            .map(|i| format!("{i},v{}\n", i % 7))
            .collect::<String>(),
    )
    .unwrap();
    run(
        &db1,
        &format!(
            "CREATE TABLE k (id BIGINT PRIMARY KEY, v TEXT) PARTITION BY HASH (id) PARTITIONS 3;
             COPY k FROM {};
             CREATE INDEX k_v ON k (v) USING HASH",
            lit(src.to_str().unwrap())
        ),
    )
    .await
    .unwrap();
    let export = dir.path().join("exp");
    run(
        &db1,
        &format!("EXPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    // rewrite the manifest as version 1 wrote it
    let path = export.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(m["version"], 2);
    m["version"] = 1.into();
    for t in m["tables"].as_array_mut().unwrap() {
        let t = t.as_object_mut().unwrap();
        assert!(t.remove("definition").is_some());
        assert!(t.remove("index_definitions").is_some());
    }
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let db2 = db(2);
    run(
        &db2,
        &format!("IMPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    let t = db2.catalog().table("k").unwrap();
    assert_eq!(t.snapshot().num_rows(), 500);
    assert_eq!(
        t.def().partitioning,
        db1.catalog().table("k").unwrap().def().partitioning
    );
    let names: Vec<String> = t
        .snapshot()
        .indexes
        .iter()
        .map(|i| i.def.name.clone())
        .collect();
    assert_eq!(names, ["k_pkey", "k_v"]);
    assert_eq!(
        query(&db2, "SELECT count(*) FROM k WHERE v = 'v3'").await,
        query(&db1, "SELECT count(*) FROM k WHERE v = 'v3'").await
    );
}
