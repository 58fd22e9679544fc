package importtable

import "testing"

func TestNeeded(t *testing.T) {
	need := Needed([]Table{{DB: "shop", Name: "orders"}, {DB: "shop", Name: "parts"}}, []string{"crm"})
	for p, want := range map[string]bool{
		"ibdata1":                        true,
		"ib_logfile0":                    true,
		"undo001":                        true,
		"backup-my.cnf":                  true,
		"xtrabackup_checkpoints":         true,
		"ibdata1.delta":                  true,
		"mysql/user.MAI":                 true,
		"mysql/innodb_table_stats.ibd":   true,
		"shop/db.opt":                    true,
		"shop/orders.frm":                true,
		"shop/orders.ibd":                true,
		"shop/orders.ibd.delta":          true,
		"shop/orders.ibd.meta":           true,
		"shop/parts.par":                 true,
		"shop/parts#P#p0.ibd":            true,
		"shop/parts#p#p1.ibd.delta":      true,
		"shop/orders_archive.ibd":        false,
		"shop/orders2.frm":               false,
		"shop/customers.ibd":             false,
		"shop/partsx#P#p0.ibd":           false,
		"shop/#sql-ib123.ibd":            false,
		"other/orders.ibd":               false,
		"other/db.opt":                   false,
		"sys/sys_config.ibd":             false,
		"shop/nested/orders.ibd":         false,
		"performance_schema/db.opt":      false,
		"shoporders.ibd":                 true, // top level, like every file there
		"shop/orders#SP#x.ibd":           false,
		"shop/orders@002ex.ibd":          false,
		"shop/orders.ibd.isl.bak":        true, // the table's own (a stem and a dot)
		"mysql/gtid_slave_pos.ibd.delta": true,
		"crm/anything.ibd":               true, // a database asked for whole
		"crm/db.opt":                     true,
		"crmx/t.ibd":                     false,
		"shop/orders.TRG":                true,
		"shop/any_trigger.TRN":           true,
		"other/any_trigger.TRN":          false,
	} {
		if got := need(p); got != want {
			t.Errorf("Needed(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestWithoutForeignKeys(t *testing.T) {
	def := "CREATE TABLE `shop`.`o2` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `customer` int(11) DEFAULT NULL,\n" +
		"  `part` int(11) DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `customer` (`customer`),\n" +
		"  KEY `part` (`part`),\n" +
		"  CONSTRAINT `fk_c` FOREIGN KEY (`customer`) REFERENCES `customers` (`id`) ON DELETE CASCADE,\n" +
		"  CONSTRAINT `odd``name` FOREIGN KEY (`part`) REFERENCES `parts` (`id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=latin1"
	got, fks := withoutForeignKeys(def)
	want := "CREATE TABLE `shop`.`o2` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `customer` int(11) DEFAULT NULL,\n" +
		"  `part` int(11) DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `customer` (`customer`),\n" +
		"  KEY `part` (`part`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=latin1"
	if got != want || len(fks) != 2 || fks[0] != "fk_c" || fks[1] != "odd`name" {
		t.Errorf("withoutForeignKeys:\n%s\nforeign keys %q", got, fks)
	}
	plain := "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB"
	if got, fks := withoutForeignKeys(plain); got != plain || fks != nil {
		t.Errorf("a table without foreign keys changed: %q, %v", got, fks)
	}
}
