package logical

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical/schema"
)

// fill gives every exported field reachable from v a value that is not
// zero, so that JSON holds every key, omitempty or not.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	}
}

// jsonKeys adds every object key of a decoded JSON value to keys.
func jsonKeys(v any, keys map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			keys[k] = true
			jsonKeys(e, keys)
		}
	case []any:
		for _, e := range v {
			jsonKeys(e, keys)
		}
	}
}

// keysOf marshals a value of every field set and returns its keys.
func keysOf(t *testing.T, v any) map[string]bool {
	t.Helper()
	fill(reflect.ValueOf(v).Elem())
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	jsonKeys(decoded, keys)
	return keys
}

// docSection returns the section of docs/format.md that starts with the
// heading, up to the next heading of its level.
func docSection(t *testing.T, heading string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/format.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/format.md has no heading %q", heading)
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if i := strings.Index(rest, "\n"+level); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// The catalog's JSON and docs/format.md cannot drift: every key of a
// catalog with every field set, and of the manifest's databases entries,
// is named in the section "Logical backups" as "key", and every quoted
// word there that could be a key is one (or a value the section shows).
func TestFormatDocNamesCatalogKeys(t *testing.T) {
	keys := keysOf(t, &Catalog{})
	stats := keysOf(t, &archive.DatabaseStats{})
	section := docSection(t, "## Logical backups")
	var missing []string
	for k := range keys {
		if !strings.Contains(section, `"`+k+`"`) {
			missing = append(missing, k)
		}
	}
	for k := range stats {
		if !strings.Contains(section, `"`+k+`"`) {
			missing = append(missing, "databases: "+k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/format.md, section Logical backups, does not name these keys of the catalog as \"key\": %s", strings.Join(missing, ", "))
	}
	// The manifest's kind and its value, and its partial mark, which the
	// section quotes too.
	shown := map[string]bool{"kind": true, "logical": true, "partial": true}
	var stale []string
	for _, m := range regexp.MustCompile(`"([A-Za-z_]+)"`).FindAllStringSubmatch(section, -1) {
		if k := m[1]; !keys[k] && !stats[k] && !shown[k] && !slices.Contains(stale, k) {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		t.Errorf("docs/format.md, section Logical backups, names keys the catalog does not have: %s", strings.Join(stale, ", "))
	}
	if len(keys) < 50 {
		t.Errorf("only %d keys in a catalog with every field set: %v", len(keys), keys)
	}
}

// The source's sql_mode is stored once, in the schema; a catalog of a
// backup made when it was also stored beside the schema reads as it did.
func TestCatalogSQLModeStoredOnce(t *testing.T) {
	data, err := json.Marshal(&Catalog{Schema: &schema.Catalog{SQLMode: "STRICT_ALL_TABLES"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"sql_mode"`) || !strings.Contains(string(data), `"SQLMode":"STRICT_ALL_TABLES"`) {
		t.Errorf("catalog JSON %s: want the sql_mode once, in the schema", data)
	}
	old, err := ParseCatalog([]byte(`{"schema": {"Databases": []}, "sql_mode": "ANSI_QUOTES", "tables": []}`))
	if err != nil {
		t.Fatal(err)
	}
	if old.Schema.SQLMode != "ANSI_QUOTES" {
		t.Errorf("an old catalog with the sql_mode beside its schema only: %q", old.Schema.SQLMode)
	}
}
