#!/bin/bash
# The final build (9434a36) in the cells not run with the merger's new steps (LZ4 on the wide
# table and on lineitem at 1 Gbit/s), two rounds, then the tail cell (lineitem at 10 Gbit/s
# with queries) three times.
out=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/runs/wireload-9434a36
run() {
  local name=$1; shift
  echo "== $name $* $(date -u +%H:%M:%S)"
  $bin bench shared "$@" --runs 1 --json > $out/$name.json 2> $out/$name.log
  tail -n +2 $out/$name.log | grep -E "^(SL_|auto|PIPE)"
}
for round in 1 2; do
  run wide10g-lz4-$round --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --lz4 --modes none,all,auto
  run wide1g-lz4-$round --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --lz4 --modes all,size,auto
  run li1g-lz4-$round --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --lz4 --modes size,all,auto
done
for round in 1 2 3; do
  run liq-$round --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,auto,pipe
done
echo "== done $(date -u +%H:%M:%S)"
