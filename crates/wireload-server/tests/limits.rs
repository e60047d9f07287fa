//! One session cannot take the server down: a query past the server's memory budget fails
//! alone (53200) while other sessions go on, a client that stops reading a large result
//! holds a few batches of it, and a client's session starts with the server's
//! statement_timeout.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use common::{TestServer, failed, ok};
use wireload_sql::DbConfig;

/// The tests that measure the process's memory run one at a time.
static MEMORY: Mutex<()> = Mutex::new(());

/// A server whose queries share a 16 MiB memory budget.
fn small_budget_server() -> TestServer {
    TestServer::with_db(
        DbConfig {
            threads: Some(2),
            memory_limit: Some(16 << 20),
            ..Default::default()
        },
        |_| {},
    )
}

#[test]
fn a_query_past_the_memory_limit_fails_alone() {
    let _alone = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let server = small_budget_server();
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

/// The process's resident memory, in bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// One backend message: its type and body.
fn message(socket: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 5];
    socket.read_exact(&mut head).unwrap();
    let len = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len - 4];
    socket.read_exact(&mut body).unwrap();
    (head[0], body)
}

/// Reads messages up to ReadyForQuery; how many DataRow messages came.
fn until_ready(socket: &mut TcpStream) -> u64 {
    let mut rows = 0;
    loop {
        match message(socket) {
            (b'Z', _) => return rows,
            (b'D', _) => rows += 1,
            (b'E', body) => panic!("error: {}", String::from_utf8_lossy(&body)),
            _ => {}
        }
    }
}

#[test]
fn a_client_that_stops_reading_holds_a_few_batches() {
    let _alone = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::with(|s| s.trust_local = true);
    // a client of the protocol itself: log in, send a query, read nothing
    let mut socket = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut startup = Vec::new();
    startup.extend_from_slice(&196_608u32.to_be_bytes());
    startup.extend_from_slice(b"user\0alice\0database\0wireload\0\0");
    let mut framed = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(&startup);
    socket.write_all(&framed).unwrap();
    until_ready(&mut socket);
    let before = resident_bytes();
    // 2,000,000 rows of 200 bytes: 400 MB were it all computed before it is sent
    let sql = "SELECT repeat('x', 200) AS pad FROM generate_series(1, 2000000)\0";
    let mut query = vec![b'Q'];
    query.extend_from_slice(&((sql.len() + 4) as u32).to_be_bytes());
    query.extend_from_slice(sql.as_bytes());
    socket.write_all(&query).unwrap();
    let mut grown = 0;
    for _ in 0..30 {
        std::thread::sleep(Duration::from_millis(100));
        grown = grown.max(resident_bytes().saturating_sub(before));
    }
    assert!(
        grown < 100 << 20,
        "the server held {} MiB for a client that reads nothing",
        grown >> 20
    );
    // the server serves others meanwhile
    let out = ok(&server.psql(&["-At", "-c", "SELECT 41 + 1"]));
    assert_eq!(out.trim(), "42");
    // and the client that reads on gets every row
    assert_eq!(until_ready(&mut socket), 2_000_000);
}

#[test]
fn a_result_awaiting_a_later_statement_counts_in_the_memory_budget() {
    let _alone = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let server = small_budget_server();
    // the rows of all but a query string's last statement are computed before the
    // next statement runs: 40 MB of them do not fit a 16 MiB budget
    let big = "SELECT repeat('x', 200) AS pad FROM generate_series(1, 200000)";
    let err = failed(&server.psql(&[
        "-c",
        "\\set VERBOSITY verbose",
        "-c",
        &format!("{big}; SELECT 1"),
    ]));
    assert!(
        err.contains("53200") && err.contains("send the statement alone"),
        "{err}"
    );
    // alone, its rows stream past the budget
    let out = ok(&server.psql(&["-At", "-c", &format!("SELECT count(*) FROM ({big})")]));
    assert_eq!(out.trim(), "200000");
    let out = ok(&server.psql(&["-At", "-c", big]));
    assert_eq!(out.lines().count(), 200_000);
    // a small result before another statement is kept
    let out = ok(&server.psql(&["-At", "-c", "SELECT 1; SELECT 2"]));
    assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["1", "2"]);
}
