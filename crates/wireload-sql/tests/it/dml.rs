//! INSERT, UPDATE, DELETE, CREATE TABLE AS and TRUNCATE: constraints hold, indexes stay
//! exact, and a failing statement leaves every table as it was.

use crate::common::{Row, db, fail, query, row, rows_of, run, srow};
use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use wireload_load::LoadControl;
use wireload_sql::{Database, SqlError, SqlState, StatementOutput};

/// Runs one statement that changes rows and returns its command tag.
async fn change(db: &Database, sql: &str) -> String {
    let out = run(db, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    match out.last() {
        Some(StatementOutput::Changed(c)) => c.tag(),
        other => panic!("{sql}: expected a row change, got {other:?}"),
    }
}

/// Runs `sql`, which must fail, and returns the error.
async fn error(db: &Database, sql: &str) -> SqlError {
    match run(db, sql).await {
        Ok(out) => panic!("{sql}: expected an error, got {out:?}"),
        Err(e) => e,
    }
}

const PEOPLE: &str = "CREATE TABLE p (id INT PRIMARY KEY, name VARCHAR(5), born DATE, \
                      score DECIMAL(6,2), active BOOLEAN NOT NULL)";

#[tokio::test]
async fn insert_returning() {
    let db = db(2);
    run(&db, PEOPLE).await.unwrap();
    let out = run(
        &db,
        "INSERT INTO p (id, name, active) VALUES (1, 'a', true), (2, 'b', false) \
         RETURNING id * 10 AS tens, p.name AS n, *",
    )
    .await
    .unwrap();
    let Some(StatementOutput::Changed(c)) = out.last() else {
        panic!("{out:?}")
    };
    assert_eq!(c.tag(), "INSERT 0 2");
    let (schema, batches) = c.returning.as_ref().expect("RETURNING rows");
    let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        ["tens", "n", "id", "name", "born", "score", "active"]
    );
    assert_eq!(
        crate::common::rows_of(batches),
        vec![
            row(&[
                Some("10"),
                Some("a"),
                Some("1"),
                Some("a"),
                None,
                None,
                Some("true")
            ]),
            row(&[
                Some("20"),
                Some("b"),
                Some("2"),
                Some("b"),
                None,
                None,
                Some("false")
            ]),
        ]
    );
    // a RETURNING that cannot be planned inserts nothing
    assert!(
        fail(
            &db,
            "INSERT INTO p (id, active) VALUES (3, true) RETURNING nope"
        )
        .await
        .contains("nope")
    );
    assert_eq!(
        query(&db, "SELECT count(*) FROM p").await,
        vec![srow(&["2"])]
    );
}

/// Table `p` with ids 1..=10, named `n1`..`n10`, active when even.
async fn ten_people() -> Database {
    let db = db(2);
    run(&db, PEOPLE).await.unwrap();
    change(
        &db,
        "INSERT INTO p (id, name, active) SELECT value, 'n' || value, value % 2 = 0 \
         FROM generate_series(1, 10)",
    )
    .await;
    db
}

/// The rows of the last output of `out`.
fn rows_out(out: &StatementOutput) -> Vec<Row> {
    match out {
        StatementOutput::Rows { batches, .. } => rows_of(batches),
        other => panic!("expected rows, got {other:?}"),
    }
}

#[tokio::test]
async fn prepared_key_reads_go_to_the_index_and_answer_as_queries_do() {
    let db = db(2);
    run(
        &db,
        "CREATE TABLE k (id INT PRIMARY KEY, code TEXT NOT NULL, day DATE NOT NULL, v BIGINT, \
         note TEXT, UNIQUE (code, day))",
    )
    .await
    .unwrap();
    let values: Vec<String> = (1..=300)
        .map(|i| {
            let v = if i % 7 == 0 {
                "NULL".to_string()
            } else {
                (i * 10).to_string()
            };
            format!(
                "({i}, 'c{}', DATE '2024-01-01' + INTERVAL '{} days', {v}, 'n{i}')",
                i % 17,
                i / 17
            )
        })
        .collect();
    run(&db, &format!("INSERT INTO k VALUES {}", values.join(", ")))
        .await
        .unwrap();
    run(
        &db,
        "PREPARE a(INT) AS SELECT v, note FROM k WHERE id = $1; \
         PREPARE b(BIGINT) AS SELECT * FROM k WHERE $1 = id; \
         PREPARE c(TEXT, DATE) AS SELECT id AS ident, v FROM k t WHERE t.code = $1 AND day = $2; \
         PREPARE d(INT) AS SELECT id FROM k WHERE id = $1 AND v = 20; \
         PREPARE e(INT) AS SELECT id FROM k WHERE id = $1 ORDER BY id",
    )
    .await
    .unwrap();
    let mut keyed = 0;
    for id in [-1i64, 0, 1, 2, 7, 150, 299, 300, 301, i32::MAX as i64] {
        let expected = query(&db, &format!("SELECT v, note FROM k WHERE id = {id}")).await;
        assert_eq!(expected.len(), usize::from((1..=300).contains(&id)), "{id}");
        assert_eq!(query(&db, &format!("EXECUTE a({id})")).await, expected);
        let all = query(&db, &format!("SELECT * FROM k WHERE id = {id}")).await;
        assert_eq!(query(&db, &format!("EXECUTE b({id})")).await, all);
        keyed += 2;
    }
    // a BIGINT no INT column can hold, and NULL, match nothing
    assert!(query(&db, "EXECUTE b(1099511627776)").await.is_empty());
    assert!(query(&db, "EXECUTE a(NULL)").await.is_empty());
    keyed += 2;
    for (code, day) in [
        ("c3", "2024-01-01"),
        ("c3", "2024-01-02"),
        ("c5", "2024-01-18"),
    ] {
        let expected = query(
            &db,
            &format!("SELECT id AS ident, v FROM k WHERE code = '{code}' AND day = DATE '{day}'"),
        )
        .await;
        let got = query(&db, &format!("EXECUTE c('{code}', DATE '{day}')")).await;
        assert_eq!(got, expected, "{code} {day}");
        keyed += 1;
    }
    assert_eq!(
        query(&db, "EXECUTE c('c3', DATE '2024-01-01')").await,
        vec![row(&[Some("3"), Some("30")])]
    );
    keyed += 1;
    // other shapes take DataFusion's path
    assert_eq!(query(&db, "EXECUTE d(2)").await, vec![srow(&["2"])]);
    assert!(query(&db, "EXECUTE d(3)").await.is_empty());
    assert_eq!(query(&db, "EXECUTE e(4)").await, vec![srow(&["4"])]);
    assert_eq!(db.key_accesses(), keyed);
    // the current version is read, and a transaction's own writes
    change(&db, "UPDATE k SET note = 'changed' WHERE id = 5").await;
    assert_eq!(
        query(&db, "EXECUTE a(5)").await,
        vec![srow(&["50", "changed"])]
    );
    let other = db.new_session();
    run(
        &other,
        "PREPARE a(INT) AS SELECT v, note FROM k WHERE id = $1",
    )
    .await
    .unwrap();
    run(&db, "BEGIN; UPDATE k SET note = 'tx' WHERE id = 6")
        .await
        .unwrap();
    assert_eq!(query(&db, "EXECUTE a(6)").await, vec![srow(&["60", "tx"])]);
    assert_eq!(
        query(&other, "EXECUTE a(6)").await,
        vec![srow(&["60", "n6"])]
    );
    run(&db, "ROLLBACK").await.unwrap();
    assert_eq!(query(&db, "EXECUTE a(6)").await, vec![srow(&["60", "n6"])]);
    assert_eq!(other.key_accesses(), 1);
    // DEALLOCATE forgets the key access too; the name can be prepared again
    run(
        &db,
        "DEALLOCATE a; PREPARE a(INT) AS SELECT note FROM k WHERE id = $1 + 1",
    )
    .await
    .unwrap();
    let before = db.key_accesses();
    assert_eq!(query(&db, "EXECUTE a(6)").await, vec![srow(&["n7"])]);
    assert_eq!(db.key_accesses(), before);

    // the API: parameter types inferred from the key column, values cast to them
    let ctl = LoadControl::default();
    let read = db
        .prepare("SELECT note FROM k WHERE id = $1")
        .await
        .unwrap();
    assert!(read.is_key_access());
    assert_eq!(read.parameter_types(), &[Some(DataType::Int32)]);
    let out = db
        .execute_prepared(&read, &[ScalarValue::Int64(Some(9))], &ctl)
        .await
        .unwrap();
    assert_eq!(rows_out(&out), vec![srow(&["n9"])]);
    let update = db
        .prepare("UPDATE k SET v = v + $2 WHERE id = $1")
        .await
        .unwrap();
    assert!(update.is_key_access());
    let out = db
        .execute_prepared(
            &update,
            &[ScalarValue::Int32(Some(9)), ScalarValue::Int64(Some(1))],
            &ctl,
        )
        .await
        .unwrap();
    assert!(matches!(&out, StatementOutput::Changed(c) if c.tag() == "UPDATE 1"));
    assert_eq!(
        query(&db, "SELECT v FROM k WHERE id = 9").await,
        vec![srow(&["91"])]
    );
    let scan = db
        .prepare("SELECT count(*) FROM k WHERE v > $1")
        .await
        .unwrap();
    assert!(!scan.is_key_access());
    let out = db
        .execute_prepared(&scan, &[ScalarValue::Int64(Some(2900))], &ctl)
        .await
        .unwrap();
    assert_eq!(rows_out(&out), vec![srow(&["9"])]);
    assert!(
        db.execute_prepared(&read, &[], &ctl)
            .await
            .unwrap_err()
            .to_string()
            .contains("1 parameters, 0 given")
    );
    assert!(
        db.prepare("CREATE TABLE z (a INT)")
            .await
            .unwrap_err()
            .to_string()
            .contains("can be prepared")
    );
}

#[tokio::test]
async fn prepared_key_updates_change_the_row_in_place_as_updates_do() {
    let db = db(2);
    let create = |name: &str| {
        format!(
            "CREATE TABLE {name} (id INT PRIMARY KEY, code TEXT NOT NULL, v BIGINT, \
             note VARCHAR(6) NOT NULL, UNIQUE (code))"
        )
    };
    run(&db, &format!("{}; {}", create("a"), create("b")))
        .await
        .unwrap();
    for t in ["a", "b"] {
        let values: Vec<String> = (1..=50)
            .map(|i| format!("({i}, 'c{i}', {}, 'n{i}')", i * 10))
            .collect();
        run(
            &db,
            &format!("INSERT INTO {t} VALUES {}", values.join(", ")),
        )
        .await
        .unwrap();
    }
    let ctl = LoadControl::default();
    // the same updates: on a by key access, on b by DataFusion's UPDATE
    let setters = [
        ("v = v + $2", "v = v + {p}"),
        (
            "v = CASE WHEN v > $2 THEN NULL ELSE coalesce(v, 0) * 2 END",
            "v = CASE WHEN v > {p} THEN NULL ELSE coalesce(v, 0) * 2 END",
        ),
        ("note = upper(note), v = $2", "note = upper(note), v = {p}"),
    ];
    let mut seed = 17u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let before = db.key_accesses();
    let mut executed = 0;
    for (keyed, plain) in setters {
        let statement = db
            .prepare(&format!("UPDATE a SET {keyed} WHERE id = $1"))
            .await
            .unwrap();
        assert!(statement.is_key_access(), "{keyed}");
        for _ in 0..40 {
            let id = next(60) as i32; // some keys are absent
            let p = next(500) as i64;
            let out = db
                .execute_prepared(
                    &statement,
                    &[ScalarValue::Int32(Some(id)), ScalarValue::Int64(Some(p))],
                    &ctl,
                )
                .await
                .unwrap();
            let plain = plain.replace("{p}", &p.to_string());
            let want = change(&db, &format!("UPDATE b SET {plain} WHERE id = {id}")).await;
            let StatementOutput::Changed(c) = out else {
                panic!("{keyed}: {out:?}")
            };
            assert_eq!(c.tag(), want, "{keyed} on {id}");
            executed += 1;
        }
    }
    assert_eq!(db.key_accesses() - before, executed);
    let all = "SELECT id, code, v, note FROM {t} ORDER BY id";
    let a = query(&db, &all.replace("{t}", "a")).await;
    assert_eq!(a, query(&db, &all.replace("{t}", "b")).await);
    // the index still finds every row, with its new values
    for id in [1, 17, 50] {
        assert_eq!(
            query(
                &db,
                &format!("SELECT id, code, v, note FROM a WHERE id = {id}")
            )
            .await,
            vec![a[id - 1].clone()]
        );
    }
    // a value the column refuses changes nothing: NOT NULL, too long
    let bad = db
        .prepare("UPDATE a SET note = $2 WHERE id = $1")
        .await
        .unwrap();
    assert!(bad.is_key_access());
    for (value, state) in [
        (ScalarValue::Utf8(None), SqlState::NOT_NULL_VIOLATION),
        (
            ScalarValue::Utf8(Some("too long".into())),
            SqlState::STRING_DATA_RIGHT_TRUNCATION,
        ),
    ] {
        let e = db
            .execute_prepared(&bad, &[ScalarValue::Int32(Some(3)), value], &ctl)
            .await
            .unwrap_err();
        assert_eq!(e.sqlstate(), state, "{e}");
    }
    assert_eq!(query(&db, &all.replace("{t}", "a")).await, a);
    // a NULL key updates nothing
    let out = db
        .execute_prepared(
            &bad,
            &[ScalarValue::Int32(None), ScalarValue::from("x")],
            &ctl,
        )
        .await
        .unwrap();
    assert!(matches!(out, StatementOutput::Changed(c) if c.rows == 0));
    // an indexed column changed, or RETURNING: DataFusion's path
    for sql in [
        "UPDATE a SET code = $2 WHERE id = $1",
        "UPDATE a SET v = 1 WHERE id = $1 RETURNING v",
        "UPDATE a SET v = 1 WHERE id = $1 AND v = 3",
    ] {
        assert!(!db.prepare(sql).await.unwrap().is_key_access(), "{sql}");
    }
    // inside a transaction: seen by its own statements only, gone on ROLLBACK
    run(
        &db,
        "PREPARE bump(INT) AS UPDATE a SET v = 7777 WHERE id = $1",
    )
    .await
    .unwrap();
    let other = db.new_session();
    run(&db, "BEGIN; EXECUTE bump(4)").await.unwrap();
    assert_eq!(
        query(&db, "SELECT v FROM a WHERE id = 4").await,
        vec![srow(&["7777"])]
    );
    assert_eq!(
        query(&other, "SELECT v FROM a WHERE id = 4").await,
        vec![a[3][2..3].to_vec()]
    );
    run(&db, "ROLLBACK").await.unwrap();
    assert_eq!(query(&db, &all.replace("{t}", "a")).await, a);
    // first committer wins
    run(
        &other,
        "PREPARE bump(INT) AS UPDATE a SET v = 8888 WHERE id = $1",
    )
    .await
    .unwrap();
    run(&db, "BEGIN; EXECUTE bump(5)").await.unwrap();
    run(&other, "BEGIN; EXECUTE bump(5); EXECUTE bump(6); COMMIT")
        .await
        .unwrap();
    assert_eq!(
        error(&db, "COMMIT").await.sqlstate(),
        SqlState::SERIALIZATION_FAILURE
    );
    assert_eq!(
        query(&db, "SELECT v FROM a WHERE id IN (5, 6, 7) ORDER BY id").await,
        vec![srow(&["8888"]), srow(&["8888"]), a[6][2..3].to_vec()]
    );
    // other rows: both commit (conflicts are per row)
    run(
        &db,
        "PREPARE seven(INT) AS UPDATE a SET v = 7777 WHERE id = $1",
    )
    .await
    .unwrap();
    run(&db, "BEGIN; EXECUTE seven(7)").await.unwrap();
    run(&other, "BEGIN; EXECUTE bump(8); COMMIT").await.unwrap();
    run(&db, "COMMIT").await.unwrap();
    assert_eq!(
        query(&db, "SELECT v FROM a WHERE id IN (7, 8) ORDER BY id").await,
        vec![srow(&["7777"]), srow(&["8888"])]
    );
}

/// The command tags of row changes (slt/ checks the statements and their row counts).
#[tokio::test]
async fn row_changes_report_their_command_tags() {
    let db = ten_people().await;
    for (sql, want) in [
        (
            "INSERT INTO p (id, active) VALUES (11, true), (12, true)",
            "INSERT 0 2",
        ),
        ("UPDATE p SET name = 'x' WHERE id > 10", "UPDATE 2"),
        ("UPDATE p SET name = 'x' WHERE false", "UPDATE 0"),
        ("DELETE FROM p WHERE id > 10", "DELETE 2"),
        (
            "INSERT INTO p (id, active) VALUES (1, true) ON CONFLICT DO NOTHING",
            "INSERT 0 0",
        ),
        ("CREATE TABLE c AS SELECT id FROM p", "SELECT 10"),
        ("TRUNCATE TABLE p, c", "TRUNCATE TABLE"),
    ] {
        assert_eq!(change(&db, sql).await, want, "{sql}");
    }
}

/// ON CONFLICT DO NOTHING through the prepared-statement API (slt/conflict.slt has the SQL).
#[tokio::test]
async fn insert_on_conflict_do_nothing_through_the_api() {
    let db = ten_people().await;
    // through the API too
    let insert = db
        .prepare("INSERT INTO p (id, name, active) VALUES ($1, $2, true) ON CONFLICT DO NOTHING")
        .await
        .unwrap();
    let ctl = LoadControl::default();
    for (id, expected) in [(1, 0), (30, 1), (30, 0)] {
        let out = db
            .execute_prepared(
                &insert,
                &[
                    ScalarValue::Int32(Some(id)),
                    ScalarValue::from(format!("z{id}")),
                ],
                &ctl,
            )
            .await
            .unwrap();
        assert!(
            matches!(&out, StatementOutput::Changed(c) if c.rows == expected),
            "{out:?}"
        );
    }
}
