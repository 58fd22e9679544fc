-- title: stored procedures and functions: bodies written under ANSI_QUOTES, under ORACLE (PL/SQL syntax) and under the default mode; characteristics (SQL SECURITY INVOKER, READS SQL DATA, DETERMINISTIC, a COMMENT with quotes), parameters with their own charset, a definer that does not exist, an aggregate function
-- source: MariaDB server mysql-test/main/sp.test, suite/compat/oracle/t/sp.test and sp-code.test, suite/compat/oracle/t/mysqldump_restore.test (routines dumped under sql_mode=ORACLE), main/custom_aggregate_functions.test; main/mysqldump.test (Bug #11126 routines with sql_mode)
CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO t VALUES (1, 1), (2, 4);
DELIMITER //
CREATE PROCEDURE p_default(IN a INT, OUT b VARCHAR(20) CHARACTER SET latin1, INOUT c TEXT)
  COMMENT 'it''s a "comment" with \\ backslash'
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE x INT DEFAULT 0;
  SELECT SUM(v) INTO x FROM t WHERE id <= a;
  SET b = CONCAT('sum=', x), c = CONCAT(c, ';');
END//
CREATE FUNCTION f_det(s VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin) RETURNS VARCHAR(20) CHARACTER SET utf8mb4
  DETERMINISTIC NO SQL
  RETURN CONCAT('<', s, '>')//
CREATE DEFINER = `ghost`@`%` PROCEDURE p_ghost() SQL SECURITY DEFINER SELECT 1//
CREATE AGGREGATE FUNCTION agg_sum(x INT) RETURNS INT DETERMINISTIC
BEGIN
  DECLARE total INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND RETURN total;
  LOOP
    FETCH GROUP NEXT ROW;
    SET total = total + IFNULL(x, 0);
  END LOOP;
END//
DELIMITER ;
SET SESSION sql_mode = 'ANSI_QUOTES';
CREATE FUNCTION "f_ansi"(a INT) RETURNS INT DETERMINISTIC RETURN (SELECT "v" FROM "t" WHERE "id" = a);
SET SESSION sql_mode = 'ORACLE';
DELIMITER //
CREATE PROCEDURE p_oracle(a IN NUMBER, b OUT VARCHAR2) AS
  n NUMBER := 0;
BEGIN
  FOR i IN 1 .. a LOOP
    n := n + i;
  END LOOP;
  b := 'n=' || n;
EXCEPTION
  WHEN OTHERS THEN b := NULL;
END;
//
CREATE FUNCTION f_oracle(s VARCHAR2) RETURN VARCHAR2 DETERMINISTIC AS
BEGIN
  RETURN NVL(s, 'empty') || '!';
END;
//
DELIMITER ;
SET SESSION sql_mode = DEFAULT;
