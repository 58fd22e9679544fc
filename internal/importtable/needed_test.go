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
