//! Compressed inputs (gzip with one or more members, zstd with one or more frames), found by
//! their magic bytes, load exactly the rows of the plain file, whatever the threads, chunk
//! and block sizes; a truncated or corrupt one fails naming the file and the problem and
//! leaves the table as it was; progress counts compressed bytes up to the file's size.

use crate::common;

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::{
    Dialect, LoadControl, LoadOptions, ScanMode, Source, header_names, load_files, load_into,
};
use wireload_storage::{Partitioning, Table};

/// A header and `id INT, s TEXT, n INT` rows, some with quoted newlines and delimiters.
fn csv(seed: u64, rows: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = b"id,s,n\n".to_vec();
    for i in 0..rows {
        out.extend_from_slice(i.to_string().as_bytes());
        out.push(b',');
        match rng.random_range(0..4) {
            0 => out.extend_from_slice(b"\"multi\nline, \"\"quoted\"\"\""),
            1 => {}
            _ => out.extend_from_slice(format!("w{}", rng.random_range(0..1000)).as_bytes()),
        }
        out.push(b',');
        out.extend_from_slice(rng.random_range(-50..50).to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `data` compressed in pieces cut at `cuts`, the pieces concatenated: gzip members or
/// zstd frames.
fn pieces(data: &[u8], cuts: &[usize], compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([&data.len()]) {
        out.extend(compress(&data[from..cut]));
        from = cut;
    }
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

fn table() -> Arc<Table> {
    common::table("id INT NOT NULL, s TEXT, n INT", Partitioning::Single)
}

fn opts(threads: usize, chunk: usize) -> LoadOptions {
    LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        mode: ScanMode::Safe,
        chunk_size: Some(chunk),
        threads: Some(threads),
        ..LoadOptions::default()
    }
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

/// The rows of a load of `source` into a new table, and the load's CSV bytes.
fn load(source: &Source, opts: &LoadOptions) -> Result<(common::Rows, u64), String> {
    let t = table();
    let report = load_into(&t, source, opts, &LoadControl::default()).map_err(|e| e.to_string())?;
    Ok((common::rows(&t), report.bytes))
}

#[test]
fn compressed_files_load_the_rows_of_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = csv(1, 3000);
    let (a, b) = (data.len() / 3, data.len() * 2 / 3);
    let plain = write(dir.path(), "plain.csv", &data);
    // names that do not say the format: the first bytes do
    let files = [
        write(dir.path(), "one.gz", &gzip(&data)),
        write(dir.path(), "members.csv", &pieces(&data, &[a, b], gzip)),
        write(dir.path(), "one.zst", &zstd(&data)),
        write(dir.path(), "frames.dat", &pieces(&data, &[a, b], zstd)),
    ];
    for threads in [1, 3] {
        for chunk in [7, 1000, 1 << 20] {
            let o = opts(threads, chunk);
            let want = load(&Source::File(plain.clone()), &o).unwrap();
            assert_eq!(want.0.len(), 3000);
            assert_eq!(want.1, data.len() as u64);
            for f in &files {
                let got = load(&Source::File(f.clone()), &o).unwrap();
                assert_eq!(
                    got,
                    want,
                    "{} at {threads} threads, chunk {chunk}",
                    f.display()
                );
            }
        }
    }
}

#[test]
fn compressed_streams_load_the_rows_of_the_plain_bytes() {
    let data = csv(2, 2000);
    let cut = data.len() / 2;
    let inputs = [
        ("gzip", gzip(&data)),
        ("gzip members", pieces(&data, &[cut], gzip)),
        ("zstd frames", pieces(&data, &[cut, cut + 5], zstd)),
        ("plain", data.clone()),
    ];
    for threads in [1, 3] {
        let o = opts(threads, 100);
        let want = load(
            &Source::Bytes {
                name: "stdin".into(),
                data: Arc::from(data.clone()),
            },
            &o,
        )
        .unwrap();
        for (what, input) in &inputs {
            for block in [1, 13, 4096] {
                let source =
                    Source::decompressing_in_blocks("stdin", Cursor::new(input.clone()), block);
                let got = load(&source, &o).unwrap();
                assert_eq!(got, want, "{what}, {threads} threads, block {block}");
            }
        }
    }
}

#[test]
fn a_truncated_or_corrupt_file_fails_naming_it_and_leaves_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let data = csv(3, 20_000);
    let gz = gzip(&data);
    let z = zstd(&data);
    let mut corrupt = gz.clone();
    let at = corrupt.len() / 2;
    corrupt[at] ^= 0x55;
    let cases = [
        (
            write(dir.path(), "half.csv.gz", &gz[..gz.len() / 2]),
            "gzip stream is truncated",
        ),
        (
            write(dir.path(), "short.csv.gz", &gz[..gz.len() - 4]),
            "gzip stream is truncated",
        ),
        (
            write(dir.path(), "half.csv.zst", &z[..z.len() / 2]),
            "zstd stream is truncated",
        ),
        (
            write(dir.path(), "corrupt.csv.gz", &corrupt),
            "gzip stream is corrupt",
        ),
    ];
    let t = table();
    let o = opts(3, 4096);
    let first = csv(4, 10);
    common::load(&t, &first, &o).unwrap();
    let before = common::rows(&t);
    assert_eq!(before.len(), 10);
    for (path, problem) in cases {
        let ctl = LoadControl::default();
        let err = load_into(&t, &Source::File(path.clone()), &o, &ctl)
            .unwrap_err()
            .to_string();
        let name = path.display().to_string();
        assert!(
            err.starts_with(&format!("cannot read {name}: {problem}")),
            "{err}"
        );
        assert_eq!(common::rows(&t), before, "{name}");
    }
}

#[test]
fn progress_of_a_compressed_file_is_its_compressed_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let data = csv(5, 5000);
    let cut = data.len() / 2;
    for (name, bytes) in [
        ("p.csv.gz", pieces(&data, &[cut], gzip)),
        ("p.csv.zst", pieces(&data, &[cut], zstd)),
    ] {
        let path = write(dir.path(), name, &bytes);
        let ctl = LoadControl::default();
        let t = table();
        let report = load_into(&t, &Source::File(path), &opts(3, 1000), &ctl).unwrap();
        assert_eq!(report.bytes, data.len() as u64, "{name}");
        assert_eq!(report.rows, 5000, "{name}");
        assert_eq!(ctl.bytes_total.load(Relaxed), bytes.len() as u64, "{name}");
        assert_eq!(ctl.bytes_done.load(Relaxed), bytes.len() as u64, "{name}");
    }
}

#[test]
fn header_names_of_a_compressed_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "h.gz", &gzip(&csv(6, 100)));
    let dialect = Dialect {
        header: true,
        ..Dialect::default()
    };
    let names = header_names(&Source::File(path), &dialect).unwrap();
    assert_eq!(names, ["id", "s", "n"]);
}

#[test]
fn a_list_with_one_compressed_file_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = csv(7, 300);
    let path = write(dir.path(), "l.zst", &zstd(&data));
    let t = table();
    let ctl = LoadControl::default();
    let report = load_files(&t, &[Source::File(path)], &opts(2, 64), &ctl).unwrap();
    assert_eq!((report.rows, report.bytes), (300, data.len() as u64));
    assert_eq!(
        common::rows(&t),
        load(
            &Source::Bytes {
                name: "x".into(),
                data: Arc::from(data)
            },
            &opts(1, 64)
        )
        .unwrap()
        .0
    );
}

/// `data` compressed in pieces of about `piece` bytes (cut inside records), the pieces
/// concatenated, and where each compressed piece starts.
fn every(data: &[u8], piece: usize, compress: impl Fn(&[u8]) -> Vec<u8>) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    for p in data.chunks(piece) {
        starts.push(out.len());
        out.extend(compress(p));
    }
    (out, starts)
}

#[test]
fn multi_member_and_multi_frame_files_of_some_megabytes_load_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let data = csv(11, 300_000);
    assert!(data.len() > 4 << 20, "{}", data.len());
    let plain = write(dir.path(), "big.csv", &data);
    let (gz, members) = every(&data, 1 << 20, gzip);
    let (z, _) = every(&data, 1 << 20, zstd);
    // pzstd's layout: a skippable frame (holding the frame's size) before each frame
    let (pz, _) = every(&data, 1 << 20, |p| {
        let frame = zstd(p);
        let mut out = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0];
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend(frame);
        out
    });
    let mut bgzf_like = Vec::new();
    for p in data.chunks(60_000) {
        bgzf_like.extend(bgzf(p));
    }
    let files = [
        write(dir.path(), "big.csv.gz", &gz),
        write(dir.path(), "big.csv.zst", &z),
        write(dir.path(), "big.csv.pzst", &pz),
        write(dir.path(), "big.bgz", &bgzf_like),
    ];
    for threads in [1, 4] {
        let o = opts(threads, 1 << 16);
        let want = load(&Source::File(plain.clone()), &o).unwrap();
        assert_eq!(want.0.len(), 300_000);
        for f in &files {
            let ctl = LoadControl::default();
            let t = table();
            let report = load_into(&t, &Source::File(f.clone()), &o, &ctl).unwrap();
            let got = (common::rows(&t), report.bytes);
            assert!(got == want, "{} at {threads} threads", f.display());
            let size = std::fs::metadata(f).unwrap().len();
            assert_eq!(ctl.bytes_done.load(Relaxed), size, "{}", f.display());
        }
    }
    // the CRC of a member in the middle: the load fails and publishes nothing
    let mut corrupt = gz.clone();
    let middle = members.len() / 2;
    corrupt[members[middle + 1] - 8] ^= 0x40;
    let path = write(dir.path(), "corrupt.csv.gz", &corrupt);
    fails_atomically(&path, "gzip stream is corrupt");
    let list = load_files(
        &table(),
        &[Source::File(path)],
        &opts(4, 1 << 16),
        &LoadControl::default(),
    );
    assert!(list.is_err());
    // pzstd's layout with checksums, the checksum of a frame in the middle wrong: the
    // frames before it are decoded (and handed over whole), then the load fails as the
    // sequential decoder does and publishes nothing
    let mut frames = Vec::new();
    let mut ends = Vec::new();
    for p in data.chunks(1 << 20) {
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.include_checksum(true).unwrap();
        e.write_all(p).unwrap();
        let frame = e.finish().unwrap();
        frames.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0]);
        frames.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        frames.extend(frame);
        ends.push(frames.len());
    }
    frames[ends[ends.len() / 2] - 1] ^= 0x40;
    let path = write(dir.path(), "corrupt.csv.pzst", &frames);
    fails_atomically(&path, "zstd stream is corrupt");
}

/// Asserts that loading `path` fails with `problem` (after the file's name), at 1 and 4
/// threads, and publishes no row.
fn fails_atomically(path: &Path, problem: &str) {
    for threads in [1, 4] {
        let t = table();
        let err = load_into(
            &t,
            &Source::File(path.to_path_buf()),
            &opts(threads, 1 << 16),
            &LoadControl::default(),
        )
        .unwrap_err()
        .to_string();
        let want = format!("cannot read {}: {problem}", path.display());
        assert!(err.starts_with(&want), "{err}");
        assert!(common::rows(&t).is_empty());
    }
}

/// A BGZF member (bgzip's format: a `BC` extra subfield holding the member's size less one).
fn bgzf(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    let body = e.finish().unwrap();
    let mut crc = flate2::Crc::new();
    crc.update(data);
    let size = 18 + body.len() + 8;
    let mut m = vec![0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 255, 6, 0, b'B', b'C', 2, 0];
    m.extend_from_slice(&u16::try_from(size - 1).unwrap().to_le_bytes());
    m.extend_from_slice(&body);
    m.extend_from_slice(&crc.sum().to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}
