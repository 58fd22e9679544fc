-- title: system-versioned tables partitioned BY SYSTEM_TIME: LIMIT with history spread over several history partitions, INTERVAL with a STARTS, AUTO partitions
-- source: MariaDB server mysql-test/suite/versioning/t/partition.test, suite/versioning/t/partition_rotation.test; MDEV-17554 (AUTO partitions)
-- logical-since: 10.11 (loading history rows needs system_versioning_insert_history, new in 10.11)
-- since: 10.9 (AUTO partitions BY SYSTEM_TIME, new in 10.9)
SET @@system_versioning_alter_history = KEEP;
CREATE TABLE by_limit (id INT, v INT) ENGINE=InnoDB WITH SYSTEM VERSIONING
  PARTITION BY SYSTEM_TIME LIMIT 2 (PARTITION h1 HISTORY, PARTITION h2 HISTORY, PARTITION cur CURRENT);
INSERT INTO by_limit VALUES (1, 0), (2, 0);
UPDATE by_limit SET v = v + 1;
UPDATE by_limit SET v = v + 1;
UPDATE by_limit SET v = v + 1;
CREATE TABLE by_interval (id INT) ENGINE=InnoDB WITH SYSTEM VERSIONING
  PARTITION BY SYSTEM_TIME INTERVAL 1 YEAR STARTS '2000-01-01 00:00:00' PARTITIONS 3;
INSERT INTO by_interval VALUES (1), (2);
DELETE FROM by_interval WHERE id = 2;
CREATE TABLE by_auto (id INT) ENGINE=InnoDB WITH SYSTEM VERSIONING
  PARTITION BY SYSTEM_TIME INTERVAL 1 MONTH STARTS '2020-01-01 00:00:00' AUTO;
INSERT INTO by_auto VALUES (1);
UPDATE by_auto SET id = 2;
