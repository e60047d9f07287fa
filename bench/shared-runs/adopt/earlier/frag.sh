#!/bin/bash
cd /work/main
for round in 1 2; do
  for f in 19 5 2; do
    echo "== round $round fragments $f $(date -u +%H:%M:%S)"
    target/release/wireload bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all --fragments $f --runs 1 --json > /tmp/pace/f$f-$round.json 2> /tmp/pace/f$f-$round.log
    tail -n +2 /tmp/pace/f$f-$round.log | grep -E "^(SL_A|PIPE|queries)|slowest"
  done
done
