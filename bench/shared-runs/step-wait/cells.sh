#!/bin/bash
# The other cells against v3's merge steps (old = 32aa66c): SL_S and auto at 1 Gbit/s on
# lineitem, the static modes and auto at 10 Gbit/s on the wide table, and the tail cell
# (lineitem at 10 Gbit/s with queries), interleaved.
out=$(cd "$(dirname "$0")" && pwd)
cd /work/main
for round in 1 2; do
  for b in old v3; do
    bin=/tmp/runs/wireload-$([ $b = old ] && echo min16 || echo $b)
    echo "== lineitem 1gbit size,auto,pipe $b round $round $(date -u +%H:%M:%S)"
    $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --modes size,auto,pipe --runs 1 --json > $out/li1g-$b-$round.json 2> $out/li1g-$b-$round.log
    tail -n +2 $out/li1g-$b-$round.log | grep -E "^(SL_|auto|PIPE)"
    echo "== wide 10gbit none,all,auto $b round $round $(date -u +%H:%M:%S)"
    $bin bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --modes none,all,auto --runs 1 --json > $out/wide10g-$b-$round.json 2> $out/wide10g-$b-$round.log
    tail -n +2 $out/wide10g-$b-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
for b in old v3; do
  bin=/tmp/runs/wireload-$([ $b = old ] && echo min16 || echo $b)
  echo "== lineitem 10gbit queries all,auto,pipe $b $(date -u +%H:%M:%S)"
  $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,auto,pipe --runs 1 --json > $out/liq-$b.json 2> $out/liq-$b.log
  tail -n +2 $out/liq-$b.log | grep -E "^(SL_|auto|PIPE)"
done
echo "== done $(date -u +%H:%M:%S)"
