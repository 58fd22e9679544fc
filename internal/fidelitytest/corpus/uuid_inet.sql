-- title: UUID, INET4 and INET6 data types: their extremes, IPv4-mapped IPv6, and indexes on them
-- source: MariaDB server plugin/type_uuid/mysql-test/type_uuid/type_uuid.test, plugin/type_inet/mysql-test/type_inet/type_inet4.test and type_inet6.test; MDEV-4958 (UUID), MDEV-274 (INET6), MDEV-23287 (INET4)
-- since: 10.10 (INET4, new in 10.10; UUID, new in 10.7)
CREATE TABLE ui (
  id INT PRIMARY KEY,
  u UUID, i4 INET4, i6 INET6,
  KEY (u), UNIQUE KEY (i6)
) ENGINE=InnoDB;
INSERT INTO ui VALUES
  (1, '00000000-0000-0000-0000-000000000000', '0.0.0.0', '::'),
  (2, 'ffffffff-ffff-ffff-ffff-ffffffffffff', '255.255.255.255', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'),
  (3, '123e4567-e89b-12d3-a456-426655440000', '192.168.0.1', '::ffff:192.168.0.1'),
  (4, '6ccd780c-baba-1026-9564-5b8c656024db', '10.0.0.255', '2001:db8::1'),
  (5, NULL, NULL, NULL);
CREATE TABLE uim (u UUID PRIMARY KEY, i6 INET6) ENGINE=MyISAM;
INSERT INTO uim SELECT u, i6 FROM ui WHERE u IS NOT NULL;
