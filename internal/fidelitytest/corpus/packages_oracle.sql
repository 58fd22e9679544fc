-- title: a PACKAGE and PACKAGE BODY created under sql_mode=ORACLE: public and private routines, package variables with initialisation, a function calling another, a package used by a view-free procedure outside it
-- source: MariaDB server mysql-test/suite/compat/oracle/t/sp-package.test, suite/compat/oracle/t/sp-package-mysqldump.test; MDEV-11952 (CREATE PACKAGE)
CREATE TABLE counters (name VARCHAR(20) PRIMARY KEY, n INT) ENGINE=InnoDB;
INSERT INTO counters VALUES ('a', 0);
SET SESSION sql_mode = 'ORACLE';
DELIMITER //
CREATE PACKAGE pkg AS
  FUNCTION greet(who VARCHAR2) RETURN VARCHAR2;
  PROCEDURE bump(which VARCHAR2);
END;
//
CREATE PACKAGE BODY pkg AS
  calls INT := 0;
  FUNCTION decorate(s VARCHAR2) RETURN VARCHAR2 AS
  BEGIN
    RETURN '[' || s || ']';
  END;
  FUNCTION greet(who VARCHAR2) RETURN VARCHAR2 AS
  BEGIN
    calls := calls + 1;
    RETURN decorate('hello ' || who || ' #' || calls);
  END;
  PROCEDURE bump(which VARCHAR2) AS
  BEGIN
    UPDATE counters SET n = n + 1 WHERE name = which;
  END;
BEGIN
  calls := 100;
END;
//
CREATE PACKAGE empty_spec AS
  FUNCTION one RETURN INT;
END;
//
CREATE PACKAGE BODY empty_spec AS
  FUNCTION one RETURN INT AS BEGIN RETURN 1; END;
END;
//
CREATE PROCEDURE uses_pkg AS
BEGIN
  pkg.bump('a');
END;
//
DELIMITER ;
CALL uses_pkg;
SET SESSION sql_mode = DEFAULT;
