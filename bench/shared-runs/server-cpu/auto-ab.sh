#!/bin/bash
# `auto` in the two cells where it trailed (auto.sh), the 16-partition default against the
# former partitions (--fragments 19 for lineitem, 48 for the wide table), interleaved.
out=$(dirname "$0")
cd /work/main
for round in 1 2; do
  for f in old default; do
    echo "== lineitem 10gbit none,auto fragments $f round $round $(date -u +%H:%M:%S)"
    extra=$([ $f = default ] || echo "--fragments 19")
    /tmp/runs/wireload-min16 bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --modes none,auto --runs 1 $extra --json > $out/auto-ab-li-$f-$round.json 2> $out/auto-ab-li-$f-$round.log
    tail -n +2 $out/auto-ab-li-$f-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
for round in 1 2; do
  for f in old default; do
    echo "== wide 1gbit all,auto fragments $f round $round $(date -u +%H:%M:%S)"
    extra=$([ $f = default ] || echo "--fragments 48")
    /tmp/runs/wireload-min16 bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes all,auto --runs 1 $extra --json > $out/auto-ab-wide-$f-$round.json 2> $out/auto-ab-wide-$f-$round.log
    tail -n +2 $out/auto-ab-wide-$f-$round.log | grep -E "^(SL_|auto|PIPE)"
  done
done
echo "== done $(date -u +%H:%M:%S)"
