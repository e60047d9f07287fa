//! Compressed input as a load reads it: a gzip or zstd file of several members or frames
//! decoded on threads of their own (`parallel_decode`), read and taken job by job, against
//! the sequential decoder (the same bytes, the same error after bytes that agree, the same
//! progress). The first 4 input bytes choose the threads, the look-ahead, the job and
//! region sizes, the largest job and the room kept in front of a job's bytes
//! (`wireload_load::testing::parallel_decode_matches`); the rest is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let (knobs, file) = input.split_at(4);
    let knobs = [knobs[0], knobs[1], knobs[2], knobs[3]];
    wireload_load::testing::parallel_decode_matches(file, knobs);
});
