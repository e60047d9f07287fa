#!/usr/bin/env python3
"""Loading compressed CSV against decompressing it: issue 18's bar.

Codecs: gzip and zstd files as `gzip -6` and `zstd -3` write them (one member, one frame),
and files of many gzip members or zstd frames (see CODECS), which wireload decompresses on
several threads; each is compared with the one-thread `gzip -dc` or `zstd -dc`.

For each codec (gzip, zstd), times `gzip -dc FILE > /dev/null` (or `zstd -dc`) and a
wireload load of the same FILE (`COPY lineitem FROM 'FILE'`, the loader's own figure, which
includes reading, decompressing, parsing and publishing), interleaved, RUNS times each, and
prints the medians and the ratio of speeds (decompression alone / load; >= 0.8 meets the
bar). Before every timed run, a buffer of twice the uncompressed input's size (`--touch`)
is touched and freed, for every contestant alike: idle memory is returned to the host
here, and a load's first touch of it is slow. A load of lineitem peaks at about 1.7 times
the input's size (the table and the stream's blocks), so a buffer of the input's size alone
(this script's earlier default) can leave a third of the load's memory cold (see
bench/records/2026-11-29-compressed-cold-memory.md for when that mattered and when it did not).

    python3 bench/compressed.py --wireload target/release/wireload \\
        --input /dev/shm/wl-sf1/lineitem.tbl --work /dev/shm/wl-gz --runs 5
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time

LINEITEM = (
    "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, "
    "l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), "
    "l_tax DECIMAL(15,2), l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, "
    "l_commitdate DATE, l_receiptdate DATE, l_shipinstruct CHAR(25), l_shipmode CHAR(10), "
    "l_comment VARCHAR(44)"
)

# codec: (file suffix, compressor (None: written by `members`), decompressor). `gzip` and
# `zstd` are single-member/single-frame files (what `gzip` and `zstd` write); `gzip-members`
# is the input cut into 4 MiB pieces, each its own gzip member (as `cat a.gz b.gz` or a
# parallel writer makes), and `zstd-frames` is `pzstd`'s output (frames of about 4 MiB of
# input each): wireload decompresses those two on several threads.
CODECS = {
    "gzip": (".gz", ["gzip", "-6", "-c"], ["gzip", "-dc"]),
    "zstd": (".zst", ["zstd", "-q", "-3", "-c"], ["zstd", "-q", "-dc"]),
    "gzip-members": (".members.gz", None, ["gzip", "-dc"]),
    "zstd-frames": (".frames.zst", ["pzstd", "-q", "-3", "-p", "2", "-c"], ["zstd", "-q", "-dc"]),
}

PIECE = 4 << 20


def touch(size):
    """Touches and frees `size` bytes, so no contestant pays the first touch of idle memory."""
    buf = bytearray(size)
    for i in range(0, size, 4096):
        buf[i] = 1
    del buf


def compressed(inp, work, codec):
    ext, compress, _ = CODECS[codec]
    out = os.path.join(work, os.path.basename(inp) + ext)
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(inp):
        with open(out + ".tmp", "wb") as f:
            if compress is None:
                members(inp, f)
            else:
                subprocess.run(compress + [inp], stdout=f, check=True)
        os.replace(out + ".tmp", out)
    return out


def members(inp, out):
    """Writes `inp` to `out` as gzip members of PIECE input bytes each (level 6)."""
    import gzip

    with open(inp, "rb") as f:
        while piece := f.read(PIECE):
            out.write(gzip.compress(piece, compresslevel=6, mtime=0))


def time_decompress(codec, path):
    _, _, decompress = CODECS[codec]
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        subprocess.run(decompress + [path], stdout=null, check=True)
        return time.perf_counter() - t0


def time_load(wireload, path, threads):
    script = (
        f"CREATE TABLE lineitem ({LINEITEM});\n"
        f"COPY lineitem FROM '{path}' WITH (FORMAT csv, DELIMITER '|');\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        cmd = [wireload, "--threads", str(threads), "-f", f.name]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    m = re.search(r"loaded (\d+) rows into lineitem, [\d.]+ MB in ([\d.]+) s", out.stderr)
    if not m:
        raise SystemExit(f"no load summary in: {out.stderr}")
    return float(m.group(2)), int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wireload", default="target/release/wireload")
    ap.add_argument("--input", default="/dev/shm/wl-sf1/lineitem.tbl")
    ap.add_argument("--work", default="/dev/shm/wl-gz")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--codecs", default="gzip,zstd,gzip-members,zstd-frames")
    ap.add_argument("--touch", type=float, default=2.0,
                    help="the buffer touched before every timed run, in input sizes")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    size = os.path.getsize(args.input)
    model = next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        platform.processor(),
    )
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {model}, {os.cpu_count()} cores, "
          f"threads {args.threads}, input {args.input} ({size / 1e6:.1f} MB), runs {args.runs}, "
          f"touch {args.touch} x input")
    print("| codec | file MB | decompress s (median) | wireload load s (median) | "
          "load speed / decompress speed |")
    print("|---|---:|---:|---:|---:|")
    for codec in args.codecs.split(","):
        path = compressed(args.input, args.work, codec)
        dec, load = [], []
        rows = None
        for _ in range(args.runs):
            touch(int(size * args.touch))
            dec.append(time_decompress(codec, path))
            touch(int(size * args.touch))
            seconds, rows = time_load(args.wireload, path, args.threads)
            load.append(seconds)
        d, l = statistics.median(dec), statistics.median(load)
        print(f"| {codec} | {os.path.getsize(path) / 1e6:.1f} | {d:.3f} ({', '.join(f'{x:.2f}' for x in dec)}) "
              f"| {l:.3f} ({', '.join(f'{x:.2f}' for x in load)}) | {d / l:.2f} |")
        print(f"#   {rows} rows loaded")


if __name__ == "__main__":
    main()
