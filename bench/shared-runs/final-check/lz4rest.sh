#!/bin/bash
# The LZ4 cells not run with auto's LZ4 rule (b18e9a7): lineitem at 10 Gbit/s, and the cells
# with queries; one run each.
out=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/runs/wireload-b18e9a7
run() {
  local name=$1; shift
  echo "== $name $* $(date -u +%H:%M:%S)"
  $bin bench shared "$@" --lz4 --runs 1 --json > $out/$name.json 2> $out/$name.log
  tail -n +2 $out/$name.log | grep -E "^(SL_|auto|PIPE)"
}
run rest-li10g --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --modes all,none,auto
run rest-li10g-q --table lineitem --data /dev/shm/wl-sf1 --bandwidth 10gbit --queries --modes all,auto
run rest-li1g-q --table lineitem --data /dev/shm/wl-sf1 --bandwidth 1gbit --queries --modes all,auto
run rest-wide10g-q --table wide --data /dev/shm/wl-wide2 --bandwidth 10gbit --queries --modes all,auto
run rest-wide1g-q --table wide --data /dev/shm/wl-wide2 --bandwidth 1gbit --queries --modes all,auto
echo "== done $(date -u +%H:%M:%S)"
