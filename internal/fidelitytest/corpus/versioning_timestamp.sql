-- title: system-versioned tables (timestamp-based): implicit and explicit ROW START/ROW END columns, invisible and visible, history rows from updates and deletes, a column WITHOUT SYSTEM VERSIONING, versioning on MyISAM
-- source: MariaDB server mysql-test/suite/versioning/t/create.test, suite/versioning/t/select.test, suite/versioning/t/update.test, suite/versioning/t/delete.test; MDEV-16029 (mariadb-dump --dump-history, history rows lost by a dump)
-- logical-since: 10.11 (loading history rows needs system_versioning_insert_history, new in 10.11)
SET @@system_versioning_alter_history = KEEP;
CREATE TABLE implicit_v (id INT PRIMARY KEY, v INT) ENGINE=InnoDB WITH SYSTEM VERSIONING;
INSERT INTO implicit_v VALUES (1, 1), (2, 2);
UPDATE implicit_v SET v = 10 WHERE id = 1;
DELETE FROM implicit_v WHERE id = 2;
CREATE TABLE explicit_v (
  id INT PRIMARY KEY,
  v VARCHAR(10),
  untracked INT WITHOUT SYSTEM VERSIONING,
  rs TIMESTAMP(6) GENERATED ALWAYS AS ROW START,
  re TIMESTAMP(6) GENERATED ALWAYS AS ROW END,
  PERIOD FOR SYSTEM_TIME (rs, re)
) ENGINE=InnoDB WITH SYSTEM VERSIONING;
INSERT INTO explicit_v (id, v, untracked) VALUES (1, 'a', 0), (2, 'b', 0);
UPDATE explicit_v SET v = 'a2' WHERE id = 1;
UPDATE explicit_v SET untracked = 5 WHERE id = 2;
UPDATE explicit_v SET v = 'a3' WHERE id = 1;
CREATE TABLE invisible_v (
  id INT,
  rs TIMESTAMP(6) GENERATED ALWAYS AS ROW START INVISIBLE,
  re TIMESTAMP(6) GENERATED ALWAYS AS ROW END INVISIBLE,
  PERIOD FOR SYSTEM_TIME (rs, re)
) ENGINE=InnoDB WITH SYSTEM VERSIONING;
INSERT INTO invisible_v VALUES (1), (2);
DELETE FROM invisible_v WHERE id = 1;
CREATE TABLE myisam_v (id INT, v INT) ENGINE=MyISAM WITH SYSTEM VERSIONING;
INSERT INTO myisam_v VALUES (1, 1);
UPDATE myisam_v SET v = 2;
