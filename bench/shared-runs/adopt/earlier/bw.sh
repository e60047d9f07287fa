#!/bin/bash
cd /work/main
for round in 1 2; do
  for bw in 700mbit 10gbit; do
    echo "== round $round $bw $(date -u +%H:%M:%S)"
    target/release/wireload bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth $bw --queries --modes all,pipe --runs 1 --json > /tmp/pace/bw$bw-$round.json 2> /tmp/pace/bw$bw-$round.log
    tail -n +2 /tmp/pace/bw$bw-$round.log | grep -E "^(SL_A|PIPE|queries)|slowest"
  done
done
