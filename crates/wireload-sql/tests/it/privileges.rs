//! Privileged and unprivileged statements mixed at random: whatever a superuser grants of
//! other tables, a role that was never granted anything on `secret` neither changes it nor
//! sees a value of it, by any statement of the mix.

use std::sync::Arc;

use crate::common::{query, rows_of};
use proptest::prelude::*;
use wireload_load::LoadControl;
use wireload_sql::{Actor, Database, DbConfig, StatementOutput};

/// The value no statement of eve's may show.
const MARKER: &str = "classified-7f3a";

/// What eve tries (`{n}` is the statement's number, for names of its own).
const EVE: &[&str] = &[
    "SELECT * FROM secret",
    "SELECT * FROM public.secret",
    "SELECT * FROM open JOIN secret ON true",
    "SELECT (SELECT max(v) FROM secret)",
    "WITH s AS (SELECT * FROM secret) SELECT * FROM s",
    "SELECT * FROM open WHERE id IN (SELECT id FROM secret)",
    "SELECT * FROM open WHERE EXISTS (SELECT 1 FROM secret WHERE v LIKE 'c%')",
    "EXPLAIN ANALYZE SELECT * FROM secret",
    "INSERT INTO secret VALUES (9, 'x')",
    "INSERT INTO open SELECT id FROM secret",
    "UPDATE secret SET v = 'x'",
    "UPDATE open SET id = (SELECT max(id) FROM secret)",
    "DELETE FROM secret",
    "DELETE FROM open WHERE id IN (SELECT id FROM secret)",
    "TRUNCATE secret",
    "DROP TABLE secret",
    "CREATE INDEX i_{n} ON secret (v)",
    "CREATE VIEW v_{n} AS SELECT * FROM secret",
    "CREATE TABLE c_{n} AS SELECT * FROM secret",
    "CREATE TABLE t_{n} (id INT)",
    "GRANT SELECT ON secret TO eve",
    "GRANT ALL ON ALL TABLES IN SCHEMA public TO eve",
    "GRANT pg_read_all_data TO eve",
    "ALTER ROLE eve SUPERUSER",
    "CREATE ROLE r_{n} SUPERUSER",
    "SELECT * FROM open",
    "INSERT INTO open VALUES ({n})",
    "SELECT * FROM pub",
    "PREPARE p_{n} AS SELECT * FROM secret",
    "BEGIN",
    "COMMIT",
];

/// What the superuser does meanwhile.
const ADMIN: &[&str] = &[
    "INSERT INTO open VALUES ({n})",
    "GRANT SELECT, INSERT ON open TO eve",
    "REVOKE ALL ON open FROM eve",
    "GRANT UPDATE, DELETE, TRUNCATE ON open TO eve",
    "GRANT CREATE ON DATABASE wireload TO eve",
    "REVOKE CREATE ON DATABASE wireload FROM eve",
    "GRANT SELECT ON pub TO eve",
    "GRANT SELECT ON open TO PUBLIC",
    "REVOKE SELECT ON open FROM PUBLIC",
    "REVOKE SELECT ON secret FROM PUBLIC",
];

fn setup(rt: &tokio::runtime::Runtime) -> (Database, Database) {
    let admin = Database::new(DbConfig {
        threads: Some(1),
        ..Default::default()
    });
    rt.block_on(admin.execute(
        &format!(
            "CREATE TABLE secret (id INT, v TEXT); INSERT INTO secret VALUES (1, '{MARKER}'); \
             CREATE TABLE open (id INT); INSERT INTO open VALUES (1); \
             CREATE VIEW pub AS SELECT id FROM open; CREATE USER eve PASSWORD 'e';"
        ),
        &LoadControl::default(),
    ))
    .unwrap();
    let eve = admin.client_session(Arc::default());
    eve.set_actor(Actor::Role("eve".into()));
    (admin, eve)
}

/// The text of every value a statement returned.
fn shown(out: &[StatementOutput]) -> String {
    let mut text = String::new();
    for o in out {
        if let StatementOutput::Rows { batches, .. } = o {
            for row in rows_of(batches) {
                for v in row.into_iter().flatten() {
                    text.push_str(&v);
                    text.push('\n');
                }
            }
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn no_unprivileged_statement_changes_or_reveals_a_table(
        steps in prop::collection::vec((any::<bool>(), any::<prop::sample::Index>()), 1..24)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (admin, eve) = setup(&rt);
        let ctl = LoadControl::default();
        for (n, (by_admin, pick)) in steps.iter().enumerate() {
            let (session, pool) = if *by_admin { (&admin, ADMIN) } else { (&eve, EVE) };
            let sql = pick.get(pool).replace("{n}", &n.to_string());
            let out = rt.block_on(session.execute(&sql, &ctl));
            if !by_admin && let Ok(out) = &out {
                let text = shown(out);
                prop_assert!(!text.contains(MARKER), "{sql} showed the secret: {text}");
            }
            let secret = rt.block_on(query(&admin, "SELECT id, v FROM secret"));
            prop_assert_eq!(
                secret,
                vec![vec![Some("1".to_string()), Some(MARKER.to_string())]],
                "after {}", sql
            );
        }
        prop_assert!(!admin.roles().role("eve").unwrap().superuser);
        let roles = admin.roles().all();
        prop_assert!(roles.iter().all(|r| !r.name.starts_with("r_")));
    }
}
