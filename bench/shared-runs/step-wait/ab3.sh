#!/bin/bash
# `auto` in the two cells where it trailed the best static mode, three builds interleaved:
# old = 32aa66c; nextrun = the merger waits for no rows past a client's next partition;
# v3 = that, plus steps that take several client partitions whose other columns are plain
# (each partition's coded columns a run of its own) and never mix plain and coded fragments.
out=$(cd "$(dirname "$0")" && pwd)
cd /work/main
for round in 1 2; do
  for b in old nextrun v3; do
    bin=/tmp/runs/wireload-$([ $b = old ] && echo min16 || echo $b)
    echo "== lineitem 10gbit none,auto $b round $round $(date -u +%H:%M:%S)"
    $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --modes none,auto --runs 1 --json > $out/li-$b-r2-$round.json 2> $out/li-$b-r2-$round.log
    tail -n +2 $out/li-$b-r2-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
for round in 1 2; do
  for b in old nextrun v3; do
    bin=/tmp/runs/wireload-$([ $b = old ] && echo min16 || echo $b)
    echo "== wide 1gbit all,auto $b round $round $(date -u +%H:%M:%S)"
    $bin bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes all,auto --runs 1 --json > $out/wide-$b-r2-$round.json 2> $out/wide-$b-r2-$round.log
    tail -n +2 $out/wide-$b-r2-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
echo "== done $(date -u +%H:%M:%S)"
