#!/bin/bash
# Interleaved rounds of the lineitem cell at 10 Gbit/s with queries: 2e5b62c (new: codes
# checked with a flag per code, payloads decoded in place, 1 MiB HTTP/2 frames) against
# b1be578 (old: the build of "A pushed partition becomes a dictionary run as it is").
# usage: ab.sh ROUNDS
out=$(dirname "$0")
cd /work/main
for round in $(seq "$1"); do
  for b in new old; do
    bin=/tmp/runs/wireload-$([ $b = new ] && echo 2e5b62c || echo final)
    echo "== round $round $b $(date -u +%H:%M:%S)"
    $bin bench shared --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,pipe --runs 1 --json > $out/li-q-$b-$round.json 2> $out/li-q-$b-$round.log
    tail -n +2 $out/li-q-$b-$round.log | grep -E "^(SL_A|PIPE|queries)|slowest Q|server steps"
  done
done
