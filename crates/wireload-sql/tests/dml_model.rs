//! Random INSERT, UPDATE and DELETE statements checked against a model of the table (rows in
//! insertion order; updated rows move to the end): after every statement the table, its
//! primary key index and the statement's row count equal the model's, and a statement the
//! model rejects (duplicate key, value too long) changes nothing.

mod common;

use common::{db, query, run};
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
            let (mut next, moved): (Vec<Row>, Vec<Row>) =
                model.iter().cloned().partition(|r| !in_range(r));
            let n = moved.len() as u64;
            next.extend(moved.into_iter().map(|(k, v, s)| (k, v.map(|v| v + c), s)));
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

fn rows_of_table(rows: Vec<common::Row>) -> Vec<Row> {
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
