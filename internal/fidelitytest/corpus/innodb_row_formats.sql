-- title: InnoDB tablespace options: ROW_FORMAT COMPRESSED with KEY_BLOCK_SIZE 1, 4 and 8, DYNAMIC, COMPACT and REDUNDANT with off-page columns, PAGE_COMPRESSED with levels, STATS_PERSISTENT options
-- source: MariaDB server mysql-test/suite/innodb_zip/t/create_options.test, suite/innodb/t/innodb-page_compression_zip.test, suite/innodb/t/row_format_redundant.test, suite/mariabackup/row_format_redundant.test, suite/mariabackup/page_compression_level.test, suite/mariabackup/incremental_page_compressed.test
CREATE TABLE rf_comp1 (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=1;
CREATE TABLE rf_comp4 (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4;
CREATE TABLE rf_comp8 (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB KEY_BLOCK_SIZE=8;
CREATE TABLE rf_dynamic (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB ROW_FORMAT=DYNAMIC;
CREATE TABLE rf_compact (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB ROW_FORMAT=COMPACT;
CREATE TABLE rf_redundant (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB ROW_FORMAT=REDUNDANT;
CREATE TABLE pc_default (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB PAGE_COMPRESSED=1;
CREATE TABLE pc_level9 (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=9;
CREATE TABLE pc_level1 (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=1 ROW_FORMAT=DYNAMIC;
SET @long = REPEAT('compressible text, ', 1000);
SET @rnd = (SELECT GROUP_CONCAT(MD5(seq) SEPARATOR '') FROM seq_1_to_300);
INSERT INTO rf_comp1 VALUES (1, @long), (2, @rnd), (3, NULL), (4, '');
INSERT INTO rf_comp4 SELECT * FROM rf_comp1;
INSERT INTO rf_comp8 SELECT * FROM rf_comp1;
INSERT INTO rf_dynamic SELECT * FROM rf_comp1;
INSERT INTO rf_compact SELECT * FROM rf_comp1;
INSERT INTO rf_redundant SELECT * FROM rf_comp1;
INSERT INTO pc_default SELECT * FROM rf_comp1;
INSERT INTO pc_level9 SELECT * FROM rf_comp1;
INSERT INTO pc_level1 SELECT * FROM rf_comp1;
CREATE TABLE stats_opts (id INT PRIMARY KEY) ENGINE=InnoDB STATS_PERSISTENT=0 STATS_AUTO_RECALC=0 STATS_SAMPLE_PAGES=7;
INSERT INTO stats_opts VALUES (1);
