//! Arrow IPC and Parquet: random tables of every supported type round-trip exactly through
//! every compression on 1 and several threads; our files read with arrow-rs' and
//! parquet-rs' own readers and theirs with ours; truncated and damaged files are rejected
//! without a panic; failed and cancelled writes leave nothing behind.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef, TimeUnit};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_unload::UnloadError;
use wireload_unload::ipc::{IpcCompression, PIECE_ROWS, read_arrow_file, write_arrow_file};
use wireload_unload::parquet::{ParquetCompression, read_parquet_file, write_parquet_file};

const IPC: [IpcCompression; 3] = [
    IpcCompression::None,
    IpcCompression::Lz4Frame,
    IpcCompression::Zstd,
];
const PARQUET: [ParquetCompression; 4] = [
    ParquetCompression::None,
    ParquetCompression::Snappy,
    ParquetCompression::Lz4Raw,
    ParquetCompression::Zstd,
];

fn no_cancel() -> AtomicBool {
    AtomicBool::new(false)
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("b", DataType::Boolean, true),
        Field::new("i16", DataType::Int16, true),
        Field::new("i32", DataType::Int32, true),
        Field::new("i64", DataType::Int64, true),
        Field::new("f32", DataType::Float32, true),
        Field::new("f64", DataType::Float64, true),
        Field::new("dec", DataType::Decimal128(15, 2), true),
        Field::new("dec38", DataType::Decimal128(38, 10), true),
        Field::new("date", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new("s", DataType::Utf8, true),
        Field::new("ascii", DataType::Utf8, false),
    ]))
}

/// A value of `T`: an extreme now and then, NULL with probability `nulls`.
fn pick<T: Copy>(
    rng: &mut StdRng,
    nulls: f64,
    extremes: &[T],
    random: impl FnOnce(&mut StdRng) -> T,
) -> Option<T> {
    if rng.random_bool(nulls) {
        None
    } else if rng.random_bool(0.15) {
        Some(extremes[rng.random_range(0..extremes.len())])
    } else {
        Some(random(rng))
    }
}

fn random_string(rng: &mut StdRng) -> String {
    const FIXED: [&str; 9] = [
        "",
        "a",
        "héllo wörld",
        "日本語のテキスト",
        "emoji 🦀🚀🎉",
        "quote\"comma,|pipe",
        "\0nul\u{1}",
        "line\nbreak\r\n",
        "ünïcødé ∑∞ 𝄞",
    ];
    if rng.random_bool(0.5) {
        FIXED[rng.random_range(0..FIXED.len())].to_string()
    } else {
        let len = rng.random_range(0..60);
        (0..len)
            .map(|_| match rng.random_range(0..10) {
                0 => char::from_u32(rng.random_range(0x80..0xD7FF)).unwrap(),
                1 => char::from_u32(rng.random_range(0x1_0000..0x10_FFFF)).unwrap_or('x'),
                _ => rng.random_range(b' '..=b'~') as char,
            })
            .collect()
    }
}

/// `rows` random rows of [`schema`], ids starting at `first_id`.
fn random_batch(rng: &mut StdRng, rows: usize, first_id: i64) -> RecordBatch {
    let nulls = [0.0, 0.1, 0.5, 1.0][rng.random_range(0..4)];
    let dec15 = 10i128.pow(15) - 1;
    let dec38 = 10i128.pow(38) - 1;
    let f32s = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::MIN,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
    ];
    let f64s = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff8_0000_0000_1234),
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        f64::MIN,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
    ];
    let mut col = |f: &mut dyn FnMut(&mut StdRng) -> ArrayRef| f(rng);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            first_id..first_id + rows as i64,
        )),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &[true, false], |r| r.random()))
                    .collect::<BooleanArray>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &[i16::MIN, i16::MAX, 0, -1], |r| r.random()))
                    .collect::<Int16Array>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &[i32::MIN, i32::MAX, 0, -1], |r| r.random()))
                    .collect::<Int32Array>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &[i64::MIN, i64::MAX, 0, -1], |r| r.random()))
                    .collect::<Int64Array>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &f32s, |r| f32::from_bits(r.random())))
                    .collect::<Float32Array>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &f64s, |r| f64::from_bits(r.random())))
                    .collect::<Float64Array>(),
            )
        }),
        col(&mut |r| {
            let values = (0..rows).map(|_| {
                pick(r, nulls, &[-dec15, dec15, 0, 1, -1], |r| {
                    r.random_range(-dec15..=dec15)
                })
            });
            Arc::new(
                values
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            )
        }),
        col(&mut |r| {
            let values = (0..rows).map(|_| {
                pick(r, nulls, &[-dec38, dec38, 0, 1, -1], |r| {
                    r.random_range(-dec38..=dec38)
                })
            });
            Arc::new(
                values
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(38, 10)
                    .unwrap(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| {
                        pick(r, nulls, &[i32::MIN, i32::MAX, 0, -719_162], |r| {
                            r.random_range(-800_000..3_000_000)
                        })
                    })
                    .collect::<Date32Array>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| pick(r, nulls, &[i64::MIN, i64::MAX, 0, -1], |r| r.random()))
                    .collect::<TimestampMicrosecondArray>(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                (0..rows)
                    .map(|_| {
                        if r.random_bool(nulls) {
                            None
                        } else {
                            Some(random_string(r))
                        }
                    })
                    .collect::<StringArray>(),
            )
        }),
        col(&mut |r| {
            Arc::new(StringArray::from_iter_values((0..rows).map(|_| {
                let len = r.random_range(10..=44);
                (0..len)
                    .map(|_| r.random_range(b'a'..=b'z') as char)
                    .collect::<String>()
            })))
        }),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// A random table cut into batches of random sizes (some empty).
fn random_table(seed: u64, rows: usize, cuts: usize) -> Vec<RecordBatch> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sizes: Vec<usize> = (0..cuts).map(|_| rng.random_range(0..=rows)).collect();
    sizes.push(0);
    sizes.push(rows);
    sizes.sort_unstable();
    let mut batches = Vec::new();
    for w in sizes.windows(2) {
        batches.push(random_batch(&mut rng, w[1] - w[0], w[0] as i64));
    }
    // One batch as a slice of a larger one (offsets, shared buffers).
    if rows >= 4 {
        let big = random_batch(&mut rng, rows, rows as i64);
        batches.push(big.slice(rows / 4, rows / 2));
    }
    batches
}

/// Whether `got` holds exactly the rows of `want` (batch boundaries aside), floats compared
/// bit for bit; if not, what differs.
fn same(want: &[RecordBatch], got: &[RecordBatch]) -> Result<(), String> {
    let schema = schema();
    let want = concat_batches(&schema, want).unwrap();
    let got = concat_batches(&schema, got).map_err(|e| e.to_string())?;
    if want.num_rows() != got.num_rows() {
        return Err(format!("{} rows, want {}", got.num_rows(), want.num_rows()));
    }
    for (i, field) in schema.fields().iter().enumerate() {
        let (w, g) = (want.column(i), got.column(i));
        let equal = w.data_type() == g.data_type()
            && w.logical_nulls() == g.logical_nulls()
            && match field.data_type() {
                DataType::Float32 => {
                    let bits = |a: &ArrayRef| {
                        a.as_any()
                            .downcast_ref::<Float32Array>()
                            .unwrap()
                            .iter()
                            .map(|v| v.map(f32::to_bits))
                            .collect::<Vec<_>>()
                    };
                    bits(w) == bits(g)
                }
                DataType::Float64 => {
                    let bits = |a: &ArrayRef| {
                        a.as_any()
                            .downcast_ref::<Float64Array>()
                            .unwrap()
                            .iter()
                            .map(|v| v.map(f64::to_bits))
                            .collect::<Vec<_>>()
                    };
                    bits(w) == bits(g)
                }
                _ => w.to_data() == g.to_data(),
            };
        if !equal {
            return Err(format!("column {} differs", field.name()));
        }
    }
    Ok(())
}

/// Asserts that `got` holds exactly the rows of `want`.
fn assert_same(want: &[RecordBatch], got: &[RecordBatch], what: &str) {
    if let Err(e) = same(want, got) {
        panic!("{what}: {e}");
    }
}

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Writes and reads `batches` through every format and compression on the current pool.
fn round_trip_all(dir: &Path, batches: &[RecordBatch], what: &str) {
    let schema = schema();
    for c in IPC {
        let path = dir.join(format!("t-{c:?}.arrow"));
        let report = write_arrow_file(&path, &schema, batches, c, &no_cancel()).unwrap();
        assert_eq!(report.bytes, std::fs::metadata(&path).unwrap().len());
        let (got_schema, got, read) = read_arrow_file(&path).unwrap();
        assert_eq!(got_schema.fields(), schema.fields(), "{what} {c:?}");
        assert_eq!(read.rows, report.rows);
        assert_same(batches, &got, &format!("{what} ipc {c:?}"));
        // arrow-rs' own reader agrees.
        let reader =
            arrow_ipc::reader::FileReader::try_new(File::open(&path).unwrap(), None).unwrap();
        let theirs: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        assert_same(
            batches,
            &theirs,
            &format!("{what} ipc {c:?} via FileReader"),
        );
    }
    for c in PARQUET {
        let path = dir.join(format!("t-{c:?}.parquet"));
        let report = write_parquet_file(&path, &schema, batches, c, &no_cancel()).unwrap();
        assert_eq!(report.bytes, std::fs::metadata(&path).unwrap().len());
        let (got_schema, got, read) = read_parquet_file(&path).unwrap();
        assert_eq!(got_schema.fields(), schema.fields(), "{what} {c:?}");
        assert_eq!(read.rows, report.rows);
        assert_same(batches, &got, &format!("{what} parquet {c:?}"));
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
            File::open(&path).unwrap(),
            1000,
        )
        .unwrap();
        let theirs: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        assert_same(
            batches,
            &theirs,
            &format!("{what} parquet {c:?} via parquet-rs"),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_tables_round_trip(seed in any::<u64>(), rows in 0usize..1500, cuts in 0usize..6, threads in 1usize..4) {
        let dir = tempfile::tempdir().unwrap();
        let batches = random_table(seed, rows, cuts);
        on_threads(threads, || round_trip_all(dir.path(), &batches, &format!("seed {seed}, {threads} threads")));
    }
}

#[test]
fn empty_tables_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    // No batches at all, and only empty batches: the schema alone.
    round_trip_all(dir.path(), &[], "no batches");
    let empty = random_batch(&mut StdRng::seed_from_u64(1), 0, 0);
    round_trip_all(dir.path(), &[empty.clone(), empty], "empty batches");
    let (_, batches, report) = read_arrow_file(&dir.path().join("t-Lz4Frame.arrow")).unwrap();
    assert!(batches.is_empty());
    assert_eq!(report.rows, 0);
}

#[test]
fn large_batches_are_split_and_decoded_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 3 * PIECE_ROWS + 1000;
    let batch = random_batch(&mut StdRng::seed_from_u64(7), rows, 0);
    let batches = [batch];
    for threads in [1, 3] {
        on_threads(threads, || {
            let path = dir.path().join("big.arrow");
            write_arrow_file(
                &path,
                &schema(),
                &batches,
                IpcCompression::Lz4Frame,
                &no_cancel(),
            )
            .unwrap();
            let reader =
                arrow_ipc::reader::FileReader::try_new(File::open(&path).unwrap(), None).unwrap();
            assert_eq!(reader.num_batches(), 4, "cut into 4 nearly equal pieces");
            let (_, got, _) = read_arrow_file(&path).unwrap();
            let sizes: Vec<usize> = got.iter().map(|b| b.num_rows()).collect();
            assert!(
                sizes
                    .iter()
                    .all(|&n| n.abs_diff(sizes[0]) <= 1 && n <= PIECE_ROWS),
                "{sizes:?}"
            );
            assert_same(&batches, &got, "big ipc");

            let path = dir.path().join("big.parquet");
            write_parquet_file(
                &path,
                &schema(),
                &batches,
                ParquetCompression::default(),
                &no_cancel(),
            )
            .unwrap();
            let (_, got, _) = read_parquet_file(&path).unwrap();
            assert_same(&batches, &got, "big parquet");
        });
    }
}

/// Files written by arrow-rs' `FileWriter` and parquet-rs' `ArrowWriter` (serial), with a
/// dictionary column too, read with our readers.
#[test]
fn reads_files_written_by_arrow_rs() {
    let dir = tempfile::tempdir().unwrap();
    let batches = random_table(42, 3000, 3);
    let dict: DictionaryArray<Int32Type> = ["x", "y", "x", "z"].into_iter().collect();
    let dict_schema = Arc::new(Schema::new(vec![Field::new(
        "d",
        dict.data_type().clone(),
        false,
    )]));
    let dict_batch = RecordBatch::try_new(dict_schema.clone(), vec![Arc::new(dict)]).unwrap();
    for compression in [
        None,
        Some(arrow_ipc::CompressionType::LZ4_FRAME),
        Some(arrow_ipc::CompressionType::ZSTD),
    ] {
        let options = arrow_ipc::writer::IpcWriteOptions::default()
            .try_with_compression(compression)
            .unwrap();
        let path = dir.path().join("theirs.arrow");
        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(
            File::create(&path).unwrap(),
            &schema(),
            options.clone(),
        )
        .unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        let (_, got, _) = read_arrow_file(&path).unwrap();
        assert_same(
            &batches,
            &got,
            &format!("arrow-rs FileWriter {compression:?}"),
        );

        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(
            File::create(&path).unwrap(),
            &dict_schema,
            options,
        )
        .unwrap();
        w.write(&dict_batch).unwrap();
        w.finish().unwrap();
        let (s, got, _) = read_arrow_file(&path).unwrap();
        assert_eq!(s, dict_schema);
        assert_eq!(got, std::slice::from_ref(&dict_batch));
    }
    let path = dir.path().join("theirs.parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(&path).unwrap(), schema(), None).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    let (_, got, _) = read_parquet_file(&path).unwrap();
    assert_same(&batches, &got, "parquet-rs ArrowWriter");
}

/// What reading a damaged file gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    /// Rejected with `Corrupt`.
    Rejected,
    /// Rejected with `Corrupt` after arrow or parquet panicked (caught).
    RejectedAfterPanic,
    /// Read, and the data are the original data (the damage was in padding or metadata
    /// that does not matter).
    Same,
    /// Read as valid Arrow data that differ from the original (no checksums).
    Different,
}

/// Reads a damaged file: it must give valid data or an error naming the file, never a panic.
fn read_damaged(path: &Path, parquet: bool, want: &[RecordBatch]) -> Outcome {
    let result = std::panic::catch_unwind(|| {
        if parquet {
            read_parquet_file(path)
        } else {
            read_arrow_file(path)
        }
    })
    .unwrap_or_else(|_| panic!("reading damaged {} panicked", path.display()));
    match result {
        Ok((_, batches, _)) => {
            for b in &batches {
                b.columns()
                    .iter()
                    .for_each(|c| c.to_data().validate_full().unwrap());
            }
            if same(want, &batches).is_ok() {
                Outcome::Same
            } else {
                Outcome::Different
            }
        }
        Err(UnloadError::Corrupt { path: p, message }) => {
            assert_eq!(p, path);
            assert!(!message.is_empty());
            if message.contains("decoder failed") {
                Outcome::RejectedAfterPanic
            } else {
                Outcome::Rejected
            }
        }
        Err(e) => panic!("{}: expected Corrupt, got {e:?}", path.display()),
    }
}

fn damage_tests(parquet: bool, name: &str, write: impl Fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    write(&path);
    let good = std::fs::read(&path).unwrap();
    let (_, want, _) = if parquet {
        read_parquet_file(&path)
    } else {
        read_arrow_file(&path)
    }
    .unwrap();
    // A new file for every copy: rewriting one file in place makes ext4 flush it each time.
    let mut copies = 0;
    let mut check = |bytes: &[u8]| {
        copies += 1;
        let damaged = dir.path().join(format!("damaged-{copies}-{name}"));
        std::fs::write(&damaged, bytes).unwrap();
        let rejected = read_damaged(&damaged, parquet, &want);
        std::fs::remove_file(&damaged).unwrap();
        rejected
    };
    // Every truncation is detected (the trailer is gone or points outside the file).
    for len in 0..good.len() {
        let outcome = check(&good[..len]);
        assert!(
            matches!(outcome, Outcome::Rejected | Outcome::RejectedAfterPanic),
            "{name} truncated to {len} bytes: {outcome:?}"
        );
    }
    // Flipped bytes: either an error or valid data.
    let mut rng = StdRng::seed_from_u64(99);
    let mut outcomes = std::collections::BTreeMap::new();
    let tries = 1500;
    for _ in 0..tries {
        let mut bytes = good.clone();
        let at = rng.random_range(0..bytes.len());
        bytes[at] ^= rng.random_range(1..=255u8);
        *outcomes.entry(format!("{:?}", check(&bytes))).or_insert(0) += 1;
    }
    eprintln!(
        "{name} ({} bytes), {tries} single-byte flips: {outcomes:?}",
        good.len()
    );
}

fn small_table() -> Vec<RecordBatch> {
    random_table(5, 120, 2)
}

#[test]
fn damaged_arrow_files_are_rejected_without_panic() {
    for c in IPC {
        damage_tests(false, &format!("{c:?}.arrow"), |p| {
            write_arrow_file(p, &schema(), &small_table(), c, &no_cancel()).unwrap();
        });
    }
}

#[test]
fn damaged_parquet_files_are_rejected_without_panic() {
    for c in [
        ParquetCompression::None,
        ParquetCompression::Snappy,
        ParquetCompression::Zstd,
    ] {
        damage_tests(true, &format!("{c:?}.parquet"), |p| {
            write_parquet_file(p, &schema(), &small_table(), c, &no_cancel()).unwrap();
        });
    }
}

#[test]
fn not_a_file_of_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("x.arrow");
    let parquet = dir.path().join("x.parquet");
    write_arrow_file(
        &arrow,
        &schema(),
        &small_table(),
        IpcCompression::default(),
        &no_cancel(),
    )
    .unwrap();
    write_parquet_file(
        &parquet,
        &schema(),
        &small_table(),
        ParquetCompression::default(),
        &no_cancel(),
    )
    .unwrap();
    let e = read_arrow_file(&parquet).unwrap_err();
    assert!(
        matches!(&e, UnloadError::Corrupt { message, .. } if message.contains("not an Arrow IPC file")),
        "{e}"
    );
    assert!(e.to_string().contains("x.parquet"), "{e}");
    assert!(matches!(
        read_parquet_file(&arrow),
        Err(UnloadError::Corrupt { .. })
    ));
    let missing = dir.path().join("missing.arrow");
    assert!(matches!(
        read_arrow_file(&missing),
        Err(UnloadError::Io { .. })
    ));
    assert!(matches!(
        read_parquet_file(&missing),
        Err(UnloadError::Io { .. })
    ));
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn failed_and_cancelled_writes_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("t.arrow");
    let parquet = dir.path().join("t.parquet");
    let batches = small_table();
    let cancelled = AtomicBool::new(true);
    assert!(matches!(
        write_arrow_file(
            &arrow,
            &schema(),
            &batches,
            IpcCompression::default(),
            &cancelled
        ),
        Err(UnloadError::Cancelled)
    ));
    assert!(matches!(
        write_parquet_file(
            &parquet,
            &schema(),
            &batches,
            ParquetCompression::default(),
            &cancelled
        ),
        Err(UnloadError::Cancelled)
    ));
    assert!(
        files_in(dir.path()).is_empty(),
        "{:?}",
        files_in(dir.path())
    );

    // A batch that does not match the schema.
    let other = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
    let wrong = RecordBatch::try_new(other, vec![Arc::new(Int32Array::from(vec![1]))]).unwrap();
    let mut mixed = batches.clone();
    mixed.push(wrong);
    assert!(
        write_arrow_file(
            &arrow,
            &schema(),
            &mixed,
            IpcCompression::default(),
            &no_cancel()
        )
        .is_err()
    );
    assert!(
        write_parquet_file(
            &parquet,
            &schema(),
            &mixed,
            ParquetCompression::default(),
            &no_cancel()
        )
        .is_err()
    );
    assert!(
        files_in(dir.path()).is_empty(),
        "{:?}",
        files_in(dir.path())
    );

    // A failed or cancelled write over an existing file leaves the old file.
    std::fs::write(&arrow, b"old").unwrap();
    std::fs::write(&parquet, b"old").unwrap();
    assert!(
        write_arrow_file(
            &arrow,
            &schema(),
            &batches,
            IpcCompression::default(),
            &cancelled
        )
        .is_err()
    );
    assert!(
        write_parquet_file(
            &parquet,
            &schema(),
            &mixed,
            ParquetCompression::default(),
            &no_cancel()
        )
        .is_err()
    );
    assert_eq!(std::fs::read(&arrow).unwrap(), b"old");
    assert_eq!(std::fs::read(&parquet).unwrap(), b"old");
    assert_eq!(files_in(dir.path()), ["t.arrow", "t.parquet"]);

    // A successful write replaces it.
    write_arrow_file(
        &arrow,
        &schema(),
        &batches,
        IpcCompression::default(),
        &no_cancel(),
    )
    .unwrap();
    assert_same(&batches, &read_arrow_file(&arrow).unwrap().1, "replaced");

    // A directory that does not exist.
    let nowhere = dir.path().join("no/such/dir/t.arrow");
    assert!(matches!(
        write_arrow_file(
            &nowhere,
            &schema(),
            &batches,
            IpcCompression::default(),
            &no_cancel()
        ),
        Err(UnloadError::Io { .. })
    ));
}

#[test]
fn cancel_during_a_write_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let batch = random_batch(&mut StdRng::seed_from_u64(3), 8 * PIECE_ROWS, 0);
    let cancel = AtomicBool::new(false);
    let path = dir.path().join("t.arrow");
    let result = on_threads(2, || {
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            write_arrow_file(
                &path,
                &schema(),
                std::slice::from_ref(&batch),
                IpcCompression::Zstd,
                &cancel,
            )
        })
    });
    // Either it finished before the flag was seen, or it stopped and left nothing.
    match result {
        Ok(_) => assert_eq!(files_in(dir.path()), ["t.arrow"]),
        Err(UnloadError::Cancelled) => assert!(files_in(dir.path()).is_empty()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn dictionary_columns_are_refused_by_the_ipc_writer() {
    let dir = tempfile::tempdir().unwrap();
    let dict: DictionaryArray<Int32Type> = ["x", "y"].into_iter().collect();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "d",
        dict.data_type().clone(),
        false,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(dict)]).unwrap();
    let path = dir.path().join("d.arrow");
    assert!(matches!(
        write_arrow_file(
            &path,
            &schema,
            std::slice::from_ref(&batch),
            IpcCompression::None,
            &no_cancel()
        ),
        Err(UnloadError::Options(_))
    ));
    assert!(files_in(dir.path()).is_empty());
    // Parquet stores the values (and reads back the dictionary type from the Arrow schema).
    let path = dir.path().join("d.parquet");
    write_parquet_file(
        &path,
        &schema,
        std::slice::from_ref(&batch),
        ParquetCompression::Snappy,
        &no_cancel(),
    )
    .unwrap();
    let (_, got, _) = read_parquet_file(&path).unwrap();
    let got = concat_batches(&got[0].schema(), &got).unwrap();
    assert_eq!(
        arrow::compute::cast(got.column(0), &DataType::Utf8)
            .unwrap()
            .to_data(),
        arrow::compute::cast(batch.column(0), &DataType::Utf8)
            .unwrap()
            .to_data()
    );
}

/// TPC-H lineitem (real generated data, about 1M rows at scale factor 0.17) as one batch,
/// like a wireload table chunk.
fn lineitem(sf: f64) -> RecordBatch {
    let rows: Vec<_> = tpchgen::generators::LineItemGenerator::new(sf, 1, 1)
        .iter()
        .collect();
    let i64s = |f: fn(&tpchgen::generators::LineItem) -> i64| {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(f))) as ArrayRef
    };
    let dec = |f: fn(&tpchgen::generators::LineItem) -> i64| {
        Arc::new(
            Decimal128Array::from_iter_values(rows.iter().map(|r| f(r) as i128))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ) as ArrayRef
    };
    let date = |f: fn(&tpchgen::generators::LineItem) -> i32| {
        Arc::new(Date32Array::from_iter_values(rows.iter().map(f))) as ArrayRef
    };
    let text = |f: for<'a> fn(&tpchgen::generators::LineItem<'a>) -> &'a str| {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f))) as ArrayRef
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("l_orderkey", DataType::Int64, false),
        Field::new("l_partkey", DataType::Int64, false),
        Field::new("l_suppkey", DataType::Int64, false),
        Field::new("l_linenumber", DataType::Int32, false),
        Field::new("l_quantity", DataType::Decimal128(15, 2), false),
        Field::new("l_extendedprice", DataType::Decimal128(15, 2), false),
        Field::new("l_discount", DataType::Decimal128(15, 2), false),
        Field::new("l_tax", DataType::Decimal128(15, 2), false),
        Field::new("l_returnflag", DataType::Utf8, false),
        Field::new("l_linestatus", DataType::Utf8, false),
        Field::new("l_shipdate", DataType::Date32, false),
        Field::new("l_commitdate", DataType::Date32, false),
        Field::new("l_receiptdate", DataType::Date32, false),
        Field::new("l_shipinstruct", DataType::Utf8, false),
        Field::new("l_shipmode", DataType::Utf8, false),
        Field::new("l_comment", DataType::Utf8, false),
    ]));
    let columns = vec![
        i64s(|r| r.l_orderkey),
        i64s(|r| r.l_partkey),
        i64s(|r| r.l_suppkey),
        Arc::new(Int32Array::from_iter_values(
            rows.iter().map(|r| r.l_linenumber),
        )) as ArrayRef,
        dec(|r| r.l_quantity * 100),
        dec(|r| r.l_extendedprice.0),
        dec(|r| r.l_discount.0),
        dec(|r| r.l_tax.0),
        text(|r| r.l_returnflag),
        text(|r| r.l_linestatus),
        date(|r| r.l_shipdate.to_unix_epoch()),
        date(|r| r.l_commitdate.to_unix_epoch()),
        date(|r| r.l_receiptdate.to_unix_epoch()),
        text(|r| r.l_shipinstruct),
        text(|r| r.l_shipmode),
        text(|r| r.l_comment),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

/// Write and read throughput on lineitem (run it alone, as it reads the process's CPU time:
/// `cargo test --release -p wireload-unload --test it -- --ignored --nocapture
/// binary_lineitem_throughput`;
/// `WIRELOAD_BENCH_DIR` picks the directory, default a temporary one; `WIRELOAD_BENCH_SF`
/// the scale factor, default 0.17). MB/s are of Arrow data (the batch's buffers), so
/// formats compare on the same work; sizes are relative to the Arrow data (the size of an uncompressed IPC file).
#[test]
#[ignore]
fn binary_lineitem_throughput() {
    let sf = std::env::var("WIRELOAD_BENCH_SF").map_or(0.17, |s| s.parse().unwrap());
    let batch = lineitem(sf);
    let arrow_bytes: usize = batch
        .columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap())
        .sum();
    let schema = batch.schema();
    // `WIRELOAD_BENCH_SLICE=n` hands the writers n-row slices (to try IPC pieces smaller
    // than PIECE_ROWS).
    let slice =
        std::env::var("WIRELOAD_BENCH_SLICE").map_or(batch.num_rows(), |s| s.parse().unwrap());
    let batches: Vec<RecordBatch> = (0..batch.num_rows())
        .step_by(slice.max(1))
        .map(|o| batch.slice(o, slice.min(batch.num_rows() - o)))
        .collect();
    let only = std::env::var("WIRELOAD_BENCH_ONLY").unwrap_or_default();
    let dir = tempfile::tempdir_in(
        std::env::var("WIRELOAD_BENCH_DIR")
            .unwrap_or_else(|_| std::env::temp_dir().display().to_string()),
    )
    .unwrap();
    eprintln!(
        "lineitem sf {sf}: {} rows, {:.1} MB of Arrow data",
        batches.iter().map(|b| b.num_rows()).sum::<usize>(),
        arrow_bytes as f64 / 1e6
    );
    let runs_per_point: usize =
        std::env::var("WIRELOAD_BENCH_RUNS").map_or(5, |s| s.parse().unwrap());
    // Best of several runs, in wall time and in process CPU time (user + system): the
    // machine is shared, and the best run is the one least disturbed; CPU time shows the
    // work done whatever else runs.
    let measure = |f: &dyn Fn()| -> (f64, f64) {
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..runs_per_point {
            let (t, c) = (std::time::Instant::now(), cpu_seconds());
            f();
            best.0 = best.0.min(t.elapsed().as_secs_f64());
            best.1 = best.1.min(cpu_seconds() - c);
        }
        let mb = arrow_bytes as f64 / 1e6;
        (mb / best.0, mb / best.1)
    };
    type Run<'a> = (
        &'a str,
        Box<dyn Fn(&Path) -> u64 + Sync + 'a>,
        Box<dyn Fn(&Path) -> usize + Sync + 'a>,
    );
    let runs: Vec<Run> = [
        IpcCompression::None,
        IpcCompression::Lz4Frame,
        IpcCompression::Zstd,
    ]
    .into_iter()
    .map(|c| -> Run {
        let schema = schema.clone();
        let batches = &batches;
        (
            ["ipc none", "ipc lz4", "ipc zstd(1)"][c as usize],
            Box::new(move |p: &Path| {
                write_arrow_file(p, &schema, batches, c, &no_cancel())
                    .unwrap()
                    .bytes
            }),
            Box::new(|p: &Path| read_arrow_file(p).unwrap().1.len()),
        )
    })
    .chain(
        [
            ParquetCompression::None,
            ParquetCompression::Snappy,
            ParquetCompression::Lz4Raw,
            ParquetCompression::Zstd,
        ]
        .into_iter()
        .map(|c| -> Run {
            let schema = schema.clone();
            let batches = &batches;
            (
                [
                    "parquet none",
                    "parquet snappy",
                    "parquet lz4raw",
                    "parquet zstd(1)",
                ][c as usize],
                Box::new(move |p: &Path| {
                    write_parquet_file(p, &schema, batches, c, &no_cancel())
                        .unwrap()
                        .bytes
                }),
                Box::new(|p: &Path| read_parquet_file(p).unwrap().1.len()),
            )
        }),
    )
    .collect();
    for (name, write, read) in runs.iter().filter(|r| r.0.contains(only.as_str())) {
        let path = dir.path().join("bench.out");
        let mut line = format!("{name:>16}:");
        let mut size = 0;
        for threads in [1, 2] {
            let (w, r, written) = on_threads(threads, || {
                let size = std::sync::atomic::AtomicU64::new(0);
                let w = measure(&|| size.store(write(&path), std::sync::atomic::Ordering::Relaxed));
                let r = measure(&|| assert!(read(&path) > 0));
                (w, r, size.into_inner())
            });
            size = written;
            line += &format!(
                "  {threads}T write {:5.0} MB/s ({:4.0} per CPU s) read {:5.0} MB/s ({:4.0} per CPU s)",
                w.0, w.1, r.0, r.1
            );
        }
        line += &format!(
            "  size {:.1} MB = {:.2}x of the Arrow data",
            size as f64 / 1e6,
            size as f64 / arrow_bytes as f64
        );
        eprintln!("{line}");
    }
}

/// The directory for the manual compatibility check with pyarrow, Polars and DuckDB
/// (`WIRELOAD_COMPAT_DIR`), if set.
fn compat_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("WIRELOAD_COMPAT_DIR").map(Into::into)
}

/// The table of the compatibility check: every type, NULLs, extremes, NaN payloads.
fn compat_table() -> Vec<RecordBatch> {
    random_table(2024, 5000, 3)
}

/// Compatibility, step 1 (manual; CI has no Python): writes our files to
/// `$WIRELOAD_COMPAT_DIR/ours/`, with `reference.arrow` from arrow-rs' own `FileWriter`.
/// A script then reads every file there with pyarrow, Polars and DuckDB, compares each
/// with the reference, and writes the same table with each of them to
/// `$WIRELOAD_COMPAT_DIR/foreign/` for step 2.
#[test]
#[ignore]
fn compat_write() {
    let Some(dir) = compat_dir() else { return };
    let ours = dir.join("ours");
    std::fs::create_dir_all(&ours).unwrap();
    let batches = compat_table();
    for c in IPC {
        write_arrow_file(
            &ours.join(format!("{c:?}.arrow")),
            &schema(),
            &batches,
            c,
            &no_cancel(),
        )
        .unwrap();
    }
    for c in PARQUET {
        write_parquet_file(
            &ours.join(format!("{c:?}.parquet")),
            &schema(),
            &batches,
            c,
            &no_cancel(),
        )
        .unwrap();
    }
    // No rows: the schema alone.
    write_arrow_file(
        &ours.join("empty.arrow"),
        &schema(),
        &[],
        IpcCompression::default(),
        &no_cancel(),
    )
    .unwrap();
    write_parquet_file(
        &ours.join("empty.parquet"),
        &schema(),
        &[],
        ParquetCompression::default(),
        &no_cancel(),
    )
    .unwrap();
    // The reference: arrow-rs' serial FileWriter, uncompressed.
    let mut w = arrow_ipc::writer::FileWriter::try_new(
        File::create(ours.join("reference.arrow")).unwrap(),
        &schema(),
    )
    .unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

/// Compatibility, step 2: reads every file in `$WIRELOAD_COMPAT_DIR/foreign/` with our
/// readers and compares it with the table of step 1 (columns cast to our types first, as
/// other writers may choose, e.g., large strings).
#[test]
#[ignore]
fn compat_read() {
    let Some(dir) = compat_dir() else { return };
    let want = compat_table();
    let mut names: Vec<_> = std::fs::read_dir(dir.join("foreign"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let parquet = path.extension().is_some_and(|e| e == "parquet");
        let result = if parquet {
            read_parquet_file(&path)
        } else {
            read_arrow_file(&path)
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match result {
            Err(e) => eprintln!("{name}: ERROR {e}"),
            Ok((schema_read, batches, report)) => {
                let types: Vec<String> = schema_read
                    .fields()
                    .iter()
                    .map(|f| f.data_type().to_string())
                    .collect();
                let cast: Vec<RecordBatch> = batches
                    .iter()
                    .map(|b| {
                        let columns = b
                            .columns()
                            .iter()
                            .zip(schema().fields())
                            .map(|(c, f)| arrow::compute::cast(c, f.data_type()).unwrap())
                            .collect();
                        RecordBatch::try_new(schema(), columns).unwrap()
                    })
                    .collect();
                let verdict = match same(&want, &cast) {
                    Ok(()) => "same data".to_string(),
                    Err(e) => format!("DIFFERENT: {e}"),
                };
                eprintln!(
                    "{name}: {} rows in {} batches, {verdict}; types {types:?}",
                    report.rows,
                    batches.len()
                );
            }
        }
    }
}

/// CPU time (user + system) of this process so far, in seconds (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime and stime are the
    // 12th and 13th, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).zip(fields.get(12)).map_or(0.0, |(u, s)| {
        u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0)
    });
    ticks / 100.0
}

/// Columns that compress as well as data can (all zeros, all equal strings, all NULL) are
/// not mistaken for damage by the reader's bound on declared uncompressed lengths.
#[test]
fn extremely_compressible_columns_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 3 * PIECE_ROWS;
    let schema = Arc::new(Schema::new(vec![
        Field::new("zero", DataType::Int64, false),
        Field::new("dec", DataType::Decimal128(38, 0), false),
        Field::new("s", DataType::Utf8, false),
        Field::new("null", DataType::Int32, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![0; rows])),
            Arc::new(
                Decimal128Array::from(vec![0; rows])
                    .with_precision_and_scale(38, 0)
                    .unwrap(),
            ),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                "a", rows,
            ))),
            Arc::new(Int32Array::from(vec![None; rows])),
        ],
    )
    .unwrap();
    let batches = std::slice::from_ref(&batch);
    for c in IPC {
        let path = dir.path().join(format!("{c:?}.arrow"));
        write_arrow_file(&path, &schema, batches, c, &no_cancel()).unwrap();
        let (_, got, _) = read_arrow_file(&path).unwrap();
        assert_eq!(concat_batches(&schema, &got).unwrap(), batch, "{c:?}");
    }
    for c in PARQUET {
        let path = dir.path().join(format!("{c:?}.parquet"));
        write_parquet_file(&path, &schema, batches, c, &no_cancel()).unwrap();
        let (_, got, _) = read_parquet_file(&path).unwrap();
        assert_eq!(concat_batches(&schema, &got).unwrap(), batch, "{c:?}");
    }
}
