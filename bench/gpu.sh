#!/usr/bin/env bash
# Builds the GPU benchmark (the crate crates/wireload-gpu-bench; bench/GPU.md) as
# a stripped x86-64 release binary and copies it to .gpu/ in the repository, a folder that
# git ignores (this script adds `/.gpu/` to .git/info/exclude when it is missing there).
#
# The binary is self-contained: it generates its data in memory, reads no files, and needs
# on the GPU machine only the CUDA driver (libcuda) and NVRTC (libnvrtc, found by the loader
# or in the CUDA toolkit's or the nvidia-cuda-nvrtc wheel's usual folders; `--nvrtc-dir DIR`
# names another). The GPU machine has no Rust toolchain and no network, so the binary built
# here travels with the working tree: run the device tool with `carry: [".gpu"]` and the
# command (from the repository root)
#
#     .gpu/wireload-gpu-bench all --json $OUT/gpu.json
#
# or, to keep the whole markdown output too (the tool returns only the last 12,000
# characters of stdout):
#
#     set -o pipefail; .gpu/wireload-gpu-bench all --json $OUT/gpu.json | tee $OUT/gpu.md
#
# A smoke test here, without a GPU (the CUDA kernels on the CPU emulator, tiny inputs):
#
#     .gpu/wireload-gpu-bench all --emulate
#
# The carried working tree is limited to 64 MiB: the script fails when the binary is not
# well under that.
set -euo pipefail
cd "$(dirname "$0")/.."

arch=$(uname -m)
if [ "$arch" != x86_64 ]; then
    echo "gpu.sh: the GPU machine is x86-64 and this one is $arch: build there is impossible (no toolchain), cross-compile instead" >&2
    exit 1
fi

commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
start=$(date +%s)
# the commit is compiled in (the bench prints it in its header)
WIRELOAD_BENCH_COMMIT="$commit" cargo build --release -p wireload-gpu-bench
end=$(date +%s)

target_dir=${CARGO_TARGET_DIR:-target}
bin="$target_dir/release/wireload-gpu-bench"
mkdir -p .gpu
cp "$bin" .gpu/wireload-gpu-bench.tmp
strip .gpu/wireload-gpu-bench.tmp
mv .gpu/wireload-gpu-bench.tmp .gpu/wireload-gpu-bench

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
if ! grep -qxF '/.gpu/' "$exclude" 2>/dev/null; then
    echo '/.gpu/' >>"$exclude"
    echo "gpu.sh: added /.gpu/ to $exclude"
fi

size=$(stat -c %s .gpu/wireload-gpu-bench)
limit=$((64 * 1024 * 1024))
glibc=$(objdump -T .gpu/wireload-gpu-bench 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1 || true)
glibcxx=$(objdump -T .gpu/wireload-gpu-bench 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -Vu | tail -1 || true)
echo "gpu.sh: cargo build took $((end - start)) s (commit $commit)"
echo "gpu.sh: .gpu/wireload-gpu-bench: $size bytes ($(awk "BEGIN { printf \"%.1f\", $size / 1048576 }") MiB, stripped), needs ${glibc:-?} and ${glibcxx:-?}"
if [ "$size" -ge "$limit" ]; then
    echo "gpu.sh: the binary is over the 64 MiB the device tool carries" >&2
    exit 1
fi
