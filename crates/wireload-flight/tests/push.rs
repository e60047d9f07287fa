//! The push endpoint against hostile clients: forged frames (unsorted or duplicated
//! dictionaries, codes out of range, unused dictionary entries, wrong column counts and
//! types, lengths that do not match, broken IPC, NULL in NOT NULL columns, values too long,
//! frames out of order, a stream cut before its end frame) are refused with an error to the
//! client, and nothing of the push becomes visible.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float32Array, Int32Array, Int64Array, StringArray, UInt8Array};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, FlightDescriptor};
use futures::StreamExt;
use prost::Message;
use tokio::runtime::Runtime;
use wireload_flight::{FlightSettings, serve};
use wireload_load::LoadControl;
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
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let db = Arc::new(Database::new(DbConfig { threads: Some(2) }));
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
            limits: Limits::default(),
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
        let hello = Hello {
            table: "t".into(),
            mode,
            file: "forged".into(),
            dialect: (mode == Mode::Seq).then(|| wireload_push::protocol::WireDialect {
                delimiter: b',',
                quote: Some(b'"'),
                escape: Some(b'"'),
                header: false,
                null: Vec::new(),
            }),
        };
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
                app_metadata: to_json(&header).into(),
                data_body: body.into(),
                ..FlightData::default()
            });
        }
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
            let mut last = None;
            while let Some(r) = replies.next().await {
                let r = r.map_err(|s| s.message().to_string())?;
                last = Some(from_json::<Reply>(&r.app_metadata).map_err(|e| e.to_string())?);
            }
            last.ok_or_else(|| "no reply".to_string())
        })
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
    // a seq push whose bytes do not add up
    let err = server
        .push(
            Mode::Seq,
            vec![
                (
                    Frame::Raw {
                        offset: 0,
                        len: 10,
                        lz4: false,
                    },
                    b"1,a,1\n".to_vec(),
                ),
                end(0, 0),
            ],
        )
        .unwrap_err();
    assert!(err.contains("10 bytes"), "{err}");
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
}
