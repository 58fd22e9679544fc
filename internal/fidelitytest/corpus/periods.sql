-- title: application-time periods: PERIOD FOR with DATE and TIMESTAMP(6) bounds, a UNIQUE key WITHOUT OVERLAPS, rows split by DELETE and UPDATE FOR PORTION OF
-- source: MariaDB server mysql-test/suite/period/t/create.test, suite/period/t/overlaps.test, suite/period/t/delete.test, suite/period/t/update.test; MDEV-16973 (application-time periods), MDEV-16978 (WITHOUT OVERLAPS)
CREATE TABLE booking (
  room INT,
  s DATE NOT NULL, e DATE NOT NULL,
  guest VARCHAR(20),
  PERIOD FOR stay (s, e),
  UNIQUE KEY no_double (room, stay WITHOUT OVERLAPS)
) ENGINE=InnoDB;
INSERT INTO booking VALUES (1, '2024-01-01', '2024-01-10', 'a'), (1, '2024-01-10', '2024-01-20', 'b'), (2, '2024-01-01', '2024-12-31', 'c');
DELETE FROM booking FOR PORTION OF stay FROM '2024-03-01' TO '2024-04-01' WHERE room = 2;
UPDATE booking FOR PORTION OF stay FROM '2024-01-05' TO '2024-01-07' SET guest = 'a2' WHERE room = 1;
CREATE TABLE price (
  id INT,
  vf TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00', vt TIMESTAMP(6) NOT NULL DEFAULT '2037-01-01 00:00:00',
  amount DECIMAL(10,2),
  PERIOD FOR valid (vf, vt)
) ENGINE=InnoDB;
INSERT INTO price (id, amount) VALUES (1, 9.99);
UPDATE price FOR PORTION OF valid FROM '2020-01-01 00:00:00.5' TO '2021-01-01' SET amount = 19.99;
CREATE TABLE periodm (id INT, s DATETIME NOT NULL, e DATETIME NOT NULL, PERIOD FOR p (s, e)) ENGINE=MyISAM;
INSERT INTO periodm VALUES (1, '2020-01-01 00:00:00', '2020-02-01 00:00:00');
