-- title: DATE, DATETIME and TIMESTAMP values with a zero month or day, and zero dates, stored by a permissive server
-- source: MariaDB server mysql-test/main/type_date.test and main/mysqldump.test (zero dates); backstream issue 21 item 1
SET SESSION sql_mode = '';
CREATE TABLE d (
  id INT PRIMARY KEY,
  dt DATE, dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL
) ENGINE=InnoDB;
INSERT INTO d VALUES
  (1, '2020-00-15', '2020-02-00 10:00:00', '0000-00-00 12:00:00.123456', '0000-00-00 00:00:00'),
  (2, '0001-00-00', '0000-01-01 00:00:00', '2020-00-00 00:00:00.000001', '2038-01-19 03:14:07'),
  (3, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', NULL),
  (4, '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01');
CREATE TABLE dm (id INT PRIMARY KEY, dt DATE, dtm DATETIME) ENGINE=MyISAM;
INSERT INTO dm SELECT id, dt, dtm FROM d;
