#!/usr/bin/env bash
# Builds a libFuzzer target with nightly (no cargo-fuzz needed) and fuzzes it.
# usage: fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
# corpus: fuzz/corpus/TARGET (seeded from fuzz/seeds/TARGET when present), crashes:
# fuzz/artifacts/TARGET. One process, no -jobs (libFuzzer would fork and log to fuzz-0.log); -max_len=4096, -timeout=10.
set -euo pipefail
target=${1:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]}
seconds=${2:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
# the flags cargo-fuzz passes; --target keeps them off build scripts and proc macros
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
export CARGO_TARGET_DIR="$here/target"
cargo +nightly build --release --target "$triple" --bin "$target"
mkdir -p "corpus/$target" "artifacts/$target"
if [ -d "seeds/$target" ] && [ -z "$(ls -A "corpus/$target")" ]; then
  cp "seeds/$target"/* "corpus/$target"/
fi
exec "target/$triple/release/$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="artifacts/$target/" "$@" "corpus/$target"
