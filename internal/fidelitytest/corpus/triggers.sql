-- title: triggers: several on one event ordered with FOLLOWS and PRECEDES, BEFORE and AFTER on INSERT, UPDATE and DELETE, a trigger created under a different sql_mode than the session's, a body with semicolons, quotes and a comment, a trigger writing to another table
-- source: MariaDB server mysql-test/main/trigger.test; MDEV-6112 (multiple triggers per event, FOLLOWS/PRECEDES); main/mysqldump.test (Bug #16878 triggers dumped with the sql_mode they were created under)
CREATE TABLE t (id INT PRIMARY KEY, v INT, note VARCHAR(100)) ENGINE=InnoDB;
CREATE TABLE audit_log (n INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100)) ENGINE=InnoDB;
DELIMITER //
CREATE TRIGGER t_bi_1 BEFORE INSERT ON t FOR EACH ROW
BEGIN
  -- a comment; with a semicolon
  SET NEW.note = CONCAT(IFNULL(NEW.note, ''), '[1]');
END//
CREATE TRIGGER t_bi_3 BEFORE INSERT ON t FOR EACH ROW FOLLOWS t_bi_1
  SET NEW.note = CONCAT(NEW.note, '[3]')//
CREATE TRIGGER t_bi_2 BEFORE INSERT ON t FOR EACH ROW PRECEDES t_bi_3
  SET NEW.note = CONCAT(NEW.note, '[2 ''quoted'' "dq"]')//
CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW
  INSERT INTO audit_log (what) VALUES (CONCAT('insert ', NEW.id))//
CREATE TRIGGER t_bu BEFORE UPDATE ON t FOR EACH ROW
  IF NEW.v < 0 THEN SET NEW.v = 0; END IF//
CREATE TRIGGER t_ad AFTER DELETE ON t FOR EACH ROW
  INSERT INTO audit_log (what) VALUES (CONCAT('delete ', OLD.id))//
DELIMITER ;
SET SESSION sql_mode = 'ANSI_QUOTES,PIPES_AS_CONCAT';
CREATE TRIGGER "t_au" AFTER UPDATE ON "t" FOR EACH ROW
  INSERT INTO audit_log (what) VALUES ('update ' || OLD.id || '->' || NEW.v);
SET SESSION sql_mode = DEFAULT;
INSERT INTO t (id, v) VALUES (1, 10), (2, 20), (3, 30);
UPDATE t SET v = -1 WHERE id = 2;
DELETE FROM t WHERE id = 3;
