#!/bin/bash
# Interleaved: the build with dictionary runs (new, 777a38a) and the one before (old, 36134c3).
cd /work/main
cp target/release/wireload /tmp/runs/wireload-new
cp /tmp/cleanci-target/release/wireload /tmp/runs/wireload-old
for round in 1 2 3; do
  for b in new old; do
    echo "== round $round $b $(date -u +%H:%M:%S)"
    /tmp/runs/wireload-$b bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,pipe --runs 1 --json > /tmp/runs/li-q-$b-$round.json 2> /tmp/runs/li-q-$b-$round.log
    tail -n +2 /tmp/runs/li-q-$b-$round.log | grep -E "^(SL_A|PIPE|queries)|slowest"
  done
done
