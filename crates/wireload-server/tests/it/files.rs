//! A network client reaches the server's files only beneath the directories the operator
//! allowed: every statement that names a path, tried over psql as a hostile client would.

use std::path::Path;
use std::sync::Arc;

use crate::common::{TestServer, failed, ok};
use wireload_sql::FileGate;

/// psql's error for `sql`, with its SQLSTATE (`\set VERBOSITY verbose`).
fn refused(server: &TestServer, sql: &str) -> String {
    failed(&server.psql(&["-c", "\\set VERBOSITY verbose", "-c", sql]))
}

/// A server whose clients may read beneath `read` and write beneath `write`.
fn server_allowing(read: &[&Path], write: &[&Path]) -> TestServer {
    let own = |d: &[&Path]| d.iter().map(|p| p.to_path_buf()).collect::<Vec<_>>();
    let gate = Arc::new(FileGate::new(&own(read), &own(write)).unwrap());
    TestServer::with(|s| s.files = gate)
}

#[test]
fn a_default_server_opens_no_file_for_a_client() {
    let server = TestServer::start();
    server.sql("CREATE TABLE t (line TEXT)");
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("written");
    let statements = [
        ("SELECT * FROM '/etc/passwd'".to_string(), "a file in FROM"),
        (
            "SELECT * FROM read_csv('/etc/passwd')".into(),
            "a file in FROM",
        ),
        ("SELECT * FROM '/etc/*'".into(), "a file in FROM"),
        (
            "COPY t FROM '/etc/passwd' WITH (FORMAT csv, DELIMITER E'\\x01')".into(),
            "COPY FROM",
        ),
        (
            "COPY t FROM '/etc/passwd' WITH (FORMAT parquet)".into(),
            "COPY FROM",
        ),
        (
            format!("COPY (SELECT 'x') TO '{}'", written.display()),
            "COPY TO",
        ),
        (
            format!("COPY t TO '{}' WITH (FORMAT arrow)", written.display()),
            "COPY TO",
        ),
        (
            format!("EXPORT DATABASE '{}'", written.display()),
            "EXPORT DATABASE",
        ),
        ("IMPORT DATABASE '/etc'".into(), "IMPORT DATABASE"),
    ];
    for (sql, what) in statements {
        let err = refused(&server, &sql);
        assert!(err.contains("42501"), "{sql}: {err}");
        assert!(
            err.contains(&format!("permission denied for {what} '")),
            "{sql}: {err}"
        );
        assert!(err.contains("--allow-"), "{sql}: {err}");
    }
    assert!(!written.exists());
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["0"]);
    // what the client sends itself still goes in and out
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "a\nb\n").unwrap();
    let out = ok(&server.psql(&["-c", &format!("\\copy t FROM '{}'", input.display())]));
    assert_eq!(out.trim(), "COPY 2");
    let out = ok(&server.psql(&["-c", "COPY t TO STDOUT"]));
    assert_eq!(out, "a\nb\n");
}

#[test]
fn clients_read_and_write_only_beneath_the_allowed_directories() {
    let root = tempfile::tempdir().unwrap();
    let (inbox, outbox) = (root.path().join("in"), root.path().join("out"));
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::create_dir_all(&outbox).unwrap();
    std::fs::write(inbox.join("a.csv"), "1,one\n2,two\n").unwrap();
    std::fs::write(inbox.join("b.csv"), "3,three\n").unwrap();
    std::fs::write(root.path().join("secret.csv"), "9,secret\n").unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.csv"), inbox.join("link.csv")).unwrap();
    std::os::unix::fs::symlink(root.path(), outbox.join("up")).unwrap();
    let server = server_allowing(&[&inbox, &outbox], &[&outbox]);
    server.sql("CREATE TABLE t (id INT, name TEXT)");
    let at = |dir: &Path, name: &str| dir.join(name).display().to_string();

    // a symbolic link out of the directory fails the whole glob, nothing loaded
    let err = refused(
        &server,
        &format!("COPY t FROM '{}' WITH (FORMAT csv)", at(&inbox, "*.csv")),
    );
    assert!(err.contains("42501") && err.contains("link.csv"), "{err}");
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["0"]);
    std::fs::remove_file(inbox.join("link.csv")).unwrap();
    // inside: every route works
    let out = ok(&server.psql(&[
        "-c",
        &format!("COPY t FROM '{}' WITH (FORMAT csv)", at(&inbox, "*.csv")),
    ]));
    assert_eq!(out.trim(), "COPY 3");
    let out = ok(&server.psql(&[
        "-At",
        "-c",
        &format!("SELECT count(*) FROM '{}'", at(&inbox, "a.csv")),
    ]));
    assert_eq!(out.trim(), "2");
    let parquet = at(&outbox, "t.parquet");
    ok(&server.psql(&[
        "-c",
        &format!("COPY t TO '{parquet}' WITH (FORMAT parquet)"),
    ]));
    ok(&server.psql(&[
        "-c",
        &format!("COPY t FROM '{parquet}' WITH (FORMAT parquet)"),
    ]));
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["6"]);
    let export = at(&outbox, "export");
    ok(&server.psql(&["-c", &format!("EXPORT DATABASE '{export}'")]));
    server.sql("DROP TABLE t");
    ok(&server.psql(&["-c", &format!("IMPORT DATABASE '{export}'")]));
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["6"]);

    // outside: refused, whichever way the path goes there
    let long = format!("{}/{}", inbox.display(), "x/".repeat(3000));
    let escapes = [
        format!("SELECT * FROM '{}'", at(root.path(), "secret.csv")),
        format!("SELECT * FROM '{}'", at(&inbox, "../secret.csv")),
        format!("SELECT * FROM '{}'", at(&outbox, "up/secret.csv")),
        format!("SELECT * FROM '{}'", at(root.path(), "*.csv")),
        format!("SELECT * FROM '{}'", at(&outbox, "up/*.csv")),
        "SELECT * FROM '/proc/self/environ'".to_string(),
        format!("SELECT * FROM '{long}'"),
        format!("COPY t TO '{}'", at(&inbox, "x.csv")),
        format!("COPY t TO '{}'", at(&outbox, "up/x.csv")),
        format!("COPY t TO '{}'", at(&outbox, "../x.csv")),
        format!("EXPORT DATABASE '{}'", at(&outbox, "up/e")),
        format!("IMPORT DATABASE '{}'", root.path().display()),
    ];
    for sql in escapes {
        let err = refused(&server, &sql);
        assert!(err.contains("42501"), "{sql:.200}: {err}");
    }
    assert!(!inbox.join("x.csv").exists());
    assert!(!root.path().join("x.csv").exists());
    assert!(!root.path().join("e").exists());
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["6"]);
}

#[test]
fn the_server_process_keeps_its_own_rights() {
    // setup runs as the operator (like an init script): no gate
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.csv");
    std::fs::write(&file, "1\n").unwrap();
    let server = TestServer::start();
    server.sql(&format!(
        "CREATE TABLE t (id INT); COPY t FROM '{}'",
        file.display()
    ));
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["1"]);
}
