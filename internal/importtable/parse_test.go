package importtable

import (
	"errors"
	"slices"
	"testing"

	"github.com/backstream/backstream/internal/restore"
)

// Tables are named db.table, --as renames the one table named; what
// cannot be read is refused.
func TestParseTables(t *testing.T) {
	got, err := ParseTables([]string{"shop.orders"}, "shop.orders2")
	if err != nil || !slices.Equal(got, []Table{{"shop", "orders", "shop", "orders2"}}) {
		t.Errorf("shop.orders as shop.orders2: %v, %v", got, err)
	}
	got, err = ParseTables([]string{"shop.orders", "crm.customers"}, "")
	if err != nil || len(got) != 2 || got[1].As() != "crm.customers" {
		t.Errorf("two tables: %v, %v", got, err)
	}
	for _, c := range []struct {
		names []string
		as    string
	}{
		{[]string{"a.b", "a.c"}, "a.d"},
		{[]string{"ab"}, ""},
		{[]string{"a."}, ""},
		{[]string{"a.b"}, "ab"},
		{[]string{"a.b", "a.b"}, ""},
	} {
		var re *restore.RefusedError
		if _, err := ParseTables(c.names, c.as); !errors.As(err, &re) {
			t.Errorf("%v as %q: %v; want refused", c.names, c.as, err)
		}
	}
}

func FuzzParseTables(f *testing.F) {
	f.Add("shop.orders", "")
	f.Add("shop.orders", "shop.x")
	f.Fuzz(func(t *testing.T, name, as string) {
		tables, err := ParseTables([]string{name}, as)
		var re *restore.RefusedError
		if err != nil && !errors.As(err, &re) {
			t.Errorf("%q as %q: %v is not a refusal", name, as, err)
		}
		if err == nil && (len(tables) != 1 || tables[0].String() != name) {
			t.Errorf("%q as %q: %v", name, as, tables)
		}
	})
}
