#!/bin/bash
# `auto` in the two cells where it trailed the best static mode, three builds interleaved:
# old = 32aa66c (the merger waited for rows past a client's next partition); nextrun = the
# wait bounded by that partition; v2 = that, plus text windows in blocks a partition long
# and steps that never mix plain fragments with a client's coded ones.
out=$(cd "$(dirname "$0")" && pwd)
cd /work/main
for round in 1 2; do
  for b in old nextrun v2; do
    bin=/tmp/runs/wireload-$([ $b = old ] && echo min16 || echo $b)
    echo "== lineitem 10gbit none,auto $b round $round $(date -u +%H:%M:%S)"
    $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --modes none,auto --runs 1 --json > $out/li-$b-$round.json 2> $out/li-$b-$round.log
    tail -n +2 $out/li-$b-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
for round in 1 2; do
  for b in old nextrun v2; do
    bin=/tmp/runs/wireload-$([ $b = old ] && echo min16 || echo $b)
    echo "== wide 1gbit all,auto $b round $round $(date -u +%H:%M:%S)"
    $bin bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes all,auto --runs 1 --json > $out/wide-$b-$round.json 2> $out/wide-$b-$round.log
    tail -n +2 $out/wide-$b-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
echo "== done $(date -u +%H:%M:%S)"
