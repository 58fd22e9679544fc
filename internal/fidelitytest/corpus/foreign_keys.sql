-- title: foreign keys: self-referencing, a cycle between two tables, composite keys, ON DELETE CASCADE / SET NULL / RESTRICT, ON UPDATE CASCADE, named constraints, an FK on a prefix-free unique key, rows that only load with foreign_key_checks off
-- source: MariaDB server mysql-test/main/foreign_key.test, suite/innodb/t/foreign_key.test, main/mysqldump.test (Bug #2005 FOREIGN_KEY_CHECKS in dumps)
CREATE TABLE emp (id INT PRIMARY KEY, boss INT, name VARCHAR(20),
  CONSTRAINT emp_boss FOREIGN KEY (boss) REFERENCES emp (id) ON DELETE SET NULL) ENGINE=InnoDB;
INSERT INTO emp VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 2, 'b'), (4, 4, 'self');
CREATE TABLE ca (id INT PRIMARY KEY, b_id INT) ENGINE=InnoDB;
CREATE TABLE cb (id INT PRIMARY KEY, a_id INT, CONSTRAINT cb_a FOREIGN KEY (a_id) REFERENCES ca (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB;
ALTER TABLE ca ADD CONSTRAINT ca_b FOREIGN KEY (b_id) REFERENCES cb (id) ON DELETE RESTRICT;
SET foreign_key_checks = 0;
INSERT INTO ca VALUES (1, 10), (2, 20);
INSERT INTO cb VALUES (10, 1), (20, 2);
SET foreign_key_checks = 1;
CREATE TABLE parent (a INT, b VARCHAR(10), PRIMARY KEY (a, b)) ENGINE=InnoDB;
CREATE TABLE child (id INT PRIMARY KEY, a INT, b VARCHAR(10), note TEXT,
  KEY k_ab (a, b),
  CONSTRAINT `fk child→parent` FOREIGN KEY (a, b) REFERENCES parent (a, b) ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB;
INSERT INTO parent VALUES (1, 'x'), (2, 'y');
INSERT INTO child VALUES (1, 1, 'x', 'n1'), (2, 2, 'y', NULL), (3, NULL, NULL, 'orphan allowed');
-- Rows loaded with checks off that violate a constraint: a restore must
-- keep them as they are (a dump loads with foreign_key_checks=0).
SET foreign_key_checks = 0;
INSERT INTO child VALUES (4, 9, 'z', 'dangling');
SET foreign_key_checks = 1;
