//! Random INSERT, UPDATE and DELETE statements checked against a model of the table (rows in
//! insertion order; a row whose key an UPDATE changes moves to the end, other updated rows
//! keep their place): after every statement the table, its
//! primary key index and the statement's row count equal the model's, and a statement the
//! model rejects (duplicate key, value too long) changes nothing. A second set, with richer
//! expressions and RETURNING, is checked against DuckDB (a real DuckDB, from PyPI).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{db, query, run};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_sql::{SqlState, StatementOutput};

/// One row: key, number, text.
type Row = (i64, Option<i64>, Option<String>);

/// Which rows a DELETE keeps.
type Keep = Box<dyn Fn(&Row) -> bool>;

/// A statement and what the model says it does.
struct Step {
    sql: String,
    /// the model after it, or the SQLSTATE it fails with
    outcome: Result<(Vec<Row>, u64), SqlState>,
}

fn text(rng: &mut StdRng) -> Option<String> {
    if rng.random_bool(0.15) {
        return None;
    }
    let len = rng.random_range(0..=9); // 9 is one too long for VARCHAR(8)
    Some(
        (0..len)
            .map(|_| rng.random_range(b'a'..=b'd') as char)
            .collect(),
    )
}

fn sql_text(s: &Option<String>) -> String {
    s.as_ref().map_or("NULL".into(), |s| format!("'{s}'"))
}

fn sql_num(v: Option<i64>) -> String {
    v.map_or("NULL".into(), |v| v.to_string())
}

fn unique_keys(rows: &[Row]) -> bool {
    let mut keys: Vec<i64> = rows.iter().map(|r| r.0).collect();
    keys.sort_unstable();
    keys.windows(2).all(|w| w[0] != w[1])
}

/// A random statement over `model` and its outcome.
fn step(rng: &mut StdRng, model: &[Row]) -> Step {
    let (lo, hi) = {
        let a = rng.random_range(0..70);
        (a, a + rng.random_range(0..15))
    };
    let in_range = |r: &Row| (lo..=hi).contains(&r.0);
    match rng.random_range(0..5) {
        0 | 1 => {
            let rows: Vec<Row> = (0..rng.random_range(1..=5))
                .map(|_| {
                    let v = rng.random_bool(0.8).then(|| rng.random_range(-100..100));
                    (rng.random_range(0..80), v, text(rng))
                })
                .collect();
            let values: Vec<String> = rows
                .iter()
                .map(|r| format!("({}, {}, {})", r.0, sql_num(r.1), sql_text(&r.2)))
                .collect();
            let sql = format!("INSERT INTO m VALUES {}", values.join(", "));
            let mut next = model.to_vec();
            next.extend(rows.iter().cloned());
            let outcome = if rows
                .iter()
                .any(|r| r.2.as_ref().is_some_and(|s| s.len() > 8))
            {
                Err(SqlState::STRING_DATA_RIGHT_TRUNCATION)
            } else if !unique_keys(&next) {
                Err(SqlState::UNIQUE_VIOLATION)
            } else {
                Ok((next, rows.len() as u64))
            };
            Step { sql, outcome }
        }
        2 => {
            let c = rng.random_range(-5..5);
            let sql = format!("UPDATE m SET v = v + {c} WHERE k BETWEEN {lo} AND {hi}");
            // v is in no index: the rows change in place
            let n = model.iter().filter(|r| in_range(r)).count() as u64;
            let next = model
                .iter()
                .map(|r| {
                    if in_range(r) {
                        (r.0, r.1.map(|v| v + c), r.2.clone())
                    } else {
                        r.clone()
                    }
                })
                .collect();
            Step {
                sql,
                outcome: Ok((next, n)),
            }
        }
        3 => {
            let c = rng.random_range(-3..=3);
            let sql = format!("UPDATE m SET k = k + {c}, s = 'u' WHERE k BETWEEN {lo} AND {hi}");
            let (mut next, moved): (Vec<Row>, Vec<Row>) =
                model.iter().cloned().partition(|r| !in_range(r));
            let n = moved.len() as u64;
            next.extend(
                moved
                    .into_iter()
                    .map(|(k, v, _)| (k + c, v, Some("u".into()))),
            );
            let outcome = if unique_keys(&next) {
                Ok((next, n))
            } else {
                Err(SqlState::UNIQUE_VIOLATION)
            };
            Step { sql, outcome }
        }
        _ => {
            let (sql, keep): (String, Keep) = match rng.random_range(0..3) {
                0 => (
                    format!("DELETE FROM m WHERE k BETWEEN {lo} AND {hi}"),
                    Box::new(move |r: &Row| !(lo..=hi).contains(&r.0)),
                ),
                1 => (
                    "DELETE FROM m WHERE v IS NULL".into(),
                    Box::new(|r: &Row| r.1.is_some()),
                ),
                _ => (
                    "DELETE FROM m WHERE s LIKE 'a%'".into(),
                    Box::new(|r: &Row| !r.2.as_ref().is_some_and(|s| s.starts_with('a'))),
                ),
            };
            let next: Vec<Row> = model.iter().filter(|r| keep(r)).cloned().collect();
            let n = (model.len() - next.len()) as u64;
            Step {
                sql,
                outcome: Ok((next, n)),
            }
        }
    }
}

fn rows_of_table(rows: Vec<crate::common::Row>) -> Vec<Row> {
    rows.into_iter()
        .map(|r| {
            (
                r[0].as_ref().unwrap().parse().unwrap(),
                r[1].as_ref().map(|v| v.parse().unwrap()),
                r[2].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn random_writes_equal_the_model() {
    for seed in 0..4u64 {
        let db = db(2);
        run(
            &db,
            "CREATE TABLE m (k BIGINT PRIMARY KEY, v BIGINT, s VARCHAR(8))",
        )
        .await
        .unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model: Vec<Row> = Vec::new();
        let (mut failed, mut changed) = (0, 0);
        for i in 0..150 {
            let Step { sql, outcome } = step(&mut rng, &model);
            let context = format!("seed {seed}, statement {i}: {sql}");
            match (run(&db, &sql).await, outcome) {
                (Ok(out), Ok((next, n))) => {
                    let Some(StatementOutput::Changed(c)) = out.last() else {
                        panic!("{context}: {out:?}")
                    };
                    assert_eq!(c.rows, n, "{context}");
                    model = next;
                    changed += 1;
                }
                (Err(e), Err(state)) => {
                    assert_eq!(e.sqlstate(), state, "{context}: {e}");
                    failed += 1;
                }
                (got, want) => panic!(
                    "{context}: got {:?}, the model says {:?}",
                    got.map(|_| "success").map_err(|e| e.to_string()),
                    want.map(|_| "success")
                ),
            }
            let table = rows_of_table(query(&db, "SELECT k, v, s FROM m").await);
            assert_eq!(table, model, "{context}");
            // the primary key's index agrees
            let k = rng.random_range(0..80);
            let found = query(&db, &format!("SELECT k FROM m WHERE k = {k}"))
                .await
                .len();
            let want = model.iter().filter(|r| r.0 == k).count();
            assert_eq!(found, want, "{context}: key {k}");
        }
        assert!(
            failed > 5 && changed > 50,
            "seed {seed}: {failed} failed, {changed} changed"
        );
    }
}

/// A Python that imports DuckDB: `$WIRELOAD_TEST_PYTHON`, or a virtual environment under
/// the target directory with the DuckDB release `bench/requirements.txt` pins (made on
/// first use, from PyPI).
fn duckdb_python() -> PathBuf {
    if let Some(p) = std::env::var_os("WIRELOAD_TEST_PYTHON") {
        return p.into();
    }
    let imports = |python: &Path| {
        Command::new(python)
            .args(["-c", "import duckdb"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("duckdb-venv");
    let python = venv.join("bin/python");
    if imports(&python) {
        return python;
    }
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/requirements.txt");
    let pin = std::fs::read_to_string(&requirements)
        .expect("bench/requirements.txt")
        .lines()
        .find(|l| l.starts_with("duckdb=="))
        .expect("bench/requirements.txt pins duckdb")
        .to_string();
    let status = |cmd: &mut Command| {
        let out = cmd.output().expect("python3 runs");
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    status(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    status(Command::new(&python).args(["-m", "pip", "install", "--quiet", &pin]));
    assert!(
        imports(&python),
        "{} cannot import duckdb",
        python.display()
    );
    python
}

/// A random predicate over `t`.
fn predicate(rng: &mut StdRng) -> String {
    predicate_of(rng, "")
}

/// A random predicate over `t`'s columns, named with `prefix` (`t.` beside other tables).
fn predicate_of(rng: &mut StdRng, prefix: &str) -> String {
    let one = |rng: &mut StdRng| match rng.random_range(0..9) {
        0 => {
            let lo = rng.random_range(0..100);
            format!(
                "{prefix}id BETWEEN {lo} AND {}",
                lo + rng.random_range(0..20)
            )
        }
        1 => format!("{prefix}a > {}", rng.random_range(-50..50)),
        2 => format!("{prefix}a IS NULL"),
        3 => format!(
            "{prefix}b LIKE '{}%'",
            rng.random_range(b'a'..=b'c') as char
        ),
        4 => format!("{prefix}d"),
        5 => format!(
            "{prefix}c < {}.5 AND NOT {prefix}d",
            rng.random_range(-20..20)
        ),
        6 => format!(
            "{prefix}id % {} = {}",
            rng.random_range(2..5),
            rng.random_range(0..2)
        ),
        7 => format!(
            "coalesce({prefix}a, 0) + {prefix}id < {}",
            rng.random_range(0..80)
        ),
        _ => format!(
            "{prefix}a IN ({}, {}, {})",
            rng.random_range(-20..20),
            rng.random_range(-20..20),
            rng.random_range(-20..20)
        ),
    };
    match rng.random_range(0..4) {
        0 => format!("{} OR {}", one(rng), one(rng)),
        1 => format!("{} AND NOT ({})", one(rng), one(rng)),
        _ => one(rng),
    }
}

/// A random text value that fits VARCHAR(12), or NULL.
fn short_text(rng: &mut StdRng) -> String {
    if rng.random_bool(0.1) {
        return "NULL".into();
    }
    let s: String = (0..rng.random_range(0..6))
        .map(|_| rng.random_range(b'a'..=b'c') as char)
        .collect();
    format!("'{s}'")
}

/// A random write over `t` (and `s`, a source of rows).
fn duck_statement(rng: &mut StdRng) -> String {
    let returning = |rng: &mut StdRng| {
        if rng.random_bool(0.3) {
            " RETURNING id, a"
        } else {
            ""
        }
    };
    match rng.random_range(0..10) {
        7 => format!(
            "UPDATE t SET a = t.a + s.a, b = s.b FROM s WHERE t.id = s.id * {} AND ({}){}",
            rng.random_range(1..20),
            predicate_of(rng, "t."),
            returning(rng)
        ),
        8 => match rng.random_range(0..4) {
            // (no RETURNING: its unqualified columns would be ambiguous in DuckDB)
            3 => format!(
                "DELETE FROM t USING s WHERE t.id % {} = s.id AND ({})",
                rng.random_range(8..30),
                predicate_of(rng, "s.")
            ),
            0 => format!(
                "DELETE FROM t WHERE id IN (SELECT id * {} FROM s WHERE a IS NOT NULL){}",
                rng.random_range(1..30),
                returning(rng)
            ),
            1 => format!(
                "DELETE FROM t WHERE EXISTS (SELECT 1 FROM s WHERE s.a = t.a + {}){}",
                rng.random_range(-5..5),
                returning(rng)
            ),
            _ => format!(
                "UPDATE t SET c = (SELECT max(c) FROM s) - {}.5 WHERE {}{}",
                rng.random_range(0..9),
                predicate(rng),
                returning(rng)
            ),
        },
        9 => format!(
            "UPDATE t SET d = NOT t.d FROM s WHERE s.d AND t.id % 5 = s.id{}",
            returning(rng)
        ),
        0 | 1 => {
            let skip = match rng.random_range(0..10) {
                0..=2 => " ON CONFLICT DO NOTHING",
                3 => {
                    " ON CONFLICT (id) DO UPDATE SET a = excluded.a + coalesce(a, 0), b = excluded.b"
                }
                4 => " ON CONFLICT (id) DO UPDATE SET c = excluded.c, d = NOT d WHERE excluded.d",
                _ => "",
            };
            // a key proposed twice is an error for DO UPDATE in PostgreSQL (and wireload),
            // not in DuckDB: distinct keys there
            let mut ids = std::collections::HashSet::new();
            let rows: Vec<String> = (0..rng.random_range(1..=4))
                .map(|_| {
                    let mut id = rng.random_range(0..120);
                    while skip.contains("DO UPDATE") && !ids.insert(id) {
                        id = rng.random_range(0..120);
                    }
                    let a = if rng.random_bool(0.15) {
                        "NULL".to_string()
                    } else {
                        rng.random_range(-40..40).to_string()
                    };
                    // a NULL in the NOT NULL column now and then
                    let d = match rng.random_range(0..20) {
                        0 => "NULL",
                        1..=9 => "true",
                        _ => "false",
                    };
                    format!(
                        "({id}, {a}, {}, {}.{:02}, {d})",
                        short_text(rng),
                        rng.random_range(-30..30),
                        rng.random_range(0..100)
                    )
                })
                .collect();
            format!(
                "INSERT INTO t VALUES {}{skip}{}",
                rows.join(", "),
                returning(rng)
            )
        }
        2 => format!(
            "INSERT INTO t SELECT id + {}, a * 2, upper(b), c + 1.25, NOT d FROM s WHERE {}{}",
            rng.random_range(0..150),
            predicate(rng),
            returning(rng)
        ),
        3 | 4 => {
            let set = match rng.random_range(0..5) {
                0 => format!("a = a + {}", rng.random_range(-9..9)),
                1 => "b = upper(b), d = NOT d".to_string(),
                2 => format!("c = c * 2 - {}.25", rng.random_range(0..9)),
                3 => "a = CASE WHEN a IS NULL THEN id ELSE NULL END".to_string(),
                _ => format!("a = coalesce(a, {}), b = lower(b)", rng.random_range(0..9)),
            };
            format!(
                "UPDATE t SET {set} WHERE {}{}",
                predicate(rng),
                returning(rng)
            )
        }
        5 => format!("DELETE FROM t WHERE {}{}", predicate(rng), returning(rng)),
        _ => format!(
            "INSERT INTO t SELECT id + 200, a, b, c, d FROM t WHERE {}",
            predicate(rng)
        ),
    }
}

/// What DuckDB's script printed for one statement.
#[derive(Debug)]
struct Peer {
    ok: bool,
    error: String,
    count: Option<u64>,
    returning: Option<Vec<crate::common::Row>>,
    table: Option<Vec<crate::common::Row>>,
}

impl Peer {
    fn parse(line: &str) -> Peer {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let rows = |v: &serde_json::Value| {
            v.as_array().map(|rows| {
                rows.iter()
                    .map(|r| {
                        r.as_array()
                            .expect("a row")
                            .iter()
                            .map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .collect()
            })
        };
        Peer {
            ok: v["ok"].as_bool().expect("ok"),
            error: v["error"].as_str().unwrap_or_default().to_string(),
            count: v["count"].as_u64(),
            returning: rows(&v["returning"]),
            table: rows(&v["table"]),
        }
    }
}

#[tokio::test]
async fn random_writes_equal_duckdb() {
    // (aliased: DataFusion refuses `SELECT CAST(id AS VARCHAR) ... ORDER BY id` as two
    // expressions of one name)
    const SNAPSHOT: &str = "SELECT CAST(id AS VARCHAR) AS i, CAST(a AS VARCHAR) AS a2, b, \
                            CAST(c AS VARCHAR) AS c2, CAST(d AS VARCHAR) AS d2 FROM t ORDER BY id";
    let setup = [
        "CREATE TABLE t (id INT PRIMARY KEY, a BIGINT, b VARCHAR(12), c DECIMAL(8,2), \
         d BOOLEAN NOT NULL)",
        "CREATE TABLE s (id INT, a BIGINT, b VARCHAR(12), c DECIMAL(8,2), d BOOLEAN)",
        "INSERT INTO s VALUES (1, 5, 'ab', 1.50, true), (2, NULL, 'ca', -2.25, false), \
         (3, -7, NULL, 0.00, true), (4, 12, 'bb', 9.99, NULL), (5, 0, '', -0.01, false)",
    ];
    let python = duckdb_python();
    let dir = tempfile::tempdir().unwrap();
    let (mut skipped, mut using, mut upserts) = (0, 0, 0);
    for seed in 0..3u64 {
        let mut rng = StdRng::seed_from_u64(100 + seed);
        let mut statements: Vec<String> = setup.iter().map(|s| s.to_string()).collect();
        statements.extend((0..160).map(|_| duck_statement(&mut rng)));
        let file = dir.path().join(format!("statements-{seed}.json"));
        std::fs::write(&file, serde_json::to_string(&statements).unwrap()).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/duckdb_dml.py");
        let out = Command::new(&python)
            .arg(&script)
            .arg(&file)
            .arg(SNAPSHOT)
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "DuckDB's script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let peer: Vec<Peer> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(Peer::parse)
            .collect();
        assert_eq!(peer.len(), statements.len());
        let db = db(2);
        let (mut failed, mut returned, mut joined) = (0, 0, 0);
        for (i, (sql, duck)) in statements.iter().zip(&peer).enumerate() {
            let context = format!("seed {seed}, statement {i}: {sql}");
            let ours = run(&db, sql).await;
            match (&ours, duck.ok) {
                (Ok(out), true) => {
                    // UPDATE ... FROM and writes with subqueries over s
                    joined += usize::from(
                        !sql.starts_with("INSERT")
                            && (sql.contains("FROM s") || sql.contains("USING s")),
                    );
                    if let Some(StatementOutput::Changed(c)) = out.last() {
                        using += usize::from(sql.contains("USING s") && c.rows > 0);
                        upserts += usize::from(sql.contains("DO UPDATE") && c.rows > 0);
                        if let Some(want) = &duck.returning {
                            let (_, batches) = c.returning.as_ref().expect("RETURNING rows");
                            let mut got = crate::common::rows_of(batches);
                            let mut want = want.clone();
                            got.sort();
                            want.sort();
                            assert_eq!(got, want, "{context}: RETURNING");
                            returned += 1;
                        } else if let Some(n) = duck.count {
                            assert_eq!(c.rows, n, "{context}: rows");
                            // ON CONFLICT DO NOTHING that left rows out
                            let tuples = sql.matches("), (").count() as u64 + 1;
                            skipped += usize::from(sql.contains("DO NOTHING") && n < tuples);
                        }
                    }
                }
                (Err(_), false) => failed += 1,
                (ours, _) => panic!(
                    "{context}: wireload {:?}, DuckDB {}",
                    ours.as_ref()
                        .map(|_| "succeeded")
                        .map_err(|e| e.to_string()),
                    if duck.ok {
                        "succeeded".into()
                    } else {
                        format!("failed: {}", duck.error)
                    }
                ),
            }
            if i >= 1 {
                let table = query(&db, SNAPSHOT).await;
                assert_eq!(Some(&table), duck.table.as_ref(), "{context}: table t");
            }
        }
        assert!(
            failed >= 3 && returned >= 10 && joined >= 10,
            "seed {seed}: {failed} failed, {returned} with RETURNING, {joined} reading s"
        );
    }
    assert!(
        skipped >= 3,
        "{skipped} ON CONFLICT DO NOTHING statements left rows out"
    );
    assert!(
        using >= 3,
        "{using} DELETE ... USING statements deleted rows"
    );
    assert!(
        upserts >= 3,
        "{upserts} ON CONFLICT DO UPDATE statements changed rows"
    );
}
