-- title: trailing spaces and padding: CHAR (stripped, kept with PAD_CHAR_TO_FULL_LENGTH), VARCHAR and TEXT keep them, BINARY padded with 0x00, VARBINARY trailing zeros; tabs, newlines, backslashes and the text "\N" and "NULL" next to real NULLs
-- source: MariaDB server mysql-test/main/type_varchar.test, main/type_binary.test, main/mysqldump.test (Bug #1707 tab and newline in data, Bug #13926 trailing spaces); mydumper issue #1112 and PR #1287 (hex-blob and LOAD DATA escaping)
CREATE TABLE pad (
  id INT PRIMARY KEY,
  c CHAR(10), vc VARCHAR(20), t TEXT, b BINARY(6), vb VARBINARY(20), ch CHAR(3) CHARACTER SET binary
) ENGINE=InnoDB;
INSERT INTO pad VALUES
  (1, 'a  ', 'a  ', 'a  ', 'a', 'a\0\0', 'a'),
  (2, '  lead', '  lead', '  lead', '\0\0x', '\0', '\0'),
  (3, '', '', '', '', '', ''),
  (4, 'tab\there', 'nl\nhere', 'cr\rlf\r\n', 'x\ty', '\\', '\\\\'),
  (5, '\\N', '\\N', 'NULL', 'NULL', '\\N', 'N'),
  (6, NULL, NULL, NULL, NULL, NULL, NULL),
  (7, 'quote''s', '"dq"', '`bt`', '''', '"', '`'),
  (8, ' ', '          ', ' \t ', '      ', '      ', '   ');
CREATE TABLE padm (id INT PRIMARY KEY, c CHAR(4), vc VARCHAR(4)) ENGINE=MyISAM;
INSERT INTO padm SELECT id, LEFT(c, 4), LEFT(vc, 4) FROM pad;
