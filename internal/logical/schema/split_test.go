package schema

import (
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

func TestSplitCreateTable(t *testing.T) {
	for _, tc := range []struct {
		name, create, base, indexes, fks string
	}{
		{
			name: "secondary keys and foreign keys leave, checks stay",
			create: "CREATE TABLE `t` (\n" +
				"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
				"  `a` int(11) DEFAULT NULL,\n" +
				"  `b` varchar(10) DEFAULT NULL COMMENT 'x, KEY (y)',\n" +
				"  PRIMARY KEY (`id`),\n" +
				"  UNIQUE KEY `u` (`a`),\n" +
				"  KEY `k` (`b`(5)),\n" +
				"  FULLTEXT KEY `f` (`b`),\n" +
				"  CONSTRAINT `fk` FOREIGN KEY (`a`) REFERENCES `p` (`id`) ON DELETE CASCADE,\n" +
				"  CONSTRAINT `c` CHECK (`a` > 0)\n" +
				") ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4",
			base: "CREATE TABLE `t` (\n" +
				"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
				"  `a` int(11) DEFAULT NULL,\n" +
				"  `b` varchar(10) DEFAULT NULL COMMENT 'x, KEY (y)',\n" +
				"  PRIMARY KEY (`id`),\n" +
				"  CONSTRAINT `c` CHECK (`a` > 0)\n" +
				") ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4",
			indexes: "ALTER TABLE `t` ADD UNIQUE KEY IF NOT EXISTS `u` (`a`), ADD KEY IF NOT EXISTS `k` (`b`(5)), ADD FULLTEXT KEY IF NOT EXISTS `f` (`b`)",
			fks:     "ALTER TABLE `t` ADD CONSTRAINT `fk` FOREIGN KEY IF NOT EXISTS (`a`) REFERENCES `p` (`id`) ON DELETE CASCADE",
		},
		{
			name: "without a primary key every unique key stays",
			create: "CREATE TABLE `u` (\n  `a` int(11) NOT NULL,\n  `b` int(11) DEFAULT NULL,\n" +
				"  UNIQUE KEY `ua` (`a`),\n  UNIQUE KEY `ub` (`b`),\n  KEY `kb` (`b`)\n) ENGINE=InnoDB",
			base:    "CREATE TABLE `u` (\n  `a` int(11) NOT NULL,\n  `b` int(11) DEFAULT NULL,\n  UNIQUE KEY `ua` (`a`),\n  UNIQUE KEY `ub` (`b`)\n) ENGINE=InnoDB",
			indexes: "ALTER TABLE `u` ADD KEY IF NOT EXISTS `kb` (`b`)",
		},
		{
			name: "keys up to the one holding the AUTO_INCREMENT column stay",
			create: "CREATE TABLE `ai` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `n` int(11) DEFAULT NULL,\n" +
				"  KEY `kn` (`n`),\n  KEY `kid` (`id`),\n  KEY `kn2` (`n`,`id`)\n) ENGINE=InnoDB",
			base: "CREATE TABLE `ai` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `n` int(11) DEFAULT NULL,\n" +
				"  KEY `kn` (`n`),\n  KEY `kid` (`id`),\n  KEY `kn2` (`n`,`id`)\n) ENGINE=InnoDB",
		},
		{
			name:   "nothing to split",
			create: "CREATE TABLE `p` (\n  `id` int(11) NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB",
			base:   "CREATE TABLE `p` (\n  `id` int(11) NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB",
		},
		{
			name: "odd names and a partition clause",
			create: "CREATE TABLE `we.ird/``t` (\n  `KEY` int(11) NOT NULL,\n  `a``b` int(11) NOT NULL,\n" +
				"  PRIMARY KEY (`KEY`,`a``b`),\n  KEY `x,y` (`a``b`)\n) ENGINE=InnoDB\n PARTITION BY HASH (`KEY`)\nPARTITIONS 2",
			base: "CREATE TABLE `we.ird/``t` (\n  `KEY` int(11) NOT NULL,\n  `a``b` int(11) NOT NULL,\n" +
				"  PRIMARY KEY (`KEY`,`a``b`)\n) ENGINE=InnoDB\n PARTITION BY HASH (`KEY`)\nPARTITIONS 2",
			indexes: "ALTER TABLE `we.ird/``t` ADD KEY IF NOT EXISTS `x,y` (`a``b`)",
		},
		{
			name:   "sequence",
			create: "CREATE SEQUENCE `s` start with 1 minvalue 1 maxvalue 9223372036854775806 increment by 1 cache 1000 nocycle ENGINE=InnoDB",
			base:   "CREATE SEQUENCE `s` start with 1 minvalue 1 maxvalue 9223372036854775806 increment by 1 cache 1000 nocycle ENGINE=InnoDB",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, idx, fks, err := SplitCreateTable(tc.create)
			if err != nil {
				t.Fatal(err)
			}
			if base != tc.base {
				t.Errorf("base:\n%s\nwant:\n%s", base, tc.base)
			}
			if idx != tc.indexes {
				t.Errorf("indexes:\n%s\nwant:\n%s", idx, tc.indexes)
			}
			if fks != tc.fks {
				t.Errorf("foreign keys:\n%s\nwant:\n%s", fks, tc.fks)
			}
			// Keeping the indexes: the base differs from the statement by
			// its foreign keys alone, which go the same way.
			whole, fks2, err := SplitForeignKeys(tc.create)
			if err != nil || fks2 != tc.fks {
				t.Errorf("SplitForeignKeys: %v, foreign keys:\n%s\nwant:\n%s", err, fks2, tc.fks)
			}
			if _, idx2, _, _ := SplitCreateTable(whole); idx2 != tc.indexes {
				t.Errorf("SplitForeignKeys kept indexes:\n%s\nwant:\n%s", idx2, tc.indexes)
			}
			if tc.fks == "" && whole != tc.create {
				t.Errorf("SplitForeignKeys of a table without foreign keys:\n%s\nwant it unchanged:\n%s", whole, tc.create)
			}
		})
	}
}

func TestSplitCreateTableErrors(t *testing.T) {
	for _, create := range []string{
		"",
		"CREATE VIEW `v` AS select 1",
		"CREATE TABLE `t` LIKE `u`",
		"CREATE TABLE `t` (`a` int",
		"CREATE TABLE `t` (`a` int,, `b` int)",
		"CREATE TABLE `t` (KEY `k`)",
		"DROP TABLE `t`",
	} {
		if base, idx, fks, err := SplitCreateTable(create); err == nil {
			t.Errorf("SplitCreateTable(%q) = %q, %q, %q; want an error", create, base, idx, fks)
		}
	}
}

// splitServerTables are created in database src of a server; their split
// statements rebuild them in dst, where SHOW CREATE TABLE must give the
// same bytes. Each one is a way the server orders or keeps keys.
var splitServerTables = []struct{ name, ddl string }{
	{"p", "CREATE TABLE p (id INT NOT NULL PRIMARY KEY, code INT NOT NULL, UNIQUE KEY u_code (code))"},
	{"everything", `CREATE TABLE everything (
		id INT NOT NULL AUTO_INCREMENT,
		a INT NULL,
		b VARCHAR(100) NULL COMMENT 'x, KEY (y)), \'quoted\'',
		` + "`KEY`" + ` INT NULL,
		t TEXT NULL,
		t2 TEXT NULL,
		hidden INT INVISIBLE NULL,
		PRIMARY KEY (id),
		KEY k_b (b(10)) COMMENT 'prefix',
		KEY k_desc (a DESC, b),
		KEY k_ignored (` + "`KEY`" + `) IGNORED,
		KEY k_hidden (hidden),
		FULLTEXT KEY ft_t (t),
		FULLTEXT KEY ft_t2 (t, t2),
		UNIQUE KEY u_a (a),
		CONSTRAINT fk_p FOREIGN KEY (a) REFERENCES p (id) ON UPDATE CASCADE,
		CONSTRAINT fk_p_code FOREIGN KEY (` + "`KEY`" + `) REFERENCES p (code),
		CONSTRAINT chk_t CHECK (t IS NULL OR t <> t2)
	) ENGINE=InnoDB AUTO_INCREMENT=77 COMMENT='KEY (z)'`},
	// No primary key: the nullable unique key is declared first, the server
	// puts the NOT NULL one first and clusters on it.
	{"no_pk", "CREATE TABLE no_pk (a INT NULL, b INT NOT NULL, c INT NULL, KEY k_c (c), UNIQUE KEY u_a (a), UNIQUE KEY u_b (b))"},
	// AUTO_INCREMENT as the second column of a MyISAM key (counted per a),
	// declared after another key.
	{"myisam_grp", "CREATE TABLE myisam_grp (a INT NOT NULL, b INT NOT NULL AUTO_INCREMENT, c INT NULL, KEY k_c (c), KEY k_ab (a, b)) ENGINE=MyISAM"},
	// AUTO_INCREMENT in a UNIQUE key beside the primary key.
	{"ai_unique", "CREATE TABLE ai_unique (id INT NOT NULL PRIMARY KEY, n INT NOT NULL AUTO_INCREMENT, x INT NULL, KEY k_x (x), UNIQUE KEY u_n (n)) AUTO_INCREMENT=9"},
	{"self_ref", "CREATE TABLE self_ref (id INT NOT NULL PRIMARY KEY, up INT NULL, KEY k_up (up), CONSTRAINT fk_self FOREIGN KEY (up) REFERENCES self_ref (id))"},
	{"long_unique", "CREATE TABLE long_unique (id INT NOT NULL PRIMARY KEY, b BLOB NULL, t TEXT NULL, UNIQUE KEY u_b (b), UNIQUE KEY u_bt (b, t))"},
	{"spatial_aria", "CREATE TABLE spatial_aria (id INT NOT NULL PRIMARY KEY, g GEOMETRY NOT NULL, p POINT NOT NULL, SPATIAL KEY sp_g (g), SPATIAL KEY sp_p (p)) ENGINE=Aria"},
	{"parted", "CREATE TABLE parted (id INT NOT NULL AUTO_INCREMENT, y INT NOT NULL, v INT NULL, PRIMARY KEY (id, y), KEY k_v (v), UNIQUE KEY u_vy (v, y)) AUTO_INCREMENT=1234 PARTITION BY RANGE (y) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)"},
	{"versioned", "CREATE TABLE versioned (id INT NOT NULL, v INT NULL, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME (s, e), PRIMARY KEY (id), KEY k_v (v)) WITH SYSTEM VERSIONING"},
	{"implicit_versioned", "CREATE TABLE implicit_versioned (id INT NOT NULL PRIMARY KEY, v INT NULL, KEY k_v (v)) WITH SYSTEM VERSIONING"},
	{"we.ird/`t é", "CREATE TABLE `we.ird/``t é` (`col ``x` INT NOT NULL, `select` INT NULL, PRIMARY KEY (`col ``x`), KEY `key.k/``1` (`select`), CONSTRAINT `fk.``odd` FOREIGN KEY (`select`) REFERENCES p (id))"},
}

// TestSplitCreateTableServer proves the promise of SplitCreateTable on a
// server: base plus ALTERs (run twice, as a resumed load may) give back the
// source's SHOW CREATE TABLE byte for byte.
func TestSplitCreateTableServer(t *testing.T) {
	ctx := testContext(t)
	s := sandboxtest.Start(t, sandbox.Options{})
	c := conn(t, ctx, s.DB())
	exec := func(q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE src")
	exec("CREATE DATABASE dst")
	showCreate := func(db, table string) string {
		t.Helper()
		var name, create string
		if err := c.QueryRowContext(ctx, "SHOW CREATE TABLE "+mariadb.QuoteIdent(db)+"."+mariadb.QuoteIdent(table)).Scan(&name, &create); err != nil {
			t.Fatal(err)
		}
		return create
	}
	var fkAlters []string
	for _, tb := range splitServerTables {
		exec("USE src")
		exec(tb.ddl)
		create := showCreate("src", tb.name)
		base, idx, fks, err := SplitCreateTable(create)
		if err != nil {
			t.Fatalf("%s: %v", tb.name, err)
		}
		exec("USE dst")
		exec(base)
		for range 2 {
			if idx != "" {
				exec(idx)
			}
		}
		if fks != "" {
			fkAlters = append(fkAlters, fks)
		}
	}
	for range 2 {
		for _, fk := range fkAlters {
			exec(fk)
		}
	}
	for _, tb := range splitServerTables {
		if src, dst := showCreate("src", tb.name), showCreate("dst", tb.name); src != dst {
			t.Errorf("table %s:\nsource:\n%s\nrestored:\n%s", tb.name, src, dst)
		}
	}
}

// FuzzSplitCreateTable: SplitCreateTable never panics, and what it accepts
// it splits consistently: every element of the list lands in exactly one
// statement, and splitting the base again changes nothing.
func FuzzSplitCreateTable(f *testing.F) {
	for _, seed := range []string{
		"CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `a` int(11) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `k` (`a`),\n  CONSTRAINT `fk` FOREIGN KEY (`a`) REFERENCES `p` (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=5",
		"CREATE TABLE `u` (\n  `a` int(11) NOT NULL,\n  UNIQUE KEY `ua` (`a`),\n  FULLTEXT KEY `f` (`a`)\n) ENGINE=InnoDB",
		"CREATE TABLE `c` (\n  `b` varchar(10) DEFAULT 'x,)' COMMENT 'KEY (`y`)',\n  CONSTRAINT `c` CHECK (`b` <> ')')\n) /* comment ( */ ENGINE=InnoDB",
		"CREATE TABLE `p` (\n  `id` int NOT NULL,\n  PRIMARY KEY (`id`)\n) PARTITION BY RANGE (`id`)\n(PARTITION `p0` VALUES LESS THAN (10) ENGINE = InnoDB)",
		"CREATE SEQUENCE `s` start with 1 minvalue 1 maxvalue 10 increment by 1 cache 10 nocycle ENGINE=InnoDB",
		"CREATE TABLE `x` (`a` int, KEY `k` (`a`(3) DESC, `b`) USING HASH COMMENT 'c')",
		"CREATE TABLE t (a int) ",
		"CREATE TABLE `t` (\"a\" int, 'b')",
		"CREATE TABLE `t` (`a` int -- comment )\n)",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, create string) {
		base, idx, fks, err := SplitCreateTable(create)
		if err != nil {
			if base != "" || idx != "" || fks != "" {
				t.Fatalf("error %v with statements", err)
			}
			return
		}
		if base == "" {
			t.Fatal("no error and no base statement")
		}
		if isCreateSequence(create) {
			return
		}
		orig, err := parseCreateTable(create)
		if err != nil {
			t.Fatalf("accepted a statement it cannot parse: %v", err)
		}
		b, err := parseCreateTable(base)
		if err != nil {
			t.Fatalf("base does not parse: %v\n%s", err, base)
		}
		added := strings.Count(idx, "ADD ") + strings.Count(fks, "ADD ")
		if len(b.elems)+added < len(orig.elems) {
			t.Fatalf("%d elements, %d in base, %d added", len(orig.elems), len(b.elems), added)
		}
		base2, idx2, fks2, err := SplitCreateTable(base)
		if err != nil || base2 != base || idx2 != "" || fks2 != "" {
			t.Fatalf("splitting the base again: %v\n%q\n%q\n%q", err, base2, idx2, fks2)
		}
		// Keeping the indexes: the same foreign keys, and the indexes
		// that base lacks are in the other base.
		whole, fks3, err := SplitForeignKeys(create)
		if err != nil || fks3 != fks {
			t.Fatalf("SplitForeignKeys: %v\n%q\nwant foreign keys %q", err, fks3, fks)
		}
		if base4, idx4, fks4, err := SplitCreateTable(whole); err != nil || base4 != base || idx4 != idx || fks4 != "" {
			t.Fatalf("SplitCreateTable of SplitForeignKeys' base: %v\n%q\n%q\n%q\nwant %q, %q", err, base4, idx4, fks4, base, idx)
		}
	})
}
