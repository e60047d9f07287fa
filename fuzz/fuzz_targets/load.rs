//! The whole CSV load path as a user hits it: bytes → `wireload_sniff::sniff` (dialect,
//! header and types) → a table of the sniffed columns → `load_into` with the sniffed
//! dialect, ON_ERROR stop and ignore, 1–3 threads, a tiny chunk size; a failed value
//! re-plans its column as the SQL layer does. The first 3 input bytes are the config
//! (`Config::from_bytes`); the oracles are in `crates/wireload-sniff/tests/it/load_path`,
//! shared with that crate's regression tests.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/wireload-sniff/tests/it/load_path/mod.rs"]
mod load_path;

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let (head, data) = input.split_at(3);
    let cfg = load_path::Config::from_bytes([head[0], head[1], head[2]]);
    load_path::check(data, &cfg);
});
