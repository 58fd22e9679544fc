-- title: index kinds: BTREE, prefix and composite keys, descending key parts, FULLTEXT on InnoDB and MyISAM (with a stopword-only row), SPATIAL, long UNIQUE keys on BLOB/TEXT (USING HASH), IGNORED indexes, index COMMENTs, a primary key that is not the first index
-- source: MariaDB server mysql-test/main/long_unique.test (MDEV-371), main/ignored_index.test (MDEV-7317), main/desc_index_range.test (MDEV-13756 descending indexes), main/fulltext.test, suite/innodb_fts/t/fulltext.test, main/gis-rtree.test
-- since: 10.8 (descending key parts, new in 10.8; IGNORED indexes, new in 10.6)
CREATE TABLE ix (
  id INT NOT NULL,
  a VARCHAR(200), b INT, c TEXT, d BLOB, g POINT NOT NULL,
  UNIQUE KEY u_ab (a(20), b DESC),
  KEY k_b_desc (b DESC, id),
  KEY k_prefix (a(3)) COMMENT 'prefix ''index''',
  KEY k_ignored (b) IGNORED,
  UNIQUE KEY u_long (c) USING HASH,
  UNIQUE KEY u_blob (d),
  FULLTEXT KEY ft (a, c),
  SPATIAL KEY sp (g),
  PRIMARY KEY (id)
) ENGINE=InnoDB;
INSERT INTO ix VALUES
  (1, 'hello world', 1, REPEAT('long unique text ', 300), REPEAT(UNHEX('00FF'), 2000), POINT(1, 1)),
  (2, 'the and of', 2, 'short', 0x00, POINT(2, 2)),
  (3, NULL, NULL, NULL, NULL, POINT(0, 0)),
  (4, NULL, NULL, NULL, NULL, POINT(0, 0));
CREATE TABLE ixm (
  id INT PRIMARY KEY,
  t TEXT,
  v VARCHAR(100),
  FULLTEXT KEY ft (t),
  UNIQUE KEY u_t (t) USING HASH,
  KEY k_hash (v) USING BTREE
) ENGINE=MyISAM;
INSERT INTO ixm VALUES (1, 'full text search in myisam', 'x'), (2, 'another document', 'y');
CREATE TABLE nopk (a INT NOT NULL, b INT NOT NULL, UNIQUE KEY (b), UNIQUE KEY (a)) ENGINE=InnoDB;
INSERT INTO nopk VALUES (2, 1), (1, 2);
