-- title: identifiers: backticks, dots, quotes, spaces (leading), a newline, unicode and 4-byte characters, reserved words, 64-character names, names differing only in case, a column named like a type; tables, columns, keys, views and triggers named so
-- source: MariaDB server mysql-test/main/mysqldump-nl.test (names with newlines, MDEV-10754), main/mysqldump.test (Bug #2592 backticks in names), main/ctype_utf8mb4.test (4-byte names refused or kept), main/keywords.test
CREATE TABLE `we``ird` (`co``l` INT PRIMARY KEY, `dot.ted` INT, `spa ce` INT, `quo'te` INT, `dq"uote` INT) ENGINE=InnoDB;
INSERT INTO `we``ird` VALUES (1, 2, 3, 4, 5);
CREATE TABLE `dot.table` (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO `dot.table` VALUES (1);
CREATE TABLE ` lead space` (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO ` lead space` VALUES (1);
CREATE TABLE `new
line` (`col
nl` INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO `new
line` VALUES (1);
CREATE TABLE `ünïcödé_表_ñ` (`ключ` INT PRIMARY KEY, `値` VARCHAR(10), KEY `索引` (`値`)) ENGINE=InnoDB;
INSERT INTO `ünïcödé_表_ñ` VALUES (1, 'x');
CREATE TABLE `select` (`from` INT PRIMARY KEY, `where` INT, `order` INT, `key` INT, `int` VARCHAR(3), `date` INT, KEY `index` (`where`)) ENGINE=InnoDB;
INSERT INTO `select` VALUES (1, 2, 3, 4, 'int', 5);
CREATE TABLE `a234567890123456789012345678901234567890123456789012345678901234` (
  `c234567890123456789012345678901234567890123456789012345678901234` INT PRIMARY KEY,
  KEY `k234567890123456789012345678901234567890123456789012345678901234` (`c234567890123456789012345678901234567890123456789012345678901234`)
) ENGINE=InnoDB;
INSERT INTO `a234567890123456789012345678901234567890123456789012345678901234` VALUES (64);
CREATE TABLE `CaseTable` (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE `casetable` (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO `CaseTable` VALUES (1);
INSERT INTO `casetable` VALUES (2);
CREATE TABLE `percent%_under` (`%` INT PRIMARY KEY, `_` INT) ENGINE=MyISAM;
INSERT INTO `percent%_under` VALUES (1, 1);
CREATE TABLE `slash\back` (`a/b` INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO `slash\back` VALUES (1);
CREATE VIEW `view ``with`` quotes` AS SELECT `co``l` AS `out put` FROM `we``ird`;
CREATE TRIGGER `trig.ger ``x``` BEFORE INSERT ON `select` FOR EACH ROW SET NEW.`where` = NEW.`from`;
