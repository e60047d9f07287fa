BIN=$1
cols="l_orderkey BIGINT NOT NULL, l_partkey INTEGER NOT NULL, l_suppkey INTEGER NOT NULL, l_linenumber INTEGER NOT NULL, l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL"
$BIN --threads 1 serve --listen 127.0.0.1:45433 --flight-listen 127.0.0.1:45051 --trust-local > /tmp/prof-bytes.serve.log 2>&1 &
SPID=$!
for i in $(seq 100); do grep -q "is ready" /tmp/prof-bytes.serve.log && break; sleep 0.2; done
P="psql -X -q -h 127.0.0.1 -p 45433 -U x -d wireload"
head -c 100000000 /dev/shm/wl-sf1/lineitem.tbl | head -n -1 > /dev/shm/li100.tbl
for t in "ca:dictionary:copy" "cp:none:copy" "ad:dictionary:all" "nd:dictionary:none" "np:none:none"; do
  IFS=: read name comp how <<< "$t"
  $P -c "CREATE TABLE $name ($cols) WITH (COMPRESSION = $comp)"
  if [ $how = copy ]; then $P -c "COPY $name FROM '/dev/shm/li100.tbl' WITH (FORMAT csv, DELIMITER '|')"; else
  $BIN push --server http://127.0.0.1:45051 --table $name --mode $how --delimiter '|' /dev/shm/li100.tbl >/dev/null; fi
done
$P -c "SELECT table_name, sum(bytes) FROM wireload_columns GROUP BY table_name ORDER BY 1"
grep VmRSS /proc/$SPID/status
kill $SPID
