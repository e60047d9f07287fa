#!/bin/bash
# auto with --lz4 on from when the stages wait for a busy link until they seldom wait for one
# with room (the second rule; the first, lz4auto.sh, followed the size state; the build after
# 9434a36), in the LZ4 cells where auto+lz4 trailed SL_A+lz4 (cells.out), and lineitem at
# 1 Gbit/s where it led.
out=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/runs/wireload-lz4auto2
run() {
  local name=$1; shift
  echo "== $name $* $(date -u +%H:%M:%S)"
  $bin bench shared "$@" --lz4 --runs 1 --json > $out/$name.json 2> $out/$name.log
  tail -n +2 $out/$name.log | grep -E "^(SL_|auto|PIPE)"
}
for round in 1 2; do
  run lz4auto2-wide10g-$round --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --modes all,auto
  run lz4auto2-wide1g-$round --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes all,auto
  run lz4auto2-li1g-$round --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --modes size,auto
done
echo "== done $(date -u +%H:%M:%S)"
