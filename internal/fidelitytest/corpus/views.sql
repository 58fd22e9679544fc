-- title: views: nested three deep, WITH CASCADED and LOCAL CHECK OPTION, ALGORITHM=TEMPTABLE and MERGE, SQL SECURITY INVOKER, a definer account that does not exist, column aliases with odd characters, a view over a stored function, a view over a UNION
-- source: MariaDB server mysql-test/main/view.test, main/view_grant.test (definers), main/mysqldump.test (Bug #9657 views dumped in dependency order, Bug #27293 views on views); mysql-test/main/mysqldump-nl.test (names with newlines)
CREATE TABLE base (id INT PRIMARY KEY, v INT, s VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO base VALUES (1, 10, 'a'), (2, 20, 'b'), (3, -1, NULL);
CREATE FUNCTION twice(x INT) RETURNS INT DETERMINISTIC RETURN x * 2;
-- Created in an order unlike their names, so that a restore sorting by
-- name meets a view before the one it reads.
CREATE VIEW z_level1 AS SELECT id, v, s FROM base WHERE v > 0;
CREATE ALGORITHM=MERGE VIEW m_level2 AS SELECT id, v AS `value "quoted"`, twice(v) AS `2x` FROM z_level1 WITH CASCADED CHECK OPTION;
CREATE ALGORITHM=TEMPTABLE SQL SECURITY INVOKER VIEW a_level3 AS SELECT COUNT(*) AS n, SUM(`2x`) AS total FROM m_level2;
CREATE VIEW local_check AS SELECT * FROM z_level1 WHERE id < 100 WITH LOCAL CHECK OPTION;
CREATE DEFINER = `nobody_here`@`localhost` SQL SECURITY DEFINER VIEW orphan_definer AS SELECT id FROM base;
CREATE VIEW unioned (k, `col with space`) AS SELECT id, s FROM base UNION ALL SELECT 0, 'literal';
CREATE VIEW constant_only AS SELECT 1 AS one, 'two' AS two, NULL AS nothing;
