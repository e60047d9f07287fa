CREATE TABLE lineitem (l_orderkey BIGINT NOT NULL, l_partkey BIGINT NOT NULL, l_suppkey BIGINT NOT NULL, l_linenumber INT NOT NULL, l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber));
COPY lineitem FROM '/dev/shm/wl-sf135/lineitem.tbl' WITH (DELIMITER '|');
DELETE FROM lineitem WHERE l_shipdate = DATE '1995-06-17';
DELETE FROM lineitem WHERE l_orderkey = 7;
UPDATE lineitem SET l_linenumber = l_linenumber + 10 WHERE l_orderkey < 1000;
SELECT count(*) FROM lineitem;
