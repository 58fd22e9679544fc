-- title: VIRTUAL and PERSISTENT (STORED) generated columns, indexes on virtual columns, a generated column between ordinary ones, generated columns in MyISAM and Aria
-- source: MariaDB server mysql-test/suite/gcol/t/gcol_keys_innodb.test, suite/vcol/t/vcol_misc.test; mydumper issue #175 (a dump that loads values into generated columns), mydumper issue #395 (FK on a base column of a stored column)
CREATE TABLE p (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO p VALUES (1), (2);
CREATE TABLE gc (
  id INT PRIMARY KEY,
  a INT,
  v INT AS (a * 2) VIRTUAL,
  b VARCHAR(20),
  s VARCHAR(40) AS (CONCAT(b, '-', a)) PERSISTENT,
  st INT GENERATED ALWAYS AS (a + 1) STORED,
  u VARCHAR(20) AS (UPPER(b)) VIRTUAL,
  pid INT,
  ps VARCHAR(30) AS (CONCAT('parent ', pid)) STORED,
  KEY (v), UNIQUE KEY (s), KEY (u(5)),
  FOREIGN KEY (pid) REFERENCES p (id)
) ENGINE=InnoDB;
INSERT INTO gc (id, a, b, pid) VALUES (1, 1, 'x', 1), (2, NULL, 'y', 2), (3, -5, NULL, NULL), (4, 1000000000, 'ünï', 1);
CREATE TABLE gcm (id INT PRIMARY KEY, a INT, v INT AS (a - 1) VIRTUAL, s INT AS (a * a) PERSISTENT, KEY (s)) ENGINE=MyISAM;
INSERT INTO gcm (id, a) VALUES (1, 3), (2, NULL);
CREATE TABLE gca (id INT PRIMARY KEY, a INT, v INT AS (a - 1) VIRTUAL, s INT AS (a + 1) PERSISTENT, KEY (s)) ENGINE=Aria;
INSERT INTO gca (id, a) VALUES (1, 3), (2, NULL);
