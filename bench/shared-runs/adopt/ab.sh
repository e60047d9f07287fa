#!/bin/bash
# Interleaved: b1be578 (adopt: a pushed partition becomes a dictionary run as it is) and 777a38a (new: dictionary runs, every partition merged).
cd /work/main
for round in 1 2 3; do
  for b in adopt new; do
    echo "== round $round $b $(date -u +%H:%M:%S)"
    /tmp/runs/wireload-$b bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,pipe --runs 1 --json > /tmp/adopt/li-q2-$b-$round.json 2> /tmp/adopt/li-q2-$b-$round.log
    tail -n +2 /tmp/adopt/li-q2-$b-$round.log | grep -E "^(SL_A|PIPE|queries)|slowest|server steps"
  done
done
