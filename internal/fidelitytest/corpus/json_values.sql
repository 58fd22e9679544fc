-- title: JSON columns (LONGTEXT with the json_valid check) holding nested documents, unicode escapes, big numbers, empty objects and arrays, a JSON null next to an SQL NULL; a virtual column extracting from them
-- source: MariaDB server mysql-test/main/type_json.test and main/func_json.test; MDEV-13701 (JSON alias), MDEV-27018 (json_valid check in SHOW CREATE TABLE)
CREATE TABLE j (
  id INT PRIMARY KEY,
  doc JSON,
  small JSON NOT NULL DEFAULT '{}',
  name VARCHAR(50) AS (JSON_VALUE(doc, '$.name')) VIRTUAL
) ENGINE=InnoDB;
INSERT INTO j (id, doc, small) VALUES
  (1, '{"name": "a\\"b", "n": [1, 2.5, -3e10, 18446744073709551616], "o": {"x": {"y": [true, false, null]}}}', '[]'),
  (2, '{"name": "\\u00e9\\ud83d\\ude00", "tab": "\\t", "nl": "\\n", "bs": "\\\\"}', '{}'),
  (3, 'null', '"str"'),
  (4, NULL, '0'),
  (5, '  {"spaced" :  1 }  ', '[[], {}]');
