-- title: multibyte East Asian character sets whose second byte can be 0x5C (backslash) or 0x27/0x60-range lookalikes: sjis, cp932, gbk, big5, plus ujis, eucjpms, euckr and gb2312
-- source: MariaDB server mysql-test/main/ctype_sjis.test, main/ctype_cp932_binlog_stm.test, main/ctype_gbk.test, main/ctype_big5.test, main/ctype_ujis.test, main/ctype_euckr.test, main/ctype_gb2312.test; MySQL bug #8378 (SQL injection through multibyte 0x5C trail bytes, escaped wrongly by a client)
CREATE TABLE ea (
  id INT PRIMARY KEY,
  sj VARCHAR(50) CHARACTER SET sjis,
  c932 VARCHAR(50) CHARACTER SET cp932,
  gb VARCHAR(50) CHARACTER SET gbk,
  b5 VARCHAR(50) CHARACTER SET big5,
  uj VARCHAR(50) CHARACTER SET ujis,
  ej VARCHAR(50) CHARACTER SET eucjpms,
  kr VARCHAR(50) CHARACTER SET euckr,
  g2 VARCHAR(50) CHARACTER SET gb2312
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- Characters whose trail byte is 0x5C: sjis 0x955C 0x835C 0x8D5C, cp932
-- 0x815C 0x875C (NEC extension), gbk 0x815C 0xD55C, big5 0xA45C 0xA55C;
-- each followed by a real backslash, a quote and a tab.
INSERT INTO ea (id, sj, c932, gb, b5) VALUES
  (1, CONCAT(_sjis 0x955C835C8D5C, '\\''\t'), CONCAT(_cp932 0x815C875C, '\\''\t'), CONCAT(_gbk 0x815CD55C, '\\''\t'), CONCAT(_big5 0xA45CA55C, '\\''\t')),
  (2, _sjis 0x5C, _cp932 0x5C, _gbk 0x5C, _big5 0x5C),
  (3, _sjis 0x955C, _cp932 0x955C, _gbk 0xD55C, _big5 0xA55C);
INSERT INTO ea (id, sj, c932, gb, b5, uj, ej, kr, g2) VALUES
  (4, '表示 ソフト', '①Ⅰ㈱', '中文简体 誠', '中文繁體 許功蓋', 'ひらがな カタカナ', '髙﨑 ①', '한국어 텍스트', '简体中文'),
  (5, '', '', '', '', '', '', '', ''),
  (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- A table whose default charset is sjis, and a column name in it.
CREATE TABLE `表` (`列` INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB DEFAULT CHARSET=sjis;
INSERT INTO `表` VALUES (1, _sjis 0x955C5C), (2, 'ソ');
