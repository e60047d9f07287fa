#!/bin/bash
# The lineitem cell at 10 Gbit/s with queries, build 2e5b62c, partitions of 10 and 5
# fragments (--fragments; the default makes 4 partitions of 19), interleaved.
out=$(dirname "$0")
cd /work/main
for round in 1 2 3; do
  for n in 10 5; do
    echo "== round $round fragments $n $(date -u +%H:%M:%S)"
    /tmp/runs/wireload-2e5b62c bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,pipe --runs 1 --fragments $n --json > $out/li-q-f$n-$round.json 2> $out/li-q-f$n-$round.log
    tail -n +2 $out/li-q-f$n-$round.log | grep -E "^(SL_A|PIPE|queries)|slowest Q|server steps"
  done
done
