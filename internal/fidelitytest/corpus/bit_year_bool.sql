-- title: BIT of widths 1, 8, 17 and 64 at their extremes, YEAR (0000, 1901, 2155), BOOLEAN, and BIT default values
-- source: MariaDB server mysql-test/main/type_bit.test, main/type_bit_innodb.test, main/type_year.test; main/mysqldump.test (Bug #10286 BIT columns dumped as b'...')
CREATE TABLE b (
  id INT PRIMARY KEY,
  b1 BIT(1), b8 BIT(8), b17 BIT(17), b64 BIT(64), bd BIT(5) NOT NULL DEFAULT b'10101',
  y YEAR, bo BOOLEAN
) ENGINE=InnoDB;
INSERT INTO b VALUES
  (1, b'0', b'00000000', b'0', b'0', b'0', 1901, FALSE),
  (2, b'1', b'11111111', b'11111111111111111', 0xFFFFFFFFFFFFFFFF, b'11111', 2155, TRUE),
  (3, 1, 0x5C, 0x0A0D, 0x8000000000000000, DEFAULT, 0, 127),
  (4, NULL, NULL, NULL, NULL, DEFAULT, NULL, NULL),
  (5, 0, 9, 65536, 1, 0, 2000, -128);
CREATE TABLE bm (id INT PRIMARY KEY, b3 BIT(3), b64 BIT(64), y YEAR) ENGINE=MyISAM;
INSERT INTO bm SELECT id, b17 & 7, b64, y FROM b;
