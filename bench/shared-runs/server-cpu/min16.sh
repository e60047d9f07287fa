#!/bin/bash
# Build 16-partition default (min16): the lineitem cell at 10 Gbit/s with queries (3 rounds,
# all,auto,pipe), then lineitem at 1 Gbit/s (size,all,pipe; the default against --fragments
# 19, the former default's partitions) and the wide table at 1 Gbit/s (size,pipe).
out=$(dirname "$0")
bin=/tmp/runs/wireload-min16
cd /work/main
for round in 1 2 3; do
  echo "== 10gbit queries round $round $(date -u +%H:%M:%S)"
  $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,auto,pipe --runs 1 --json > $out/min16-li-q-$round.json 2> $out/min16-li-q-$round.log
  tail -n +2 $out/min16-li-q-$round.log | grep -E "^(SL_A|auto|PIPE|queries)|slowest Q"
done
for f in default 19; do
  echo "== lineitem 1gbit fragments $f $(date -u +%H:%M:%S)"
  extra=$([ $f = default ] || echo "--fragments $f")
  $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --modes size,all,pipe --runs 1 $extra --json > $out/min16-li-1g-$f.json 2> $out/min16-li-1g-$f.log
  tail -n +2 $out/min16-li-1g-$f.log | grep -E "^(SL_|PIPE)"
done
echo "== wide 1gbit $(date -u +%H:%M:%S)"
$bin bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes size,pipe --runs 1 --json > $out/min16-wide-1g.json 2> $out/min16-wide-1g.log
tail -n +2 $out/min16-wide-1g.log | grep -E "^(SL_|PIPE)"
echo "== done $(date -u +%H:%M:%S)"
