//! Hostile clients: many concurrent connections send random, mutated, truncated and
//! oversized protocol messages (before and after login, and in the middle of a COPY) while
//! a psycopg session keeps querying. The server stays up, the session keeps getting the
//! right answers, no table changes, and no connection task panics.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{TestServer, USER, ok};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The fuzzing server's message limit (small, so oversized messages are cheap to send).
const LIMIT: usize = 1 << 20;
/// Concurrent fuzzing threads, and the connections each opens in turn.
const THREADS: u64 = 8;
const CONNECTIONS: usize = 40;

/// The rows every check compares: count, sums and the longest text.
const CHECKSUM: &str = "SELECT count(*), sum(id), sum(length(v)), max(v) FROM t";

/// A typed message: type byte, length, body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// The untyped startup message for `user`, protocol 3.0.
fn startup(user: &str) -> Vec<u8> {
    let mut body = 196608u32.to_be_bytes().to_vec();
    for s in [
        "user",
        user,
        "database",
        "wireload",
        "application_name",
        "fuzz",
    ] {
        body.extend_from_slice(s.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = (body.len() as u32 + 4).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    m
}

/// `s` NUL-terminated.
fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// A well-formed message a client might send after login.
fn valid(rng: &mut StdRng) -> Vec<u8> {
    let queries = [
        "SELECT 1",
        CHECKSUM,
        "SELECT * FROM t WHERE id = $1",
        "SELECT v FROM t ORDER BY id LIMIT 3",
        "BEGIN",
        "ROLLBACK",
        "SHOW statement_timeout",
        "SELECT no_such_column FROM t",
        "COPY t TO STDOUT",
    ];
    let q = queries[rng.random_range(0..queries.len())];
    match rng.random_range(0..9) {
        0 => message(b'Q', &cstr(q)),
        1 => {
            let mut b = cstr("s");
            b.extend(cstr(q));
            b.extend(1i16.to_be_bytes());
            b.extend(23i32.to_be_bytes());
            message(b'P', &b)
        }
        2 => {
            let mut b = cstr("");
            b.extend(cstr("s"));
            b.extend(0i16.to_be_bytes());
            b.extend(1i16.to_be_bytes());
            b.extend(2i32.to_be_bytes());
            b.extend(b"42");
            b.extend(0i16.to_be_bytes());
            message(b'B', &b)
        }
        3 => {
            let mut b = vec![if rng.random() { b'S' } else { b'P' }];
            b.extend(cstr(if rng.random() { "s" } else { "" }));
            message(b'D', &b)
        }
        4 => {
            let mut b = cstr("");
            b.extend(rng.random_range(0i32..3).to_be_bytes());
            message(b'E', &b)
        }
        5 => message(b'S', &[]),
        6 => message(b'H', &[]),
        7 => {
            let mut b = vec![b'S'];
            b.extend(cstr("s"));
            message(b'C', &b)
        }
        _ => message(b'd', b"1,x\n"),
    }
}

/// Random bytes, `len` of them.
fn noise(rng: &mut StdRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.random()).collect()
}

/// One hostile message (or a few bytes that are not one).
fn hostile(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..8) {
        // a valid message with bytes flipped (type, length or body)
        0 | 1 => {
            let mut m = valid(rng);
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..m.len());
                m[i] = rng.random();
            }
            m
        }
        // a valid message cut short
        2 => {
            let mut m = valid(rng);
            m.truncate(rng.random_range(1..m.len()));
            m
        }
        // a header announcing more than the limit (or a negative length)
        3 => {
            let kind = *b"QPBdDE".get(rng.random_range(0..6)).unwrap();
            let len: u32 = match rng.random_range(0..3) {
                0 => (LIMIT + 1) as u32,
                1 => u32::MAX,
                _ => rng.random_range(LIMIT as u32..i32::MAX as u32),
            };
            let mut m = vec![kind];
            m.extend(len.to_be_bytes());
            m.extend(noise(rng, 64));
            m
        }
        // a random type with a correctly framed random body
        4 => {
            let len = rng.random_range(0..64);
            message(rng.random(), &noise(rng, len))
        }
        // pure noise
        5 => {
            let len = rng.random_range(1..256);
            noise(rng, len)
        }
        // a COPY that never finishes (into another table: a mutated message could end
        // it): garbage, then CopyFail or nothing
        6 => {
            let mut m = message(b'Q', &cstr("COPY scratch FROM STDIN (FORMAT csv)"));
            let len = rng.random_range(0..512);
            m.extend(message(b'd', &noise(rng, len)));
            m.extend(message(b'd', b"5000,new row\n"));
            if rng.random() {
                m.extend(message(b'f', &cstr("client gave up")));
            }
            m
        }
        _ => valid(rng),
    }
}

/// What a fuzzing connection does before its hostile messages.
fn opening(rng: &mut StdRng, trusted: bool) -> Vec<u8> {
    match rng.random_range(0..6) {
        // garbage instead of a startup message
        0 => {
            let len = rng.random_range(1..64);
            noise(rng, len)
        }
        // an SSL request (refused: no TLS), then a startup
        1 => {
            let mut m = 8u32.to_be_bytes().to_vec();
            m.extend(80877103u32.to_be_bytes());
            m.extend(startup(USER));
            m
        }
        // a cancel request with a random key
        2 => {
            let mut m = 16u32.to_be_bytes().to_vec();
            m.extend(80877102u32.to_be_bytes());
            m.extend(noise(rng, 8));
            m
        }
        // a startup message, then a bogus password exchange when login needs one
        _ => {
            let mut m = startup(USER);
            if !trusted {
                let mut b = cstr("SCRAM-SHA-256");
                let len = rng.random_range(0..80);
                let first = noise(rng, len);
                b.extend((first.len() as i32).to_be_bytes());
                b.extend(first);
                m.extend(message(b'p', &b));
            }
            m
        }
    }
}

/// One hostile connection: its opening, then a few messages, then end of input; it reads
/// what comes back until the server closes the connection (or two quiet seconds pass).
fn attack(port: u16, rng: &mut StdRng, trusted: bool) -> Vec<u8> {
    let Ok(mut socket) = TcpStream::connect(("127.0.0.1", port)) else {
        panic!("the server stopped accepting connections");
    };
    socket
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut bytes = opening(rng, trusted);
    for _ in 0..rng.random_range(1..12) {
        bytes.extend(hostile(rng));
    }
    // the server may close the connection before reading everything: that is fine
    let _ = socket.write_all(&bytes);
    let _ = socket.shutdown(std::net::Shutdown::Write);
    let mut answers = Vec::new();
    let mut sink = [0u8; 64 << 10];
    loop {
        match socket.read(&mut sink) {
            Ok(0) => break,
            Ok(n) => answers.extend_from_slice(&sink[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(_) => break,
        }
    }
    answers
}

/// Whether `bytes` holds `needle`.
fn holds(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// Fuzzes a server (`trusted`: loopback logins need no password) while a psycopg session
/// checks the table, and then checks that nothing changed.
fn fuzz(trusted: bool, seed: u64) {
    let server = TestServer::with(|s| {
        s.trust_local = trusted;
        s.limits.max_message_bytes = LIMIT;
        s.limits.max_connections = 64;
    });
    server.sql(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR);
         INSERT INTO t SELECT value, 'row ' || value FROM generate_series(1, 1000);
         CREATE TABLE scratch (id INTEGER, v VARCHAR);",
    );
    let before = server.rows(CHECKSUM);

    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let mut witness = server
        .python_command(&format!(
            r#"
import os, psycopg
n = 0
with psycopg.connect(CONNINFO, autocommit=True) as conn:
    while not os.path.exists({stop:?}) or n == 0:
        row = conn.execute("{CHECKSUM}").fetchone()
        assert row == (1000, 500500, 6893, "row 999"), row
        n += 1
        if n == 1:
            print("ready", flush=True)
print(n)
"#,
            stop = stop.to_str().unwrap()
        ))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the witness session is in and has its first answer before the attack starts
    let mut witness_out = std::io::BufReader::new(witness.stdout.take().unwrap());
    let mut ready = String::new();
    std::io::BufRead::read_line(&mut witness_out, &mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");

    let failures = Arc::new(Mutex::new(Vec::new()));
    let codes = Arc::new(Mutex::new([false; 4]));
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let port = server.port;
            let failures = Arc::clone(&failures);
            let codes = Arc::clone(&codes);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed + t);
                for _ in 0..CONNECTIONS {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        attack(port, &mut rng, trusted)
                    }));
                    match r {
                        Ok(answers) => {
                            // error responses: too large, protocol violation, a SQL error,
                            // any FATAL one
                            let mut codes = codes.lock().unwrap();
                            for (seen, code) in codes.iter_mut().zip([
                                &b"C54000\0"[..],
                                b"C08P01\0",
                                b"C42",
                                b"SFATAL\0",
                            ]) {
                                *seen |= holds(&answers, code);
                            }
                        }
                        Err(e) => {
                            failures.lock().unwrap().push(format!("{e:?}"));
                            return;
                        }
                    }
                }
            });
        }
    });
    std::fs::write(&stop, b"").unwrap();
    let mut last = String::new();
    std::io::Read::read_to_string(&mut witness_out, &mut last).unwrap();
    let witnessed = witness.wait_with_output().unwrap();
    ok(&witnessed);
    let queries: usize = last.trim().parse().unwrap();
    assert!(queries > 0);
    assert!(failures.lock().unwrap().is_empty(), "{failures:?}");
    // the attack reached the checks it is meant to reach
    let codes = *codes.lock().unwrap();
    if trusted {
        assert_eq!(
            codes, [true; 4],
            "54000, 08P01, 42xxx and FATAL answers seen"
        );
    } else {
        assert!(codes[3], "FATAL answers seen");
    }

    // the table is as it was, and a new client gets in and reads it
    assert_eq!(server.rows(CHECKSUM), before);
    let out = ok(&server.psql(&["-A", "-t", "-c", "SELECT count(*) FROM t"]));
    assert_eq!(out.trim(), "1000");
}

#[test]
fn hostile_messages_change_nothing_and_harm_no_other_session() {
    // a panic in any connection task (tokio catches it) fails the test
    let panics = Arc::new(AtomicUsize::new(0));
    let hook = std::panic::take_hook();
    {
        let panics = Arc::clone(&panics);
        std::panic::set_hook(Box::new(move |info| {
            panics.fetch_add(1, Ordering::SeqCst);
            hook(info);
        }));
    }
    // after a trusted login, and during SCRAM logins
    fuzz(true, 1000);
    fuzz(false, 2000);
    assert_eq!(
        panics.load(Ordering::SeqCst),
        0,
        "a connection task panicked"
    );
}
