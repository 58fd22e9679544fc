-- title: a transaction-precise system-versioned table (BIGINT UNSIGNED ROW START/END) with history rows: a physical copy keeps mysql.transaction_registry with it, so AS OF TRANSACTION still resolves after a restore
-- source: MariaDB server mysql-test/suite/versioning/t/trx_id.test, suite/versioning/t/commit_id.test; suite/mariabackup/full_backup.test (a physical copy restores every system table)
-- paths: physical
CREATE TABLE trx_p (
  id INT,
  s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START,
  e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END,
  PERIOD FOR SYSTEM_TIME (s, e)
) ENGINE=InnoDB WITH SYSTEM VERSIONING;
INSERT INTO trx_p (id) VALUES (1), (2);
UPDATE trx_p SET id = 3 WHERE id = 2;
DELETE FROM trx_p WHERE id = 1;
