//! Roles and privileges over psql, as a hostile client would try them: a role reads and
//! changes only what it was granted, by every route to the data.

use std::sync::Arc;

use crate::common::{PASSWORD, TestServer, failed, ok};
use wireload_sql::FileGate;

const BOB: &str = "bob";
const BOB_PASSWORD: &str = "b0b's pass";

/// psql as bob; the error (with its SQLSTATE) of `sql`.
fn bob_refused(server: &TestServer, sql: &str) -> String {
    failed(&server.psql_as(
        BOB,
        Some(BOB_PASSWORD),
        "disable",
        &["-c", "\\set VERBOSITY verbose", "-c", sql],
    ))
}

/// psql as bob; the unaligned, tuples-only output of `sql`.
fn bob(server: &TestServer, sql: &str) -> String {
    ok(&server.psql_as(BOB, Some(BOB_PASSWORD), "disable", &["-At", "-c", sql]))
}

/// psql as alice (a superuser); the output of `sql`.
fn alice(server: &TestServer, sql: &str) -> String {
    ok(&server.psql(&["-At", "-c", sql]))
}

fn setup() -> TestServer {
    let server = TestServer::start();
    alice(
        &server,
        "CREATE TABLE secret (id INT PRIMARY KEY, v TEXT); \
         INSERT INTO secret VALUES (1, 'classified'); \
         CREATE TABLE open (id INT); INSERT INTO open VALUES (7);",
    );
    alice(
        &server,
        &format!(
            "CREATE USER bob PASSWORD '{}'",
            BOB_PASSWORD.replace('\'', "''")
        ),
    );
    alice(&server, "GRANT SELECT ON open TO bob");
    server
}

#[test]
fn psql_lists_roles_and_privileges() {
    let server = setup();
    alice(&server, "CREATE ROLE readers; GRANT readers TO bob");
    let du = ok(&server.psql(&["-c", "\\du"]));
    assert!(du.contains("bob") && du.contains("{readers}"), "{du}");
    assert!(
        du.contains("readers") && du.contains("Cannot login"),
        "{du}"
    );
    let dp = ok(&server.psql(&["-c", "\\dp"]));
    assert!(dp.contains("bob=r/alice"), "{dp}");
}

#[test]
fn a_role_without_select_cannot_read_a_table_by_any_route() {
    let server = setup();
    assert_eq!(bob(&server, "SELECT id FROM open").trim(), "7");
    let routes = [
        "SELECT * FROM secret",
        "SELECT * FROM public.secret",
        "SELECT * FROM wireload.public.secret",
        "SELECT * FROM open JOIN secret ON true",
        "SELECT * FROM open WHERE id IN (SELECT id FROM secret)",
        "SELECT (SELECT v FROM secret LIMIT 1)",
        "WITH s AS (SELECT * FROM secret) SELECT * FROM s",
        "EXPLAIN ANALYZE SELECT * FROM secret",
        "COPY secret TO STDOUT",
        "COPY (SELECT * FROM secret) TO STDOUT",
        "PREPARE p AS SELECT * FROM secret",
        "CREATE VIEW leak AS SELECT * FROM secret",
        "CREATE TABLE leak AS SELECT * FROM secret",
        "INSERT INTO open SELECT id FROM secret",
        "EXPORT DATABASE '/tmp/never'",
    ];
    for sql in routes {
        let err = bob_refused(&server, sql);
        assert!(err.contains("42501"), "{sql}: {err}");
        assert!(!err.contains("classified"), "{sql}: {err}");
    }
    // the extended protocol (psycopg's prepared statements) checks at every execution
    let script = format!(
        "import psycopg\n\
         c = psycopg.connect(CONNINFO.replace('user=alice', 'user=bob').replace({pw:?}, {bob:?}), autocommit=True)\n\
         for sql in ['SELECT v FROM secret WHERE id = %s', 'SELECT v FROM secret']:\n\
         \x20   try:\n\
         \x20       c.execute(sql, (1,) if '%s' in sql else None, prepare=True).fetchall()\n\
         \x20       raise SystemExit('read: ' + sql)\n\
         \x20   except psycopg.errors.InsufficientPrivilege:\n\
         \x20       pass\n\
         print('refused')\n",
        pw = crate::common::PASSWORD.replace('\'', "\\'"),
        bob = BOB_PASSWORD.replace('\'', "\\'"),
    );
    let out = ok(&server.python(&script));
    assert_eq!(out.trim(), "refused");
    // a view the owner may read, granted to bob: readable, its table still not
    alice(
        &server,
        "CREATE VIEW names AS SELECT v FROM secret; GRANT SELECT ON names TO bob",
    );
    assert_eq!(bob(&server, "SELECT v FROM names").trim(), "classified");
    assert!(bob_refused(&server, "SELECT * FROM secret").contains("42501"));
}

#[test]
fn a_role_changes_only_what_it_was_granted() {
    let server = setup();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rows.csv");
    std::fs::write(&input, "2,two\n").unwrap();
    let copy_in = format!("\\copy secret FROM '{}' WITH (FORMAT csv)", input.display());
    for sql in [
        "INSERT INTO secret VALUES (3, 'x')",
        "UPDATE secret SET v = 'x'",
        "UPDATE secret SET v = 'x' WHERE id = 1",
        "DELETE FROM secret",
        "TRUNCATE secret",
        "DROP TABLE secret",
        "CREATE INDEX i ON secret (v)",
        "CREATE TABLE mine (a INT)",
        "GRANT SELECT ON secret TO bob",
        "CREATE ROLE eve",
        "ALTER ROLE bob SUPERUSER",
        "GRANT pg_read_server_files TO bob",
        "DROP ROLE alice",
        copy_in.as_str(),
    ] {
        let err = bob_refused(&server, sql);
        assert!(err.contains("42501"), "{sql}: {err}");
    }
    assert_eq!(
        alice(&server, "SELECT id, v FROM secret").trim(),
        "1|classified"
    );
    // granted, they work: INSERT by COPY FROM STDIN, then UPDATE with a WHERE needs SELECT
    alice(&server, "GRANT INSERT, UPDATE ON secret TO bob");
    ok(&server.psql_as(BOB, Some(BOB_PASSWORD), "disable", &["-c", &copy_in]));
    assert_eq!(bob(&server, "UPDATE secret SET v = 'y'").trim(), "UPDATE 2");
    assert!(bob_refused(&server, "UPDATE secret SET v = 'z' WHERE id = 1").contains("42501"));
    alice(
        &server,
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO bob",
    );
    assert_eq!(bob(&server, "SELECT count(*) FROM secret").trim(), "2");
    alice(&server, "REVOKE ALL ON secret FROM bob");
    assert!(bob_refused(&server, "SELECT * FROM secret").contains("42501"));
    // CREATE on the database: bob owns what he makes, alice sees it, others do not
    alice(&server, "GRANT CREATE ON DATABASE wireload TO bob");
    bob(
        &server,
        "CREATE TABLE mine (a INT); INSERT INTO mine VALUES (1)",
    );
    bob(&server, "CREATE INDEX mine_a ON mine (a)");
    assert_eq!(alice(&server, "SELECT count(*) FROM mine").trim(), "1");
    alice(&server, "CREATE USER carol PASSWORD 'c'");
    let carol =
        failed(&server.psql_as("carol", Some("c"), "disable", &["-c", "SELECT * FROM mine"]));
    assert!(carol.contains("permission denied"), "{carol}");
    // a role that owns a table cannot be dropped
    let err = failed(&server.psql(&["-c", "DROP ROLE bob"]));
    assert!(err.contains("owns"), "{err}");
}

#[test]
fn logins_follow_the_roles() {
    let server = setup();
    let err = failed(&server.psql_as(BOB, Some("wrong"), "disable", &["-c", "SELECT 1"]));
    assert!(err.contains("password authentication failed"), "{err}");
    alice(&server, "CREATE ROLE nologin PASSWORD 'n'");
    let err = failed(&server.psql_as("nologin", Some("n"), "disable", &["-c", "SELECT 1"]));
    assert!(
        err.contains("password authentication failed") || err.contains("not permitted"),
        "{err}"
    );
    // bob changes his own password; the old one stops working
    bob(&server, "ALTER ROLE bob PASSWORD 'new one'");
    let err = failed(&server.psql_as(BOB, Some(BOB_PASSWORD), "disable", &["-c", "SELECT 1"]));
    assert!(err.contains("password authentication failed"), "{err}");
    assert_eq!(
        ok(&server.psql_as(
            BOB,
            Some("new one"),
            "disable",
            &["-At", "-c", "SELECT current_user"]
        ))
        .trim(),
        "bob"
    );
    // a verifier given as the password (psql's \password sends one) logs in with its password
    let verifier = wireload_sql::ScramVerifier::new("pre-hashed").to_text();
    alice(&server, &format!("ALTER ROLE bob PASSWORD '{verifier}'"));
    ok(&server.psql_as(BOB, Some("pre-hashed"), "disable", &["-c", "SELECT 1"]));
    // a connection limit of 0 keeps bob out
    alice(&server, "ALTER ROLE bob CONNECTION LIMIT 0");
    let err = failed(&server.psql_as(BOB, Some("pre-hashed"), "disable", &["-c", "SELECT 1"]));
    assert!(
        err.contains("too many connections for role \"bob\""),
        "{err}"
    );
    // no password is ever shown
    let shown = alice(
        &server,
        "SELECT rolname, rolpassword FROM pg_roles ORDER BY rolname",
    );
    assert!(
        !shown.contains("pre-hashed") && !shown.contains(PASSWORD),
        "{shown}"
    );
    assert!(shown.contains("bob|********"), "{shown}");
}

#[test]
fn server_files_need_the_built_in_roles_and_an_allowed_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.csv"), "1\n2\n").unwrap();
    let gate = Arc::new(FileGate::new(&[dir.path().into()], &[dir.path().into()]).unwrap());
    let server = TestServer::with(|s| s.files = gate);
    alice(
        &server,
        "CREATE TABLE t (id INT); CREATE USER bob PASSWORD 'b0b''s pass'",
    );
    alice(&server, "GRANT INSERT, SELECT ON t TO bob");
    let file = dir.path().join("in.csv").display().to_string();
    let out = dir.path().join("out.csv").display().to_string();
    let read = format!("COPY t FROM '{file}'");
    let write = format!("COPY t TO '{out}'");
    assert!(bob_refused(&server, &read).contains("pg_read_server_files"));
    assert!(bob_refused(&server, &write).contains("pg_write_server_files"));
    alice(&server, "GRANT pg_read_server_files TO bob");
    assert_eq!(bob(&server, &read).trim(), "COPY 2");
    assert!(bob_refused(&server, &write).contains("42501"));
    alice(&server, "GRANT pg_write_server_files TO bob");
    bob(&server, &write);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.csv")).unwrap(),
        "1\n2\n"
    );
    // the privilege does not reach outside the directory
    assert!(bob_refused(&server, "SELECT * FROM '/etc/passwd'").contains("42501"));
}
