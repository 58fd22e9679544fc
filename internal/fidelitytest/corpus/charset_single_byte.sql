-- title: every single-byte character set family, each with its upper half (0x80-0xFF) stored, binary and case-insensitive collations side by side, a per-column charset differing from the table's
-- source: MariaDB server mysql-test/main/ctype_latin1.test, main/ctype_latin2.test, main/ctype_cp1251.test, main/ctype_koi8r.test, main/ctype_many.test (one column per charset, converted both ways)
CREATE TABLE sb (
  id INT PRIMARY KEY,
  l1 VARCHAR(300) CHARACTER SET latin1 COLLATE latin1_swedish_ci,
  l1b VARCHAR(300) CHARACTER SET latin1 COLLATE latin1_bin,
  l1g VARCHAR(300) CHARACTER SET latin1 COLLATE latin1_german2_ci,
  l2 VARCHAR(300) CHARACTER SET latin2,
  w1250 VARCHAR(300) CHARACTER SET cp1250,
  w1251 VARCHAR(300) CHARACTER SET cp1251,
  w1256 VARCHAR(300) CHARACTER SET cp1256,
  w1257 VARCHAR(300) CHARACTER SET cp1257,
  k8r VARCHAR(300) CHARACTER SET koi8r,
  k8u VARCHAR(300) CHARACTER SET koi8u,
  grk VARCHAR(300) CHARACTER SET greek,
  heb VARCHAR(300) CHARACTER SET hebrew,
  l5 VARCHAR(300) CHARACTER SET latin5,
  l7 VARCHAR(300) CHARACTER SET latin7,
  c850 VARCHAR(300) CHARACTER SET cp850,
  c852 VARCHAR(300) CHARACTER SET cp852,
  c866 VARCHAR(300) CHARACTER SET cp866,
  tis VARCHAR(300) CHARACTER SET tis620,
  arm VARCHAR(300) CHARACTER SET armscii8,
  geo VARCHAR(300) CHARACTER SET geostd8,
  mce VARCHAR(300) CHARACTER SET macce,
  mro VARCHAR(300) CHARACTER SET macroman,
  kbc VARCHAR(300) CHARACTER SET keybcs2,
  d8 VARCHAR(300) CHARACTER SET dec8,
  hp VARCHAR(300) CHARACTER SET hp8,
  sw VARCHAR(300) CHARACTER SET swe7,
  ascii7 VARCHAR(300) CHARACTER SET ascii
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Row 1: every byte from 0x20 to 0xFF in the charsets where they are all
-- characters; 7-bit only for swe7 and ascii.
SET @hi = UNHEX(CONCAT('202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F',
  '404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F',
  '606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E',
  'A0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBF',
  'C0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDF',
  'E0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF'));
SET @lo = UNHEX('000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F7F');
INSERT INTO sb (id, l1, l1b, l1g, l2, w1251, k8r, k8u, l5, c850, c852, c866, mce, mro, kbc, d8, hp)
  SELECT 1, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi, @hi;
UPDATE sb SET sw = _swe7 0x5D5B5C7C7D7B40607E, ascii7 = @lo WHERE id = 1;
-- Row 2: real text in each script, given as UTF-8 and converted on insert.
INSERT INTO sb (id, l1, l1b, l1g, l2, w1250, w1251, w1256, w1257, k8r, k8u, grk, heb, l5, l7, tis, arm, geo) VALUES
  (2, 'Ærøskøbing Ñandú ß ÿ', 'ÆRØ æøå', 'Straße Öl', 'Łódź Żółć', 'Příliš žluťoučký', 'Съешь же ещё', 'مرحبا بالعالم', 'Ąžuolas ėjo', 'Привет мир', 'Ґанок їжак', 'Καλημέρα κόσμε', 'שלום עולם', 'Şişli Ğ ı İ', 'Rīga Ņ', 'สวัสดี', 'Բարեւ', 'გამარჯობა');
INSERT INTO sb (id, l1, l1b) VALUES (3, 'case', 'CASE'), (4, 'CASE', 'case'), (5, '', ''), (6, NULL, ' ');
