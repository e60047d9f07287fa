//! Every input in `tests/regressions/` (inputs the `load` fuzz target found, minimized)
//! goes through the whole load path (sniff, create, load with ON_ERROR stop and ignore,
//! re-plan) under a grid of configs, with the fuzz target's oracles (`load_path`).

use crate::load_path::{Config, check};
use wireload_load::ScanMode;

/// The configs every regression input runs under: threads, tiny chunks, both chunking
/// modes, the whole input or small samples, whole or truncated.
fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for threads in 1..=3 {
        for chunk_size in [1, 2, 3, 5, 8, 17, 64, 256] {
            for mode in [ScanMode::Safe, ScanMode::Fast] {
                for sample_bytes in [None, Some(16), Some(64)] {
                    for truncated in [false, true] {
                        out.push(Config {
                            threads,
                            chunk_size,
                            mode,
                            sample_bytes,
                            truncated,
                        });
                    }
                }
            }
        }
    }
    out
}

#[test]
fn regression_inputs_pass_the_load_path_oracles() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    for file in &files {
        let data = std::fs::read(file).unwrap();
        for cfg in configs() {
            let outcome = std::panic::catch_unwind(|| check(&data, &cfg));
            assert!(outcome.is_ok(), "{} fails under {cfg:?}", file.display());
        }
    }
}

/// The oracles hold on plain inputs, with the exact rows loaded.
#[test]
fn plain_inputs_load_their_rows() {
    let cfg = Config {
        threads: 2,
        chunk_size: 3,
        mode: ScanMode::Safe,
        sample_bytes: None,
        truncated: false,
    };
    assert_eq!(
        check(b"id,name\n1,bob\n2,\"ann\nlee\"\n3,x\n", &cfg),
        Some(3)
    );
    assert_eq!(check(b"a|b\r\n1|2\r\n\r\n3|4\r\n", &cfg), Some(2));
    // a stream prefix's last record is not sampled: Stop fails on its value, the re-plan
    // (BIGINT to TEXT) gets past it
    let cfg = Config {
        truncated: true,
        ..cfg
    };
    assert_eq!(check(b"n,m\n1,2\n3,4\nx,5", &cfg), None);
    assert_eq!(check(b"n,m\n1,2\n3,4\n5,6", &cfg), Some(3));
}
