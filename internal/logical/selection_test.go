package logical

import (
	"testing"

	"github.com/backstream/backstream/internal/logical/schema"
)

func TestSessionGrantsHolds(t *testing.T) {
	grants := func(lines ...string) *sessionGrants {
		g := &sessionGrants{account: "u@localhost"}
		for _, l := range lines {
			if on, ok := schema.ParseGrant(l); ok {
				g.grants = append(g.grants, grantLine{on, schema.GrantPrivileges(l)})
			}
		}
		return g
	}
	for _, c := range []struct {
		name      string
		lines     []string
		db, table string
		privs     []string
		want      bool
	}{
		{"global", []string{"GRANT SELECT, TRIGGER ON *.* TO `u`@`localhost`"}, "shop", "orders", []string{"TRIGGER"}, true},
		{"all privileges", []string{"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"}, "shop", "orders", []string{"TRIGGER"}, true},
		{"database", []string{"GRANT TRIGGER ON `shop`.* TO `r`"}, "shop", "orders", []string{"TRIGGER"}, true},
		{"other database", []string{"GRANT TRIGGER ON `shop2`.* TO `r`"}, "shop", "orders", []string{"TRIGGER"}, false},
		{"pattern", []string{"GRANT TRIGGER ON `sh%`.* TO `r`"}, "shop", "orders", []string{"TRIGGER"}, true},
		{"one-character wildcard", []string{"GRANT TRIGGER ON `app_1`.* TO `r`"}, "appx1", "t", []string{"TRIGGER"}, true},
		{"escaped wildcard", []string{"GRANT TRIGGER ON `app\\_1`.* TO `r`"}, "appx1", "t", []string{"TRIGGER"}, false},
		{"escaped wildcard matches itself", []string{"GRANT TRIGGER ON `app\\_1`.* TO `r`"}, "app_1", "t", []string{"TRIGGER"}, true},
		{"table", []string{"GRANT TRIGGER ON `shop`.`orders` TO `r`"}, "shop", "orders", []string{"TRIGGER"}, true},
		{"other table", []string{"GRANT TRIGGER ON `shop`.`items` TO `r`"}, "shop", "orders", []string{"TRIGGER"}, false},
		{"table grant is not a database's", []string{"GRANT EXECUTE ON `shop`.`orders` TO `r`"}, "shop", "", []string{"EXECUTE"}, false},
		{"routine grant", []string{"GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `u`@`localhost`"}, "shop", "", []string{"EXECUTE"}, false},
		{"other privilege", []string{"GRANT SELECT, INSERT ON `shop`.* TO `u`@`localhost`"}, "shop", "orders", []string{"TRIGGER"}, false},
		{"any of", []string{"GRANT SHOW CREATE ROUTINE ON `shop`.* TO `r`"}, "shop", "", routinePrivileges, true},
		{"role and PUBLIC lines", []string{"GRANT `r` TO `u`@`localhost`", "SET DEFAULT ROLE `r` FOR `u`@`localhost`", "GRANT TRIGGER ON `shop`.* TO PUBLIC"}, "shop", "orders", []string{"TRIGGER"}, true},
	} {
		if got := grants(c.lines...).holds(c.db, c.table, c.privs...); got != c.want {
			t.Errorf("%s: holds %v, want %v", c.name, got, c.want)
		}
	}
}
