//! Tests of the parallel reader against the sequential decoder, on zstd and gzip files of
//! every shape.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Condvar, Mutex};

use proptest::prelude::*;

use super::jobs::{decode_region, decode_run};
use super::oracle::{drain, drain_parts, reader, same, sequential};
use super::*;

fn settings(threads: usize, ahead: usize, job_bytes: usize, region: usize) -> Settings {
    Settings {
        threads,
        ahead,
        max_unit: MAX_UNIT,
        job_bytes,
        run_bytes: job_bytes,
        region: Some(region),
        front: 5,
    }
}

/// `rows` lines of CSV-like text from `seed`.
fn text(seed: u64, rows: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::new();
    for i in 0..rows {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(format!("{i},w{},{}\n", x % 1000, x % 97).as_bytes());
    }
    out
}

fn gzip_at(data: &[u8], level: u32) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    gzip_at(data, 1)
}

/// A BGZF member of `data` (`BC` subfield with the member's size less one).
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

/// A zstd frame of `data`, declaring its size or not, with a checksum or not.
fn zstd_frame(data: &[u8], level: i32, size: bool, checksum: bool) -> Vec<u8> {
    let mut e = zstd::stream::Encoder::new(Vec::new(), level).unwrap();
    e.include_checksum(checksum).unwrap();
    e.include_contentsize(size).unwrap();
    if size {
        e.set_pledged_src_size(Some(data.len() as u64)).unwrap();
    }
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(data, 3).unwrap()
}

/// A skippable zstd frame holding `payload`.
fn skippable(magic_low: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = (ZSTD_SKIPPABLE | u32::from(magic_low & 15))
        .to_le_bytes()
        .to_vec();
    f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// `data` cut in pieces of `piece` bytes, each compressed by `compress`, concatenated.
fn pieces(data: &[u8], piece: usize, compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    data.chunks(piece).flat_map(compress).collect()
}

#[test]
fn many_small_members_and_frames_decode_as_the_sequential_decoder() {
    let data = text(1, 20_000);
    let gz = pieces(&data, 5000, gzip);
    let z = pieces(&data, 5000, zstd);
    for threads in [1, 2, 4] {
        for ahead in [0, 1, 8] {
            for region in [100, 4096, 50_000] {
                let s = settings(threads, ahead, 10_000, region);
                let ((taken, _), took) = same(Codec::Gzip, &gz, s);
                assert!(took && taken > 0, "gzip, {s:?}");
                assert!(same(Codec::Zstd, &z, s).1, "zstd, {s:?}");
            }
        }
    }
}

#[test]
fn one_frame_falls_back_and_one_member_starts_no_thread() {
    let data = text(2, 20_000);
    let s = settings(2, 4, 1000, 1000);
    assert!(reader(Codec::Zstd, &zstd(&data), s).is_none());
    // a frame too large to buffer, then small ones: the first two runs must be decoded
    let mut big = zstd(&data);
    big.extend(pieces(&data[..5000], 1000, zstd));
    let small = Settings {
        max_unit: 10_000,
        ..s
    };
    assert!(reader(Codec::Zstd, &big, small).is_none());
    let gz = gzip(&data);
    let (mut r, _) = reader(Codec::Gzip, &gz, s).unwrap();
    assert_eq!(drain(&mut r), (data, None));
    assert!(r.shared.is_none() && r.threads.is_empty());
}

#[test]
fn skippable_and_empty_frames_between_frames() {
    let data = text(3, 5000);
    let mut z = Vec::new();
    for (i, piece) in data.chunks(3000).enumerate() {
        // a skippable frame whose payload looks like a zstd frame
        z.extend(skippable(i as u8, &zstd(b"not part of the output")));
        z.extend(zstd_frame(piece, 1, i % 2 == 0, i % 3 == 0));
        z.extend(zstd(b""));
        z.extend(skippable(15, b""));
    }
    for threads in [1, 3] {
        for job_bytes in [1, 5000, 1 << 20] {
            let s = settings(threads, 3, job_bytes, 0);
            let took = same(Codec::Zstd, &z, s).1;
            assert_eq!(took, job_bytes < 1 << 20, "{s:?}");
        }
    }
}

#[test]
fn a_frame_bound_covers_what_the_frame_decodes_to() {
    let mut x = 7u64;
    let noise: Vec<u8> = (0..300_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let inputs = [
        text(12, 40_000),
        noise,
        vec![0; 400_000],
        b"a".to_vec(),
        Vec::new(),
    ];
    for data in &inputs {
        for level in [-5, 1, 3, 19] {
            for (size, checksum) in [(false, false), (false, true), (true, true)] {
                let frame = zstd_frame(data, level, size, checksum);
                let bound = content_bound(&frame).unwrap();
                let blocks = data.len().div_ceil(MAX_BLOCK).max(1);
                assert!(bound >= data.len(), "{} bytes, level {level}", data.len());
                // (the fast levels cut full blocks; higher ones may split them)
                assert!(
                    level > 3 || bound <= blocks * MAX_BLOCK,
                    "{} bytes, level {level}",
                    data.len()
                );
                // cut short anywhere in the blocks: no bound
                assert_eq!(content_bound(&frame[..frame.len() - 5]), None);
            }
        }
    }
    assert_eq!(content_bound(&skippable(3, b"payload")), Some(0));
    assert_eq!(content_bound(b"not a frame"), None);
    // a reserved block type
    let mut frame = zstd_frame(b"abc", 3, false, false);
    let header = frame.len() - 3 - 3;
    frame[header] |= 6;
    assert_eq!(content_bound(&frame), None);
}

#[test]
fn frames_without_a_declared_size_are_decoded_by_the_threads() {
    let data = text(13, 30_000);
    let mut z = Vec::new();
    for piece in data.chunks(100_000) {
        z.extend(zstd_frame(piece, 3, false, true));
        z.extend(zstd_frame(b"", 1, false, false));
    }
    let bytes: Bytes = Arc::new(z.clone());
    let s = settings(1, 1, 1 << 20, 0);
    let run = Run {
        start: 0,
        end: z.len(),
        stream: false,
    };
    let Outcome::Decoded {
        start,
        end,
        data: got,
    } = decode_run(&bytes, run, &s, &mut None, vec![1; s.front])
    else {
        panic!("not decoded");
    };
    assert_eq!((start, end), (0, z.len()));
    assert!(got[..s.front] == [1; 5] && got[s.front..] == data);
    // above the limit: left to the reader
    let tight = Settings {
        max_unit: data.len() - 1,
        ..s
    };
    assert!(matches!(
        decode_run(&bytes, run, &tight, &mut None, vec![0; s.front]),
        Outcome::Nothing
    ));
    for threads in [1, 2] {
        assert!(same(Codec::Zstd, &z, settings(threads, 2, 50_000, 0)).1);
    }
    // taken whole: every run is a part of its own
    let (mut r, _) = reader(Codec::Zstd, &z, settings(2, 2, 1, 0)).unwrap();
    let ((got, error), whole) = drain_parts(&mut r);
    assert!(error.is_none() && got == data);
    assert_eq!(whole, data.len().div_ceil(100_000));
}

/// Inputs the `decode` fuzz target found (4 knob bytes, then the file), each named
/// after what it showed.
#[test]
fn fuzz_regressions() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/regressions/decode");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        let (knobs, file) = input.split_at(4);
        oracle::check(file, [knobs[0], knobs[1], knobs[2], knobs[3]]);
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn the_fuzz_oracle_takes_every_knob() {
    let data = text(14, 3000);
    let inputs = [
        pieces(&data, 4000, gzip),
        pieces(&data, 4000, |p| zstd_frame(p, 1, false, true)),
        b"not compressed".to_vec(),
    ];
    for input in &inputs {
        for knob in [0u8, 1, 7, 8, 13, 31, 37, 64, 200, 255] {
            oracle::check(input, [knob, knob.rotate_left(3), knob ^ 0x5a, knob / 3]);
        }
    }
}

#[test]
fn a_file_that_starts_with_a_skippable_frame_is_zstd() {
    // pzstd's layout: each frame after a skippable frame that holds its size
    let data = text(11, 20_000);
    let mut z = Vec::new();
    for piece in data.chunks(30_000) {
        let frame = zstd_frame(piece, 3, false, true);
        z.extend(skippable(0, &(frame.len() as u32).to_le_bytes()));
        z.extend(frame);
    }
    assert_eq!(Codec::sniff(&z), Some(Codec::Zstd));
    assert_eq!(sequential(Codec::Zstd, &z), (data, None));
    for threads in [1, 2] {
        assert!(same(Codec::Zstd, &z, settings(threads, 2, 1, 0)).1);
    }
}

#[test]
fn empty_members_decode_as_the_sequential_decoder() {
    let data = text(4, 3000);
    let mut gz = Vec::new();
    for piece in data.chunks(2000) {
        gz.extend(gzip(b""));
        gz.extend(gzip(piece));
        gz.extend(gzip(b""));
    }
    for region in [20, 50, 333, 4000] {
        same(Codec::Gzip, &gz, settings(2, 2, 1000, region));
    }
    // only empty members
    let empty: Vec<u8> = (0..50).flat_map(|_| gzip(b"")).collect();
    same(Codec::Gzip, &empty, settings(2, 2, 1000, 64));
}

#[test]
fn bgzf_members_are_shared_out_from_the_start() {
    let data = text(5, 30_000);
    let mut gz = pieces(&data, 20_000, bgzf);
    // the BGZF end-of-file marker: an empty member
    gz.extend(bgzf(b""));
    let region = {
        let bytes: Bytes = Arc::new(gz.clone());
        let r = ParallelReader::new(
            bytes,
            Codec::Gzip,
            Arc::default(),
            Settings {
                region: None,
                ..settings(2, 2, 50_000, 0)
            },
        )
        .unwrap();
        assert!(!r.first, "threads start before the first member is decoded");
        r.bgzf_region().unwrap()
    };
    assert!(region >= MIN_REGION);
    for region in [100, 7000, 100_000] {
        let ((taken, _), _) = same(Codec::Gzip, &gz, settings(2, 3, 10_000, region));
        assert!(taken > 0);
    }
}

/// A stored (uncompressed) member whose payload holds a whole valid gzip member after
/// `before` bytes: where the embedded member starts in the returned member.
fn stored_with_fake(before: usize) -> (Vec<u8>, usize) {
    let fake = gzip(b"a member inside a member\n");
    let mut payload = vec![b'x'; before];
    payload.extend_from_slice(&fake);
    payload.extend_from_slice(&[b'y'; 300]);
    let outer = gzip_at(&payload, 0);
    let at = memchr::memmem::find(&outer[3..], &fake).unwrap() + 3;
    (outer, at)
}

#[test]
fn a_header_inside_a_stored_member_never_counts() {
    let data = text(6, 2000);
    let head = gzip(&data[..1000]);
    let (outer, inner) = stored_with_fake(700);
    let mut gz = head.clone();
    gz.extend_from_slice(&outer);
    gz.extend(pieces(&data[1000..], 3000, gzip));
    let fake = head.len() + inner;
    // a thread that speculates at the region split finds the embedded member and
    // decodes it (it is valid)...
    let region = fake;
    let shared = Shared {
        bytes: Arc::new(gz.clone()),
        plan: Plan::Gzip {
            region,
            bgzf: false,
        },
        settings: settings(1, 1, 1000, region),
        state: Mutex::new(State {
            runs: Vec::new(),
            planned: 0,
            next: 0,
            limit: 0,
            current: 0,
            results: BTreeMap::new(),
        }),
        done: Condvar::new(),
        work: Condvar::new(),
        stop: AtomicBool::new(false),
        claimed: AtomicUsize::new(head.len()),
        spare: Spare::default(),
    };
    match decode_region(&shared, 1, region, false) {
        Outcome::Decoded { start, data, .. } => {
            assert_eq!(start, fake);
            assert!(data[shared.settings.front..].starts_with(b"a member inside a member\n"));
        }
        Outcome::Nothing => panic!("the embedded member decodes"),
    }
    // ...and the reader refuses it: the output is the sequential decoder's
    for region in [fake, fake - 1, fake / 2, fake / 3, 64] {
        for threads in [1, 2, 4] {
            same(Codec::Gzip, &gz, settings(threads, 4, 1000, region));
        }
    }
    // a fake header that does not decode, at every offset of a region
    let mut payload = data[..500].to_vec();
    payload.extend_from_slice(&[0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 255, 0x1f, 0x8b, 8, 0]);
    payload.extend_from_slice(&data[500..1500]);
    let mut gz = head.clone();
    gz.extend(gzip_at(&payload, 0));
    gz.extend(gzip(&data[1500..]));
    for region in (40..600).step_by(37) {
        same(Codec::Gzip, &gz, settings(2, 4, 1000, region));
    }
}

#[test]
fn truncated_last_member_or_frame_fails_as_the_sequential_decoder() {
    let data = text(7, 20_000);
    let gz = pieces(&data, 4000, gzip);
    let z = pieces(&data, 4000, zstd);
    for cut in [1, 4, 8, 9, 20, 100, 1000] {
        let s = settings(2, 3, 5000, 999);
        same(Codec::Gzip, &gz[..gz.len() - cut], s);
        same(Codec::Zstd, &z[..z.len() - cut], s);
    }
    // the sequential decoder's texts
    let s = settings(2, 3, 5000, 999);
    let (mut r, _) = reader(Codec::Gzip, &gz[..gz.len() - 4], s).unwrap();
    assert_eq!(drain(&mut r).1.unwrap(), "gzip stream is truncated");
    let (mut r, _) = reader(Codec::Zstd, &z[..z.len() - 3], s).unwrap();
    assert_eq!(drain(&mut r).1.unwrap(), "zstd stream is truncated");
}

#[test]
fn a_corrupt_middle_member_or_frame_fails_after_the_members_before_it() {
    let data = text(8, 20_000);
    let piece = 4000;
    let members: Vec<Vec<u8>> = data.chunks(piece).map(gzip).collect();
    let middle = members.len() / 2;
    let before: usize = members[..middle].iter().map(Vec::len).sum();
    let mut gz = members.concat();
    // the CRC of the middle member
    gz[before + members[middle].len() - 8] ^= 1;
    let good = &data[..middle * piece];
    for threads in [1, 2, 4] {
        for region in [50, 999, 10_000] {
            let s = settings(threads, 3, 5000, region);
            same(Codec::Gzip, &gz, s);
            let (mut r, _) = reader(Codec::Gzip, &gz, s).unwrap();
            let (out, err) = drain(&mut r);
            assert!(out.starts_with(good));
            assert!(err.unwrap().starts_with("gzip stream is corrupt: "));
        }
    }
    let frames: Vec<Vec<u8>> = data
        .chunks(piece)
        .map(|p| zstd_frame(p, 3, true, true))
        .collect();
    let before: usize = frames[..middle].iter().map(Vec::len).sum();
    let mut z = frames.concat();
    // the checksum of the middle frame
    z[before + frames[middle].len() - 1] ^= 1;
    for threads in [1, 2, 4] {
        let s = settings(threads, 3, 3000, 0);
        same(Codec::Zstd, &z, s);
        let (mut r, _) = reader(Codec::Zstd, &z, s).unwrap();
        let (out, err) = drain(&mut r);
        assert!(out.starts_with(good));
        assert!(err.unwrap().starts_with("zstd stream is corrupt: "));
    }
}

#[test]
fn members_and_frames_above_the_limit_are_streamed() {
    let data = text(9, 30_000);
    let gz = pieces(&data, 50_000, gzip);
    let z: Vec<u8> = data
        .chunks(50_000)
        .flat_map(|p| zstd_frame(p, 1, false, false))
        .collect();
    for max_unit in [1000, 60_000, 200_000] {
        let s = Settings {
            max_unit,
            ..settings(2, 2, 1000, 5000)
        };
        same(Codec::Gzip, &gz, s);
        same(Codec::Zstd, &z, s);
    }
}

#[test]
fn trailing_garbage_fails_as_the_sequential_decoder() {
    let data = text(10, 5000);
    for tail in [&b"\0\0\0\0"[..], b"hello, world", &[0; 40], &[0x1f, 0x8b]] {
        let mut gz = pieces(&data, 2000, gzip);
        gz.extend_from_slice(tail);
        let mut z = pieces(&data, 2000, zstd);
        z.extend_from_slice(tail);
        let s = settings(2, 2, 3000, 500);
        same(Codec::Gzip, &gz, s);
        same(Codec::Zstd, &z, s);
    }
}

/// One member or frame of a generated input.
#[derive(Debug, Clone)]
struct Piece {
    rows: usize,
    seed: u64,
    level: u32,
    /// gzip: a stored member embedding a whole member; zstd: a skippable frame first.
    odd: bool,
}

fn piece() -> impl Strategy<Value = Piece> {
    (0usize..400, any::<u64>(), 0u32..4, any::<bool>()).prop_map(|(rows, seed, level, odd)| Piece {
        rows,
        seed,
        level,
        odd,
    })
}

/// What is done to a generated input.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Truncate(usize),
    Flip(usize, u8),
    Append(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => Just(Damage::None),
        1 => (1usize..200).prop_map(Damage::Truncate),
        1 => (any::<usize>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
        1 => proptest::collection::vec(any::<u8>(), 1..30).prop_map(Damage::Append),
    ]
}

fn damaged(mut input: Vec<u8>, damage: &Damage) -> Vec<u8> {
    match damage {
        Damage::None => {}
        Damage::Truncate(n) => input.truncate(input.len().saturating_sub(*n).max(1)),
        Damage::Flip(at, x) => {
            let at = at % input.len();
            input[at] ^= x;
        }
        Damage::Append(junk) => input.extend_from_slice(junk),
    }
    input
}

fn any_settings() -> impl Strategy<Value = Settings> {
    (
        1usize..5,
        0usize..6,
        1usize..20_000,
        16usize..5000,
        1usize..4,
        prop::sample::select(vec![0, 1, 64]),
        0usize..4,
    )
        .prop_map(
            |(threads, ahead, job_bytes, region, unit, front, grow)| Settings {
                threads,
                ahead,
                max_unit: [5000, 40_000, MAX_UNIT][unit - 1],
                job_bytes,
                run_bytes: job_bytes << grow,
                region: Some(region),
                front,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn gzip_decodes_as_the_sequential_decoder(
        pieces in proptest::collection::vec(piece(), 1..12),
        damage in damage(),
        settings in any_settings(),
    ) {
        let mut input = Vec::new();
        for p in &pieces {
            let data = text(p.seed, p.rows);
            if p.odd {
                let mut payload = data.clone();
                payload.extend(gzip(&data[..data.len() / 2]));
                payload.extend_from_slice(&data);
                input.extend(gzip_at(&payload, 0));
            } else {
                input.extend(gzip_at(&data, p.level));
            }
        }
        same(Codec::Gzip, &damaged(input, &damage), settings);
    }

    #[test]
    fn zstd_decodes_as_the_sequential_decoder(
        pieces in proptest::collection::vec(piece(), 1..12),
        damage in damage(),
        settings in any_settings(),
    ) {
        let mut input = Vec::new();
        for p in &pieces {
            let data = text(p.seed, p.rows);
            if p.odd {
                input.extend(skippable(p.seed as u8, &zstd(&data)));
            }
            input.extend(zstd_frame(&data, p.level as i32 + 1, p.seed % 2 == 0, p.seed % 3 == 0));
        }
        same(Codec::Zstd, &damaged(input, &damage), settings);
    }
}

/// Not a test: times the sequential and the parallel decoder over the files named in
/// `WIRELOAD_DECODE_BENCH` (comma-separated), three runs each, and prints the medians.
#[test]
#[ignore]
fn measure_decoding() {
    let Ok(files) = std::env::var("WIRELOAD_DECODE_BENCH") else {
        return;
    };
    let median = |mut runs: Vec<f64>| {
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    let drain_all = |reader: &mut dyn Read| {
        let mut buf = vec![0; 16 << 20];
        let mut total = 0u64;
        loop {
            match reader.read(&mut buf).unwrap() {
                0 => return total,
                n => total += n as u64,
            }
        }
    };
    for path in files.split(',') {
        let file = File::open(path).unwrap();
        let head = crate::compressed::read_head(&mut &file).unwrap();
        let codec = Codec::sniff(&head).unwrap();
        let mut times = [Vec::new(), Vec::new()];
        let mut sizes = [0, 0];
        for _ in 0..3 {
            for (i, parallel) in [false, true].into_iter().enumerate() {
                let t0 = std::time::Instant::now();
                let consumed = Arc::new(AtomicU64::new(0));
                let file = File::open(path).unwrap();
                let mut reader = if parallel {
                    let reader = open(&file, codec, &consumed, 0).unwrap();
                    Box::new(reader.expect("parallel")) as crate::compressed::BoxedReader
                } else {
                    codec
                        .decoder(crate::compressed::Counting::new(file, consumed))
                        .unwrap()
                };
                sizes[i] = drain_all(&mut reader);
                times[i].push(t0.elapsed().as_secs_f64());
            }
        }
        assert_eq!(sizes[0], sizes[1]);
        let [s, p] = times.map(median);
        println!(
            "{path}: {} compressed bytes, {} decoded; sequential {s:.3} s, parallel {p:.3} s ({} threads)",
            std::fs::metadata(path).unwrap().len(),
            sizes[0],
            Settings::for_machine(0).threads,
        );
    }
}
