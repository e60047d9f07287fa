#!/bin/bash
# auto with --lz4 against the best static mode with --lz4, in the LZ4 cells where auto+lz4
# trailed SL_A+lz4 (cells.out) and lineitem at 1 Gbit/s where it led. Run twice:
#   lz4auto.sh /tmp/runs/wireload-lz4auto lz4auto    (first rule: LZ4 while auto's choice is size)
#   lz4auto.sh /tmp/runs/wireload-lz4auto2 lz4auto2  (the rule kept, b18e9a7: LZ4 from when the
#                                                      stages wait for a busy link until they
#                                                      seldom wait for one with room)
# with the output in lz4auto.out and lz4auto2.out.
out=$(cd "$(dirname "$0")" && pwd)
bin=${1:?binary}
tag=${2:?name}
run() {
  local name=$1; shift
  echo "== $name $* $(date -u +%H:%M:%S)"
  $bin bench shared "$@" --lz4 --runs 1 --json > $out/$name.json 2> $out/$name.log
  tail -n +2 $out/$name.log | grep -E "^(SL_|auto|PIPE)"
}
for round in 1 2; do
  run $tag-wide10g-$round --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --modes all,auto
  run $tag-wide1g-$round --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes all,auto
  run $tag-li1g-$round --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --modes size,auto
done
echo "== done $(date -u +%H:%M:%S)"
