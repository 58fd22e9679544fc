-- title: AUTO_INCREMENT: a stored 0 (NO_AUTO_VALUE_ON_ZERO), gaps, a table counter beyond the largest value, negative values, BIGINT UNSIGNED near its end, MyISAM's per-prefix counter on the second column of a key, Aria
-- source: MariaDB server mysql-test/main/auto_increment.test, main/auto_increment_ranges_innodb.test, main/mysqldump.test (Bug #13929 NO_AUTO_VALUE_ON_ZERO kept in a dump), MyISAM multi-column AUTO_INCREMENT in main/myisam.test
SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO');
CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB AUTO_INCREMENT=1000;
INSERT INTO ai VALUES (0, 'zero'), (-5, 'negative'), (7, 'seven');
INSERT INTO ai (v) VALUES ('next');
ALTER TABLE ai AUTO_INCREMENT = 5000;
CREATE TABLE aib (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO aib VALUES (18446744073709551613);
CREATE TABLE aim (grp CHAR(3) NOT NULL, seq INT AUTO_INCREMENT, v INT, PRIMARY KEY (grp, seq)) ENGINE=MyISAM;
INSERT INTO aim (grp, v) VALUES ('a', 1), ('a', 2), ('b', 3), ('a', 4), ('b', 5);
DELETE FROM aim WHERE grp = 'a' AND seq = 3;
CREATE TABLE aia (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=Aria AUTO_INCREMENT=42;
INSERT INTO aia (v) VALUES (1), (2);
INSERT INTO aia VALUES (0, 0);
CREATE TABLE aie (id SMALLINT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB AUTO_INCREMENT=32000;
