-- title: events: recurring with STARTS and ENDS, one-shot AT in the far future, DISABLE, DISABLE ON SLAVE, ON COMPLETION PRESERVE and NOT PRESERVE, a comment with quotes, a body of several statements, created under a non-default sql_mode and time zone
-- source: MariaDB server mysql-test/main/events_1.test, main/events_2.test, main/mysqldump.test (Bug #16853 events dumped with their sql_mode and time zone), suite/compat/oracle/t/events.test
CREATE TABLE ticks (n INT AUTO_INCREMENT PRIMARY KEY, at DATETIME) ENGINE=InnoDB;
SET SESSION time_zone = '+05:30';
CREATE EVENT ev_recurring ON SCHEDULE EVERY 1 HOUR STARTS '2030-01-01 00:00:00' ENDS '2037-01-01 00:00:00'
  ON COMPLETION PRESERVE DISABLE COMMENT 'every hour, "quoted" and it''s'
  DO INSERT INTO ticks (at) VALUES (NOW());
CREATE EVENT ev_once ON SCHEDULE AT '2037-12-31 23:59:59' ON COMPLETION NOT PRESERVE ENABLE
  DO DELETE FROM ticks;
CREATE EVENT ev_slave ON SCHEDULE EVERY 5 MINUTE STARTS '2030-06-01 12:00:00' DISABLE ON SLAVE
  DO INSERT INTO ticks (at) VALUES (NOW());
SET SESSION time_zone = '+00:00';
SET SESSION sql_mode = 'ANSI_QUOTES,NO_ZERO_DATE';
DELIMITER //
CREATE EVENT "ev_body" ON SCHEDULE EVERY 1 DAY STARTS '2031-01-01 03:00:00' ON COMPLETION PRESERVE DISABLE
DO BEGIN
  INSERT INTO "ticks" ("at") VALUES ('2031-01-01 00:00:00');
  DELETE FROM "ticks" WHERE "n" < 0;
END//
DELIMITER ;
SET SESSION sql_mode = DEFAULT;
