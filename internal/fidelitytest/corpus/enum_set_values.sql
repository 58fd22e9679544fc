-- title: ENUM error value (index 0) next to an empty-string member, SET with an empty member and every member
-- source: MariaDB server mysql-test/main/type_enum.test and main/type_set.test; backstream issue 21 item 2
SET SESSION sql_mode = '';
CREATE TABLE e (
  id INT PRIMARY KEY,
  a ENUM('', 'x', 'y'), b ENUM('x', 'y') NOT NULL, c SET('', 'p', 'q')
) ENGINE=InnoDB;
INSERT INTO e VALUES (1, 'bogus', 'bogus', 'p,q'), (2, '', 'x', ''), (3, 'x', 'y', 'q'), (4, NULL, 'y', NULL);
