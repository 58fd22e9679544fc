-- title: sequences: CYCLE, a negative increment, a used sequence (its next value moved), CACHE 0 and a large cache, MINVALUE/MAXVALUE at the extremes, a sequence on Aria and on MyISAM, a table whose DEFAULT is NEXT VALUE FOR a sequence
-- source: MariaDB server mysql-test/suite/sql_sequence/create.test, suite/sql_sequence/next.test, suite/sql_sequence/mysqldump.test, suite/sql_sequence/default.test, suite/sql_sequence/aria.test; mydumper issue #1338 (a table whose default reads a sequence restored before the sequence)
CREATE SEQUENCE s_cycle START WITH 1 MINVALUE 1 MAXVALUE 3 INCREMENT BY 1 CYCLE CACHE 2;
SELECT NEXTVAL(s_cycle), NEXTVAL(s_cycle), NEXTVAL(s_cycle), NEXTVAL(s_cycle);
CREATE SEQUENCE s_down START WITH -10 INCREMENT BY -5 MINVALUE -9223372036854775807 MAXVALUE -1 NOCACHE;
SELECT NEXTVAL(s_down), NEXTVAL(s_down);
CREATE SEQUENCE s_big START WITH 9223372036854775000 MAXVALUE 9223372036854775806 CACHE 1000;
SELECT SETVAL(s_big, 9223372036854775100);
CREATE SEQUENCE s_aria ENGINE=Aria;
CREATE SEQUENCE s_myisam INCREMENT BY 7 ENGINE=MyISAM;
SELECT NEXTVAL(s_myisam);
CREATE SEQUENCE s_default START WITH 100 INCREMENT BY 10;
CREATE TABLE t_seq (id INT NOT NULL DEFAULT NEXT VALUE FOR s_default PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB;
INSERT INTO t_seq (v) VALUES ('a'), ('b');
INSERT INTO t_seq VALUES (1, 'explicit');
