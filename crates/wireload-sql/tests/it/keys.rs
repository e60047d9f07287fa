//! Primary keys, UNIQUE constraints and CREATE INDEX: validated while loading, atomic on
//! failure, errors naming the key and the lines, kept through EXPORT/IMPORT.

use std::fmt::Write as _;
use std::path::Path;

use crate::common::{db, fail, lit, query, run, srow};
use wireload_sql::Database;

/// Writes `contents` to `name` in `dir` and returns the path as a SQL literal.
fn file(dir: &Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    lit(path.to_str().unwrap())
}

fn count(db_rows: &[crate::common::Row]) -> i64 {
    db_rows[0][0].as_deref().unwrap().parse().unwrap()
}

async fn rows_of(db: &Database, table: &str) -> i64 {
    count(&query(db, &format!("SELECT count(*) FROM {table}")).await)
}

/// `n` rows `i,i*7,s<i>` for i in `from..from+n`.
fn rows(from: i64, n: i64) -> String {
    let mut s = String::new();
    for i in from..from + n {
        writeln!(s, "{i},{},s{i}", i * 7).unwrap();
    }
    s
}

#[tokio::test]
async fn duplicate_across_chunks_fails_atomically_naming_both_lines() {
    for (kind, part, with) in [
        ("ART", "", ""),
        ("HASH", "", ""),
        ("ART", " PARTITION BY HASH (b) PARTITIONS 3", ""),
        ("HASH", " PARTITION BY HASH (b) PARTITIONS 3", ""),
        // merge steps beside chunk processing: the two lines land in different steps
        ("ART", "", ", SCHEDULE interleaved"),
        ("HASH", "", ", SCHEDULE interleaved, THREADS 1"),
        (
            "ART",
            " PARTITION BY HASH (b) PARTITIONS 3",
            ", SCHEDULE interleaved, MERGE copy",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = db(2);
        run(
            &db,
            &format!(
                "CREATE TABLE t (a BIGINT, b INT, s TEXT, PRIMARY KEY (a) USING {kind}){part}"
            ),
        )
        .await
        .unwrap();
        let good = file(dir.path(), "good.csv", &rows(0, 5000));
        run(
            &db,
            &format!("COPY t FROM {good} WITH (CHUNK_SIZE 4096{with})"),
        )
        .await
        .unwrap();
        // line 3 and line 4000 of the new file both have key 20002 (many chunks apart)
        let mut text = rows(20_000, 5000);
        text = text.replacen("23999,", "20002,", 1);
        let bad = file(dir.path(), "bad.csv", &text);
        let err = fail(
            &db,
            &format!("COPY t FROM {bad} WITH (CHUNK_SIZE 4096{with})"),
        )
        .await;
        assert!(
            err.contains("duplicate key value violates unique constraint \"t_pkey\""),
            "{err}"
        );
        assert!(err.contains("key (a)=(20002)"), "{err}");
        assert!(
            err.contains("line 3,") && err.contains("line 4000,"),
            "{kind}{part}{with}: {err}"
        );
        assert_eq!(
            rows_of(&db, "t").await,
            5000,
            "{kind}{part}{with}: the failed load left nothing"
        );
        // a key that is already in the table
        let again = file(dir.path(), "again.csv", &rows(4990, 20));
        let err = fail(&db, &format!("COPY t FROM {again} WITH (FORMAT csv{with})")).await;
        assert!(err.contains("already in the table"), "{err}");
        // the first of keys 4990..5009 already loaded (4990) is on line 1 of the new file
        assert!(
            err.contains("key (a)=(") && err.contains("again.csv: line "),
            "{err}"
        );
        let line: u64 = err
            .split("again.csv: line ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=10).contains(&line), "{err}");
        assert_eq!(rows_of(&db, "t").await, 5000);
        // the index still works for the table as it was, and takes a correct load
        let more = file(dir.path(), "more.csv", &rows(5000, 3000));
        run(
            &db,
            &format!("COPY t FROM {more} WITH (CHUNK_SIZE 4096{with})"),
        )
        .await
        .unwrap();
        assert_eq!(rows_of(&db, "t").await, 8000);
        assert_eq!(
            query(&db, "SELECT b, s FROM t WHERE a = 7777").await,
            vec![srow(&["54439", "s7777"])]
        );
    }
}

#[tokio::test]
async fn duplicate_inside_one_chunk_and_composite_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(
        &db,
        "CREATE TABLE li (o BIGINT, l INT, q TEXT, PRIMARY KEY (o, l))",
    )
    .await
    .unwrap();
    let ok = file(dir.path(), "ok.csv", "1,1,x\n1,2,y\n2,1,z\n");
    run(&db, &format!("COPY li FROM {ok}")).await.unwrap();
    let bad = file(dir.path(), "bad.csv", "3,1,a\n3,2,b\n3,1,c\n");
    let err = fail(&db, &format!("COPY li FROM {bad}")).await;
    assert!(err.contains("key (o, l)=(3, 1)"), "{err}");
    assert!(err.contains("line 1,") && err.contains("line 3,"), "{err}");
    assert_eq!(rows_of(&db, "li").await, 3);
}

#[tokio::test]
async fn null_keys_and_unique_strings() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(
        &db,
        "CREATE TABLE u (id INT PRIMARY KEY, email TEXT, UNIQUE (email) USING HASH)",
    )
    .await
    .unwrap();
    let nul = file(dir.path(), "null.csv", "1,a@x\n2,\n");
    let err = fail(&db, &format!("COPY u FROM {nul}")).await;
    assert!(
        err.contains("null value in column \"email\" violates unique constraint \"u_email_key\""),
        "{err}"
    );
    assert!(err.contains("line 2"), "{err}");
    let dup = file(dir.path(), "dup.csv", "1,a@x\n2,b@x\n3,'a@x'\n4,a@x\n");
    let err = fail(&db, &format!("COPY u FROM {dup}")).await;
    assert!(err.contains("key (email)=('a@x')"), "{err}");
    // the primary key column is NOT NULL
    let nul_pk = file(dir.path(), "nullpk.csv", ",a\n");
    let err = fail(&db, &format!("COPY u FROM {nul_pk}")).await;
    assert!(err.contains("line 1"), "{err}");
    assert_eq!(rows_of(&db, "u").await, 0);
}

#[tokio::test]
async fn create_index_on_loaded_table_and_drop_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(&db, "CREATE TABLE t (a INT, b INT, s TEXT)")
        .await
        .unwrap();
    let f = file(dir.path(), "t.csv", &(rows(0, 3000) + &rows(0, 10)));
    run(&db, &format!("COPY t FROM {f} WITH (CHUNK_SIZE 4096)"))
        .await
        .unwrap();
    let err = fail(&db, "CREATE UNIQUE INDEX t_a ON t (a)").await;
    assert!(
        err.contains("could not create unique index \"t_a\""),
        "{err}"
    );
    assert!(err.contains("key (a)=("), "{err}");
    // a non-unique index takes the duplicates; a later load maintains it
    run(&db, "CREATE INDEX t_a ON t USING HASH (a)")
        .await
        .unwrap();
    run(&db, "CREATE INDEX ON t (s, b) USING ART")
        .await
        .unwrap();
    let err = fail(&db, "CREATE INDEX t_a ON t (b)").await;
    assert!(err.contains("already exists"), "{err}");
    run(&db, "CREATE INDEX IF NOT EXISTS t_a ON t (b)")
        .await
        .unwrap();
    let g = file(dir.path(), "g.csv", &rows(5, 2));
    run(&db, &format!("COPY t FROM {g}")).await.unwrap();
    assert_eq!(
        query(&db, "SELECT count(*) FROM t WHERE a = 5").await,
        vec![srow(&["3"])]
    );
    assert_eq!(
        query(
            &db,
            "SELECT count(*) FROM t WHERE s = 's2999' AND b = 20993"
        )
        .await,
        vec![srow(&["1"])]
    );
    run(&db, "DROP INDEX t_a, t_s_b_idx").await.unwrap();
    let err = fail(&db, "DROP INDEX t_a").await;
    assert!(err.contains("does not exist"), "{err}");
    run(&db, "DROP INDEX IF EXISTS t_a").await.unwrap();
    // a constraint's index cannot be dropped
    run(&db, "CREATE TABLE k (a INT PRIMARY KEY)")
        .await
        .unwrap();
    let err = fail(&db, "DROP INDEX k_pkey").await;
    assert!(err.contains("constraint"), "{err}");
    // index names are unique in the database
    let err = fail(
        &db,
        "CREATE TABLE k2 (a INT, CONSTRAINT k_pkey PRIMARY KEY (a))",
    )
    .await;
    assert!(err.contains("already exists"), "{err}");
}

#[tokio::test]
async fn keys_survive_export_and_import_and_binary_loads_check_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(
        &db,
        "CREATE TABLE t (a INT, b INT, s TEXT, PRIMARY KEY (a) USING HASH) PARTITION BY HASH (a) PARTITIONS 2;
         CREATE INDEX t_s ON t (s)",
    )
    .await
    .unwrap();
    let f = file(dir.path(), "t.csv", &rows(0, 2000));
    run(&db, &format!("COPY t FROM {f}")).await.unwrap();
    let arrow = lit(dir.path().join("t.arrow").to_str().unwrap());
    run(&db, &format!("COPY t TO {arrow} WITH (FORMAT arrow)"))
        .await
        .unwrap();
    // loading the same rows again from Arrow violates the key
    let err = fail(&db, &format!("COPY t FROM {arrow} WITH (FORMAT arrow)")).await;
    assert!(err.contains("duplicate key value"), "{err}");
    assert!(err.contains("already in the table"), "{err}");
    assert_eq!(rows_of(&db, "t").await, 2000);
    let export = lit(dir.path().join("exp").to_str().unwrap());
    run(&db, &format!("EXPORT DATABASE {export}"))
        .await
        .unwrap();
    let schema = std::fs::read_to_string(dir.path().join("exp/schema.sql")).unwrap();
    assert!(
        schema.contains("PRIMARY KEY (\"a\") USING HASH"),
        "{schema}"
    );
    assert!(
        schema.contains("CREATE INDEX \"t_s\" ON \"t\" (\"s\") USING ART"),
        "{schema}"
    );
    let db2 = crate::common::db(2);
    run(&db2, &format!("IMPORT DATABASE {export}"))
        .await
        .unwrap();
    assert_eq!(rows_of(&db2, "t").await, 2000);
    let err = fail(&db2, &format!("COPY t FROM {arrow} WITH (FORMAT arrow)")).await;
    assert!(err.contains("duplicate key value"), "{err}");
    let err = fail(&db2, "DROP INDEX t_pkey").await;
    assert!(err.contains("constraint"), "{err}");
    run(&db2, "DROP INDEX t_s").await.unwrap();
}
