-- title: a system-versioned table whose row start and end are transaction ids (BIGINT UNSIGNED AS ROW START): a logical copy cannot carry mysql.transaction_registry, so a logical backup must refuse it, naming it
-- source: MariaDB server mysql-test/suite/versioning/t/trx_id.test, suite/versioning/t/commit_id.test; MDEV-16029 (mariadb-dump and transaction-precise history); backstream issue 21
-- paths: logical
-- refuse: fx_versioning_trx_id.trx_v
CREATE TABLE trx_v (
  id INT,
  s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START,
  e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END,
  PERIOD FOR SYSTEM_TIME (s, e)
) ENGINE=InnoDB WITH SYSTEM VERSIONING;
INSERT INTO trx_v (id) VALUES (1), (2);
UPDATE trx_v SET id = 3 WHERE id = 2;
