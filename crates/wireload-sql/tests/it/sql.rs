//! SQL behaviour end to end: CREATE, COPY with every option, queries, DROP, errors.

use std::path::{Path, PathBuf};

use crate::common::{db, fail, lit, query, row, run, srow};
use wireload_sql::{SqlError, SqlState, StatementOutput};

/// Writes `contents` to `name` in `dir` and returns the path as a SQL literal.
fn file(dir: &Path, name: &str, contents: &str) -> String {
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    lit(path.to_str().unwrap())
}

fn count(rows: &[crate::common::Row]) -> i64 {
    rows[0][0].as_deref().unwrap().parse().unwrap()
}

#[tokio::test]
async fn outputs_one_result_per_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    let f = file(dir.path(), "a.csv", "1\n2\n3\n");
    let out = run(
        &db,
        &format!("CREATE TABLE a (x BIGINT);\n COPY a FROM {f};\n-- a comment; with a semicolon\nSELECT sum(x) AS s FROM a;"),
    )
    .await
    .unwrap();
    assert_eq!(out.len(), 3);
    assert!(matches!(&out[0], StatementOutput::Done(m) if m == "CREATE TABLE"));
    match &out[1] {
        StatementOutput::Loaded(report) => {
            assert_eq!(report.rows, 3);
            assert_eq!(report.table, "a");
            assert_eq!(report.bytes, 6);
        }
        other => panic!("{other:?}"),
    }
    match &out[2] {
        StatementOutput::Rows { schema, batches } => {
            assert_eq!(schema.field(0).name(), "s");
            assert_eq!(crate::common::rows_of(batches), vec![srow(&["6"])]);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn nulls_follow_postgresql_copy() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    // unquoted empty field: NULL; quoted empty: empty string; NULL 'NA' changes the NULL string
    let f = file(dir.path(), "n.csv", "1,,\"\"\n2,NA,\"NA\"\n");
    run(
        &db,
        &format!("CREATE TABLE d (i INT, a TEXT, b TEXT); COPY d FROM {f}"),
    )
    .await
    .unwrap();
    assert_eq!(
        query(&db, "SELECT a, b FROM d ORDER BY i").await,
        vec![row(&[None, Some("")]), row(&[Some("NA"), Some("NA")])]
    );
    run(
        &db,
        &format!("CREATE TABLE n (i INT, a TEXT, b TEXT); COPY n FROM {f} WITH (NULL 'NA')"),
    )
    .await
    .unwrap();
    assert_eq!(
        query(&db, "SELECT a, b FROM n ORDER BY i").await,
        vec![row(&[Some(""), Some("")]), row(&[None, Some("NA")])]
    );
    assert_eq!(
        query(&db, "SELECT count(*) FROM n WHERE a IS NULL").await,
        vec![srow(&["1"])]
    );
}

#[tokio::test]
async fn not_null_columns_reject_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(1);
    let f = file(dir.path(), "nn.csv", "1,a\n,b\n");
    run(&db, "CREATE TABLE nn (id INT NOT NULL, s TEXT)")
        .await
        .unwrap();
    let msg = fail(&db, &format!("COPY nn FROM {f}")).await;
    assert!(
        msg.contains("line 2") && msg.contains("id") && msg.contains("unchanged"),
        "{msg}"
    );
}

#[tokio::test]
async fn delimiter_header_quote_escape_options() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(&db, "CREATE TABLE t (a INT, b TEXT)").await.unwrap();
    let cases = [
        ("pipe.csv", "a|b\n1|x,y\n", "WITH (DELIMITER '|', HEADER)"),
        ("tab.csv", "1\tx,y\n", "WITH (DELIMITER E'\\t')"),
        (
            "semi.csv",
            "1;x,y\n",
            "(FORMAT CSV, DELIMITER ';', HEADER off)",
        ),
        ("single.csv", "1,'x,y'\n", "WITH (QUOTE '''')"),
        ("backslash.csv", "1,\"x,y\"\n", "WITH (ESCAPE '\\')"),
        ("legacy.csv", "a|b\n1|x,y\n", "DELIMITER '|' CSV HEADER"),
    ];
    for (name, contents, opts) in cases {
        let f = file(dir.path(), name, contents);
        run(&db, &format!("COPY t FROM {f} {opts}"))
            .await
            .unwrap_or_else(|e| panic!("{opts}: {e}"));
        assert_eq!(
            query(&db, "SELECT a, b FROM t").await,
            vec![srow(&["1", "x,y"])],
            "{opts}"
        );
        run(&db, "DROP TABLE t; CREATE TABLE t (a INT, b TEXT)")
            .await
            .unwrap();
    }
    // escapes: doubled quotes by default, a backslash escape when asked, none at all with ESCAPE ''
    let f = file(dir.path(), "q.csv", "1,\"say \"\"hi\"\"\"\n");
    run(&db, &format!("COPY t FROM {f}")).await.unwrap();
    assert_eq!(
        query(&db, "SELECT b FROM t").await,
        vec![srow(&["say \"hi\""])]
    );
    let f = file(dir.path(), "bs.csv", "2,\"say \\\"hi\\\"\"\n");
    run(&db, &format!("COPY t FROM {f} WITH (ESCAPE '\\')"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT b FROM t WHERE a = 2").await,
        vec![srow(&["say \"hi\""])]
    );
    let f = file(dir.path(), "noesc.csv", "3,\"a\\b\"\n");
    run(&db, &format!("COPY t FROM {f} WITH (ESCAPE '')"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT b FROM t WHERE a = 3").await,
        vec![srow(&["a\\b"])]
    );
    // QUOTE '' disables quoting: quotes are data
    let f = file(dir.path(), "noquote.csv", "4,\"x\"\n");
    run(&db, &format!("COPY t FROM {f} WITH (QUOTE '')"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT b FROM t WHERE a = 4").await,
        vec![srow(&["\"x\""])]
    );
}

/// A file of `n` rows with quoted fields holding delimiters and newlines.
fn many_rows(n: usize) -> String {
    let mut s = String::from("k,v,note\n");
    for i in 0..n {
        s.push_str(&format!("{},{},\"n{i}, line\nnext\"\n", i % 97, i));
    }
    s
}

#[tokio::test]
async fn modes_merges_chunk_sizes_and_threads_give_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(3);
    let f = file(dir.path(), "many.csv", &many_rows(2000));
    let fast_file = file(
        dir.path(),
        "fast.csv",
        &many_rows(2000).replace("line\nnext", "line next"),
    );
    let variants = [
        (f.as_str(), "MODE safe"),
        (f.as_str(), "MERGE insert"),
        (f.as_str(), "MERGE copy"),
        (f.as_str(), "MERGE chunk"),
        (f.as_str(), "CHUNK_SIZE 64"),
        (f.as_str(), "CHUNK_SIZE '1KiB', THREADS 1"),
        (f.as_str(), "CHUNK_SIZE 100, THREADS 3, MERGE copy"),
        (fast_file.as_str(), "MODE fast, CHUNK_SIZE 256"),
    ];
    for (i, (path, opts)) in variants.iter().enumerate() {
        let t = format!("m{i}");
        run(&db, &format!("CREATE TABLE {t} (k INT, v BIGINT, note TEXT); COPY {t} FROM {path} WITH (HEADER, {opts})"))
            .await
            .unwrap_or_else(|e| panic!("{opts}: {e}"));
        assert_eq!(
            query(
                &db,
                &format!(
                    "SELECT count(*), sum(v), count(DISTINCT note), max(length(note)) FROM {t}"
                )
            )
            .await,
            vec![srow(&["2000", "1999000", "2000", "16"])],
            "{opts}"
        );
        let first = query(&db, &format!("SELECT note FROM {t} WHERE v = 1234")).await;
        let want = if *path == fast_file.as_str() {
            "n1234, line next"
        } else {
            "n1234, line\nnext"
        };
        assert_eq!(first, vec![srow(&[want])], "{opts}");
    }
}

#[tokio::test]
async fn fast_mode_names_safe_mode_when_quotes_hold_newlines() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    let f = file(dir.path(), "many.csv", &many_rows(500));
    run(&db, "CREATE TABLE t (k INT, v BIGINT, note TEXT)")
        .await
        .unwrap();
    let msg = fail(
        &db,
        &format!("COPY t FROM {f} WITH (HEADER, MODE fast, CHUNK_SIZE 128)"),
    )
    .await;
    assert!(msg.contains("safe"), "{msg}");
    assert!(msg.contains("unchanged"), "{msg}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM t").await,
        vec![srow(&["0"])]
    );
}

#[tokio::test]
async fn partitioned_tables_put_each_row_in_exactly_one_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    let f = file(dir.path(), "many.csv", &many_rows(3000));
    run(
        &db,
        &format!(
            "CREATE TABLE p (k INT, v BIGINT, note TEXT) PARTITION BY HASH (k) PARTITIONS 4;
             COPY p FROM {f} WITH (HEADER, CHUNK_SIZE 512)"
        ),
    )
    .await
    .unwrap();
    let table = db.catalog().table("p").unwrap();
    let snap = table.snapshot();
    assert_eq!(snap.partitions.len(), 4);
    let mut seen_v = Vec::new();
    let mut key_partition = std::collections::HashMap::new();
    for (pi, part) in snap.partitions.iter().enumerate() {
        let rows = crate::common::rows_of(&part.chunks);
        for r in rows {
            let k = r[0].clone().unwrap();
            let prev = key_partition.insert(k.clone(), pi);
            assert!(
                prev.is_none() || prev == Some(pi),
                "key {k} in partitions {prev:?} and {pi}"
            );
            seen_v.push(r[1].clone().unwrap().parse::<i64>().unwrap());
        }
    }
    seen_v.sort_unstable();
    assert_eq!(
        seen_v,
        (0..3000).collect::<Vec<i64>>(),
        "the union of the partitions is the input"
    );
    assert!(
        snap.partitions.iter().filter(|p| p.num_rows() > 0).count() > 1,
        "97 keys spread over partitions"
    );
    assert_eq!(
        query(&db, "SELECT count(*), count(DISTINCT k), sum(v) FROM p").await,
        vec![srow(&["3000", "97", "4498500"])]
    );
    assert_eq!(
        query(&db, "SELECT count(*) FROM p WHERE k = 5").await,
        vec![srow(&["31"])]
    );
}

#[tokio::test]
async fn failed_copy_leaves_the_table_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(&db, "CREATE TABLE t (id INT, name TEXT, qty INT)")
        .await
        .unwrap();
    let mut bad = String::new();
    for i in 1..=500 {
        let qty = if i == 321 {
            "12x".to_string()
        } else {
            i.to_string()
        };
        bad.push_str(&format!("{i},n{i},{qty}\n"));
    }
    let bad_file = file(dir.path(), "bad.csv", &bad);
    // on an empty table
    for opts in [
        "",
        "WITH (CHUNK_SIZE 100)",
        "WITH (MERGE insert)",
        "WITH (MERGE copy, THREADS 1)",
    ] {
        let msg = fail(&db, &format!("COPY t FROM {bad_file} {opts}")).await;
        assert!(msg.contains("line 321"), "{opts}: {msg}");
        assert!(msg.contains("qty"), "{opts}: {msg}");
        assert!(msg.contains("12x"), "{opts}: {msg}");
        assert!(msg.contains("table \"t\" is unchanged"), "{opts}: {msg}");
        assert_eq!(
            query(&db, "SELECT count(*) FROM t").await,
            vec![srow(&["0"])]
        );
    }
    // after a good load
    let good_file = file(dir.path(), "good.csv", "1,a,10\n2,b,20\n");
    run(&db, &format!("COPY t FROM {good_file}")).await.unwrap();
    let before = query(&db, "SELECT * FROM t ORDER BY id").await;
    let version = db.catalog().table("t").unwrap().snapshot().number;
    for opts in [
        "",
        "WITH (CHUNK_SIZE 100)",
        "WITH (MERGE insert)",
        "WITH (MERGE copy)",
    ] {
        let err = run(&db, &format!("COPY t FROM {bad_file} {opts}"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, SqlError::Load { ref table, .. } if table == "t"),
            "{err:?}"
        );
        assert_eq!(
            query(&db, "SELECT * FROM t ORDER BY id").await,
            before,
            "{opts}"
        );
        assert_eq!(
            db.catalog().table("t").unwrap().snapshot().number,
            version,
            "nothing was published"
        );
    }
    // a structural error names its line too
    let broken = file(dir.path(), "broken.csv", "1,a,1\n2,b,2\n3,\"c,3\n4,d,4\n");
    let msg = fail(&db, &format!("COPY t FROM {broken}")).await;
    assert!(msg.contains("line 3"), "{msg}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM t").await,
        vec![srow(&["2"])]
    );
    // a missing file
    let msg = fail(&db, "COPY t FROM '/nonexistent/wireload/x.csv'").await;
    assert!(
        msg.contains("/nonexistent/wireload/x.csv") && msg.contains("unchanged"),
        "{msg}"
    );
}

/// `ENGINE gpu` without a GPU (CI has none) fails naming what it needs and leaves the table
/// as it was; where a GPU is present (or `WIRELOAD_GPU=emulate` is set) the load must give
/// exactly what the CPU loader gives.
#[tokio::test]
async fn copy_engine_gpu_without_a_gpu_leaves_the_table_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    run(
        &db,
        "CREATE TABLE t (id INT, name VARCHAR(20), price DECIMAL(8,2), d DATE);
         CREATE TABLE cpu (id INT, name VARCHAR(20), price DECIMAL(8,2), d DATE)",
    )
    .await
    .unwrap();
    let first = file(
        dir.path(),
        "first.csv",
        "1,a,1.50,2024-01-02\n2,b,,2024-02-29\n",
    );
    run(&db, &format!("COPY t FROM {first}")).await.unwrap();
    let before = query(&db, "SELECT * FROM t ORDER BY id").await;
    let version = db.catalog().table("t").unwrap().snapshot().number;
    let more = file(
        dir.path(),
        "more.csv",
        "3,\"x, \"\"y\"\"\n z\",12.25,1999-12-31\n4,,-0.05,\n",
    );
    let copy = format!("COPY t FROM {more} WITH (FORMAT csv, ENGINE gpu, THREADS 1)");
    match run(&db, &copy).await {
        Err(err) => {
            let msg = err.to_string();
            assert!(
                matches!(
                    err,
                    SqlError::Gpu { ref table, error: wireload_gpu::GpuError::NoGpu(_) }
                        if table == "t"
                ),
                "{err:?}"
            );
            assert!(
                msg.starts_with("ENGINE gpu needs an NVIDIA GPU with its CUDA driver and NVRTC: "),
                "{msg}"
            );
            assert!(msg.ends_with("\ntable \"t\" is unchanged"), "{msg}");
            assert_eq!(query(&db, "SELECT * FROM t ORDER BY id").await, before);
            assert_eq!(
                query(&db, "SELECT count(*) FROM t").await,
                vec![srow(&["2"])]
            );
            assert_eq!(
                db.catalog().table("t").unwrap().snapshot().number,
                version,
                "nothing was published"
            );
        }
        Ok(out) => {
            // a GPU (or the emulator) loaded it: the rows must be the CPU loader's
            assert!(
                matches!(out.as_slice(), [StatementOutput::Loaded(r)] if r.rows == 2),
                "{out:?}"
            );
            run(&db, &format!("COPY cpu FROM {first}; COPY cpu FROM {more}"))
                .await
                .unwrap();
            let want = query(&db, "SELECT * FROM cpu ORDER BY id").await;
            assert_eq!(want.len(), 4);
            assert_eq!(query(&db, "SELECT * FROM t ORDER BY id").await, want);
        }
    }
    // options the GPU loader does not take are refused before anything runs
    let msg = fail(
        &db,
        &format!("COPY t FROM {more} WITH (ENGINE gpu, MODE fast)"),
    )
    .await;
    assert_eq!(
        msg,
        "COPY option MODE applies to ENGINE cpu: ENGINE gpu always reads RFC 4180 quoting, \
         newlines in quotes included"
    );
    let msg = fail(&db, &format!("COPY t FROM {more} WITH (ENGINE fpga)")).await;
    assert!(msg.contains("cpu or gpu"), "{msg}");
}

#[tokio::test]
async fn a_query_sees_one_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    let f = file(dir.path(), "a.csv", "1\n2\n3\n");
    run(&db, &format!("CREATE TABLE s (x INT); COPY s FROM {f}"))
        .await
        .unwrap();
    // plan (and so snapshot) before a second load; run after it
    let df = db
        .session()
        .sql("SELECT count(*), sum(x) FROM s")
        .await
        .unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    run(&db, &format!("COPY s FROM {f}")).await.unwrap();
    let task = db.session().task_ctx();
    let old = datafusion::physical_plan::collect(plan, task)
        .await
        .unwrap();
    assert_eq!(crate::common::rows_of(&old), vec![srow(&["3", "6"])]);
    assert_eq!(
        query(&db, "SELECT count(*), sum(x) FROM s").await,
        vec![srow(&["6", "12"])]
    );
}

#[tokio::test]
async fn scans_run_in_parallel_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(4);
    let f = file(dir.path(), "many.csv", &many_rows(20_000));
    run(&db, &format!("CREATE TABLE t (k INT, v BIGINT, note TEXT); COPY t FROM {f} WITH (HEADER, CHUNK_SIZE 4096)"))
        .await
        .unwrap();
    let df = db.session().sql("SELECT v FROM t").await.unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let text = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    assert!(
        text.contains("SnapshotScanExec") && text.contains("partitions=4"),
        "{text}"
    );
    let rows = query(
        &db,
        "SELECT count(*), count(DISTINCT v), min(v), max(v) FROM t",
    )
    .await;
    assert_eq!(rows, vec![srow(&["20000", "20000", "0", "19999"])]);
    assert_eq!(
        count(&query(&db, "SELECT count(*) FROM (SELECT v FROM t LIMIT 7)").await),
        7
    );
}

#[test]
fn execute_runs_without_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(1);
    let f = file(dir.path(), "a.csv", "5\n");
    let out = futures::executor::block_on(run(
        &db,
        &format!("CREATE TABLE a (x INT); COPY a FROM {f}"),
    ))
    .unwrap();
    assert!(matches!(&out[1], StatementOutput::Loaded(r) if r.rows == 1));
}

#[test]
fn the_execute_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let db = db(1);
    let ctl = wireload_load::LoadControl::default();
    let fut = db.execute("SELECT 1", &ctl);
    assert_send(&fut);
}

/// Deep expressions are planned without overflowing the stack, or refused with an error:
/// DataFusion clones its expression trees by recursion, and a stack overflow aborts the whole
/// process (server included). An OR chain of 3,000 terms aborted this test (a 2 MiB thread);
/// 6,400 aborted the release binary.
#[tokio::test]
async fn deep_expressions_do_not_overflow_the_stack() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(2);
    let f = file(dir.path(), "a.csv", "1\n7\n20000\n");
    run(&db, &format!("CREATE TABLE t (a BIGINT); COPY t FROM {f}"))
        .await
        .unwrap();
    let ors = |n: usize| {
        (0..n)
            .map(|i| format!("a = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ")
    };
    let rows = query(&db, &format!("SELECT count(*) FROM t WHERE {}", ors(990))).await;
    assert_eq!(count(&rows), 2);
    let plus = format!("a{}", "+1".repeat(990));
    let rows = query(&db, &format!("SELECT {plus} FROM t ORDER BY 1")).await;
    assert_eq!(rows, vec![srow(&["991"]), srow(&["997"]), srow(&["20990"])]);
    // deeper: refused before planning, whatever the shape
    for sql in [
        format!("SELECT count(*) FROM t WHERE {}", ors(3_000)),
        format!("SELECT a{} FROM t", "+1".repeat(3_000)),
        format!("EXPLAIN SELECT a{} FROM t", "+1".repeat(3_000)),
        format!(
            "COPY (SELECT a{} FROM t) TO '/dev/null'",
            "+1".repeat(3_000)
        ),
        format!("SELECT count(*) FROM t WHERE {}", ors(20_000)),
    ] {
        let e = run(&db, &sql).await.expect_err("too deep");
        assert_eq!(e.sqlstate(), SqlState::STATEMENT_TOO_COMPLEX, "{e}");
        assert!(
            e.to_string().contains("nested more than 1000 levels"),
            "{e}"
        );
    }
    // an IN list is flat
    let list = (0..20_000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let rows = query(&db, &format!("SELECT count(*) FROM t WHERE a IN ({list})")).await;
    assert_eq!(count(&rows), 2);
}
