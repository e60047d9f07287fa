//! One session cannot take the server down: a query past the server's memory budget fails
//! alone (53200) while other sessions go on, and a client's session starts with the
//! server's statement_timeout.

mod common;

use std::time::Duration;

use common::{TestServer, failed, ok};
use wireload_sql::DbConfig;

#[test]
fn a_query_past_the_memory_limit_fails_alone() {
    let server = TestServer::with_db(
        DbConfig {
            threads: Some(2),
            memory_limit: Some(16 << 20),
            ..Default::default()
        },
        |_| {},
    );
    server.sql("CREATE TABLE t (id INT); INSERT INTO t VALUES (1), (2), (3)");
    std::thread::scope(|scope| {
        let big = scope.spawn(|| {
            failed(&server.psql(&[
                "-c",
                "\\set VERBOSITY verbose",
                "-c",
                "SELECT count(*) FROM generate_series(1, 4000000) a \
                 JOIN generate_series(1, 4000000) b ON a.value = b.value",
            ]))
        });
        // the other sessions are served meanwhile
        for _ in 0..5 {
            let out = ok(&server.psql(&["-At", "-c", "SELECT count(*) FROM t"]));
            assert_eq!(out.trim(), "3");
        }
        let err = big.join().unwrap();
        assert!(err.contains("53200"), "{err}");
    });
    // a sort past the budget spills to the temporary directory and finishes
    let out = ok(&server.psql(&[
        "-At",
        "-c",
        "SELECT value FROM generate_series(1, 3000000) ORDER BY value DESC OFFSET 2999999",
    ]));
    assert_eq!(out.trim(), "1");
    assert_eq!(
        ok(&server.psql(&["-At", "-c", "SELECT count(*) FROM t"])).trim(),
        "3"
    );
}

#[test]
fn a_client_session_starts_with_the_server_statement_timeout() {
    let server = TestServer::with_db(
        DbConfig {
            threads: Some(2),
            client_statement_timeout: Some(Duration::from_millis(300)),
            ..Default::default()
        },
        |_| {},
    );
    let out = ok(&server.psql(&["-At", "-c", "SHOW statement_timeout"]));
    assert_eq!(out.trim(), "300ms");
    let err = failed(&server.psql(&[
        "-c",
        "\\set VERBOSITY verbose",
        "-c",
        "SELECT count(*) FROM generate_series(1, 2000000000)",
    ]));
    assert!(err.contains("57014"), "{err}");
    // a client sets its own, and RESET returns to the server's
    let out = ok(&server.psql(&[
        "-At",
        "-c",
        "SET statement_timeout = 0",
        "-c",
        "SHOW statement_timeout",
        "-c",
        "RESET statement_timeout",
        "-c",
        "SHOW statement_timeout",
    ]));
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["SET", "0", "RESET", "300ms"]
    );
    // the server's own session (init scripts, the shell) has none
    assert_eq!(server.rows("SHOW statement_timeout"), ["0"]);
}
