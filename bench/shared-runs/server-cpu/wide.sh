#!/bin/bash
# The wide table at 1 Gbit/s, SL_S and PIPE, build min16: the default (16 partitions of 12
# fragments) against --fragments 48 (the former default's 4 partitions), interleaved.
out=$(dirname "$0")
cd /work/main
for round in 1 2; do
  for f in 48 default; do
    echo "== wide 1gbit fragments $f round $round $(date -u +%H:%M:%S)"
    extra=$([ $f = default ] || echo "--fragments $f")
    /tmp/runs/wireload-min16 bench shared --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --modes size,pipe --runs 1 $extra --json > $out/min16-wide-1g-$f-$round.json 2> $out/min16-wide-1g-$f-$round.log
    tail -n +2 $out/min16-wide-1g-$f-$round.log | grep -E "^(SL_|PIPE)"
  done
done
