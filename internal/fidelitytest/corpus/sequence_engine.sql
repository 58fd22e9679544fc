-- title: the SEQUENCE storage engine: its virtual seq_* tables read by views, by a generated table filled from them, and by a trigger; the virtual tables exist on any server and must not be dumped as tables
-- source: MariaDB server storage/sequence/mysql-test/sequence/simple.test, storage/sequence/mysql-test/sequence/group_by.test; MDEV-3876 (SEQUENCE engine)
CREATE TABLE filled (n INT PRIMARY KEY, sq BIGINT) ENGINE=InnoDB;
INSERT INTO filled SELECT seq, seq * seq FROM seq_1_to_100;
CREATE VIEW evens AS SELECT seq FROM seq_0_to_20_step_2;
CREATE VIEW letters AS SELECT CHAR(seq) AS c FROM seq_65_to_70;
CREATE VIEW joined AS SELECT f.n, s.seq FROM filled f JOIN seq_1_to_3 s ON f.n = s.seq;
