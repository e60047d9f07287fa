//! `pipe` against a real wireload server started in the test process (PostgreSQL protocol,
//! SCRAM-SHA-256 login, COPY FROM STDIN into the parallel loader).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wireload_push::PushError;
use wireload_push::pipe::{PipeOptions, pipe};
use wireload_server::{Limits, PgSettings, Users};
use wireload_sql::{Database, DbConfig, StatementOutput};

const USER: &str = "alice";
const PASSWORD: &str = "wonder land";

/// A server on a free port of 127.0.0.1, served on the test's runtime until dropped.
struct Server {
    port: u16,
    db: Arc<Database>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Server {
    async fn start() -> Server {
        let mut users = Users::new();
        users.add(USER, PASSWORD);
        let settings = PgSettings {
            users: Arc::new(users),
            trust_local: false,
            tls: None,
            limits: Limits::default(),
            files: Default::default(),
        };
        let db = Arc::new(Database::new(DbConfig {
            threads: Some(2),
            ..Default::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(wireload_server::serve(
            Arc::clone(&db),
            listener,
            settings,
            async move {
                let _ = stopped.await;
            },
        ));
        Server {
            port,
            db,
            stop: Some(stop),
        }
    }

    /// Runs SQL on the database directly.
    async fn sql(&self, sql: &str) -> Vec<StatementOutput> {
        self.db
            .execute(sql, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The rows of a query as `|`-separated text.
    async fn rows(&self, sql: &str) -> Vec<String> {
        let out = self.sql(sql).await;
        let Some(StatementOutput::Rows { batches, .. }) = out.last() else {
            panic!("{sql}: no rows");
        };
        let mut lines = Vec::new();
        for b in batches {
            let formatters: Vec<_> = b
                .columns()
                .iter()
                .map(|c| {
                    arrow::util::display::ArrayFormatter::try_new(
                        c.as_ref(),
                        &arrow::util::display::FormatOptions::default().with_null("NULL"),
                    )
                    .unwrap()
                })
                .collect();
            for r in 0..b.num_rows() {
                lines.push(
                    formatters
                        .iter()
                        .map(|f| f.value(r).to_string())
                        .collect::<Vec<_>>()
                        .join("|"),
                );
            }
        }
        lines
    }

    async fn connect(&self) -> tokio::net::TcpStream {
        tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap()
    }

    fn options(&self, table: &str) -> PipeOptions {
        let mut o = PipeOptions::new(table, USER);
        o.password = Some(PASSWORD.to_string());
        o
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const CREATE: &str = "CREATE TABLE t (id INT NOT NULL, name TEXT, amount DOUBLE)";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipes_a_file_with_quotes_and_nulls() {
    let server = Server::start().await;
    server.sql(CREATE).await;
    let dir = tempfile::tempdir().unwrap();
    let text = "1,plain,1.5\n2,\"with, comma\",2.5\n3,,3.5\n4,\"say \"\"hi\"\"\",\n";
    let file = write(dir.path(), "a.csv", text);
    let report = pipe(server.connect().await, &[file], &server.options("t"))
        .await
        .unwrap();
    assert_eq!(report.rows, 4);
    assert_eq!(report.bytes_sent, text.len() as u64);
    assert!(report.seconds > 0.0);
    assert_eq!(
        server
            .rows("SELECT id, name, amount FROM t ORDER BY id")
            .await,
        [
            "1|plain|1.5",
            "2|with, comma|2.5",
            "3|NULL|3.5",
            "4|say \"hi\"|NULL"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn options_reach_the_server() {
    let server = Server::start().await;
    // a name that needs quoting, addressed through its schema
    server
        .sql("CREATE TABLE \"We\"\"ird\" (id INT NOT NULL, name TEXT)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    // the delimiter inside a quoted field, the quote doubled inside one
    let text = "id'name\n1'|it's|\n2'NA\n3'|x||y|\n";
    let file = write(dir.path(), "a.csv", text);
    let mut o = server.options("public.We\"ird");
    o.delimiter = b'\'';
    o.header = true;
    o.null = Some("NA".into());
    o.quote = Some(b'|');
    o.block_bytes = 5; // many CopyData messages
    let report = pipe(server.connect().await, &[file], &o).await.unwrap();
    assert_eq!(report.rows, 3);
    assert_eq!(report.bytes_sent, text.len() as u64);
    assert_eq!(
        server
            .rows("SELECT id, name FROM \"We\"\"ird\" ORDER BY id")
            .await,
        ["1|it's", "2|NULL", "3|x|y"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_value_names_its_line_and_loads_nothing() {
    let server = Server::start().await;
    server.sql(CREATE).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "bad.csv",
        "1,a,1.0\n2,b,2.0\n3,c,not a number\n4,d,4.0\n",
    );
    let err = pipe(server.connect().await, &[file], &server.options("t"))
        .await
        .unwrap_err();
    let PushError::Postgres(msg) = &err else {
        panic!("not a server error: {err:?}");
    };
    eprintln!("{msg}");
    assert!(msg.contains("bad.csv"), "{msg}");
    assert!(msg.contains("line 3") || msg.contains(":3:"), "{msg}");
    assert_eq!(server.rows("SELECT count(*) FROM t").await, ["0"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_files_load_their_union_in_one_transaction() {
    let server = Server::start().await;
    server.sql(CREATE).await;
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.csv", "1,a,1.0\n2,b,2.0\n");
    let b = write(dir.path(), "b.csv", "3,c,3.0\n");
    let c = write(dir.path(), "c.csv", "4,d,4.0\n5,e,5.0\n");
    let report = pipe(
        server.connect().await,
        &[a.clone(), b.clone(), c],
        &server.options("t"),
    )
    .await
    .unwrap();
    assert_eq!(report.rows, 5);
    assert_eq!(
        server.rows("SELECT id, name FROM t ORDER BY id").await,
        ["1|a", "2|b", "3|c", "4|d", "5|e"]
    );
    // a bad second file: the first one's rows are not published either
    let bad = write(dir.path(), "bad.csv", "6,f,6.0\nx,g,7.0\n");
    let err = pipe(server.connect().await, &[a, bad], &server.options("t"))
        .await
        .unwrap_err();
    let PushError::Postgres(msg) = &err else {
        panic!("not a server error: {err:?}");
    };
    eprintln!("{msg}");
    assert!(msg.contains("bad.csv"), "{msg}");
    assert!(msg.contains("line 2") || msg.contains(":2:"), "{msg}");
    assert_eq!(server.rows("SELECT count(*) FROM t").await, ["5"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wrong_password_or_table_is_a_postgres_error() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "a.csv", "1\n");
    let mut o = server.options("missing");
    let err = pipe(server.connect().await, std::slice::from_ref(&file), &o)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PushError::Postgres(m) if m.contains("missing")),
        "{err:?}"
    );
    o.password = Some("wrong".into());
    let err = pipe(server.connect().await, std::slice::from_ref(&file), &o)
        .await
        .unwrap_err();
    assert!(matches!(&err, PushError::Postgres(_)), "{err:?}");
    eprintln!("{err}");
    // a file that does not exist is the client's I/O error
    server.sql("CREATE TABLE missing (id INT)").await;
    let err = pipe(
        server.connect().await,
        &[dir.path().join("nope.csv")],
        &server.options("missing"),
    )
    .await
    .unwrap_err();
    assert!(matches!(&err, PushError::Io { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_larger_file_in_many_blocks() {
    let server = Server::start().await;
    server.sql(CREATE).await;
    let dir = tempfile::tempdir().unwrap();
    let n = 50_000u64;
    let text: String = (1..=n)
        .map(|i| format!("{i},\"name {i}, quoted\",{i}.25\n"))
        .collect();
    let file = write(dir.path(), "big.csv", &text);
    let mut o = server.options("t");
    o.block_bytes = 64 << 10;
    let report = pipe(server.connect().await, &[file], &o).await.unwrap();
    assert_eq!(report.rows, n);
    assert_eq!(report.bytes_sent, text.len() as u64);
    assert_eq!(
        server
            .rows("SELECT count(*), sum(id), min(name), max(amount) FROM t")
            .await,
        [format!("{n}|{}|name 1, quoted|{n}.25", n * (n + 1) / 2)]
    );
}
