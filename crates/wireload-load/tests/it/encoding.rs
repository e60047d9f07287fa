//! Inputs in Latin-1, windows-1252 and UTF-16 (either byte order, with or without a byte
//! order mark, compressed or not, mapped files, bytes, readers and fed blocks) load exactly
//! the rows of their UTF-8 original; bad input fails naming the file and the byte offset
//! and leaves the table as it was; progress counts the input's own bytes.

use crate::common;

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use wireload_load::{
    Block, Dialect, Encoding, Feed, Filler, LoadControl, LoadError, LoadOptions, ScanMode, Source,
    header_names_in, load_files, load_into,
};
use wireload_storage::{Partitioning, Table};

/// A header and `n` rows of `id INT, name TEXT, note TEXT` whose text comes from `words`,
/// some quoted with a newline or a delimiter inside.
fn csv(words: &[&str], n: usize) -> String {
    let mut out = String::from("id,name,note\n");
    for i in 0..n {
        let w = words[i % words.len()];
        let v = words[(i * 7 + 3) % words.len()];
        match i % 5 {
            0 => out.push_str(&format!("{i},\"{w}\nzwei, {v}\",{v}\n")),
            1 => out.push_str(&format!("{i},,{w}{v}\n")),
            _ => out.push_str(&format!("{i},{w},{v} {w}\n")),
        }
    }
    out
}

/// Words with characters beyond ASCII that Latin-1 has.
const LATIN: &[&str] = &[
    "café",
    "Straße",
    "naïve",
    "Ærø",
    "¿qué?",
    "plain",
    "£5 ±1 °C",
];

/// Words with characters Latin-1 lacks: CJK and an emoji (a surrogate pair in UTF-16).
const WIDE: &[&str] = &[
    "日本",
    "café",
    "😀 smile",
    "Straße",
    "𝄞 clef",
    "ascii",
    "Ωmega",
];

fn latin1(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).expect("a Latin-1 character"))
        .collect()
}

fn utf16(text: &str, big_endian: bool, bom: bool) -> Vec<u8> {
    let bom = bom.then_some('\u{feff}');
    bom.into_iter()
        .chain(text.chars())
        .collect::<String>()
        .encode_utf16()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn table() -> Arc<Table> {
    common::table(
        "id INT NOT NULL, name TEXT, note TEXT",
        Partitioning::Single,
    )
}

fn opts(encoding: Encoding, threads: usize, chunk: usize) -> LoadOptions {
    LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        mode: ScanMode::Safe,
        chunk_size: Some(chunk),
        threads: Some(threads),
        encoding,
        ..LoadOptions::default()
    }
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn bytes(name: &str, data: &[u8]) -> Source {
    Source::Bytes {
        name: name.into(),
        data: Arc::from(data.to_vec()),
    }
}

/// The rows of a load of `source` into a new table.
fn load(source: &Source, opts: &LoadOptions) -> Result<common::Rows, LoadError> {
    let t = table();
    load_into(&t, source, opts, &LoadControl::default())?;
    Ok(common::rows(&t))
}

/// Blocks handed over one by one, as a connection's COPY data is.
struct Blocks(std::vec::IntoIter<Block>);

impl Feed for Blocks {
    fn next_block(&mut self) -> std::io::Result<Option<Block>> {
        Ok(self.0.next())
    }
}

/// A source fed `data` in blocks of `size` bytes.
fn fed(data: &[u8], size: usize) -> Source {
    let (mut filler, recycler) = Filler::new(size);
    let mut blocks = Vec::new();
    filler.write(data, |b| blocks.push(b));
    blocks.extend(filler.finish());
    Source::fed("copy", Blocks(blocks.into_iter()), recycler)
}

/// Every way to hand `encoded` to a load: bytes, a file, a gzip file, a reader in small
/// blocks, fed blocks.
fn sources(dir: &Path, name: &str, encoded: &[u8]) -> Vec<Source> {
    vec![
        bytes(name, encoded),
        Source::File(write(dir, name, encoded)),
        Source::File(write(dir, &format!("{name}.gz"), &gzip(encoded))),
        Source::reader_in_blocks(name, Cursor::new(encoded.to_vec()), 777),
        Source::decompressing_in_blocks(name, Cursor::new(gzip(encoded)), 1000),
        fed(encoded, 501),
    ]
}

#[test]
fn latin1_inputs_load_the_rows_of_their_utf8_original() {
    let dir = tempfile::tempdir().unwrap();
    let text = csv(LATIN, 3000);
    for (threads, chunk) in [(1, 1 << 20), (3, 700)] {
        let want = load(
            &bytes("utf8.csv", text.as_bytes()),
            &opts(Encoding::Utf8, threads, chunk),
        )
        .unwrap();
        assert_eq!(want.len(), 3000);
        assert_eq!(want[2][1].as_deref(), Some("naïve"));
        let o = opts(Encoding::Latin1, threads, chunk);
        for source in sources(dir.path(), "latin1.csv", &latin1(&text)) {
            assert_eq!(load(&source, &o).unwrap(), want, "{source:?} {threads}");
        }
    }
}

#[test]
fn latin1_is_iso_8859_1_and_windows_1252_has_its_own_high_characters() {
    let input = b"id,name,note\n1,\x80\x9f,\xe9\n";
    let latin = load(&bytes("l.csv", input), &opts(Encoding::Latin1, 1, 1 << 20)).unwrap();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(latin, [[s("1"), s("\u{80}\u{9f}"), s("é")]]);
    let win = load(
        &bytes("w.csv", input),
        &opts(Encoding::Windows1252, 1, 1 << 20),
    )
    .unwrap();
    assert_eq!(win, [[s("1"), s("€Ÿ"), s("é")]]);
}

#[test]
fn utf16_inputs_load_the_rows_of_their_utf8_original() {
    let dir = tempfile::tempdir().unwrap();
    let text = csv(WIDE, 2000);
    let want = load(
        &bytes("utf8.csv", text.as_bytes()),
        &opts(Encoding::Utf8, 1, 1 << 20),
    )
    .unwrap();
    assert_eq!(want.len(), 2000);
    assert_eq!(want[2][1].as_deref(), Some("😀 smile"));
    assert_eq!(want[7][1].as_deref(), Some("日本"));
    let cases = [
        (Encoding::Utf16Le, false, false),
        (Encoding::Utf16Le, false, true),
        (Encoding::Utf16Be, true, false),
        (Encoding::Utf16Be, true, true),
        (Encoding::Utf16, false, false),
        (Encoding::Utf16, false, true),
        (Encoding::Utf16, true, true),
    ];
    for (encoding, big_endian, bom) in cases {
        let encoded = utf16(&text, big_endian, bom);
        let name = format!("{encoding}-{big_endian}-{bom}.csv");
        for (threads, chunk) in [(1, 1 << 20), (3, 999)] {
            let o = opts(encoding, threads, chunk);
            for source in sources(dir.path(), &name, &encoded) {
                assert_eq!(load(&source, &o).unwrap(), want, "{source:?} {threads}");
            }
        }
    }
}

#[test]
fn many_files_in_different_byte_orders_load_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (csv(WIDE, 300), csv(LATIN, 200));
    let want = {
        let t = table();
        let o = opts(Encoding::Utf8, 2, 512);
        let srcs = [bytes("a", a.as_bytes()), bytes("b", b.as_bytes())];
        load_files(&t, &srcs, &o, &LoadControl::default()).unwrap();
        common::rows(&t)
    };
    let t = table();
    let srcs = [
        Source::File(write(dir.path(), "a.csv", &utf16(&a, true, true))),
        Source::File(write(
            dir.path(),
            "b.csv.gz",
            &gzip(&utf16(&b, false, true)),
        )),
    ];
    let report = load_files(
        &t,
        &srcs,
        &opts(Encoding::Utf16, 2, 512),
        &LoadControl::default(),
    )
    .unwrap();
    assert_eq!(report.rows, 500);
    assert_eq!(common::rows(&t), want);
}

#[test]
fn progress_of_a_transcoded_file_is_its_own_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text = csv(WIDE, 4000);
    let encoded = utf16(&text, false, true);
    for (name, file) in [("p.csv", encoded.clone()), ("p.csv.gz", gzip(&encoded))] {
        let path = write(dir.path(), name, &file);
        let ctl = LoadControl::default();
        let t = table();
        let o = opts(Encoding::Utf16, 3, 1000);
        let report = load_into(&t, &Source::File(path), &o, &ctl).unwrap();
        assert_eq!(report.rows, 4000, "{name}");
        // the CSV bytes parsed: the UTF-8 text
        assert_eq!(report.bytes, text.len() as u64, "{name}");
        assert_eq!(ctl.bytes_total.load(Relaxed), file.len() as u64, "{name}");
        assert_eq!(ctl.bytes_done.load(Relaxed), file.len() as u64, "{name}");
    }
}

#[test]
fn an_unpaired_surrogate_fails_at_its_byte_and_leaves_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let t = table();
    let o = opts(Encoding::Utf16Le, 3, 512);
    let first = utf16(&csv(WIDE, 10), false, false);
    load_into(&t, &bytes("first.csv", &first), &o, &LoadControl::default()).unwrap();
    let before = common::rows(&t);
    assert_eq!(before.len(), 10);
    let good = utf16(&csv(WIDE, 5000), false, false);
    // a lone high surrogate then "x", well past the first blocks
    let at = good.len() / 2 / 2 * 2;
    let mut bad = good[..at].to_vec();
    bad.extend_from_slice(&0xD83Du16.to_le_bytes());
    bad.extend_from_slice(&good[at..]);
    let path = write(dir.path(), "bad.csv", &bad);
    let name = path.display().to_string();
    for source in [
        Source::File(path),
        Source::File(write(dir.path(), "bad.csv.gz", &gzip(&bad))),
        bytes("bad", &bad),
    ] {
        let err = load_into(&t, &source, &o, &LoadControl::default()).unwrap_err();
        let LoadError::Encoding {
            file,
            byte,
            encoding,
            problem,
        } = &err
        else {
            panic!("not an encoding error: {err}");
        };
        assert_eq!((*byte, *encoding), (at as u64, Encoding::Utf16Le));
        assert!(
            problem.contains("high surrogate 0xD83D is not followed by a low surrogate"),
            "{problem}"
        );
        if let Source::File(p) = &source
            && !p.ends_with("bad.csv.gz")
        {
            assert_eq!(file, &name);
            assert_eq!(
                err.to_string(),
                format!(
                    "{name}: byte {at}: an unpaired surrogate: high surrogate 0xD83D is not \
                     followed by a low surrogate; the input is not valid UTF-16LE (load it \
                     with the ENCODING it is written in)"
                )
            );
        }
        assert_eq!(common::rows(&t), before, "{source:?}");
    }
    // an odd byte at the end
    let mut odd = utf16(&csv(WIDE, 30), false, true);
    odd.push(b'\n');
    let err = load_into(
        &t,
        &bytes("odd", &odd),
        &opts(Encoding::Utf16, 1, 1 << 20),
        &LoadControl::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, LoadError::Encoding { byte, .. } if *byte == odd.len() as u64 - 1),
        "{err}"
    );
    assert_eq!(common::rows(&t), before);
}

#[test]
fn a_byte_order_mark_against_the_encoding_fails() {
    let input = utf16(&csv(WIDE, 3), true, true);
    let err = load(
        &bytes("be.csv", &input),
        &opts(Encoding::Utf16Le, 1, 1 << 20),
    )
    .unwrap_err();
    assert!(
        matches!(&err, LoadError::Encoding { byte: 0, encoding: Encoding::Utf16Le, problem, .. }
            if problem.starts_with("a big-endian byte order mark (FE FF) starts the input")),
        "{err}"
    );
}

#[test]
fn invalid_utf8_in_a_default_load_names_its_field_and_byte() {
    let t = table();
    let input = b"id,name,note\n1,ok,fine\n2,caf\xe9,x\n";
    let err = common::load(&t, input, &opts(Encoding::Utf8, 1, 1 << 20)).unwrap_err();
    let pos = err
        .position()
        .unwrap_or_else(|| panic!("no position: {err}"));
    // the field's first byte: "caf\xe9" starts at byte 25, on line 3, column 2
    assert_eq!((pos.line, pos.column, pos.byte), (3, 2, 25), "{err}");
    assert_eq!(pos.file, "input.csv");
    assert!(common::rows(&t).is_empty());
}

#[test]
fn header_names_of_a_utf16_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "h.csv", &utf16("größe,日本\n1,2\n", true, true));
    let dialect = Dialect {
        header: true,
        ..Dialect::default()
    };
    let names = header_names_in(&Source::File(path), &dialect, Encoding::Utf16).unwrap();
    assert_eq!(names, ["größe", "日本"]);
}
