//! Dictionary storage (`COMPRESSION dictionary | plain | auto`): tables answer exactly as
//! plain ones, through loads that grow the dictionaries, INSERT, UPDATE, DELETE, indexes,
//! unload and failed loads; `auto` decides per column; the system views tell what was decided.

use std::fmt::Write as _;

use crate::common::{db, fail, lit, query, run, srow};
use wireload_sql::{Database, StatementOutput};

/// Columns of every type, with NULLs allowed.
const COLUMNS: &str = "id INT, s SMALLINT, b BIGINT, r REAL, d DOUBLE, m DECIMAL(10,2), \
                       day DATE, ts TIMESTAMP, v VARCHAR(20), t TEXT, f BOOLEAN";

/// CSV rows `from..to` over the columns: values repeat (a few distinct per column), with
/// NULLs, empty strings, non-ASCII text and float edge cases.
fn csv(from: usize, to: usize, distinct: usize) -> String {
    let texts = ["", "é", "Z", "z", "a b", "\u{10FFFF}", "\"q\"", "ä"];
    let floats = [
        "-0",
        "0",
        "1.5",
        "-1e30",
        "Infinity",
        "-Infinity",
        "NaN",
        "2.25",
    ];
    let mut out = String::new();
    for i in from..to {
        let k = i % distinct;
        let null = |col: usize| (i + col).is_multiple_of(13);
        let mut cells: Vec<String> = vec![
            i.to_string(),
            ((k as i64 * 37) % 1000 - 500).to_string(),
            (k as i64 * 1_000_003 - 7).to_string(),
            floats[k % floats.len()].to_string(),
            floats[(k + 3) % floats.len()].to_string(),
            format!("{}.{:02}", k as i64 - 50, k % 100),
            format!("20{:02}-0{}-1{}", k % 30, 1 + k % 9, k % 10),
            format!("2024-01-0{} 10:00:0{}.{}", 1 + k % 9, k % 10, k),
            format!("\"v{}{}\"", k, texts[k % texts.len()].replace('"', "\"\"")),
            format!("\"{}\"", texts[(k * 3) % texts.len()].replace('"', "\"\"")),
            ["true", "false"][k % 2].to_string(),
        ];
        for (c, cell) in cells.iter_mut().enumerate().skip(1) {
            if null(c) {
                cell.clear();
            }
        }
        writeln!(out, "{}", cells.join(",")).unwrap();
    }
    out
}

/// Writes `text` to a new file in `dir` and returns its path as a SQL literal.
fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    lit(path.to_str().unwrap())
}

/// The storage `wireload_columns` shows for each column of `table`, with dictionary entries.
async fn storage(db: &Database, table: &str) -> Vec<(String, String, Option<String>)> {
    query(
        db,
        &format!(
            "SELECT column_name, storage, dictionary_entries FROM wireload_columns \
             WHERE table_name = '{table}'"
        ),
    )
    .await
    .into_iter()
    .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap(), r[2].clone()))
    .collect()
}

/// Asserts that `sql` (`{t}` standing for the table) answers something, and the same, on
/// the plain table `p` and the dictionary table `q`; `when` prefixes the failure.
async fn same_on_both(db: &Database, sql: &str, when: &str) {
    let plain = query(db, &sql.replace("{t}", "p")).await;
    let dict = query(db, &sql.replace("{t}", "q")).await;
    assert!(!plain.is_empty(), "{when}{sql}");
    assert_eq!(plain, dict, "{when}{sql}");
}

async fn ok(db: &Database, sql: &str) {
    run(db, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn dictionary_tables_answer_as_plain_ones() {
    let db = db(2);
    let dir = tempfile::tempdir().unwrap();
    let first = file(&dir, "first.csv", &csv(0, 3000, 200));
    // the second load brings new values in the middle of every dictionary, past 256 entries
    let second = file(&dir, "second.csv", &csv(3000, 9000, 700));
    ok(&db, &format!("CREATE TABLE p ({COLUMNS})")).await;
    ok(
        &db,
        &format!("CREATE TABLE q ({COLUMNS}) WITH (COMPRESSION = dictionary)"),
    )
    .await;
    for t in ["p", "q"] {
        ok(&db, &format!("COPY {t} FROM {first}")).await;
    }
    let small = storage(&db, "q").await;
    // floats and booleans stay plain
    for (column, s, _) in &small {
        let plain = ["r", "d", "f"].contains(&column.as_str());
        assert_eq!(s, if plain { "plain" } else { "dictionary" }, "{small:?}");
    }
    for t in ["p", "q"] {
        ok(&db, &format!("COPY {t} FROM {second}")).await;
    }
    let grown = storage(&db, "q").await;
    let entries = |cols: &[(String, String, Option<String>)], name: &str| -> usize {
        cols.iter()
            .find(|c| c.0 == name)
            .unwrap()
            .2
            .as_ref()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(entries(&small, "id"), 3000);
    assert_eq!(entries(&grown, "id"), 9000);
    assert_eq!(entries(&grown, "b"), 700);
    assert_eq!(entries(&grown, "v"), 700);
    assert!(
        storage(&db, "p")
            .await
            .iter()
            .all(|(_, s, e)| s == "plain" && e.is_none())
    );

    let same = [
        "SELECT * FROM {t}",
        "SELECT * FROM {t} WHERE v > 'v5' AND t <> 'é' AND day BETWEEN '2005-01-01' AND '2020-12-31'",
        "SELECT v, count(*), min(m), max(ts), sum(b) FROM {t} GROUP BY v ORDER BY v",
        "SELECT t, count(*) FROM {t} WHERE t IS NOT NULL GROUP BY t ORDER BY t",
        "SELECT r, d, count(*) FROM {t} GROUP BY r, d ORDER BY r, d",
        "SELECT id, s FROM {t} WHERE s < -100 OR m >= 3.5 ORDER BY s DESC, id LIMIT 50",
        "SELECT f, count(*) FROM {t} GROUP BY f ORDER BY f",
        "SELECT count(DISTINCT day), min(v), max(t) FROM {t} WHERE f",
        "SELECT x.id, y.v FROM {t} x JOIN p y ON x.b = y.b AND x.id = y.id WHERE x.id % 97 = 0 ORDER BY x.id",
        "SELECT upper(v) || t, day + 1, m * 2 FROM {t} WHERE id < 20",
    ];
    for sql in same {
        same_on_both(&db, sql, "").await;
    }
    // results leave the database plain
    let out = run(&db, "SELECT v, b FROM q LIMIT 1").await.unwrap();
    let Some(StatementOutput::Rows { schema, batches }) = out.last() else {
        panic!("{out:?}")
    };
    assert_eq!(
        schema.field(0).data_type(),
        &arrow::datatypes::DataType::Utf8
    );
    assert_eq!(
        batches[0].schema().field(1).data_type(),
        &arrow::datatypes::DataType::Int64
    );

    // unloaded as a plain table's
    let (a, b) = (dir.path().join("p.csv"), dir.path().join("q.csv"));
    ok(&db, &format!("COPY p TO {}", lit(a.to_str().unwrap()))).await;
    ok(&db, &format!("COPY q TO {}", lit(b.to_str().unwrap()))).await;
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    // exported and imported: the same rows, stored the same way
    let rows = query(&db, "SELECT * FROM q").await;
    let stored = storage(&db, "q").await;
    let export = dir.path().join("export");
    ok(
        &db,
        &format!("EXPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await;
    ok(&db, "DROP TABLE p, q").await;
    ok(
        &db,
        &format!("IMPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await;
    assert_eq!(query(&db, "SELECT * FROM q").await, rows);
    assert_eq!(storage(&db, "q").await, stored);

    // smaller in memory
    let bytes = query(
        &db,
        "SELECT table_name, bytes FROM wireload_tables WHERE table_name IN ('p', 'q') \
         ORDER BY table_name",
    )
    .await;
    let n = |r: &Vec<Option<String>>| r[1].as_ref().unwrap().parse::<usize>().unwrap();
    assert!(n(&bytes[1]) < n(&bytes[0]), "{bytes:?}");
}

#[tokio::test]
async fn insert_update_delete_and_indexes_work_on_dictionary_tables() {
    let db = db(2);
    let dir = tempfile::tempdir().unwrap();
    let data = file(&dir, "a.csv", &csv(0, 5000, 300));
    ok(
        &db,
        &format!("CREATE TABLE q ({COLUMNS}, PRIMARY KEY (id)) WITH (COMPRESSION = dictionary)"),
    )
    .await;
    ok(&db, &format!("COPY q FROM {data}")).await;
    // a duplicate key against the table's rows is found, and nothing changes
    let dup = file(&dir, "dup.csv", &csv(4999, 5001, 300));
    let e = fail(&db, &format!("COPY q FROM {dup}")).await;
    assert!(e.contains("4999"), "{e}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM q").await,
        vec![srow(&["5000"])]
    );
    ok(
        &db,
        "INSERT INTO q (id, v, t, b) VALUES (6000, 'new middle', 'é', 1), (6001, 'v1é', NULL, 2)",
    )
    .await;
    assert_eq!(
        query(&db, "SELECT id, v, t FROM q WHERE id >= 6000 ORDER BY id").await,
        vec![
            vec![
                Some("6000".into()),
                Some("new middle".into()),
                Some("é".into())
            ],
            vec![Some("6001".into()), Some("v1é".into()), None],
        ]
    );
    ok(&db, "DELETE FROM q WHERE v = 'new middle' OR id < 100").await;
    assert_eq!(
        query(&db, "SELECT count(*) FROM q").await,
        vec![srow(&["4901"])]
    );
    // an index built over dictionary columns, used by a lookup
    ok(&db, "CREATE INDEX qv ON q (v)").await;
    // a unique index over repeated values is refused, naming the key by its values (a
    // number bare, text quoted) although both columns are stored as codes
    ok(
        &db,
        "CREATE TABLE u (n BIGINT, s TEXT) WITH (COMPRESSION = dictionary); \
         INSERT INTO u VALUES (1, 'a'), (2, 'b'), (1, 'a')",
    )
    .await;
    let e = fail(&db, "CREATE UNIQUE INDEX uns ON u (n, s)").await;
    assert!(e.contains("key (n, s)=(1, 'a') is duplicated"), "{e}");
    let by_index = query(&db, "SELECT count(*) FROM q WHERE v = 'v2Z'").await;
    let by_scan = query(&db, "SELECT count(*) FROM q WHERE v || '' = 'v2Z'").await;
    assert_eq!(by_index, by_scan);
    assert_ne!(by_index, vec![srow(&["0"])]);
    // UPDATE in place (a new smallest value re-encodes the partition) and with new keys
    ok(
        &db,
        "UPDATE q SET v = 'A new first', m = m + 1 WHERE id = 201",
    )
    .await;
    assert_eq!(
        query(&db, "SELECT v, m FROM q WHERE id = 201").await,
        query(&db, "SELECT 'A new first', m FROM q WHERE id = 201").await,
    );
    assert_eq!(
        query(&db, "SELECT min(v) FROM q").await,
        vec![srow(&["A new first"])]
    );
    ok(
        &db,
        "UPDATE q SET id = id + 100000, t = 'moved' WHERE id BETWEEN 300 AND 310",
    )
    .await;
    assert_eq!(
        query(
            &db,
            "SELECT count(*), min(id), max(t) FROM q WHERE id > 100000"
        )
        .await,
        vec![srow(&["11", "100300", "moved"])]
    );
    assert_eq!(
        query(&db, "SELECT count(*) FROM q").await,
        vec![srow(&["4901"])]
    );
    let stored = storage(&db, "q").await;
    assert!(
        stored.iter().any(|(c, s, _)| c == "v" && s == "dictionary"),
        "{stored:?}"
    );
    // ON CONFLICT DO UPDATE: clashing rows updated from their stored values and the
    // proposed ones (new dictionary values among them), fresh rows inserted
    let row_202 = query(&db, "SELECT id, v, t FROM q WHERE id = 202").await;
    ok(
        &db,
        "INSERT INTO q (id, v, t, m) VALUES (201, 'x', 'AA first', 5), (202, 'y', NULL, 6), \
         (7000, 'fresh', 'zz last', 7) \
         ON CONFLICT (id) DO UPDATE SET v = q.v || excluded.v, t = excluded.t, m = q.m + excluded.m \
         WHERE q.id <> 202",
    )
    .await;
    let mut want = vec![srow(&["201", "A new firstx", "AA first"])];
    want.extend(row_202);
    want.push(srow(&["7000", "fresh", "zz last"]));
    assert_eq!(
        query(
            &db,
            "SELECT id, v, t FROM q WHERE id IN (201, 202, 7000) ORDER BY id"
        )
        .await,
        want
    );
    assert_eq!(
        query(
            &db,
            "SELECT count(*), count(*) FILTER (WHERE t IN ('AA first', 'zz last')) FROM q"
        )
        .await,
        vec![srow(&["4902", "2"])]
    );
    // a second row with a taken key in one statement is refused and changes nothing
    let before = query(&db, "SELECT * FROM q ORDER BY id").await;
    let e = fail(
        &db,
        "INSERT INTO q (id, v) VALUES (203, 'a'), (203, 'b') ON CONFLICT (id) DO UPDATE SET v = 'c'",
    )
    .await;
    assert!(e.contains("second time"), "{e}");
    assert_eq!(query(&db, "SELECT * FROM q ORDER BY id").await, before);
    let stored = storage(&db, "q").await;
    assert!(
        stored.iter().any(|(c, s, _)| c == "t" && s == "dictionary"),
        "{stored:?}"
    );
}

#[tokio::test]
async fn failed_loads_leave_dictionaries_and_codes_unchanged() {
    let db = db(2);
    let dir = tempfile::tempdir().unwrap();
    let good = file(&dir, "good.csv", &csv(0, 4000, 250));
    ok(
        &db,
        &format!("CREATE TABLE q ({COLUMNS}) WITH (COMPRESSION = dictionary)"),
    )
    .await;
    ok(&db, &format!("COPY q FROM {good}")).await;
    let before = (
        storage(&db, "q").await,
        query(&db, "SELECT * FROM q").await,
        query(&db, "SELECT * FROM wireload_tables").await,
    );
    // new values everywhere, and a bad date on the last line
    let mut bad = csv(4000, 9000, 900);
    bad.push_str("9000,1,1,1,1,1,2024-02-30,,,,\n");
    let bad = file(&dir, "bad.csv", &bad);
    let e = fail(&db, &format!("COPY q FROM {bad}")).await;
    assert!(e.contains("2024-02-30"), "{e}");
    let after = (
        storage(&db, "q").await,
        query(&db, "SELECT * FROM q").await,
        query(&db, "SELECT * FROM wireload_tables").await,
    );
    assert!(before == after, "a failed load changed the table");
}

#[tokio::test]
async fn auto_decides_per_column_and_the_syntax_is_checked() {
    let db = db(2);
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..30_000 {
        writeln!(
            text,
            "{i},{},{}",
            ["AIR", "MAIL", "SHIP", "RAIL"][i % 4],
            i * 7919 % 100_003
        )
        .unwrap();
    }
    ok(
        &db,
        "CREATE TABLE a (id BIGINT, mode TEXT COMPRESSION plain, mode2 TEXT, r INT) \
         WITH (COMPRESSION = auto)",
    )
    .await;
    ok(
        &db,
        "CREATE TABLE b (id BIGINT, mode TEXT COMPRESSION dictionary, r INT)",
    )
    .await;
    assert_eq!(
        storage(&db, "a").await,
        vec![
            ("id".into(), "auto (undecided)".into(), None),
            ("mode".into(), "plain".into(), None),
            ("mode2".into(), "auto (undecided)".into(), None),
            ("r".into(), "auto (undecided)".into(), None),
        ]
    );
    // a few rows are not enough to decide
    ok(&db, "INSERT INTO a VALUES (1, 'AIR', 'AIR', 1)").await;
    assert_eq!(storage(&db, "a").await[2].1, "auto (undecided)");
    ok(&db, "TRUNCATE a").await;
    let mut with_both = String::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split(',').collect();
        writeln!(
            with_both,
            "{},{},{},{}",
            cells[0], cells[1], cells[1], cells[2]
        )
        .unwrap();
    }
    let both = file(&dir, "both.csv", &with_both);
    ok(&db, &format!("COPY a FROM {both}")).await;
    let decided = storage(&db, "a").await;
    assert_eq!(decided[0].1, "plain", "unique ids stay plain: {decided:?}");
    assert_eq!(decided[1].1, "plain", "declared plain: {decided:?}");
    assert_eq!(
        decided[2],
        ("mode2".into(), "dictionary".into(), Some("4".into()))
    );
    assert_eq!(
        decided[3].1, "plain",
        "30,000 distinct of 30,000: {decided:?}"
    );
    assert_eq!(storage(&db, "b").await[1].1, "dictionary");
    assert_eq!(
        query(
            &db,
            "SELECT mode2, count(*) FROM a GROUP BY mode2 ORDER BY mode2"
        )
        .await,
        vec![
            srow(&["AIR", "7500"]),
            srow(&["MAIL", "7500"]),
            srow(&["RAIL", "7500"]),
            srow(&["SHIP", "7500"]),
        ]
    );
    // bad settings are refused
    let e = fail(&db, "CREATE TABLE c (x INT COMPRESSION zstd)").await;
    assert!(e.contains("zstd") && e.contains("dictionary"), "{e}");
    let e = fail(&db, "CREATE TABLE c (x REAL COMPRESSION dictionary)").await;
    assert!(e.contains("stored plain"), "{e}");
    let e = fail(&db, "CREATE TABLE c (x INT) WITH (fillfactor = 70)").await;
    assert!(e.contains("COMPRESSION"), "{e}");
    let e = fail(
        &db,
        "CREATE TABLE c (x INT COMPRESSION dictionary COMPRESSION plain)",
    )
    .await;
    assert!(e.contains("twice"), "{e}");
}

/// The plan text of `sql` (EXPLAIN or EXPLAIN ANALYZE), every cell joined.
async fn plan(db: &Database, sql: &str) -> String {
    query(db, sql)
        .await
        .into_iter()
        .flatten()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn filters_on_dictionary_columns_are_tested_on_codes() {
    let db = db(2);
    let dir = tempfile::tempdir().unwrap();
    // k hashes to 4 partitions: a partition's dictionary holds some of its values only
    let mut text = String::new();
    for i in 0..6000 {
        let null = i % 17 == 0;
        let k = if null {
            String::new()
        } else {
            format!("k{:02}", i % 20)
        };
        let n = if null {
            String::new()
        } else {
            ((i * 7) % 50 - 25).to_string()
        };
        writeln!(
            text,
            "{i},{k},{n},{}.{:02},2024-0{}-1{},2024-01-01 0{}:00:00",
            i % 30,
            i % 7,
            1 + i % 9,
            i % 10,
            i % 10
        )
        .unwrap();
    }
    let data = file(&dir, "f.csv", &text);
    let columns = "id INT, k TEXT, n BIGINT, m DECIMAL(8,2), day DATE, ts TIMESTAMP";
    ok(
        &db,
        &format!("CREATE TABLE p ({columns}) PARTITION BY HASH (k) PARTITIONS 4"),
    )
    .await;
    ok(
        &db,
        &format!(
            "CREATE TABLE q ({columns}) WITH (COMPRESSION = dictionary) \
             PARTITION BY HASH (k) PARTITIONS 4"
        ),
    )
    .await;
    for t in ["p", "q"] {
        ok(&db, &format!("COPY {t} FROM {data}")).await;
    }
    let filters = [
        "k = 'k03'",
        "k = 'absent'",
        "k <> 'k03'",
        "k < 'k05'",
        "k <= 'k05'",
        "k > 'k18'",
        "k >= 'k18'",
        "k > 'k0' AND k < 'k1'",
        "k BETWEEN 'k04' AND 'k07'",
        "k IN ('k01', 'k07', 'k19', 'zz')",
        "k IN ('k01', 'k02')",
        "k < 'a'",
        "k > 'zz'",
        "k IS NULL",
        "n = 3",
        "n < -20",
        "n >= 24.5",
        "n > 1e30",
        "n BETWEEN -3 AND 3",
        "n IN (1, 2, 1000)",
        "m > 10.005",
        "m <= 3",
        "day < '2024-03-15'",
        "day = '2024-05-14'",
        "ts >= '2024-01-01 05:00:00'",
        "k = 'k03' AND n > 0 AND day > '2024-01-01'",
        "k = 'k03' OR n > 20",
        "NOT (k = 'k03')",
    ];
    for f in filters {
        let sql = format!("SELECT * FROM {{t}} WHERE {f} ORDER BY id");
        let plain = query(&db, &sql.replace("{t}", "p")).await;
        let dict = query(&db, &sql.replace("{t}", "q")).await;
        assert_eq!(plain, dict, "{f}");
    }
    // with deleted rows: the code tests and the deletion vectors both apply
    for t in ["p", "q"] {
        ok(
            &db,
            &format!("DELETE FROM {t} WHERE id % 3 = 0 OR k = 'k05'"),
        )
        .await;
    }
    for f in &filters[..12] {
        let sql = format!("SELECT * FROM {{t}} WHERE {f} ORDER BY id");
        let plain = query(&db, &sql.replace("{t}", "p")).await;
        let dict = query(&db, &sql.replace("{t}", "q")).await;
        assert_eq!(plain, dict, "after DELETE: {f}");
    }
    // the scan names the columns it tests on codes and skips partitions without the value
    let explain = plan(&db, "EXPLAIN SELECT id FROM q WHERE k = 'k03' AND n > 0").await;
    assert!(explain.contains("codes tested: [k, n]"), "{explain}");
    assert!(
        explain.contains("(3 table partitions skipped)"),
        "{explain}"
    );
    let none = plan(&db, "EXPLAIN SELECT id FROM q WHERE k = 'absent'").await;
    assert!(none.contains("(4 table partitions skipped)"), "{none}");
    assert!(
        !plan(&db, "EXPLAIN SELECT id FROM p WHERE k = 'k03'")
            .await
            .contains("codes")
    );
    // rows are dropped before DataFusion's filter sees them
    let analyzed = plan(&db, "EXPLAIN ANALYZE SELECT count(*) FROM q WHERE n < 0").await;
    assert!(analyzed.contains("code_filtered_rows="), "{analyzed}");
    assert!(!analyzed.contains("code_filtered_rows=0"), "{analyzed}");
}

/// Rows `from..to` of a table of an id, a repeating number and a text whose values spread
/// over `distinct` (each followed by `suffix`, which makes them sort between the others).
fn runs_csv(from: usize, to: usize, distinct: usize, suffix: &str) -> String {
    let mut out = String::with_capacity((to - from) * 24);
    for i in from..to {
        let v = (i * 7919) % distinct;
        writeln!(out, "{i},{},v{v:06}{suffix}", i % 1000).unwrap();
    }
    out
}

#[tokio::test]
async fn tables_of_several_dictionary_runs_answer_as_plain_ones() {
    let db = db(2);
    let dir = tempfile::tempdir().unwrap();
    // more rows than a dictionary run holds: the first load seals its run on the way
    let big = wireload_publish::DICTIONARY_RUN_ROWS + 40_000;
    let first = file(&dir, "first.csv", &runs_csv(0, big, 60_000, ""));
    // new values between the old ones start the run after the sealed one; old values join
    // it too (each run has its own dictionary)
    let second = file(&dir, "second.csv", &runs_csv(big, big + 3000, 500, "m"));
    let third = file(
        &dir,
        "third.csv",
        &runs_csv(big + 3000, big + 5000, 800, ""),
    );
    let columns = "id INT, k INT, v TEXT";
    ok(&db, &format!("CREATE TABLE p ({columns})")).await;
    ok(
        &db,
        &format!("CREATE TABLE q ({columns}) WITH (COMPRESSION = dictionary)"),
    )
    .await;
    for data in [&first, &second, &third] {
        for t in ["p", "q"] {
            ok(&db, &format!("COPY {t} FROM {data}")).await;
        }
    }
    // every run counts its own entries: the values of the third load twice
    let distinct = query(&db, "SELECT count(DISTINCT v) FROM q").await[0][0]
        .clone()
        .unwrap()
        .parse::<usize>()
        .unwrap();
    let entries = storage(&db, "q").await[2].2.clone().unwrap();
    assert!(
        entries.parse::<usize>().unwrap() > distinct,
        "{entries} entries for {distinct} distinct values: one run"
    );
    let same = [
        "SELECT count(*), count(DISTINCT v), min(v), max(v) FROM {t}",
        "SELECT v, count(*), sum(k) FROM {t} GROUP BY v ORDER BY v LIMIT 30",
        "SELECT v, count(*) FROM {t} GROUP BY v ORDER BY count(*) DESC, v LIMIT 10",
        "SELECT id, v FROM {t} ORDER BY v DESC, id LIMIT 40",
        "SELECT id FROM {t} WHERE v = 'v000007' ORDER BY id",
        "SELECT id FROM {t} WHERE v = 'v000007m' ORDER BY id",
        "SELECT count(*) FROM {t} WHERE v BETWEEN 'v000100' AND 'v000200a'",
        "SELECT count(*) FROM {t} WHERE v IN ('v000003', 'v000003m', 'v000003a', 'x')",
        "SELECT count(*) FROM {t} WHERE v IN ('v000003m', 'v000004m')",
        "SELECT count(*) FROM {t} WHERE v > 'v059990' OR v < 'v000002'",
        "SELECT x.id, y.v FROM {t} x JOIN p y ON x.v = y.v AND x.id = y.id \
         WHERE x.id % 50000 = 1 ORDER BY x.id",
    ];
    for sql in same {
        same_on_both(&db, sql, "").await;
    }
    // a changed chunk of a sealed run joins the open one (here: every chunk of the first
    // load, which the UPDATE touches all over)
    for t in ["p", "q"] {
        ok(
            &db,
            &format!("UPDATE {t} SET v = v || 'u', k = k + 1 WHERE id % 100003 = 5"),
        )
        .await;
    }
    for sql in same
        .iter()
        .chain(&["SELECT id, v FROM {t} WHERE v LIKE '%u' ORDER BY id"])
    {
        same_on_both(&db, sql, "after UPDATE: ").await;
    }
}
