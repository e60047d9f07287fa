//! The CUDA kernels, run on the CPU emulator, against the plain-Rust reference of the same
//! passes: every intermediate array and output byte for byte, on random inputs, at several
//! chunk and block sizes, in both modes.

use std::sync::Arc;

use crate::common::{Gen, case, column, columns_text, not_null};
use wireload_gpu::testing::layout::{Fallback, NONE, rust_layout};
use wireload_gpu::testing::{Emulator, Plan, Workspace, c_layout, reference};
use wireload_gpu::{GpuOptions, PassMode};
use wireload_types::ColumnDef;
use wireload_types::SqlType::{self, *};

#[test]
fn layout_matches_the_c_compiler() {
    assert_eq!(c_layout(), rust_layout());
}

fn dec(precision: u8, scale: u8) -> SqlType {
    Decimal { precision, scale }
}

/// Runs both implementations on `data` and fails with the first difference.
fn compare(
    columns: &[ColumnDef],
    dialect: &wireload_load::Dialect,
    data: &[u8],
    opts: &GpuOptions,
    threads: u32,
) {
    let plan = Arc::new(Plan::new(columns, dialect).unwrap());
    let mut input = data.to_vec();
    if !matches!(input.last(), Some(b'\n' | b'\r')) {
        input.push(b'\n');
    }
    let mut ws = Workspace::new(Arc::new(Emulator::new(threads)), Arc::clone(&plan), opts).unwrap();
    ws.load_input(&input).unwrap();
    let gpu = ws.run(true).unwrap();
    let cpu = reference::run(&input, &plan, opts, true);
    if let Some(d) = gpu.diff(&cpu) {
        panic!(
            "{d}\nschema {:?}\ndialect {dialect:?}\nchunk {}, {threads} threads, {:?}\ninput {:?}",
            columns_text(columns),
            opts.chunk,
            opts.mode,
            String::from_utf8_lossy(data)
        );
    }
}

#[test]
fn kernels_equal_the_reference_on_random_inputs() {
    let configs = [
        (128, 32, PassMode::Auto),
        (128, 64, PassMode::Quoted),
        (256, 256, PassMode::Auto),
        (1024, 64, PassMode::Auto),
        (256, 32, PassMode::Quoted),
    ];
    let mut flagged = 0;
    let mut quoted = 0;
    for seed in 0..60u64 {
        let g = Gen {
            rows: 1 + (seed as usize * 7) % 60,
            errors: seed % 4 == 3,
            quotes: seed % 3 != 0,
            odd: seed % 2 == 0,
        };
        let c = case(seed, g);
        let (chunk, threads, mode) = configs[seed as usize % configs.len()];
        let opts = GpuOptions {
            chunk,
            mode,
            fallbacks: if seed % 5 == 0 { 4 } else { 1 << 12 },
            ..GpuOptions::default()
        };
        compare(&c.columns, &c.dialect, &c.data, &opts, threads);
        let plan = Plan::new(&c.columns, &c.dialect).unwrap();
        let r = reference::run(&c.data, &plan, &opts, false);
        flagged += r.has_error() as usize;
        quoted += r.quoted as usize;
    }
    // the inputs cover both modes and both outcomes
    assert!(flagged > 3 && flagged < 40, "{flagged} inputs flagged");
    assert!(quoted > 10 && quoted < 60, "{quoted} inputs quoted");
}

#[test]
fn fields_longer_than_a_chunk_and_many_delimiters_per_chunk() {
    let d = wireload_load::Dialect::default();
    let opts = GpuOptions {
        chunk: 128,
        ..GpuOptions::default()
    };
    // a 1000-byte field spans eight chunks, and chunks of only delimiters hold more fields
    // than a step
    let mut data = format!("1,{}\n", "x".repeat(1000)).into_bytes();
    data.extend(",".repeat(300).as_bytes());
    data.push(b'\n');
    data.extend(b"2,\"y\"\"\n,z\"\n");
    let a_int_b_text = [column("a", Integer), column("b", Text)];
    compare(&a_int_b_text, &d, &data, &opts, 64);
    let many = ",\n".repeat(400);
    compare(&a_int_b_text, &d, many.as_bytes(), &opts, 32);
    let a_text = [column("a", Text)];
    compare(&a_text, &d, "\n\r\n\n".repeat(100).as_bytes(), &opts, 32);
}

#[test]
fn every_shape_of_every_kind_matches() {
    // one column per kind, values at the edges of the fast parsers
    let schema = [
        column("b", Boolean),
        column("s", SmallInt),
        column("i", Integer),
        column("l", BigInt),
        column("r", Real),
        column("d", Double),
        column("n", dec(15, 2)),
        column("m", dec(38, 10)),
        column("dt", Date),
        column("ts", Timestamp),
        column("c", Char(2)),
        column("v", Varchar(Some(3))),
        column("t", Text),
    ];
    let rows = [
        "t,32767,2147483647,999999999999999999,16777216,9007199254740992,1234567890123.45,12345678.1234567890,9999-12-31,9999-12-31 23:59:59.999999,ab,abc,x",
        "F,-32768,-2147483648,-999999999999999999,0.1,0.1,-0.01,0,0001-01-01,0001-01-01T00:00:00,é,é€𝄞,\"a\"\"b\"",
        "yes,32768,2147483648,1000000000000000000,16777217,9007199254740993,12345678901234.5,1.12345678901,2000-02-29,2000-02-29 00:00:00.1,a  ,abcd ,",
        "no,+1,-0,007,1e3,1e3,1.005,.5,1900-02-29,2020-01-01 24:00:00,abc,ab  d,\"\"",
        "on,1 , 1,0x1,NaN,-inf,1e1,5.,2020-13-01,2020-01-01,\"\",\"\",\"\"",
        ",,,,,,,,,,,,",
        "TRUE,12,12,12,3.402823466e38,1.7976931348623157e308,-0,-0.0000000000,0099-01-01,2020-01-01 12:00:60,xy,xyz,0",
    ];
    let data = rows.join("\n");
    for mode in [PassMode::Auto, PassMode::Quoted] {
        for chunk in [128, 256] {
            let opts = GpuOptions {
                chunk,
                mode,
                ..GpuOptions::default()
            };
            compare(
                &schema,
                &wireload_load::Dialect::default(),
                data.as_bytes(),
                &opts,
                64,
            );
        }
    }
}

#[test]
fn errors_are_flagged_where_the_reference_flags_them() {
    let d = wireload_load::Dialect::default();
    let opts = GpuOptions::default();
    let ints = [column("a", Integer), column("b", Integer)];
    let not_null_int = [not_null("a", Integer), column("b", Integer)];
    let text_int = [column("a", Text), column("b", Integer)];
    for (schema, data) in [
        (&ints, &b"1,2\n3\n"[..]),
        (&ints, b"1,2\n3,4,5\n"),
        (&ints, b"1,2\n3,4,\n"),
        (&not_null_int, b"1,2\n,4\n"),
        (&text_int, b"a\"b,1\n"),
        (&text_int, b"\"a\"b,1\n"),
        (&text_int, b"\"a,1\n"),
        (&text_int, b"\"\xff\",1\n"),
    ] {
        compare(schema, &d, data, &opts, 32);
        let plan = Plan::new(schema, &d).unwrap();
        let r = reference::run(data, &plan, &opts, false);
        // a trailing delimiter is not an error
        assert_eq!(
            r.has_error(),
            data != b"1,2\n3,4,\n",
            "{:?}: {:?} {}",
            String::from_utf8_lossy(data),
            r.status,
            r.unterminated
        );
        if data == b"1,2\n3\n" {
            // row 1 lacks its second field
            assert_eq!(r.status.first_error(), Some((1, 1)));
            assert_eq!(r.status.error_pos, NONE);
        }
        if data == b"1,2\n3,4,5\n" {
            // row 1's third field is one too many
            assert_eq!(r.status.first_error(), Some((1, 2)));
        }
        if data == b"1,2\n,4\n" {
            // NULL in NOT NULL column 0 of row 1
            assert_eq!(r.status.first_error(), Some((1, 0)));
        }
    }
}

#[test]
fn a_full_fallback_list_says_how_many_it_missed() {
    let d = wireload_load::Dialect::default();
    let opts = GpuOptions {
        fallbacks: 3,
        ..GpuOptions::default()
    };
    let data = " 1\n 2\n 3\n 4\n 5\n";
    let schema = [column("a", Integer)];
    compare(&schema, &d, data.as_bytes(), &opts, 32);
    let plan = Plan::new(&schema, &d).unwrap();
    let r = reference::run(data.as_bytes(), &plan, &opts, false);
    assert_eq!(r.status.fallbacks, 5);
    assert!(r.overflowed());
    assert_eq!(std::mem::size_of::<Fallback>(), 64);
}

#[test]
fn adversarial_bytes_in_every_kind_of_field() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let schema = [
        column("b", Boolean),
        column("i", Integer),
        column("l", BigInt),
        column("r", Real),
        column("d", Double),
        column("n", dec(38, 30)),
        column("dt", Date),
        column("ts", Timestamp),
        column("c", Char(2)),
        column("t", Text),
    ];
    // bytes that trip parsers: digits, signs, points, separators, NUL, 0xFE and 0xFF
    // (the text columns get valid UTF-8, so that rows are not flagged and every output
    // byte is compared)
    let alphabet: &[u8] = b"0123456789+-.eE:T tfyn\x00\x7f\x80\xc2\xfe\xff";
    let chars = ['a', ' ', 'é', '€', '𝄞', '"', ','];
    let d = wireload_load::Dialect::default();
    let mut rng = StdRng::seed_from_u64(7);
    for round in 0..40 {
        let mut data = Vec::new();
        for _ in 0..30 {
            for c in 0..10 {
                if c > 0 {
                    data.push(b',');
                }
                let n = rng.random_range(0..30);
                data.push(b'"');
                if c < 8 {
                    for _ in 0..n {
                        data.push(alphabet[rng.random_range(0..alphabet.len())]);
                    }
                } else {
                    for _ in 0..n % (2 + 8 * (c - 8)) {
                        let ch = chars[rng.random_range(0..chars.len())];
                        let mut buf = [0u8; 4];
                        data.extend(ch.encode_utf8(&mut buf).as_bytes());
                        if ch == '"' {
                            data.push(b'"');
                        }
                    }
                }
                data.push(b'"');
            }
            data.push(b'\n');
        }
        let opts = GpuOptions {
            chunk: 128,
            mode: if round % 2 == 0 {
                PassMode::Auto
            } else {
                PassMode::Quoted
            },
            ..GpuOptions::default()
        };
        compare(&schema, &d, &data, &opts, 64);
    }
}

#[test]
fn limits_of_the_fast_parsers() {
    // fraction tails around the exact powers of ten, year 0, the largest magnitudes
    let d = wireload_load::Dialect::default();
    let schema = [
        column("r", Real),
        column("d", Double),
        column("n", dec(38, 30)),
        column("dt", Date),
        column("ts", Timestamp),
    ];
    let data = "0.0000000001,0.0000000000000000000001,0.000000000000000000000000000001,0001-01-01,0001-01-01 00:00:00\n\
                0.00000000001,0.00000000000000000000001,1.00000000000000000000000000001,0000-01-01,0000-01-01 00:00:00\n\
                16777216.5,9007199254740992.5,99999999.999999999999999999999999999999,9999-12-31,9999-12-31 23:59:59.999999\n\
                1.0000000001,1.0000000000000000000001,12345678.1,2000-02-29,2000-02-29 24:00:00\n";
    for mode in [PassMode::Auto, PassMode::Quoted] {
        let opts = GpuOptions {
            mode,
            ..GpuOptions::default()
        };
        compare(&schema, &d, data.as_bytes(), &opts, 32);
    }
}

#[test]
fn utf8_validation_matches_the_standard_library() {
    // every two-byte prefix of a sequence, completed with continuation bytes
    let d = wireload_load::Dialect::default();
    let opts = GpuOptions::default();
    let mut data = Vec::new();
    for b0 in 0x80u8..=0xFF {
        for b1 in [0x7Fu8, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0] {
            for tail in [&b""[..], b"\x80", b"\x80\x80"] {
                data.push(b'"');
                data.extend([b0, b1]);
                data.extend(tail);
                data.extend(b"\"\n");
            }
        }
    }
    let schema = [column("t", Text)];
    for line in data.split_inclusive(|&b| b == b'\n') {
        compare(&schema, &d, line, &opts, 32);
        let plan = Plan::new(&schema, &d).unwrap();
        let r = reference::run(line, &plan, &opts, false);
        let text = &line[1..line.len() - 2];
        assert_eq!(
            r.has_error(),
            std::str::from_utf8(text).is_err(),
            "{text:x?}"
        );
    }
}
