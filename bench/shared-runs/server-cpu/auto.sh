#!/bin/bash
# `auto` against the static modes with the 16-partition default (build min16), the cells
# without queries: lineitem and the wide table at 1 and 10 Gbit/s.
out=$(dirname "$0")
cd /work/main
for cell in "lineitem 1gbit size,all,auto,pipe" "wide 1gbit size,all,auto,pipe" "lineitem 10gbit none,all,auto,pipe" "wide 10gbit none,auto,pipe"; do
  set -- $cell
  data=$([ $1 = lineitem ] && echo /dev/shm/wl-sf1 || echo /dev/shm/wl-wide2)
  echo "== $1 $2 $3 $(date -u +%H:%M:%S)"
  /tmp/runs/wireload-min16 bench shared --table $1 --data $data --bandwidth $2 --modes $3 --runs 1 --json > $out/auto-$1-$2.json 2> $out/auto-$1-$2.log
  tail -n +2 $out/auto-$1-$2.log | grep -E "^(SL_|auto|PIPE)"
done
echo "== done $(date -u +%H:%M:%S)"
