-- title: utf8mb3 and utf8mb4 (4-byte supplementary characters, combining sequences, zero-width and bidi controls), ucs2, utf16, utf16le and utf32 with surrogate pairs; unicode collations (general, bin, unicode_520, uca1400 with pad and nopad)
-- source: MariaDB server mysql-test/main/ctype_utf8mb4.test, main/ctype_ucs.test, main/ctype_utf16.test, main/ctype_utf16le.test, main/ctype_utf32.test, main/ctype_uca.test; MDEV-27009 (uca1400 collations)
-- since: 10.10 (the uca1400 collations, new in 10.10)
CREATE TABLE u (
  id INT PRIMARY KEY,
  m3 VARCHAR(100) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci,
  m4 VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  m4u TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci,
  m4n VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci,
  m4p VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_nopad_as_cs,
  u2 VARCHAR(100) CHARACTER SET ucs2,
  u16 VARCHAR(100) CHARACTER SET utf16 COLLATE utf16_bin,
  u16le VARCHAR(100) CHARACTER SET utf16le,
  u32 VARCHAR(100) CHARACTER SET utf32 COLLATE utf32_unicode_ci,
  c32 CHAR(5) CHARACTER SET utf32
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO u VALUES
  (1, 'Ünïcödé ñ €', '😀🎉𝄞𠜎 emoji and astral', '𝒜𝒷𝒸 math script', 'e\u0301 vs é', 'A a ', 'ĀĂĄ ucs2 BMP only', '𐐷 surrogate 😀', '𐐷 le 𝄞', '𝄞 utf32 😀', '𝄞😀'),
  (2, 'zero​width and ‏rtl‎ marks', 'combining: é ñ ǖ', 'Ä\r\n\tcontrol', 'ＦＵＬＬＷＩＤＴＨ', 'ß', 'ﬀ', '\0nul', 'ß', '\\', ' '),
  (3, '', '', '', '', '', '', '', '', '', ''),
  (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- Raw code units: a supplementary character given as its UTF-16 surrogate
-- pair and its UTF-32 code point.
INSERT INTO u (id, u16, u32, m4) VALUES (5, _utf16 0xD83DDE00, _utf32 0x0001F600, _utf8mb4 0xF09F9880);
-- A column charset per table too: a utf16 table with a latin1 column.
CREATE TABLE u16t (id INT PRIMARY KEY, a VARCHAR(20), b VARCHAR(20) CHARACTER SET latin1) ENGINE=InnoDB DEFAULT CHARSET=utf16;
INSERT INTO u16t VALUES (1, '𝄞 x', 'Ä'), (2, '', '');
