//! Files read without a table: `SELECT ... FROM 'f.csv'`, `read_csv(...)`, `CREATE TABLE AS`
//! from a file, `COPY ... (AUTO)`, globs and compressed files, column types inferred and
//! re-planned, mixed-case header names, error policies and `wireload_rejects`.

use std::io::Write;
use std::path::Path;

use crate::common::{db, fail, query, run, srow};
use wireload_sql::StatementOutput;

fn file(dir: &Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path.display().to_string()
}

fn gzip(dir: &Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(contents.as_bytes()).unwrap();
    enc.finish().unwrap();
    path.display().to_string()
}

const PEOPLE: &str = "Person,Age,Born,Score\n\
                      alice,30,1994-03-01,1.5\n\
                      bob,41,1983-11-20,2\n\
                      \"carol, jr\",,2001-07-04,\n";

/// The Arrow type of each column of `sql`'s result, via `arrow_typeof` on its first row.
async fn types(db: &wireload_sql::Database, table: &str, columns: &[&str]) -> Vec<String> {
    let list: Vec<String> = columns
        .iter()
        .map(|c| format!("arrow_typeof({c})"))
        .collect();
    let rows = query(
        db,
        &format!("SELECT {} FROM {table} LIMIT 1", list.join(", ")),
    )
    .await;
    rows[0].iter().map(|v| v.clone().unwrap()).collect()
}

#[tokio::test]
async fn select_from_a_file_infers_the_dialect_and_the_types() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "people.csv", PEOPLE);
    let db = db(2);
    let rows = query(&db, &format!("SELECT * FROM '{f}' ORDER BY Age")).await;
    assert_eq!(
        rows,
        vec![
            srow(&["alice", "30", "1994-03-01", "1.5"]),
            srow(&["bob", "41", "1983-11-20", "2.0"]),
            vec![
                Some("carol, jr".into()),
                None,
                Some("2001-07-04".into()),
                None
            ],
        ]
    );
    // the table is named after the file; header names resolve case-insensitively
    let t = types(
        &db,
        &format!("'{f}'"),
        &["people.Person", "age", "BORN", "\"Score\""],
    )
    .await;
    assert_eq!(t, ["Utf8", "Int64", "Date32", "Float64"]);
    // the temporary table is gone after the statement
    assert!(db.catalog().table_names().is_empty());
}

#[tokio::test]
async fn read_csv_takes_copy_options_and_lists_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.txt", "id|name\n1|x\n2|y\n");
    let b = file(dir.path(), "b.txt", "id|name\n3|z\n");
    let db = db(2);
    let rows = query(
        &db,
        &format!("SELECT id, name FROM read_csv(['{a}', '{b}'], delim => '|', header => true)"),
    )
    .await;
    assert_eq!(
        rows,
        vec![srow(&["1", "x"]), srow(&["2", "y"]), srow(&["3", "z"])]
    );
    // a glob, sorted by path; an explicit schema is taken as given
    let glob = format!("{}/*.txt", dir.path().display());
    let rows = query(
        &db,
        &format!(
            "SELECT sum(id), max(name) FROM read_csv('{glob}', sep => '|', schema => 'id INT, name TEXT', header => true)"
        ),
    )
    .await;
    assert_eq!(rows, vec![srow(&["6", "z"])]);
    let err = fail(
        &db,
        &format!(
            "SELECT * FROM read_csv('{}/none*.csv')",
            dir.path().display()
        ),
    )
    .await;
    assert!(err.contains("none*.csv"), "{err}");
}

#[tokio::test]
async fn create_table_as_and_copy_auto_make_tables_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "people.csv", PEOPLE);
    let db = db(2);
    run(&db, &format!("CREATE TABLE p AS SELECT * FROM '{f}'"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT count(*) FROM p").await,
        vec![srow(&["3"])]
    );
    // COPY ... (AUTO) creates a missing table from the file
    let out = run(&db, &format!("COPY q FROM '{f}' (AUTO)"))
        .await
        .unwrap();
    assert!(matches!(&out[0], StatementOutput::Loaded(r) if r.rows == 3));
    assert_eq!(types(&db, "q", &["person", "age"]).await, ["Utf8", "Int64"]);
    // and into an existing table it detects the dialect only
    let piped = file(
        dir.path(),
        "more.csv",
        "Person|Age|Born|Score\ndan|5|2020-01-01|0.5\n",
    );
    run(&db, &format!("COPY q FROM '{piped}' WITH (AUTO)"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT person, age FROM q WHERE age < 10").await,
        vec![srow(&["dan", "5"])]
    );
}

#[tokio::test]
async fn a_value_the_samples_missed_re_plans_its_column() {
    let dir = tempfile::tempdir().unwrap();
    // the first file decides the types; the second holds a value that does not fit
    let a = file(dir.path(), "a.csv", "id,v\n1,10\n2,20\n");
    let b = file(dir.path(), "b.csv", "id,v\n3,2.5\n4,n/a\n");
    let db = db(2);
    let rows = query(&db, &format!("SELECT id, v FROM read_csv(['{a}', '{b}'])")).await;
    assert_eq!(
        rows,
        vec![
            srow(&["1", "10"]),
            srow(&["2", "20"]),
            srow(&["3", "2.5"]),
            srow(&["4", "n/a"])
        ]
    );
    let notices = db.take_notices();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(
        notices[0].contains("column \"v\" re-planned from BIGINT to DOUBLE"),
        "{notices:?}"
    );
    assert!(notices[1].contains("to TEXT"), "{notices:?}");
    assert!(notices[1].contains("line 3"), "{notices:?}");
}

#[tokio::test]
async fn compressed_files_load_as_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = file(dir.path(), "people.csv", PEOPLE);
    let gz = gzip(dir.path(), "people.csv.gz", PEOPLE);
    let db = db(2);
    let a = query(&db, &format!("SELECT * FROM '{plain}' ORDER BY 1")).await;
    let b = query(&db, &format!("SELECT * FROM '{gz}' ORDER BY 1")).await;
    assert_eq!(a, b);
    run(
        &db,
        &format!(
            "CREATE TABLE t (person TEXT, age INT, born DATE, score DOUBLE); \
             COPY t FROM '{gz}' (HEADER)"
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        query(&db, "SELECT count(*) FROM t").await,
        vec![srow(&["3"])]
    );
}

#[tokio::test]
async fn on_error_ignore_loads_the_good_rows_and_keeps_the_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(
        dir.path(),
        "bad.csv",
        "id,amount\n1,10\nx,20\n3,30\n4,40,extra\n5,50\n",
    );
    let db = db(3);
    run(&db, "CREATE TABLE t (id INT, amount INT)")
        .await
        .unwrap();
    let err = fail(&db, &format!("COPY t FROM '{f}' (HEADER)")).await;
    assert!(err.contains("line 3"), "{err}");
    let out = run(&db, &format!("COPY t FROM '{f}' (HEADER, ON_ERROR ignore)"))
        .await
        .unwrap();
    assert!(matches!(&out[0], StatementOutput::Loaded(r) if r.rows == 3 && r.rejected == 2));
    assert_eq!(
        query(&db, "SELECT id FROM t ORDER BY id").await,
        vec![srow(&["1"]), srow(&["3"]), srow(&["5"])]
    );
    let rejects = query(
        &db,
        "SELECT load_id, line, byte_offset, column_name, raw_line FROM wireload_rejects ORDER BY line",
    )
    .await;
    assert_eq!(
        rejects,
        vec![
            srow(&["1", "3", "15", "id", "x,20"]),
            vec![
                Some("1".into()),
                Some("5".into()),
                Some("25".into()),
                None,
                Some("4,40,extra".into())
            ],
        ]
    );
    // REJECT_LIMIT: more rejects than allowed fail the load, which leaves the table as it was
    let err = fail(
        &db,
        &format!("COPY t FROM '{f}' (HEADER, ON_ERROR ignore, REJECT_LIMIT 1)"),
    )
    .await;
    assert!(err.contains("unchanged"), "{err}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM t").await,
        vec![srow(&["3"])]
    );
    let err = fail(&db, &format!("COPY t FROM '{f}' (REJECT_LIMIT 1)")).await;
    assert!(
        err.contains("REJECT_LIMIT requires ON_ERROR ignore"),
        "{err}"
    );
}

#[tokio::test]
async fn an_empty_file_with_a_header_loads_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let empty = file(dir.path(), "empty.csv", "");
    let header_only = file(dir.path(), "h.csv", "a,b\n");
    let db = db(2);
    run(&db, "CREATE TABLE t (a INT, b INT)").await.unwrap();
    for f in [&empty, &header_only] {
        let out = run(&db, &format!("COPY t FROM '{f}' (HEADER)"))
            .await
            .unwrap();
        assert!(matches!(&out[0], StatementOutput::Loaded(r) if r.rows == 0));
    }
}

#[tokio::test]
async fn a_file_is_loaded_with_only_the_columns_the_statement_reads() {
    let dir = tempfile::tempdir().unwrap();
    // the second file's column b holds text where the first file's holds integers: read
    // whole, b is re-planned; read for `a` only, b is never deserialized
    let x = file(dir.path(), "x.csv", "a,b\n1,10\n2,20\n");
    let y = file(dir.path(), "y.csv", "a,b\n3,oops\n");
    let db = db(2);
    let sql = format!("SELECT sum(a) FROM read_csv(['{x}', '{y}'])");
    assert_eq!(query(&db, &sql).await, vec![srow(&["6"])]);
    assert!(db.take_notices().is_empty());
    let sql = format!("SELECT count(*) FROM read_csv(['{x}', '{y}']) WHERE b = 'oops'");
    assert_eq!(query(&db, &sql).await, vec![srow(&["1"])]);
    assert_eq!(db.take_notices().len(), 1);
    let sql = format!("SELECT count(*) FROM read_csv(['{x}', '{y}'])");
    assert_eq!(query(&db, &sql).await, vec![srow(&["3"])]);
}

#[tokio::test]
async fn copy_reads_latin1_and_utf16() {
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join("l1.csv");
    std::fs::write(&latin1, b"1,caf\xe9\n2,stra\xdfe\n").unwrap();
    let utf16 = dir.path().join("u16.csv");
    let mut bytes = vec![0xff, 0xfe];
    for unit in "3,日本\n".encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    std::fs::write(&utf16, bytes).unwrap();
    let db = db(2);
    run(&db, "CREATE TABLE t (id INT, s TEXT)").await.unwrap();
    run(
        &db,
        &format!(
            "COPY t FROM '{}' (ENCODING 'latin1'); COPY t FROM '{}' (ENCODING 'utf-16')",
            latin1.display(),
            utf16.display()
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        query(&db, "SELECT s FROM t ORDER BY id").await,
        vec![srow(&["café"]), srow(&["straße"]), srow(&["日本"])]
    );
    let err = fail(&db, &format!("COPY t FROM '{}'", latin1.display())).await;
    assert!(err.contains("UTF-8"), "{err}");
}

#[tokio::test]
async fn dates_in_other_formats_are_inferred_and_given() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(
        dir.path(),
        "orders.csv",
        "id,ordered,shipped\n1,25/12/2023,12/26/2023 3:30 PM\n2,05/01/2024,1/6/2024 9:00 AM\n",
    );
    let db = db(2);
    // inferred: day first (25/12), 12-hour times
    assert_eq!(
        query(
            &db,
            &format!("SELECT id, ordered, shipped FROM '{f}' ORDER BY id")
        )
        .await,
        vec![
            srow(&["1", "2023-12-25", "2023-12-26T15:30:00"]),
            srow(&["2", "2024-01-05", "2024-01-06T09:00:00"]),
        ]
    );
    assert_eq!(
        types(&db, &format!("'{f}'"), &["ordered", "shipped"]).await,
        ["Date32", "Timestamp(µs)"]
    );
    // given: COPY DATEFORMAT / TIMESTAMPFORMAT (DuckDB's spellings too), ISO read as well
    let g = file(
        dir.path(),
        "us.csv",
        "d,t\n12/25/2023,2023-12-25 10:00\n2024-01-05,01/05/2024 10:00\n",
    );
    run(
        &db,
        &format!(
            "CREATE TABLE us (d DATE, t TIMESTAMP); \
             COPY us FROM '{g}' (HEADER, DATEFORMAT '%m/%d/%Y', timestamp_format '%m/%d/%Y %H:%M')"
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        query(&db, "SELECT d, t FROM us ORDER BY d").await,
        vec![
            srow(&["2023-12-25", "2023-12-25T10:00:00"]),
            srow(&["2024-01-05", "2024-01-05T10:00:00"]),
        ]
    );
    let rows = query(
        &db,
        &format!("SELECT d FROM read_csv('{g}', dateformat => '%m/%d/%Y', schema => 'd DATE, t TEXT') ORDER BY d"),
    )
    .await;
    assert_eq!(rows, vec![srow(&["2023-12-25"]), srow(&["2024-01-05"])]);
    // a value in neither form: the line, the column and what was expected
    let h = file(dir.path(), "bad.csv", "d\n12/25/2023\n25/12/2023\n");
    run(&db, "CREATE TABLE bad (d DATE)").await.unwrap();
    let err = fail(
        &db,
        &format!("COPY bad FROM '{h}' (HEADER, DATEFORMAT '%m/%d/%Y')"),
    )
    .await;
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("25/12/2023"), "{err}");
    assert!(err.contains("date/time field value out of range"), "{err}");
    let err = fail(
        &db,
        &format!("COPY bad FROM '{h}' (HEADER, DATEFORMAT '%m/%q/%Y')"),
    )
    .await;
    assert!(
        err.contains("COPY DATEFORMAT: invalid date/time format"),
        "{err}"
    );
    assert_eq!(
        query(&db, "SELECT count(*) FROM bad").await,
        vec![srow(&["0"])]
    );
}

#[tokio::test]
async fn a_loosely_quoted_file_loads_up_to_its_error() {
    // the quote is fixed and the data breaks it: the sniffer still gives a dialect, and the
    // load names the line of the break (or rejects it under ON_ERROR ignore)
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "loose.csv", "a,b\n1,ok\n2,x\"y\n3,fine\n");
    let db = db(2);
    let err = fail(
        &db,
        &format!("SELECT * FROM read_csv('{f}', quote => '\"')"),
    )
    .await;
    assert!(err.contains("line 3"), "{err}");
    let rows = query(
        &db,
        &format!("SELECT * FROM read_csv('{f}', quote => '\"', ignore_errors => true) ORDER BY a"),
    )
    .await;
    // a stray quote opens a field no later quote closes: the rest of the input is the one
    // rejected record (the careful path's known limit)
    assert_eq!(rows, vec![srow(&["1", "ok"])]);
    let rejects = query(&db, "SELECT line, error FROM wireload_rejects").await;
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0][0].as_deref(), Some("3"));
}

#[tokio::test]
async fn copy_with_a_column_list_reads_those_columns_and_leaves_the_others_null() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "ca.csv", "c,a\n2024-01-05,1\n2024-01-06,2\n");
    let db = db(2);
    run(&db, "CREATE TABLE t (a INT, b TEXT, c DATE)")
        .await
        .unwrap();
    run(&db, &format!("COPY t (c, a) FROM '{f}' (HEADER)"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT a, b, c FROM t ORDER BY a").await,
        vec![
            crate::common::row(&[Some("1"), None, Some("2024-01-05")]),
            crate::common::row(&[Some("2"), None, Some("2024-01-06")]),
        ]
    );
    // every column in table order is the plain COPY; several files at once too
    let all = file(dir.path(), "all.csv", "3,x,2024-01-07\n");
    run(&db, &format!("COPY t (a, b, c) FROM '{all}'"))
        .await
        .unwrap();
    file(dir.path(), "more1.csv", "9\n");
    file(dir.path(), "more2.csv", "10\n");
    let glob = dir.path().join("more*.csv").display().to_string();
    run(&db, &format!("COPY t (a) FROM '{glob}'"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT a, b, c FROM t WHERE a >= 3 ORDER BY a").await,
        vec![
            srow(&["3", "x", "2024-01-07"]),
            crate::common::row(&[Some("9"), None, None]),
            crate::common::row(&[Some("10"), None, None]),
        ]
    );
    // refused before anything is read, the table unchanged
    let before = query(&db, "SELECT count(*) FROM t").await;
    let cases = [
        (
            "COPY t (a, z) FROM 'x.csv'",
            "column \"z\" does not exist in table \"t\"",
        ),
        (
            "COPY t (a, a) FROM 'x.csv'",
            "column \"a\" is named more than once in the COPY column list",
        ),
    ];
    for (sql, message) in cases {
        let err = fail(&db, sql).await;
        assert!(err.contains(message), "{sql}: {err}");
    }
    run(&db, "CREATE TABLE strict (a INT, b INT NOT NULL)")
        .await
        .unwrap();
    let err = fail(&db, &format!("COPY strict (a) FROM '{f}'")).await;
    assert!(
        err.contains("column \"b\" of \"strict\" is NOT NULL: the COPY column list must name it"),
        "{err}"
    );
    // a record with another field count than the list: its line
    let wide = file(
        dir.path(),
        "wide.csv",
        "c,a\n2024-01-05,1\n2024-01-06,2,extra\n",
    );
    let err = fail(&db, &format!("COPY t (c, a) FROM '{wide}' (HEADER)")).await;
    assert!(err.contains("line 3"), "{err}");
    assert_eq!(query(&db, "SELECT count(*) FROM t").await, before);
}

#[tokio::test]
async fn read_csv_can_add_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.csv", "id,v\n1,x\n2,y\n");
    let b = file(dir.path(), "b.csv", "id,v\n3,z\n");
    let glob = dir.path().join("*.csv").display().to_string();
    let db = db(2);
    assert_eq!(
        query(
            &db,
            &format!(
                "SELECT filename, count(*), max(id) FROM read_csv('{glob}', filename => true) \
                 GROUP BY filename ORDER BY filename"
            )
        )
        .await,
        vec![srow(&[&a, "2", "2"]), srow(&[&b, "1", "3"])]
    );
    // a statement that does not read it: the other columns only
    assert_eq!(
        query(
            &db,
            &format!("SELECT v FROM read_csv('{glob}', filename => true) ORDER BY v")
        )
        .await,
        vec![srow(&["x"]), srow(&["y"]), srow(&["z"])]
    );
    // with a schema too
    assert_eq!(
        query(
            &db,
            &format!(
                "SELECT id, filename FROM read_csv('{b}', schema => 'id INT, v TEXT', \
                 header => true, filename => true)"
            )
        )
        .await,
        vec![srow(&["3", &b])]
    );
    let clash = file(dir.path(), "clash.txt", "filename,id\nx,1\n");
    let err = fail(
        &db,
        &format!("SELECT * FROM read_csv('{clash}', filename => true)"),
    )
    .await;
    assert!(err.contains("adds a column \"filename\""), "{err}");
}

#[tokio::test]
async fn a_file_is_loaded_with_only_the_rows_the_statement_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("id,name,grp\n");
    for i in 0..200_000 {
        text.push_str(&format!("{i},name number {i},g{}\n", i % 7));
    }
    let f = file(dir.path(), "big.csv", &text);
    let db = db(2);
    // the whole file is over the load's memory limit: without the filter in the load it fails
    let err = fail(
        &db,
        &format!("SELECT count(*) FROM read_csv('{f}', memory_limit => '1MB')"),
    )
    .await;
    assert!(err.contains("MEMORY_LIMIT"), "{err}");
    // the rows the WHERE keeps fit
    let sql = format!(
        "SELECT count(*), sum(id), min(name) FROM read_csv('{f}', memory_limit => '1MB') \
         WHERE id % 1000 = 0 AND grp <> 'g3'"
    );
    let want: Vec<i64> = (0..200_000)
        .filter(|i| i % 1000 == 0 && i % 7 != 3)
        .collect();
    assert_eq!(
        query(&db, &sql).await,
        vec![srow(&[
            &want.len().to_string(),
            &want.iter().sum::<i64>().to_string(),
            "name number 0"
        ])]
    );
    // EXPLAIN loads only what the plan reads too
    let plan = query(
        &db,
        &format!("EXPLAIN SELECT name FROM read_csv('{f}', memory_limit => '1MB') WHERE id = 7"),
    )
    .await;
    assert!(!plan.is_empty());
    // a filter through an alias and a join with a table of the database
    run(&db, "CREATE TABLE g (grp TEXT, label TEXT)")
        .await
        .unwrap();
    run(&db, "INSERT INTO g VALUES ('g1', 'one'), ('g2', 'two')")
        .await
        .unwrap();
    let sql = format!(
        "SELECT g.label, count(*) FROM read_csv('{f}', memory_limit => '1MB') AS t \
         JOIN g ON t.grp = g.grp WHERE t.id < 700 GROUP BY g.label ORDER BY g.label"
    );
    assert_eq!(
        query(&db, &sql).await,
        vec![srow(&["one", "100"]), srow(&["two", "100"])]
    );
}

/// The WHERE clauses of `a_pushed_filter_keeps_what_the_query_keeps`: each is run over the
/// file and over the same rows in a table, and the answers must be equal.
const FILTERS: &[&str] = &[
    "a > 3",
    "a > 3 OR b IS NULL",
    "b IS NULL",
    "NOT (b = 'x')",
    "coalesce(b, 'none') = 'none'",
    "a BETWEEN 2 AND 5 AND c < 2.5",
    "a IN (SELECT a FROM t WHERE a % 2 = 0)",
    "a = (SELECT max(a) FROM t)",
    "d < '2020-01-03'",
    "d < now()",
    "random() < 2",
    "CAST(a AS TEXT) LIKE '1%'",
    "c / (a - 4) > 0",
    "length(b) > 1 AND upper(b) = 'YY'",
];

#[tokio::test]
async fn a_pushed_filter_keeps_what_the_query_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("a,b,c,d\n");
    for i in 0..40 {
        let b = match i % 4 {
            0 => "",
            1 => "x",
            2 => "yy",
            _ => "zzz",
        };
        text.push_str(&format!("{i},{b},{}.5,2020-01-0{}\n", i % 5, 1 + i % 5));
    }
    let f = file(dir.path(), "f.csv", &text);
    let db = db(2);
    run(&db, &format!("CREATE TABLE t AS SELECT * FROM '{f}'"))
        .await
        .unwrap();
    for cond in FILTERS {
        let over_file = query(
            &db,
            &format!("SELECT a, b, c, d FROM '{f}' WHERE {cond} ORDER BY a"),
        )
        .await;
        let over_table = query(
            &db,
            &format!("SELECT a, b, c, d FROM t WHERE {cond} ORDER BY a"),
        )
        .await;
        assert_eq!(over_file, over_table, "WHERE {cond}");
    }
    // outer joins: a filter on the side that keeps its rows is not pushed into the other
    let left = format!(
        "SELECT t.a, f.b FROM t LEFT JOIN '{f}' AS f ON t.a = f.a AND f.b = 'x' ORDER BY t.a"
    );
    let rows = query(&db, &left).await;
    assert_eq!(rows.len(), 40);
    assert_eq!(rows.iter().filter(|r| r[1].is_some()).count(), 10);
    // the same file twice: both scans' columns, no filter of one scan in the other's
    let twice = format!(
        "SELECT x.a, y.a FROM '{f}' AS x JOIN '{f}' AS y ON x.a + 1 = y.a WHERE x.a < 3 ORDER BY 1"
    );
    assert_eq!(
        query(&db, &twice).await,
        vec![srow(&["0", "1"]), srow(&["1", "2"]), srow(&["2", "3"])]
    );
    // CREATE TABLE AS and COPY (query) TO take the filter too
    run(
        &db,
        &format!("CREATE TABLE small AS SELECT a FROM '{f}' WHERE a >= 38"),
    )
    .await
    .unwrap();
    assert_eq!(
        query(&db, "SELECT a FROM small ORDER BY a").await,
        vec![srow(&["38"]), srow(&["39"])]
    );
    let out = dir.path().join("out.csv");
    run(
        &db,
        &format!(
            "COPY (SELECT a FROM '{f}' WHERE a < 2) TO '{}' WITH (HEADER false)",
            out.display()
        ),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "0\n1\n");
}

#[tokio::test]
async fn a_column_re_planned_under_a_filter_loads_every_row_of_it() {
    // the first file decides that b holds integers; the second's text widens b to TEXT,
    // and the filter planned for integers is not used: the answer is the query's over the
    // wider column
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.csv", "a,b\n1,3\n2,4\n");
    let b = file(dir.path(), "b.csv", "a,b\n4,ten\n5,3\n6,3.0\n");
    let db = db(2);
    let sql = format!("SELECT a FROM read_csv(['{a}', '{b}']) WHERE b = '3' ORDER BY a");
    assert_eq!(query(&db, &sql).await, vec![srow(&["1"]), srow(&["5"])]);
    assert_eq!(db.take_notices().len(), 1);
}
