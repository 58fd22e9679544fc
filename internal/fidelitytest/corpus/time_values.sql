-- title: TIME at both ends of its range, negative and fractional, DATETIME and TIME with every fractional precision, DATE extremes
-- source: MariaDB server mysql-test/main/type_time.test, main/type_datetime_hires.test, main/type_time_hires.test, main/type_date.test
CREATE TABLE tv (
  id INT PRIMARY KEY,
  t TIME, t1 TIME(1), t6 TIME(6), d DATE, dt DATETIME, dt3 DATETIME(3), dt6 DATETIME(6)
) ENGINE=InnoDB;
INSERT INTO tv VALUES
  (1, '-838:59:59', '-838:59:58.9', '-838:59:59.000000', '1000-01-01', '1000-01-01 00:00:00', '1000-01-01 00:00:00.001', '1000-01-01 00:00:00.000001'),
  (2, '838:59:59', '838:59:58.9', '838:59:58.999999', '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999'),
  (3, '00:00:00', '-00:00:00.1', '-00:00:00.000001', '0001-01-01', '0001-01-01 00:00:00', '2020-02-29 12:34:56.789', '1970-01-01 00:00:00.5'),
  (4, '-01:02:03', '100:00:00.5', '24:00:00.123456', '2000-02-29', '2038-01-19 03:14:08', '1969-12-31 23:59:59.999', '2262-04-11 23:47:16.854775'),
  (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE tva (id INT PRIMARY KEY, t TIME(6), dt DATETIME(6)) ENGINE=Aria;
INSERT INTO tva SELECT id, t6, dt6 FROM tv;
