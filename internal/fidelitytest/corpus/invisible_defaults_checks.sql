-- title: INVISIBLE columns (ordinary, with a default, in a key), DEFAULT expressions (functions, other columns, CURRENT_TIMESTAMP with precision), column and table CHECK constraints, named and unnamed
-- source: MariaDB server mysql-test/main/invisible_field.test, main/default.test, main/check_constraint.test; mydumper issue #273 (columns defaulting to CURRENT_TIMESTAMP left out of the dump)
CREATE TABLE inv (
  id INT PRIMARY KEY,
  a INT,
  h INT INVISIBLE,
  hd VARCHAR(10) INVISIBLE DEFAULT 'hidden',
  hk INT INVISIBLE,
  KEY (hk)
) ENGINE=InnoDB;
INSERT INTO inv (id, a, h, hd, hk) VALUES (1, 1, 10, 'x', 100), (2, 2, NULL, DEFAULT, 200);
INSERT INTO inv VALUES (3, 3);
CREATE TABLE dflt (
  id INT PRIMARY KEY,
  a INT DEFAULT 7,
  b INT DEFAULT (a + 1),
  c VARCHAR(40) DEFAULT (CONCAT('v', 1 + 1)),
  d DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3),
  e DATE DEFAULT (CURDATE() - INTERVAL 1 DAY),
  f BLOB DEFAULT (REPEAT('x', 3)),
  g DOUBLE DEFAULT (PI()),
  h TIMESTAMP NULL DEFAULT NULL
) ENGINE=InnoDB;
INSERT INTO dflt (id, d, e) VALUES (1, '2020-01-01 00:00:00.123', '2020-01-01');
INSERT INTO dflt (id, a, d, e) VALUES (2, 41, '2021-01-01 00:00:00', '2021-01-01');
CREATE TABLE chk (
  id INT PRIMARY KEY,
  a INT CHECK (a > 0),
  b INT,
  c VARCHAR(10) CHECK (c <> ''),
  CONSTRAINT c_short CHECK (CHAR_LENGTH(c) < 5),
  CONSTRAINT a_lt_b CHECK (a < b OR b IS NULL),
  CHECK (id BETWEEN 1 AND 1000)
) ENGINE=InnoDB;
INSERT INTO chk VALUES (1, 1, 2, 'x'), (2, 5, NULL, NULL);
