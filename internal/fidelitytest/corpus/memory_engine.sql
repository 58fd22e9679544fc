-- title: MEMORY tables with HASH and BTREE indexes, a VARCHAR and a fixed row, MAX_ROWS; logical path only: MEMORY tables hold no data on disk, so a physical copy restores them empty by design (mariabackup copies only their definition)
-- source: MariaDB server mysql-test/main/heap.test, main/heap_hash.test, main/heap_btree.test; suite/mariabackup (MEMORY tables are not copied with data)
-- paths: logical
CREATE TABLE mem (
  id INT PRIMARY KEY,
  v VARCHAR(100),
  c CHAR(5),
  KEY k_hash (v) USING HASH,
  KEY k_btree (c) USING BTREE
) ENGINE=MEMORY MAX_ROWS=1000;
INSERT INTO mem VALUES (1, 'one', 'a'), (2, '', ''), (3, NULL, NULL), (4, REPEAT('x', 100), 'abcde');
CREATE TABLE mem_nokey (a INT, b VARCHAR(10)) ENGINE=MEMORY;
INSERT INTO mem_nokey VALUES (1, 'dup'), (1, 'dup'), (NULL, NULL);
