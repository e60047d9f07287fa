#!/bin/bash
# `auto` against the static push modes in the cells not run by ab3.sh and cells.sh: with
# queries at 1 Gbit/s (lineitem, wide) and 10 Gbit/s (wide), and LZ4 on lineitem at 10
# Gbit/s; the build with both merger fixes, runs of 1.
out=$(cd "$(dirname "$0")" && pwd)
cd /work/main
bin=/tmp/runs/wireload-v3
run() {
  name=$1; shift
  echo "== $name $(date -u +%H:%M:%S)"
  $bin bench shared "$@" --runs 1 --json > $out/$name.json 2> $out/$name.log
  tail -n +2 $out/$name.log | grep -E "^(SL_|auto|PIPE)"
}
run more-li-1g-q --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --queries --modes all,size,none,auto
run more-wide-1g-q --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --queries --modes all,size,none,auto
run more-wide-10g-q --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --queries --modes all,size,none,auto
run more-li-10g-lz4 --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --lz4 --modes all,none,auto
echo "== done $(date -u +%H:%M:%S)"
