-- title: CSV (NOT NULL columns, quotes, commas and newlines in values), ARCHIVE (AUTO_INCREMENT key, compressed rows), BLACKHOLE (a definition that keeps nothing); ARCHIVE and BLACKHOLE are plugins the server ships, installed here
-- source: MariaDB server mysql-test/main/csv.test, main/archive.test, main/blackhole.test, suite/mariabackup/ddl_for_common_engine.test (non-InnoDB engines in a physical backup)
INSTALL PLUGIN IF NOT EXISTS archive SONAME 'ha_archive';
INSTALL PLUGIN IF NOT EXISTS blackhole SONAME 'ha_blackhole';
CREATE TABLE c (id INT NOT NULL, v VARCHAR(100) NOT NULL, d DATETIME NOT NULL) ENGINE=CSV;
INSERT INTO c VALUES (1, 'plain', '2020-01-01 00:00:00'), (2, 'comma, "quote" and\nnewline', '2021-02-03 04:05:06'), (3, '', '1000-01-01 00:00:00'), (4, '\\back\\slash', '9999-12-31 23:59:59');
CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT, n DOUBLE) ENGINE=ARCHIVE;
INSERT INTO a (v, n) VALUES ('one', 1.5), (REPEAT('archive ', 500), NULL), (NULL, -0.0);
CREATE TABLE bh (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=BLACKHOLE;
INSERT INTO bh VALUES (1, 'gone');
