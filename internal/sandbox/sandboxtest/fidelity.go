package sandboxtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// FidelityBigRows is the row count of fid_a.big.
const FidelityBigRows = 500000

// fidelityAccounts are the accounts LoadFidelitySchema creates. Roles have no
// host: SHOW GRANTS FOR takes a role by its name alone.
var fidelityAccounts = []string{
	"'r_read'",
	"'r_write'",
	"'app'@'%'",
	"'report'@'10.0.%'",
	"'odd`user@x'@'localhost'",
}

// FidelityUsers returns the accounts LoadFidelitySchema creates, as SHOW
// GRANTS FOR and SHOW CREATE USER take them: 'user'@'host' for users, 'role'
// for roles (SHOW CREATE USER does not apply to roles).
func FidelityUsers() []string {
	return append([]string(nil), fidelityAccounts...)
}

// Password hashes (PASSWORD('...') of throwaway words): no password appears
// in clear, and the hash is what a dump carries anyway.
const (
	fidelityAppHash    = "*D92FF33BE0EDCC442C306FBEE9BDE081FD125F4B"
	fidelityReportHash = "*C39AC485FA925043F36A260941A601AC060F3729"
)

// fidelityStep is one statement, or a setting of the session in between.
type fidelityStep struct {
	what string
	sql  string
	args []any
}

// LoadFidelitySchema builds databases fid_a and fid_b with every schema
// feature a logical backup must carry, and data that is hard to carry:
//
//   - tables with a PRIMARY KEY, a composite one, only a UNIQUE NOT NULL key,
//     only a nullable UNIQUE key, no key; secondary, UNIQUE, long UNIQUE
//     (USING HASH), FULLTEXT and SPATIAL keys; foreign keys within fid_a,
//     to itself and from fid_b to fid_a; CHECK constraints; a partitioned
//     table; INVISIBLE, VIRTUAL and PERSISTENT columns; Aria and MyISAM
//     tables, one with AUTO_INCREMENT per group; names with . / ` é and
//     spaces;
//   - system-versioned tables (implicit and explicit period) with history
//     rows (updates and deletes done);
//   - sequences (one used as DEFAULT NEXTVAL, advanced; one that cycled; a
//     descending one);
//   - views, one over a view that sorts before it, one WITH CHECK OPTION,
//     one joining both databases, one in fid_a over that one in fid_b, one
//     calling a stored function, one SQL SECURITY INVOKER with another
//     definer;
//   - triggers (two on one event with PRECEDES, one whose text qualifies
//     its database, one under ANSI_QUOTES, one created through a latin1
//     connection with a non-ASCII literal), procedures, functions (one
//     aggregate), a package and its body (sql_mode=ORACLE), a procedure
//     whose database collation differs from the database's, events (one in
//     time zone +02:00);
//   - roles and users (see FidelityUsers) with global, database, table,
//     column and routine grants, a role granted to a role, WITH ADMIN
//     OPTION, a default role, resource limits, ACCOUNT LOCK, PASSWORD
//     EXPIRE INTERVAL, REQUIRE SSL;
//   - data: a BLOB with all 256 byte values, BINARY, BIT(1), BIT(13),
//     GEOMETRY, POINT, JSON, UUID, INET6, NULL next to the string \N, tabs,
//     newlines and backslashes, emoji, zero dates, TIMESTAMPs, an
//     AUTO_INCREMENT row with id 0 and a counter past a gap, and fid_a.big
//     of FidelityBigRows rows.
//
// Existing fid_a, fid_b and fidelity accounts are dropped first. The
// connection it used is discarded afterwards (its session settings were
// changed), so db's other connections are unaffected.
func LoadFidelitySchema(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sandbox: fidelity schema: %w", err)
	}
	defer func() {
		// Discard the connection: its sql_mode, time zone and character set
		// are the last step's, not what the pool's users expect.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
	for _, s := range fidelitySteps() {
		if _, err := conn.ExecContext(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("sandbox: fidelity schema: %s: %w", s.what, err)
		}
	}
	return nil
}

func fidelitySteps() []fidelityStep {
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	st := func(what, sql string, args ...any) fidelityStep { return fidelityStep{what, sql, args} }
	steps := []fidelityStep{
		// Deterministic session: no strict mode (zero dates), UTC.
		st("session", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+00:00', NAMES utf8mb4"),
		st("drop fid_a", "DROP DATABASE IF EXISTS fid_a"),
		st("drop fid_b", "DROP DATABASE IF EXISTS fid_b"),
		st("drop accounts", "DROP USER IF EXISTS 'app'@'%', 'report'@'10.0.%', 'odd`user@x'@'localhost'"),
		st("drop roles", "DROP ROLE IF EXISTS r_read, r_write"),

		st("create fid_a", "CREATE DATABASE fid_a CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci COMMENT 'fidelity: every feature'"),
		st("create fid_b", "CREATE DATABASE fid_b CHARACTER SET latin1 COLLATE latin1_swedish_ci"),

		// Accounts first so that definers exist; grants at the end, when
		// the objects they name do.
		st("role r_read", "CREATE ROLE r_read"),
		st("role r_write", "CREATE ROLE r_write"),
		st("user app", "CREATE USER 'app'@'%' IDENTIFIED BY PASSWORD '"+fidelityAppHash+"' WITH MAX_QUERIES_PER_HOUR 100 MAX_USER_CONNECTIONS 5"),
		st("user report", "CREATE USER 'report'@'10.0.%' IDENTIFIED VIA mysql_native_password USING '"+fidelityReportHash+"' OR unix_socket ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 90 DAY"),
		st("user odd", "CREATE USER 'odd`user@x'@'localhost' REQUIRE SSL"),

		st("use fid_a", "USE fid_a"),
		st("sequence s_order", "CREATE SEQUENCE s_order START WITH 100 INCREMENT BY 10 CACHE 5"),
		st("sequence s_cycle", "CREATE SEQUENCE s_cycle START WITH 1 MINVALUE 1 MAXVALUE 3 CYCLE NOCACHE"),
		st("sequence s_desc", "CREATE SEQUENCE s_desc START WITH -1 MINVALUE -1000 MAXVALUE -1 INCREMENT BY -1"),

		st("table parent", `CREATE TABLE parent (
			id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
			code CHAR(8) NOT NULL,
			name VARCHAR(100) NOT NULL,
			note TEXT NULL,
			UNIQUE KEY u_code (code),
			KEY k_name (name),
			FULLTEXT KEY ft_note (note),
			FULLTEXT KEY ft_name_note (name, note)
		) ENGINE=InnoDB AUTO_INCREMENT=1000`),
		st("table child", `CREATE TABLE child (
			parent_id INT NOT NULL,
			seq SMALLINT UNSIGNED NOT NULL,
			qty INT NOT NULL DEFAULT 1 CHECK (qty > 0),
			price DECIMAL(10,2) NULL,
			PRIMARY KEY (parent_id, seq),
			KEY k_price (price),
			CONSTRAINT fk_child_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE,
			CONSTRAINT chk_price CHECK (price IS NULL OR price >= 0)
		) ENGINE=InnoDB`),
		st("table tree", `CREATE TABLE tree (
			id INT NOT NULL PRIMARY KEY,
			parent_id INT NULL,
			KEY k_parent (parent_id),
			CONSTRAINT fk_tree FOREIGN KEY (parent_id) REFERENCES tree (id)
		)`),
		// The nullable UNIQUE key is declared first; the server lists the
		// NOT NULL one first, and that one is the chunking key.
		st("table uniq_only", `CREATE TABLE uniq_only (
			alt INT NULL,
			code VARCHAR(20) NOT NULL,
			val INT NULL,
			UNIQUE KEY u_alt (alt),
			UNIQUE KEY u_code (code),
			KEY k_val (val)
		)`),
		st("table uniq_null", "CREATE TABLE uniq_null (a INT NULL, b INT NULL, UNIQUE KEY u_a (a))"),
		st("table no_key", "CREATE TABLE no_key (a INT NULL, b TEXT NULL)"),
		st("table blob_uniq", "CREATE TABLE blob_uniq (id INT NOT NULL PRIMARY KEY, b BLOB NULL, UNIQUE KEY u_b (b))"),
		st("table types", `CREATE TABLE types (
			id INT NOT NULL PRIMARY KEY,
			b BLOB NULL,
			bin BINARY(4) NULL,
			vb VARBINARY(16) NULL,
			bit1 BIT(1) NULL,
			bit13 BIT(13) NULL,
			g GEOMETRY NOT NULL,
			pt POINT NULL,
			j JSON NULL,
			txt TEXT NULL,
			emoji VARCHAR(20) NULL,
			d DATE NULL,
			dt DATETIME NULL,
			dt6 DATETIME(6) NULL,
			ts TIMESTAMP NULL DEFAULT NULL,
			ts_upd TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
			y YEAR NULL,
			t TIME(3) NULL,
			e ENUM('a','b','c') NULL,
			st SET('x','y','z') NULL,
			f FLOAT NULL,
			dbl DOUBLE NULL,
			dc DECIMAL(30,10) NULL,
			u BIGINT UNSIGNED NULL,
			uid UUID NULL,
			ip INET6 NULL,
			SPATIAL KEY sp_g (g),
			KEY k_d (d)
		)`),
		st("table gen", `CREATE TABLE gen (
			id INT NOT NULL PRIMARY KEY,
			a INT NOT NULL,
			b INT AS (a * 2) VIRTUAL,
			c VARCHAR(20) AS (CONCAT('v', a)) PERSISTENT,
			hidden INT INVISIBLE DEFAULT 42,
			KEY k_b (b),
			KEY k_c (c)
		)`),
		st("table part", `CREATE TABLE part (
			id INT NOT NULL AUTO_INCREMENT,
			y SMALLINT NOT NULL,
			v VARCHAR(20) NULL,
			PRIMARY KEY (id, y),
			KEY k_v (v)
		) AUTO_INCREMENT=500 PARTITION BY RANGE (y) (
			PARTITION p2020 VALUES LESS THAN (2021),
			PARTITION p2021 VALUES LESS THAN (2022),
			PARTITION pmax VALUES LESS THAN MAXVALUE)`),
		st("table hist", "CREATE TABLE hist (id INT NOT NULL PRIMARY KEY, v VARCHAR(20) NULL, KEY k_v (v)) WITH SYSTEM VERSIONING"),
		st("table hist_explicit", `CREATE TABLE hist_explicit (
			id INT NOT NULL,
			v INT NULL,
			vs TIMESTAMP(6) GENERATED ALWAYS AS ROW START INVISIBLE,
			ve TIMESTAMP(6) GENERATED ALWAYS AS ROW END INVISIBLE,
			PERIOD FOR SYSTEM_TIME (vs, ve),
			PRIMARY KEY (id)
		) WITH SYSTEM VERSIONING`),
		st("table seq_user", "CREATE TABLE seq_user (id BIGINT NOT NULL DEFAULT NEXTVAL(s_order) PRIMARY KEY, v VARCHAR(10) NULL)"),
		st("table ai_gap", "CREATE TABLE ai_gap (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL DEFAULT 7, created DATE NULL DEFAULT '2000-01-01')"),
		// AUTO_INCREMENT in a secondary key declared after another key.
		st("table ai_key", "CREATE TABLE ai_key (id INT NOT NULL AUTO_INCREMENT, name VARCHAR(20) NOT NULL, KEY k_name (name), KEY k_id (id)) ENGINE=InnoDB"),
		st("table aria_grp", "CREATE TABLE aria_grp (grp INT NOT NULL, id INT NOT NULL AUTO_INCREMENT, v VARCHAR(10) NULL, PRIMARY KEY (grp, id), KEY k_v (v)) ENGINE=Aria"),
		st("table myisam_ft", "CREATE TABLE myisam_ft (id INT NOT NULL PRIMARY KEY, t TEXT NULL, FULLTEXT KEY ft_t (t)) ENGINE=MyISAM"),
		st("table weird", "CREATE TABLE `we.ird/``name é` (`col ``x` INT NOT NULL PRIMARY KEY, `select` VARCHAR(10) NULL, KEY `key.k/``1` (`select`))"),
		st("table audit", "CREATE TABLE audit (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(200) NULL)"),
		st("table big", "CREATE TABLE big (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, s CHAR(32) NOT NULL, KEY k_k (k))"),

		st("use fid_b", "USE fid_b"),
		st("table fid_b.child_b", `CREATE TABLE child_b (
			id INT NOT NULL PRIMARY KEY,
			parent_id INT NULL,
			name VARCHAR(20) NULL,
			KEY k_parent (parent_id),
			CONSTRAINT fk_b_parent FOREIGN KEY (parent_id) REFERENCES fid_a.parent (id)
		)`),
		st("table fid_b.latin", "CREATE TABLE latin (id INT NOT NULL PRIMARY KEY, t VARCHAR(20) NULL)"),

		// Routines before the views that call them.
		st("use fid_a", "USE fid_a"),
		st("function f_add", "CREATE FUNCTION f_add(a INT, b INT) RETURNS INT DETERMINISTIC RETURN a + b"),
		st("function f_sum", `CREATE AGGREGATE FUNCTION f_sum(x INT) RETURNS INT DETERMINISTIC
BEGIN
  DECLARE s INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND RETURN s;
  LOOP
    FETCH GROUP NEXT ROW;
    SET s = s + x;
  END LOOP;
END`),
		st("procedure p_fill", `CREATE PROCEDURE p_fill(IN n INT) MODIFIES SQL DATA COMMENT 'fills ''audit'''
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    INSERT INTO audit (msg) VALUES (CONCAT('fill\t', i));
    SET i = i + 1;
  END WHILE;
END`),
		st("procedure p_invoker", "CREATE DEFINER='app'@'%' PROCEDURE p_invoker() SQL SECURITY INVOKER SELECT COUNT(*) FROM parent"),
		// The database's collation is recorded with each routine.
		st("collation for p_coll", "ALTER DATABASE fid_a COLLATE utf8mb4_bin"),
		st("procedure p_coll", "CREATE PROCEDURE p_coll() SELECT 'collated' AS c"),
		st("collation back", "ALTER DATABASE fid_a COLLATE utf8mb4_unicode_ci"),
		st("sql_mode oracle", "SET SESSION sql_mode = 'ORACLE'"),
		st("package pkg", `CREATE PACKAGE pkg AS
  FUNCTION total RETURN INT;
  PROCEDURE bump(n INT);
END`),
		st("package body pkg", `CREATE PACKAGE BODY pkg AS
  cnt INT := 0;
  FUNCTION total RETURN INT AS BEGIN RETURN cnt; END;
  PROCEDURE bump(n INT) AS BEGIN cnt := cnt + n; END;
END`),
		st("sql_mode back", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"),

		st("view z_base", "CREATE VIEW z_base AS SELECT id, code, name FROM parent WHERE id > 0"),
		st("view a_over", "CREATE VIEW a_over AS SELECT id, name FROM z_base WHERE id < 100000 WITH CASCADED CHECK OPTION"),
		st("view v_invoker", "CREATE ALGORITHM=MERGE DEFINER='app'@'%' SQL SECURITY INVOKER VIEW v_invoker AS SELECT * FROM child"),
		st("view v_func", "CREATE VIEW v_func AS SELECT id, f_add(id, 1) AS next_id, 'tab\there' AS lit FROM parent"),
		st("view fid_b.v_cross", "CREATE VIEW fid_b.v_cross AS SELECT p.id, p.name, c.name AS child_name FROM fid_a.parent p JOIN fid_b.child_b c ON c.parent_id = p.id"),
		st("view v_over_b", "CREATE VIEW v_over_b AS SELECT id, child_name FROM fid_b.v_cross"),

		st("trigger parent_bi", "CREATE TRIGGER parent_bi BEFORE INSERT ON parent FOR EACH ROW SET NEW.name = TRIM(NEW.name)"),
		st("trigger parent_bi2", "CREATE TRIGGER parent_bi2 BEFORE INSERT ON parent FOR EACH ROW PRECEDES parent_bi SET NEW.code = UPPER(NEW.code)"),
		st("trigger parent_au", "CREATE TRIGGER fid_a.parent_au AFTER UPDATE ON fid_a.parent FOR EACH ROW INSERT INTO audit (msg) VALUES (CONCAT('parent ', OLD.id, ' -> ', NEW.name))"),
		st("sql_mode ansi_quotes", "SET SESSION sql_mode = 'ANSI_QUOTES,NO_AUTO_VALUE_ON_ZERO'"),
		st("trigger child_bd", `CREATE TRIGGER "child_bd" BEFORE DELETE ON "child" FOR EACH ROW INSERT INTO "audit" ("msg") VALUES ('child deleted')`),
		st("sql_mode back", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"),
		// Sent in latin1 bytes through a latin1 connection: 0xE9 is é.
		st("names latin1", "SET NAMES latin1"),
		st("trigger fid_b.latin_bi", "CREATE TRIGGER fid_b.latin_bi BEFORE INSERT ON fid_b.latin FOR EACH ROW SET NEW.t = CONCAT(NEW.t, ' \xe9')"),
		st("names utf8mb4", "SET NAMES utf8mb4"),

		st("event ev_hourly", "CREATE EVENT ev_hourly ON SCHEDULE EVERY 1 HOUR STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE DISABLE COMMENT 'hourly' DO INSERT INTO audit (msg) VALUES ('tick')"),
		st("time_zone +02:00", "SET SESSION time_zone = '+02:00'"),
		st("event ev_once", "CREATE EVENT ev_once ON SCHEDULE AT '2031-05-05 10:00:00' ON COMPLETION PRESERVE DO CALL p_fill(1)"),
		st("time_zone back", "SET SESSION time_zone = '+00:00'"),

		// Data.
		st("rows parent", "INSERT INTO parent (code, name, note) VALUES ('ab', '  alpha ', 'first note'), ('cd', 'beta', NULL), ('ef', 'gamma', 'tab\there\nnewline \\\\ backslash'), ('gh', 'δέλτα 😀', '\\\\N')"),
		st("rows child", "INSERT INTO child VALUES (1000, 1, 2, 9.99), (1000, 2, 1, NULL), (1001, 1, 5, 0.00)"),
		st("rows tree", "INSERT INTO tree VALUES (1, NULL), (2, 1), (3, 2)"),
		st("rows uniq_only", "INSERT INTO uniq_only VALUES (NULL, 'x', 1), (NULL, 'y', 1), (5, 'z', NULL)"),
		st("rows uniq_null", "INSERT INTO uniq_null VALUES (NULL, 1), (NULL, 1), (2, 2)"),
		st("rows no_key", "INSERT INTO no_key VALUES (1, 'x'), (1, 'x'), (NULL, NULL), (2, '\\\\N')"),
		st("rows blob_uniq", "INSERT INTO blob_uniq VALUES (1, 'one'), (2, NULL), (3, REPEAT('b', 5000))"),
		st("rows types (full)", `INSERT INTO types (id, b, bin, vb, bit1, bit13, g, pt, j, txt, emoji, d, dt, dt6, ts, ts_upd, y, t, e, st, f, dbl, dc, u, uid, ip)
			VALUES (1, ?, X'00FF0A09', X'5C4E', b'1', b'1010101010101',
				ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), POINT(1.5, -2.25),
				'{"a": [1, "x\\ty", null], "b": "\\\\N"}', 'tab\there\nnewline\\\\backslash\r\nCRLF', '😀🎉 ok',
				'0000-00-00', '0000-00-00 00:00:00', '2024-02-29 23:59:59.999999', '2038-01-19 03:14:07', '1970-01-01 00:00:01',
				1901, '-838:59:59.000', 'b', 'x,z', 1.5, -1e-300, '12345678901234567890.0123456789', 18446744073709551615,
				'123e4567-e89b-12d3-a456-426655440000', '2001:db8::ff00:42:8329')`, allBytes),
		st("rows types (nulls)", `INSERT INTO types (id, g, ts_upd) VALUES (2, ST_GeomFromText('POINT(0 0)'), '2000-01-01 00:00:00')`),
		st("rows types (backslash N)", `INSERT INTO types (id, g, ts_upd, vb, txt, emoji, b) VALUES (3, ST_GeomFromText('LINESTRING(0 0,1 1)'), '2000-01-01 00:00:00', '', '\\N', 'NULL', '')`),
		// YEAR 0000 (not 2000) and a FLOAT with more digits than the
		// server prints for it.
		st("rows types (year 0, float)", `INSERT INTO types (id, g, ts_upd, y, f) VALUES (4, ST_GeomFromText('POINT(1 1)'), '2000-01-01 00:00:00', 0, 1.2345678)`),
		// A name with a % (statements must not be format strings).
		st("table percent", "CREATE TABLE `p%d` (id INT NOT NULL PRIMARY KEY, `v%s` VARCHAR(10) NULL)"),
		st("rows percent", "INSERT INTO `p%d` VALUES (1, '100%'), (2, NULL)"),
		st("rows gen", "INSERT INTO gen (id, a) VALUES (1, 10), (2, 20)"),
		st("rows gen hidden", "INSERT INTO gen (id, a, hidden) VALUES (3, 30, 7)"),
		st("rows part", "INSERT INTO part (y, v) VALUES (2020, 'a'), (2021, 'b'), (2030, 'c')"),
		st("rows hist", "INSERT INTO hist VALUES (1, 'one'), (2, 'two'), (3, 'three')"),
		st("update hist", "UPDATE hist SET v = 'uno' WHERE id = 1"),
		st("delete hist", "DELETE FROM hist WHERE id = 2"),
		st("rows hist_explicit", "INSERT INTO hist_explicit (id, v) VALUES (1, 1), (2, 2)"),
		st("update hist_explicit", "UPDATE hist_explicit SET v = v + 10"),
		st("delete hist_explicit", "DELETE FROM hist_explicit WHERE id = 2"),
		st("rows seq_user", "INSERT INTO seq_user (v) VALUES ('a'), ('b'), ('c')"),
		st("advance s_order", "SELECT NEXTVAL(s_order), NEXTVAL(s_order)"),
		st("cycle s_cycle", "SELECT NEXTVAL(s_cycle), NEXTVAL(s_cycle), NEXTVAL(s_cycle), NEXTVAL(s_cycle)"),
		st("advance s_desc", "SELECT NEXTVAL(s_desc), NEXTVAL(s_desc)"),
		st("rows ai_gap", "INSERT INTO ai_gap () VALUES (), (), ()"),
		st("row ai_gap 0", "INSERT INTO ai_gap (id, v) VALUES (0, 0)"),
		st("gap ai_gap", "INSERT INTO ai_gap (id) VALUES (50)"),
		st("gap ai_gap delete", "DELETE FROM ai_gap WHERE id = 50"),
		st("rows ai_key", "INSERT INTO ai_key (name) VALUES ('x'), ('y')"),
		st("rows aria_grp", "INSERT INTO aria_grp (grp, v) VALUES (1, 'a'), (1, 'b'), (2, 'c')"),
		st("rows myisam_ft", "INSERT INTO myisam_ft VALUES (1, 'full text search'), (2, NULL)"),
		st("rows weird", "INSERT INTO `we.ird/``name é` VALUES (1, 'from'), (2, NULL)"),
		st("rows child_b", "INSERT INTO fid_b.child_b VALUES (1, 1000, 'kid'), (2, NULL, 'orphan')"),
		st("rows latin", "INSERT INTO fid_b.latin VALUES (1, 'café')"),
		st("update parent", "UPDATE parent SET name = 'beta2' WHERE code = 'CD'"),
		st("rows big", "INSERT INTO big SELECT seq, seq % 1000, MD5(seq) FROM seq_1_to_"+fmt.Sprint(FidelityBigRows)),

		// Grants, now that their objects exist.
		st("grant r_read", "GRANT SELECT ON fid_a.* TO r_read"),
		st("grant r_write", "GRANT INSERT, UPDATE ON fid_a.parent TO r_write"),
		st("grant r_read to r_write", "GRANT r_read TO r_write"),
		st("grant r_write to app", "GRANT r_write TO 'app'@'%'"),
		st("default role app", "SET DEFAULT ROLE r_write FOR 'app'@'%'"),
		st("grant execute app", "GRANT EXECUTE ON PROCEDURE fid_a.p_fill TO 'app'@'%'"),
		st("grant function app", "GRANT EXECUTE ON FUNCTION fid_a.f_add TO 'app'@'%'"),
		st("grant columns app", "GRANT SELECT (id, name), UPDATE (name) ON fid_b.child_b TO 'app'@'%'"),
		st("grant fid_b app", "GRANT SELECT ON fid_b.* TO 'app'@'%' WITH GRANT OPTION"),
		st("grant global app", "GRANT PROCESS ON *.* TO 'app'@'%'"),
		st("grant r_read to report", "GRANT r_read TO 'report'@'10.0.%' WITH ADMIN OPTION"),
		st("grant view report", "GRANT SELECT ON fid_b.v_cross TO 'report'@'10.0.%'"),
		st("grant weird odd", "GRANT SELECT ON fid_a.`we.ird/``name é` TO 'odd`user@x'@'localhost'"),
	}
	return steps
}
