#!/bin/bash
# The wide table at 10 Gbit/s, SL_N, SL_A and auto, 6 rounds, with the final build (9434a36):
# an old build's auto push once ran at 129 MB/s in this cell (step-wait/cells.out).
out=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/runs/wireload-9434a36
for round in 1 2 3 4 5 6; do
  echo "== wide 10gbit none,all,auto round $round $(date -u +%H:%M:%S)"
  $bin bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --modes none,all,auto --runs 1 --json > $out/wide10g-$round.json 2> $out/wide10g-$round.log
  tail -n +2 $out/wide10g-$round.log | grep -E "^(SL_|auto|PIPE)"
done
echo "== done $(date -u +%H:%M:%S)"
