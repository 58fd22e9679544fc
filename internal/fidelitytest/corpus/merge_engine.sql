-- title: a MERGE (MRG_MyISAM) table over two MyISAM tables with INSERT_METHOD=LAST, rows in both underlying tables, and a MERGE over an empty UNION
-- source: MariaDB server mysql-test/main/merge.test, main/merge-big.test; main/mysqldump.test (Bug #19745 MERGE tables dumped without their rows)
CREATE TABLE m1 (id INT NOT NULL, v VARCHAR(10), KEY (id)) ENGINE=MyISAM;
CREATE TABLE m2 (id INT NOT NULL, v VARCHAR(10), KEY (id)) ENGINE=MyISAM;
INSERT INTO m1 VALUES (1, 'first'), (2, 'first');
INSERT INTO m2 VALUES (3, 'second');
CREATE TABLE mall (id INT NOT NULL, v VARCHAR(10), KEY (id)) ENGINE=MRG_MyISAM UNION=(m1, m2) INSERT_METHOD=LAST;
INSERT INTO mall VALUES (4, 'via merge');
CREATE TABLE mnone (id INT NOT NULL) ENGINE=MRG_MyISAM UNION=() INSERT_METHOD=NO;
