package logical

import (
	"bytes"
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mask"
)

// customers is a table with a masked column of each kind, a generated
// column and one left as it is.
var customers = &schema.Table{
	Name: "customers",
	Create: "CREATE TABLE `customers` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `email` varchar(64) NOT NULL,\n" +
		"  `phone` varchar(20) DEFAULT NULL,\n" +
		"  `note` text DEFAULT NULL,\n" +
		"  `city` varchar(20) DEFAULT NULL,\n" +
		"  `domain` varchar(64) GENERATED ALWAYS AS (substring_index(`email`,'@',-1)) VIRTUAL,\n" +
		"  PRIMARY KEY (`id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
	Columns: []schema.Column{
		{Name: "id", DataType: "int"}, {Name: "email", DataType: "varchar"}, {Name: "phone", DataType: "varchar"},
		{Name: "note", DataType: "text"}, {Name: "city", DataType: "varchar"}, {Name: "domain", DataType: "varchar", Generated: true},
	},
	Key: []string{"id"}, IntKey: true,
}

func maskRules(t *testing.T, specs ...string) *mask.Rules {
	t.Helper()
	r, err := mask.Parse(specs)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetKey([]byte("a key of the test, long enough")); err != nil {
		t.Fatal(err)
	}
	return r
}

// A row masked as the dump writes it (driver values) and a line of an
// unmasked dump masked as a load does give the same bytes; the columns
// left as they are keep theirs, and the line's escapes hold.
func TestMaskDumpAndLoadAgree(t *testing.T) {
	rules := maskRules(t, "shop.customers.id=hash", "shop.customers.email=email", "shop.customers.phone=phone", "shop.customers.note=fixed:a\tb\\c")
	plain := newTableWork("shop", customers, dataFormat)
	masked := newTableWork("shop", customers, dataFormat)
	plan := rules.Plan()
	var err error
	if masked.masks, err = planMasks(plan, "shop", customers, masked.columnNames()); err != nil {
		t.Fatal(err)
	}
	if err := plan.Check(); err != nil {
		t.Fatal(err)
	}
	rows := [][]driver.Value{
		{int64(1), []byte("Alice@Example.com"), []byte("+1 555-0100"), []byte("likes\tcats\n"), []byte("Oslo")},
		{int64(-7), []byte("bob@example.com"), nil, nil, []byte("Tab\there")},
		{int64(2147483647), []byte(""), []byte("(0)"), []byte(`\N`), nil},
	}
	var unmasked, dumped []byte
	for _, r := range rows {
		if unmasked, err = plain.appendRow(unmasked, r); err != nil {
			t.Fatal(err)
		}
		if dumped, err = masked.appendRow(dumped, r); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := maskData(unmasked, masked.masks)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(loaded, dumped) {
		t.Fatalf("masked at load:\n%q\nmasked at dump:\n%q", loaded, dumped)
	}
	lines := strings.Split(strings.TrimSuffix(string(dumped), "\n"), "\n")
	if len(lines) != len(rows) {
		t.Fatalf("%d lines for %d rows: %q", len(lines), len(rows), dumped)
	}
	for i, line := range lines {
		fields, nulls, err := parseLine([]byte(line))
		if err != nil || len(fields) != 5 {
			t.Fatalf("line %d: %q: %v", i, line, err)
		}
		if string(fields[3]) != "a\tb\\c" && !nulls[3] {
			t.Errorf("line %d: note %q, want the fixed value", i, fields[3])
		}
		if want := rows[i][4]; want == nil && !nulls[4] || want != nil && string(fields[4]) != string(want.([]byte)) {
			t.Errorf("line %d: city %q, want it as it was (%q)", i, fields[4], want)
		}
		for _, secret := range []string{"Alice", "alice", "bob@", "555-0100", "likes", "2147483647"} {
			if strings.Contains(line, secret) {
				t.Errorf("line %d holds %q: %q", i, secret, line)
			}
		}
	}
	if got := strings.Join(maskedColumns("shop", "customers", masked.masks), " "); got != "shop.customers.id=hash shop.customers.email=email shop.customers.phone=phone shop.customers.note=fixed:a\tb\\c" {
		t.Errorf("maskedColumns: %q", got)
	}
}

func TestPlanMasksRefuses(t *testing.T) {
	names := newTableWork("shop", customers, dataFormat).columnNames()
	for _, c := range []struct{ spec, want string }{
		{"shop.customers.domain=null", "it is generated"},
		{"shop.customers.email=null", "is NOT NULL"},
		{"shop.customers.city=email", "holds at most 20 characters"},
	} {
		_, err := planMasks(maskRules(t, c.spec).Plan(), "shop", customers, names)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.spec, err, c.want)
		}
	}
	versioned := &schema.Table{Name: "v", Versioned: true,
		Create:  "CREATE TABLE `v` (\n  `id` int(11) NOT NULL\n) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		Columns: []schema.Column{{Name: "id", DataType: "int"}, {Name: "row_start", DataType: "timestamp", RowStart: true}, {Name: "row_end", DataType: "timestamp", RowEnd: true}}}
	w := newTableWork("shop", versioned, dataFormat)
	if _, err := planMasks(maskRules(t, "shop.v.row_start=fixed:2020-01-01").Plan(), "shop", versioned, w.columnNames()); err == nil || !strings.Contains(err.Error(), "system-versioning period column") {
		t.Errorf("a period column: %v", err)
	}
}

func TestMaskDataRefusesBadLines(t *testing.T) {
	w := newTableWork("shop", customers, dataFormat)
	var err error
	if w.masks, err = planMasks(maskRules(t, "shop.customers.id=hash").Plan(), "shop", customers, w.columnNames()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ data, want string }{
		{"1\ta\tb\tc\td", "line 1 does not end with a newline"},
		{"1\ta\tb\tc\td\n2\ta\n", "line 2: 2 fields where the table's data files have 5"},
		{"1\ta\tb\tc\td\te\n", "line 1: more than the 5 fields"},
		{"x\ta\tb\tc\td\n", "line 1: column id: a value is not an integer of 32 bits"},
		{"1\\\ta\tb\tc\td\n", "line 1: field 1: byte 1: escape at the end of the line"},
	} {
		_, err := maskData([]byte(c.data), w.masks)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want it to say %q", c.data, err, c.want)
		}
	}
}
