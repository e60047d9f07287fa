//! The push endpoint against hostile clients: forged frames (unsorted or duplicated
//! dictionaries, codes out of range, unused dictionary entries, wrong column counts and
//! types, lengths that do not match, broken IPC, NULL in NOT NULL columns, values too long,
//! dates and timestamps no CSV load produces, frames out of order, a stream cut before its
//! end frame, raw bytes of files out of order) are refused with an error to the client, and
//! nothing of the push becomes visible. And the library client against the endpoint:
//! fragments larger than the server's frame limit are split, `seq` loads several files
//! with a header each. Flight SQL's bulk ingest (`DoPut`, as ADBC sends it) refuses forged
//! IPC messages the same way.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Date32Array, Float32Array, Int32Array, Int64Array, StringArray,
    TimestampMicrosecondArray, UInt8Array,
};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, FlightDescriptor};
use futures::StreamExt;
use prost::Message;
use tokio::runtime::Runtime;
use wireload_flight::{FlightSettings, serve};
use wireload_load::LoadControl;
use wireload_push::client::{self, PushOptions};
use wireload_push::protocol::{
    Frame, Hello, Mode, PUSH_TYPE_URL, Reply, column_batch, encode_batch, from_json, to_json,
};
use wireload_server::{Limits, Users};
use wireload_sql::{Database, DbConfig, StatementOutput};

const USER: &str = "pusher";
const PASSWORD: &str = "p4ss";

struct Server {
    rt: Runtime,
    db: Arc<Database>,
    port: u16,
}

impl Server {
    fn start(setup: &str) -> Server {
        Server::start_with(setup, Limits::default())
    }

    /// A server with `limits` (`max_message_bytes` is the frame limit pushes are told).
    fn start_with(setup: &str, limits: Limits) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let db = Arc::new(Database::new(DbConfig {
            threads: Some(2),
            ..Default::default()
        }));
        rt.block_on(db.execute(setup, &LoadControl::default()))
            .expect("setup SQL");
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut users = Users::new();
        users.add(USER, PASSWORD);
        let settings = FlightSettings {
            users: Arc::new(users),
            trust_local: false,
            tls: None,
            limits,
            files: Default::default(),
        };
        rt.spawn(serve(
            Arc::clone(&db),
            listener,
            settings,
            std::future::pending::<()>(),
        ));
        Server { rt, db, port }
    }

    fn rows(&self, sql: &str) -> Vec<RecordBatch> {
        let out = self
            .rt
            .block_on(self.db.execute(sql, &LoadControl::default()))
            .unwrap();
        match out.into_iter().last().unwrap() {
            StatementOutput::Rows { batches, .. } => batches,
            other => panic!("{other:?}"),
        }
    }

    fn count(&self) -> i64 {
        let b = self.rows("SELECT count(*) FROM t");
        b[0].column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0)
    }

    /// Sends `frames` (header, payload) as one push in `mode`; the final reply or the
    /// error the server gave.
    fn push(&self, mode: Mode, frames: Vec<(Frame, Vec<u8>)>) -> Result<Reply, String> {
        self.push_as(hello(mode), frames)
    }

    /// Sends `frames` as one push that `hello` opens.
    fn push_as(&self, hello: Hello, frames: Vec<(Frame, Vec<u8>)>) -> Result<Reply, String> {
        let raw = frames.into_iter().map(|(h, b)| (to_json(&h), b)).collect();
        self.push_raw(hello, raw)
    }

    /// Sends frames whose headers are given as bytes (JSON or not) as one push.
    fn push_raw(&self, hello: Hello, frames: Vec<(Vec<u8>, Vec<u8>)>) -> Result<Reply, String> {
        let any = arrow_flight::sql::Any {
            type_url: PUSH_TYPE_URL.into(),
            value: to_json(&hello).into(),
        };
        let mut data = vec![FlightData {
            flight_descriptor: Some(FlightDescriptor::new_cmd(any.encode_to_vec())),
            ..FlightData::default()
        }];
        for (header, body) in frames {
            data.push(FlightData {
                app_metadata: header.into(),
                data_body: body.into(),
                ..FlightData::default()
            });
        }
        let last = self.do_put(data)?.pop().ok_or("no reply")?;
        from_json::<Reply>(&last).map_err(|e| e.to_string())
    }

    /// Sends `data` as one `DoPut` call as user pusher; the `app_metadata` of every reply,
    /// or the error the server gave.
    fn do_put(&self, data: Vec<FlightData>) -> Result<Vec<bytes::Bytes>, String> {
        let port = self.port;
        self.rt.block_on(async move {
            let channel =
                tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
                    .map_err(|e| e.to_string())?
                    .connect()
                    .await
                    .map_err(|e| e.to_string())?;
            let mut client = FlightServiceClient::new(channel);
            let mut request = tonic::Request::new(futures::stream::iter(data));
            let basic = base64_basic(USER, PASSWORD);
            request
                .metadata_mut()
                .insert("authorization", basic.parse().unwrap());
            let mut replies = client
                .do_put(request)
                .await
                .map_err(|s| s.message().to_string())?
                .into_inner();
            let mut all = Vec::new();
            while let Some(r) = replies.next().await {
                all.push(r.map_err(|s| s.message().to_string())?.app_metadata);
            }
            Ok(all)
        })
    }
}

/// The hello of a forged push into t in `mode`.
fn hello(mode: Mode) -> Hello {
    Hello {
        table: "t".into(),
        mode,
        file: "forged".into(),
        files: Vec::new(),
        dialect: (mode == Mode::Seq).then(|| wireload_push::protocol::WireDialect {
            delimiter: b',',
            quote: Some(b'"'),
            escape: Some(b'"'),
            header: false,
            null: Vec::new(),
        }),
    }
}

fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

const TABLE: &str = "CREATE TABLE t (id INT NOT NULL, name VARCHAR(5) COMPRESSION dictionary, \
                     x REAL)";

/// A fragment payload of `columns` (name, array).
fn fragment(columns: Vec<(&str, ArrayRef)>) -> Vec<u8> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    encode_batch(&batch, false).unwrap()
}

fn dictionary(values: &[&str]) -> Vec<u8> {
    let values: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
    encode_batch(&column_batch("name", values).unwrap(), false).unwrap()
}

fn ids(v: &[i32]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}

fn codes(v: &[u8]) -> ArrayRef {
    Arc::new(UInt8Array::from(v.to_vec()))
}

fn reals(n: usize) -> ArrayRef {
    Arc::new(Float32Array::from(vec![1.5f32; n]))
}

fn dict_frame(entries: u64) -> Frame {
    Frame::Dictionary {
        partition: 0,
        column: 1,
        entries,
        last: true,
    }
}

fn frag_frame(fragment: u64, rows: u64, encoded: Vec<usize>) -> Frame {
    Frame::Fragment {
        partition: 0,
        fragment,
        rows,
        encoded,
    }
}

fn end(fragments: u64, rows: u64) -> (Frame, Vec<u8>) {
    (
        Frame::End {
            fragments,
            rows,
            bytes: 0,
        },
        Vec::new(),
    )
}

/// Frames of a push: header and payload.
type Frames = Vec<(Frame, Vec<u8>)>;

/// A valid push: a dictionary, an encoded fragment and a plain one.
fn valid() -> Vec<(Frame, Vec<u8>)> {
    vec![
        (dict_frame(2), dictionary(&["ann", "bob"])),
        (
            frag_frame(0, 3, vec![1]),
            fragment(vec![
                ("id", ids(&[1, 2, 3])),
                ("name", codes(&[1, 0, 1])),
                ("x", reals(3)),
            ]),
        ),
        (
            frag_frame(1, 2, vec![]),
            fragment(vec![
                ("id", ids(&[4, 5])),
                ("name", Arc::new(StringArray::from(vec![Some("cy"), None]))),
                ("x", reals(2)),
            ]),
        ),
        end(2, 5),
    ]
}

#[test]
fn forged_pushes_are_refused_and_load_nothing() {
    let server = Server::start(TABLE);
    let encoded = |names: ArrayRef, rows: u64| {
        (
            frag_frame(0, rows, vec![1]),
            fragment(vec![
                ("id", ids(&(0..rows as i32).collect::<Vec<_>>())),
                ("name", names),
                ("x", reals(rows as usize)),
            ]),
        )
    };
    let mut valid_without_end = valid();
    valid_without_end.pop();
    let cases: Vec<(&str, Frames, &str)> = vec![
        (
            "unsorted dictionary",
            vec![
                (dict_frame(2), dictionary(&["bob", "ann"])),
                encoded(codes(&[0, 1]), 2),
                end(1, 2),
            ],
            "not sorted",
        ),
        (
            "duplicated dictionary entries",
            vec![
                (dict_frame(2), dictionary(&["ann", "ann"])),
                encoded(codes(&[0, 1]), 2),
                end(1, 2),
            ],
            "not sorted and unique",
        ),
        (
            "code out of range",
            vec![
                (dict_frame(2), dictionary(&["ann", "bob"])),
                encoded(codes(&[0, 2]), 2),
                end(1, 2),
            ],
            "out of range",
        ),
        (
            "an unused dictionary entry",
            vec![
                (dict_frame(3), dictionary(&["ann", "bob", "zed"])),
                encoded(codes(&[0, 1]), 2),
                end(1, 2),
            ],
            "used by no row",
        ),
        (
            "a dictionary of a column that cannot be encoded",
            vec![(
                Frame::Dictionary {
                    partition: 0,
                    column: 2,
                    entries: 1,
                    last: true,
                },
                encode_batch(
                    &column_batch("x", Arc::new(Float32Array::from(vec![1.0f32]))).unwrap(),
                    false,
                )
                .unwrap(),
            )],
            "cannot be sent encoded",
        ),
        (
            "wrong column count",
            vec![
                (
                    frag_frame(0, 2, vec![]),
                    fragment(vec![("id", ids(&[1, 2])), ("x", reals(2))]),
                ),
                end(1, 2),
            ],
            "columns",
        ),
        (
            "wrong type",
            vec![
                (
                    frag_frame(0, 2, vec![]),
                    fragment(vec![
                        ("id", Arc::new(Int64Array::from(vec![1i64, 2]))),
                        ("name", Arc::new(StringArray::from(vec!["a", "b"]))),
                        ("x", reals(2)),
                    ]),
                ),
                end(1, 2),
            ],
            "expected Int32",
        ),
        (
            "codes of a wrong type",
            vec![
                (dict_frame(2), dictionary(&["ann", "bob"])),
                encoded(Arc::new(Int32Array::from(vec![0, 1])), 2),
                end(1, 2),
            ],
            "codes of type Int32",
        ),
        (
            "rows in the header do not match the batch",
            vec![
                (
                    frag_frame(0, 1_000_000_000, vec![]),
                    fragment(vec![
                        ("id", ids(&[1])),
                        ("name", Arc::new(StringArray::from(vec!["a"]))),
                        ("x", reals(1)),
                    ]),
                ),
                end(1, 1_000_000_000),
            ],
            "rows",
        ),
        (
            "wrong row count at the end",
            {
                let mut v = valid();
                v.pop();
                v.push(end(2, 6));
                v
            },
            "6 rows",
        ),
        (
            "a truncated IPC payload",
            {
                let mut v = valid();
                let body = &mut v[1].1;
                body.truncate(body.len() / 2);
                v
            },
            "malformed IPC payload",
        ),
        (
            "garbage as a payload",
            vec![(frag_frame(0, 1, vec![]), vec![0xff; 4096]), end(1, 1)],
            "malformed IPC payload",
        ),
        (
            "a garbage header",
            vec![(frag_frame(0, 1, vec![]), Vec::new())],
            "malformed IPC payload",
        ),
        (
            "NULL in a NOT NULL column",
            vec![
                (
                    frag_frame(0, 2, vec![]),
                    fragment(vec![
                        ("id", Arc::new(Int32Array::from(vec![Some(1), None]))),
                        ("name", Arc::new(StringArray::from(vec!["a", "b"]))),
                        ("x", reals(2)),
                    ]),
                ),
                end(1, 2),
            ],
            "null",
        ),
        (
            "a value longer than VARCHAR(5)",
            vec![
                (dict_frame(2), dictionary(&["ann", "bobbybob"])),
                encoded(codes(&[0, 1]), 2),
                end(1, 2),
            ],
            "too long",
        ),
        (
            "fragments out of order",
            {
                let mut v = valid();
                if let Frame::Fragment { fragment, .. } = &mut v[2].0 {
                    *fragment = 5;
                }
                v
            },
            "fragment 5 arrived where fragment 1 was expected",
        ),
        (
            "an encoded column without a dictionary",
            vec![encoded(codes(&[0, 0]), 2), end(1, 2)],
            "has no dictionary",
        ),
        (
            "a stream cut before its end frame",
            valid_without_end,
            "before its end frame",
        ),
        (
            "a raw frame in a push of fragments",
            vec![(
                Frame::Raw {
                    file: 0,
                    offset: 0,
                    len: 3,
                    lz4: false,
                },
                b"1,a".to_vec(),
            )],
            "raw frame",
        ),
    ];
    for (what, frames, expected) in cases {
        let err = match server.push(Mode::All, frames) {
            Ok(reply) => panic!("{what}: accepted ({reply:?})"),
            Err(e) => e,
        };
        assert!(
            err.to_lowercase().contains(&expected.to_lowercase()),
            "{what}: {err}"
        );
        assert_eq!(server.count(), 0, "{what}: rows became visible");
    }
    // a seq push of one raw frame saying `len` bytes: the server's error
    let one_raw = |len: u64, lz4: bool, body: Vec<u8>| {
        let raw = Frame::Raw {
            file: 0,
            offset: 0,
            len,
            lz4,
        };
        server
            .push(Mode::Seq, vec![(raw, body), end(0, 0)])
            .unwrap_err()
    };
    // a seq push whose bytes do not add up
    let err = one_raw(10, false, b"1,a,1\n".to_vec());
    assert!(err.contains("10 bytes"), "{err}");
    assert_eq!(server.count(), 0);
    // a seq push whose LZ4 block says it holds a gigabyte: refused before it is allocated
    let mut lying = lz4_flex::compress_prepend_size(b"1,a,1\n");
    lying[..4].copy_from_slice(&(1u32 << 30).to_le_bytes());
    let err = one_raw(6, true, lying);
    assert!(err.contains("its LZ4 block"), "{err}");
    assert_eq!(server.count(), 0);
    // seq: bytes of a file the push does not have, and files out of order
    let raw = |file: u64, offset: u64, bytes: &[u8]| {
        (
            Frame::Raw {
                file,
                offset,
                len: bytes.len() as u64,
                lz4: false,
            },
            bytes.to_vec(),
        )
    };
    let bytes_end = |bytes: u64| {
        (
            Frame::End {
                fragments: 0,
                rows: 0,
                bytes,
            },
            Vec::new(),
        )
    };
    let err = server
        .push(
            Mode::Seq,
            vec![raw(0, 0, b"1,a,1\n"), raw(1, 6, b"2,b,2\n"), bytes_end(12)],
        )
        .unwrap_err();
    assert!(
        err.contains("bytes of file 1: the push has 1 files"),
        "{err}"
    );
    assert_eq!(server.count(), 0);
    let two_files = Hello {
        files: vec!["a.csv".into(), "b.csv".into()],
        ..hello(Mode::Seq)
    };
    let err = server
        .push_as(
            two_files.clone(),
            vec![raw(1, 0, b"1,a,1\n"), raw(0, 6, b"2,b,2\n"), bytes_end(12)],
        )
        .unwrap_err();
    assert!(
        err.contains("bytes of file 0 after bytes of file 1"),
        "{err}"
    );
    assert_eq!(server.count(), 0);
    // an error names the file the bytes came from, and its line
    let err = server
        .push_as(
            two_files.clone(),
            vec![
                raw(0, 0, b"1,a,1\n"),
                raw(1, 6, b"2,b,2\nx,c,3\n"),
                bytes_end(18),
            ],
        )
        .unwrap_err();
    assert!(err.contains("b.csv") && err.contains("line 2"), "{err}");
    assert_eq!(server.count(), 0);
    // the same frames, well formed, load
    match server.push(Mode::All, valid()) {
        Ok(Reply::Done { rows, .. }) => assert_eq!(rows, 5),
        other => panic!("{other:?}"),
    }
    let text = arrow::util::pretty::pretty_format_batches(
        &server.rows("SELECT id, name FROM t ORDER BY id"),
    )
    .unwrap()
    .to_string();
    for (id, name) in [(1, "bob"), (2, "ann"), (3, "bob"), (4, "cy")] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("| {id}  ")) && l.contains(name)),
            "{text}"
        );
    }
    // seq: a file without a final newline ends its last record
    match server.push_as(
        two_files,
        vec![raw(0, 0, b"6,a,1"), raw(1, 5, b"7,b,2\n"), bytes_end(11)],
    ) {
        Ok(Reply::Done { rows, .. }) => assert_eq!(rows, 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.count(), 7);
}

/// The hello of an `auto` push into `table` of `files` (comma-separated, no header), which
/// may send text fragments.
fn auto_hello(table: &str, files: &[&str]) -> Hello {
    Hello {
        table: table.into(),
        files: files.iter().map(|f| f.to_string()).collect(),
        dialect: Some(wireload_push::protocol::WireDialect {
            delimiter: b',',
            quote: Some(b'"'),
            escape: Some(b'"'),
            header: false,
            null: Vec::new(),
        }),
        ..hello(Mode::Auto)
    }
}

/// A text frame of fragment `fragment`: `data` of file `file` after `byte` bytes and
/// `lines` line ends.
fn text_frame(fragment: u64, file: u64, byte: u64, lines: u64, data: &[u8]) -> (Frame, Vec<u8>) {
    (
        Frame::Text {
            fragment,
            file,
            byte,
            lines,
            len: data.len() as u64,
            lz4: false,
        },
        data.to_vec(),
    )
}

/// [`valid`] with three records of text between its fragments (`auto`: 8 rows, the end frame
/// counting the fragments' 5).
fn valid_with_text() -> Vec<(Frame, Vec<u8>)> {
    let mut frames = valid();
    frames.pop();
    frames.insert(
        2,
        text_frame(1, 0, 0, 0, b"10,dan,1.5\n11,,2.5\n12,\"e,f\",3\n"),
    );
    if let Frame::Fragment { fragment, .. } = &mut frames[3].0 {
        *fragment = 2;
    }
    frames.push(end(3, 5));
    frames
}

#[test]
fn text_fragments_load_in_order_and_forged_ones_are_refused() {
    let server = Server::start(&format!(
        "{TABLE}; CREATE TABLE k (id INT PRIMARY KEY, name TEXT)"
    ));
    let ab = auto_hello("t", &["a.csv", "b.csv"]);
    let lz4_lying = {
        let mut body = lz4_flex::compress_prepend_size(b"1,a,1\n");
        body[..4].copy_from_slice(&(1u32 << 30).to_le_bytes());
        body
    };
    // the header of fragment 0, the start of file 0, saying `len` bytes
    let text_header = |len: u64, lz4: bool| Frame::Text {
        fragment: 0,
        file: 0,
        byte: 0,
        lines: 0,
        len,
        lz4,
    };
    let lz4_frame = |body: Vec<u8>| (text_header(6, true), body);
    let cases: Vec<(&str, Hello, Frames, &str)> = vec![
        (
            "a text without the files' dialect",
            hello(Mode::Auto),
            vec![text_frame(0, 0, 0, 0, b"1,a,1\n"), end(1, 0)],
            "without the files' CSV dialect",
        ),
        (
            "text of a file the push does not have",
            ab.clone(),
            vec![text_frame(0, 2, 0, 0, b"1,a,1\n"), end(1, 0)],
            "text of file 2: the push has 2 files",
        ),
        (
            "an empty text",
            ab.clone(),
            vec![text_frame(0, 0, 0, 0, b""), end(1, 0)],
            "a text fragment of 0 bytes",
        ),
        (
            "a text longer than it says",
            ab.clone(),
            vec![(text_header(3, false), b"1,a,1\n".to_vec()), end(1, 0)],
            "said 3 bytes, 6 arrived",
        ),
        (
            "an LZ4 block that says it holds a gigabyte",
            ab.clone(),
            vec![lz4_frame(lz4_lying), end(1, 0)],
            "its LZ4 block",
        ),
        (
            "a broken LZ4 block",
            ab.clone(),
            vec![lz4_frame(vec![6, 0, 0, 0, 0xff, 0xff]), end(1, 0)],
            "LZ4",
        ),
        (
            "a text that says it is huge",
            ab.clone(),
            vec![(text_header(1 << 40, false), b"1,a,1\n".to_vec())],
            "bytes (1 to",
        ),
        (
            "a text out of order",
            ab.clone(),
            vec![text_frame(1, 0, 0, 0, b"1,a,1\n"), end(2, 0)],
            "fragment 1 arrived where fragment 0 was expected",
        ),
        (
            "a text whose last record is cut in a quote",
            ab.clone(),
            vec![text_frame(0, 0, 0, 0, b"1,\"a,1\n"), end(1, 0)],
            "quote",
        ),
        (
            "a value too long for VARCHAR(5) in a text",
            ab.clone(),
            vec![text_frame(0, 0, 0, 0, b"1,abcdefg,1\n"), end(1, 0)],
            "too long",
        ),
        (
            "an end frame that counts a text's rows as a fragment's",
            ab.clone(),
            vec![text_frame(0, 0, 0, 0, b"1,a,1\n2,b,2\n"), end(1, 2)],
            "1 fragments of 0 rows arrived",
        ),
        (
            "a text into a table with a unique key",
            auto_hello("k", &["a.csv"]),
            vec![text_frame(0, 0, 0, 0, b"1,a\n"), end(1, 0)],
            "unique key",
        ),
    ];
    for (what, hello, frames, expected) in cases {
        let err = match server.push_as(hello, frames) {
            Ok(reply) => panic!("{what}: accepted ({reply:?})"),
            Err(e) => e,
        };
        assert!(
            err.to_lowercase().contains(&expected.to_lowercase()),
            "{what}: {err}"
        );
        assert_eq!(server.count(), 0, "{what}: rows became visible");
    }
    let k = server.rows("SELECT count(*) FROM k");
    assert_eq!(
        arrow::util::pretty::pretty_format_batches(&k)
            .unwrap()
            .to_string()
            .lines()
            .nth(3),
        Some("| 0        |")
    );
    // a bad value in a text is named by its file, line and byte, as a local load names it
    let err = server
        .push_as(
            ab.clone(),
            vec![
                text_frame(0, 0, 0, 0, b"1,a,1\n"),
                text_frame(1, 1, 100, 7, b"2,b,2\nx,c,3\n"),
                end(2, 0),
            ],
        )
        .unwrap_err();
    assert!(
        err.contains("b.csv") && err.contains("line 9") && err.contains("byte 106"),
        "{err}"
    );
    assert_eq!(server.count(), 0);
    // fragments and texts in one push load in their order, the end frame counting the
    // fragments' rows
    match server.push_as(ab, valid_with_text()) {
        Ok(Reply::Done { rows, .. }) => assert_eq!(rows, 8),
        other => panic!("{other:?}"),
    }
    let text = arrow::util::pretty::pretty_format_batches(&server.rows("SELECT id, name FROM t"))
        .unwrap()
        .to_string();
    let ids: Vec<&str> = text
        .lines()
        .skip(3)
        .filter_map(|l| l.split('|').nth(1))
        .map(str::trim)
        .collect();
    assert_eq!(ids, ["1", "2", "3", "10", "11", "12", "4", "5"], "{text}");
    assert!(text.contains("e,f"), "{text}");
}

/// Numbers below n from `seed` (xorshift64: the same cases every run).
fn below(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_pushes_never_crash_the_server_or_load_half() {
    let server = Server::start(TABLE);
    let ab = auto_hello("t", &["a.csv", "b.csv"]);
    // a valid push of each kind: dictionary and fragments; text between fragments
    let bases: Vec<Vec<(Vec<u8>, Vec<u8>)>> = [valid(), valid_with_text()]
        .into_iter()
        .map(|frames| frames.into_iter().map(|(h, b)| (to_json(&h), b)).collect())
        .collect();
    let mut next = below(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for case in 0..300 {
        let mut frames = bases[case % 2].clone();
        for _ in 0..1 + next(3) {
            let f = next(frames.len());
            match next(6) {
                // a byte of a payload or a header changed
                0 | 1 => {
                    let body = &mut frames[f].1;
                    if !body.is_empty() {
                        let at = next(body.len());
                        body[at] ^= 1 << next(8);
                    }
                }
                2 => {
                    let header = &mut frames[f].0;
                    let at = next(header.len());
                    header[at] = b"0123456789-,:{}\"x "[next(18)];
                }
                // a payload cut short
                3 => {
                    let body = &mut frames[f].1;
                    let keep = next(body.len() + 1);
                    body.truncate(keep);
                }
                // a frame dropped or sent twice
                4 => {
                    frames.remove(f);
                }
                _ => {
                    let again = frames[f].clone();
                    frames.insert(f, again);
                }
            }
            if frames.is_empty() {
                break;
            }
        }
        let before = server.count();
        let hello = if case % 2 == 0 {
            hello(Mode::All)
        } else {
            ab.clone()
        };
        match server.push_raw(hello, frames) {
            Ok(Reply::Done { rows, .. }) => {
                accepted += 1;
                assert_eq!(server.count(), before + rows as i64, "case {case}");
            }
            Ok(other) => panic!("case {case}: the last reply is {other:?}"),
            Err(e) => {
                refused += 1;
                // a panicking push task ends the call without a reply
                assert!(e != "no reply" && !e.contains("panic"), "case {case}: {e}");
                assert_eq!(server.count(), before, "case {case}: {e}");
            }
        }
    }
    assert!(refused > 200, "{refused} of 300 mutated pushes refused");
    // the server still loads a good push
    match server.push(Mode::All, valid()) {
        Ok(Reply::Done { rows, .. }) => assert_eq!(rows, 5),
        other => panic!("{other:?} ({accepted} mutated pushes accepted)"),
    }
}

/// Days from 1970-01-01 of `text` as a CSV load reads a DATE.
fn day(text: &str) -> i32 {
    wireload_types::deser::parse_date(text.as_bytes()).unwrap()
}

/// Microseconds from 1970-01-01 of `text` as a CSV load reads a TIMESTAMP.
fn micros(text: &str) -> i64 {
    wireload_types::deser::parse_timestamp(text.as_bytes()).unwrap()
}

#[test]
fn forged_dates_and_timestamps_are_refused() {
    let server = Server::start(
        "CREATE TABLE t (id INT NOT NULL, d DATE COMPRESSION dictionary, ts TIMESTAMP)",
    );
    let (first_day, last_day) = (day("0001-01-01"), day("5874897-12-31"));
    let first_micros = micros("0001-01-01 00:00:00");
    let dates = |v: Vec<Option<i32>>| Arc::new(Date32Array::from(v)) as ArrayRef;
    let stamps = |v: Vec<Option<i64>>| Arc::new(TimestampMicrosecondArray::from(v)) as ArrayRef;
    let plain = |d: ArrayRef, ts: ArrayRef| {
        vec![
            (
                frag_frame(0, 2, vec![]),
                fragment(vec![("id", ids(&[1, 2])), ("d", d), ("ts", ts)]),
            ),
            end(1, 2),
        ]
    };
    let ok_stamps = || stamps(vec![Some(0), None]);
    let ok_dates = || dates(vec![Some(0), None]);
    let cases: Vec<(&str, Frames, &str)> = vec![
        (
            "a date before 0001-01-01",
            plain(dates(vec![Some(0), Some(first_day - 1)]), ok_stamps()),
            "row 2, column 2 (d)",
        ),
        (
            "a date after 5874897-12-31",
            plain(dates(vec![Some(last_day + 1), Some(0)]), ok_stamps()),
            "row 1, column 2 (d)",
        ),
        (
            "the smallest Date32",
            plain(dates(vec![Some(i32::MIN), None]), ok_stamps()),
            "outside the range",
        ),
        (
            "a timestamp before 0001-01-01 00:00:00",
            plain(ok_dates(), stamps(vec![None, Some(first_micros - 1)])),
            "row 2, column 3 (ts)",
        ),
        (
            "the smallest timestamp",
            plain(ok_dates(), stamps(vec![Some(i64::MIN), None])),
            "before 0001-01-01",
        ),
        (
            "a date out of range in a dictionary",
            vec![
                (
                    dict_frame(2),
                    encode_batch(
                        &column_batch("d", dates(vec![Some(first_day - 10), Some(0)])).unwrap(),
                        false,
                    )
                    .unwrap(),
                ),
                (
                    frag_frame(0, 2, vec![1]),
                    fragment(vec![
                        ("id", ids(&[1, 2])),
                        ("d", codes(&[0, 1])),
                        ("ts", ok_stamps()),
                    ]),
                ),
                end(1, 2),
            ],
            "the dictionary of column \"d\"",
        ),
    ];
    for (what, frames, expected) in cases {
        let err = match server.push(Mode::All, frames) {
            Ok(reply) => panic!("{what}: accepted ({reply:?})"),
            Err(e) => e,
        };
        assert!(err.contains(expected), "{what}: {err}");
        assert!(err.contains("forged"), "{what}: {err}");
        assert_eq!(server.count(), 0, "{what}: rows became visible");
    }
    // the ends of the range load, and a NULL's slot may hold anything
    let nulls_over_garbage = |v: i32| {
        Arc::new(Date32Array::new(
            vec![v, 0].into(),
            Some(vec![false, true].into()),
        )) as ArrayRef
    };
    let ends = vec![
        (
            frag_frame(0, 2, vec![]),
            fragment(vec![
                ("id", ids(&[1, 2])),
                ("d", dates(vec![Some(first_day), Some(last_day)])),
                ("ts", stamps(vec![Some(first_micros), Some(i64::MAX)])),
            ]),
        ),
        (
            frag_frame(1, 2, vec![]),
            fragment(vec![
                ("id", ids(&[3, 4])),
                ("d", nulls_over_garbage(i32::MIN)),
                ("ts", ok_stamps()),
            ]),
        ),
        end(2, 4),
    ];
    match server.push(Mode::All, ends) {
        Ok(Reply::Done { rows, .. }) => assert_eq!(rows, 4),
        other => panic!("{other:?}"),
    }
    let text = arrow::util::pretty::pretty_format_batches(
        &server.rows("SELECT CAST(d AS VARCHAR), CAST(ts AS VARCHAR) FROM t WHERE id = 1"),
    )
    .unwrap()
    .to_string();
    assert!(text.contains("0001-01-01"), "{text}");
}

/// `rows` rows of a table with repeating and unique text, numbers, dates, NULLs and quoted
/// delimiters; a header line first when `header`.
fn csv_rows(from: usize, rows: usize, header: bool) -> String {
    let mut text = String::new();
    if header {
        text.push_str("id,code,note,amount,day\n");
    }
    for r in from..from + rows {
        if r % 11 == 0 {
            text.push_str(&format!("{r},,,,\n"));
        } else {
            text.push_str(&format!(
                "{r},c{},\"note {r}, unique\",{}.{:02},2024-{:02}-{:02}\n",
                r % 37,
                r % 1000,
                r % 100,
                1 + r % 12,
                1 + r % 28
            ));
        }
    }
    text
}

const ROWS_TABLE: &str = "(id INT NOT NULL, code VARCHAR(10), note TEXT, amount DECIMAL(9,2), \
                          day DATE) WITH (COMPRESSION = dictionary)";

/// The rows of `table` as text, in load order.
fn table_text(server: &Server, table: &str) -> String {
    arrow::util::pretty::pretty_format_batches(&server.rows(&format!("SELECT * FROM {table}")))
        .unwrap()
        .to_string()
}

#[test]
fn fragments_larger_than_a_frame_are_split() {
    const LIMIT: usize = 4096;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rows.csv");
    std::fs::write(&file, csv_rows(0, 20_000, false)).unwrap();
    let modes = [Mode::All, Mode::Size, Mode::None, Mode::Seq];
    let mut setup = format!(
        "CREATE TABLE reference {ROWS_TABLE}; COPY reference FROM '{}' WITH (FORMAT csv);",
        file.display()
    );
    for m in modes {
        for lz4 in [0, 1] {
            setup.push_str(&format!("CREATE TABLE t_{}_{lz4} {ROWS_TABLE};", m.name()));
        }
    }
    let server = Server::start_with(
        &setup,
        Limits {
            max_message_bytes: LIMIT,
            ..Limits::default()
        },
    );
    let expected = table_text(&server, "reference");
    for m in modes {
        for lz4 in [false, true] {
            let table = format!("t_{}_{}", m.name(), lz4 as u8);
            let mut opts = PushOptions::new(format!("http://127.0.0.1:{}", server.port), &table, m);
            opts.credentials = Some((USER.into(), PASSWORD.into()));
            // fragments of 256 KiB of CSV, 64 times the frame limit
            opts.chunk_bytes = 256 << 10;
            opts.fragments_per_partition = 2;
            opts.threads = 2;
            opts.lz4 = lz4;
            let report = client::push(std::slice::from_ref(&file), &opts)
                .unwrap_or_else(|e| panic!("{table} (lz4 {lz4}): {e}"));
            assert_eq!(report.rows, 20_000, "{table}");
            assert!(
                report.bytes_sent > 20 * LIMIT as u64,
                "{table}: {} bytes",
                report.bytes_sent
            );
            assert!(table_text(&server, &table) == expected, "{table} differs");
        }
    }
}

#[test]
fn seq_loads_several_files_with_a_header_each() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    std::fs::write(&a, csv_rows(0, 3000, true)).unwrap();
    // the second file ends without a newline
    std::fs::write(&b, csv_rows(3000, 2000, true).trim_end()).unwrap();
    let server = Server::start(&format!(
        "CREATE TABLE reference {ROWS_TABLE}; \
         COPY reference FROM '{}' WITH (FORMAT csv, HEADER true); \
         COPY reference FROM '{}' WITH (FORMAT csv, HEADER true); \
         CREATE TABLE t {ROWS_TABLE};",
        a.display(),
        b.display()
    ));
    let mut opts = PushOptions::new(format!("http://127.0.0.1:{}", server.port), "t", Mode::Seq);
    opts.credentials = Some((USER.into(), PASSWORD.into()));
    opts.dialect.header = true;
    let report = client::push(&[a.clone(), b.clone()], &opts).unwrap();
    assert_eq!(report.rows, 5000);
    assert_eq!(table_text(&server, "t"), table_text(&server, "reference"));
}

/// Sends `data` as a Flight SQL `DoPut` that ingests into table `t` (append); the rows the
/// server says it appended, or its error.
fn put_ingest(server: &Server, mut data: Vec<FlightData>) -> Result<i64, String> {
    use arrow_flight::sql::{
        CommandStatementIngest, DoPutUpdateResult, ProstMessageExt, TableDefinitionOptions,
        TableExistsOption, TableNotExistOption,
    };
    let command = CommandStatementIngest {
        table_definition_options: Some(TableDefinitionOptions {
            if_not_exist: TableNotExistOption::Fail.into(),
            if_exists: TableExistsOption::Append.into(),
        }),
        table: "t".into(),
        ..CommandStatementIngest::default()
    };
    if let Some(first) = data.first_mut() {
        first.flight_descriptor = Some(FlightDescriptor::new_cmd(command.as_any().encode_to_vec()));
    }
    let last = server.do_put(data)?.pop().ok_or("no reply")?;
    Ok(DoPutUpdateResult::decode(last)
        .map_err(|e| e.to_string())?
        .record_count)
}

#[test]
fn flight_sql_ingest_refuses_forged_ipc_messages() {
    use arrow::ipc::CompressionType;
    use arrow::ipc::writer::IpcWriteOptions;
    use arrow_flight::encode::FlightDataEncoderBuilder;
    use futures::TryStreamExt;

    let server = Server::start("CREATE TABLE t (id INT NOT NULL, name VARCHAR(5), x REAL)");
    let names: Vec<String> = (0..100).map(|i| format!("n{}", i % 7)).collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", arrow::datatypes::DataType::Int32, false),
            Field::new("name", arrow::datatypes::DataType::Utf8, true),
            Field::new("x", arrow::datatypes::DataType::Float32, true),
        ])),
        vec![
            ids(&(0..100).collect::<Vec<_>>()),
            Arc::new(StringArray::from_iter_values(&names)),
            reals(100),
        ],
    )
    .unwrap();
    // the schema and the batch as Flight data, plain and with LZ4-compressed buffers
    let messages = |lz4: bool| -> Vec<FlightData> {
        let options = IpcWriteOptions::default()
            .try_with_compression(lz4.then_some(CompressionType::LZ4_FRAME))
            .unwrap();
        let encoded = FlightDataEncoderBuilder::new()
            .with_options(options)
            .build(futures::stream::iter([Ok(batch.clone())]));
        let data: Vec<FlightData> = server.rt.block_on(encoded.try_collect()).unwrap();
        assert_eq!(data.len(), 2, "a schema and a batch");
        data
    };
    for lz4 in [false, true] {
        assert_eq!(put_ingest(&server, messages(lz4)), Ok(100), "lz4 {lz4}");
    }
    let mut expected = 200;
    assert_eq!(server.count(), expected);

    // a compressed buffer that says it holds 2^40 bytes (arrow allocates that before
    // decompressing: the process would abort)
    let mut huge = messages(true);
    let body = huge[1].data_body.to_vec();
    let mut forged = body.clone();
    forged[..8].copy_from_slice(&(1i64 << 40).to_le_bytes());
    huge[1].data_body = forged.into();
    let e = put_ingest(&server, huge).unwrap_err();
    assert!(e.contains("say they hold over"), "{e}");
    // the body cut short: buffers outside it
    let mut cut = messages(false);
    cut[1].data_body = cut[1].data_body.slice(..cut[1].data_body.len() / 2);
    let e = put_ingest(&server, cut).unwrap_err();
    assert!(e.contains("outside its message body"), "{e}");
    assert_eq!(server.count(), expected);

    // seeded mutations of either message's header or body
    let mut next = below(0x2545_f491_4f6c_dd1d);
    let mut refused = 0;
    for case in 0..200 {
        let mut data = messages(case % 2 == 1);
        for _ in 0..1 + next(3) {
            let m = next(2);
            let bytes = if next(3) == 0 {
                &mut data[m].data_header
            } else {
                &mut data[m].data_body
            };
            let mut v = bytes.to_vec();
            if v.is_empty() {
                continue;
            }
            if next(4) == 0 {
                v.truncate(next(v.len()));
            } else {
                let at = next(v.len());
                v[at] ^= 1 << next(8);
            }
            *bytes = v.into();
        }
        match put_ingest(&server, data) {
            // a changed header may still be a valid message (fewer rows, another type of
            // message): what the server says it appended is what it appended
            Ok(rows) => expected += rows,
            Err(e) => {
                refused += 1;
                // a panic ends the call without a reply, or with h2's reset
                assert!(e != "no reply" && !e.contains("h2"), "case {case}: {e}");
            }
        }
        assert_eq!(server.count(), expected, "case {case}");
    }
    assert!(refused > 100, "{refused} of 200 mutated ingests refused");
    assert_eq!(put_ingest(&server, messages(true)), Ok(100));
}
