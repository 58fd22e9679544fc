-- title: TIMESTAMP values written from sessions at extreme UTC offsets (-12:00 and +13:00) and near the range's ends, fractional TIMESTAMP(6), DEFAULT and ON UPDATE CURRENT_TIMESTAMP, a constant TIMESTAMP default given in local time
-- source: MariaDB server mysql-test/main/type_timestamp.test, main/timezone2.test, main/mysqldump.test (--tz-utc); MDEV-16684 (wrong timestamps on restore of a dump); mydumper issue #102 (a TIMESTAMP default written in local time)
SET SESSION time_zone = '-12:00';
CREATE TABLE ts (
  id INT PRIMARY KEY,
  a TIMESTAMP NULL DEFAULT NULL,
  f TIMESTAMP(6) NULL DEFAULT NULL,
  c TIMESTAMP NOT NULL DEFAULT '1969-12-31 12:00:01',
  u TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP
) ENGINE=InnoDB;
INSERT INTO ts (id, a, f, u) VALUES
  (1, '1969-12-31 12:00:01', '1969-12-31 12:00:00.000001', '2001-02-03 04:05:06'),
  (2, '2038-01-18 15:14:07', '2038-01-18 15:14:07.999999', '2021-03-28 01:30:00');
SET SESSION time_zone = '+13:00';
INSERT INTO ts (id, a, f, u) VALUES
  (3, '2038-01-19 16:14:07', '2021-10-31 02:30:00.5', '2021-10-31 02:30:00'),
  (4, NULL, NULL, '1999-12-31 23:59:59');
SET SESSION time_zone = '+00:00';
INSERT INTO ts (id, a, f, c, u) VALUES (5, '2000-01-01 00:00:00', '2000-01-01 00:00:00.123', '2000-01-01 00:00:00', '2000-01-01 00:00:00');
CREATE TABLE tsm (id INT PRIMARY KEY, a TIMESTAMP NULL DEFAULT NULL) ENGINE=MyISAM;
INSERT INTO tsm SELECT id, a FROM ts;
