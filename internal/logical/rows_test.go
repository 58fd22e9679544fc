package logical

import (
	"bytes"
	"strings"
	"testing"
)

// Every byte value, the literal \N next to NULL, tabs, newlines and
// backslashes survive a line; a field never contains a raw tab or newline.
func TestFieldRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	values := [][]byte{all, []byte(`\N`), nil, {}, []byte("a\tb\nc\\d\x00e"), []byte("N"), []byte(`\`), []byte("😀")}
	nulls := []bool{false, false, true, false, false, false, false, false}
	var line []byte
	for i, v := range values {
		if i > 0 {
			line = append(line, '\t')
		}
		line = appendField(line, v, nulls[i])
	}
	if bytes.Count(line, []byte{'\t'}) != len(values)-1 || bytes.ContainsRune(line, '\n') {
		t.Fatalf("encoded line has raw separators: %q", line)
	}
	got, gotNulls, err := parseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(values) {
		t.Fatalf("%d fields, want %d", len(got), len(values))
	}
	for i := range values {
		if gotNulls[i] != nulls[i] || (!nulls[i] && !bytes.Equal(got[i], values[i])) {
			t.Errorf("field %d: got %q null=%v, want %q null=%v", i, got[i], gotNulls[i], values[i], nulls[i])
		}
	}
}

func FuzzFieldRoundTrip(f *testing.F) {
	f.Add([]byte(`\N`), []byte("x\ty"), false)
	f.Add([]byte{0, '\\', '\n'}, []byte{}, true)
	f.Fuzz(func(t *testing.T, a, b []byte, null bool) {
		line := appendField(nil, a, false)
		line = append(line, '\t')
		line = appendField(line, b, null)
		got, nulls, err := parseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || nulls[0] || !bytes.Equal(got[0], a) || nulls[1] != null || (!null && !bytes.Equal(got[1], b)) {
			t.Fatalf("%q %q null=%v -> %q %v", a, b, null, got, nulls)
		}
	})
}

// parseLine reads whatever bytes it is given without panicking.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte("a\\tb\t\\N\t\\\\N"))
	f.Add([]byte("\\"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fields, nulls, err := parseLine(line)
		if err == nil && len(fields) != len(nulls) {
			t.Fatal("fields and nulls differ in length")
		}
	})
}

func TestPathName(t *testing.T) {
	for name, want := range map[string]string{
		"plain_1": "plain_1", "a.b": "a@002eb", "a/b": "a@002fb", "..": "@002e@002e", "😀": "@@01f600", "é": "@00e9",
	} {
		if got := pathName(name); got != want {
			t.Errorf("pathName(%q) = %q, want %q", name, got, want)
		}
	}
	if a, b := pathName("a@002eb"), pathName("a.b"); a == b {
		t.Errorf("%q and %q collide", "a@002eb", "a.b")
	}
}

func FuzzParseCatalog(f *testing.F) {
	f.Add([]byte(`{"schema":{"databases":[]},"sql_mode":"","tables":[{"database":"d","table":"t","columns":["a"],"chunks":[{"id":1,"path":"d/t.000001.tsv","rows":1,"bytes":2}]}]}`))
	f.Add([]byte(`{"schema":{},"tables":[{"database":"d","table":"t","chunks":[{"id":1,"path":"../x"}]}]}`))
	f.Add([]byte(`{"schema":{"databases":[]},"tables":[{"database":"d","table":"t","chunks":[{"id":1,"path":"d/t.000001.tsv","rows":3,"bytes":9,"row_sum":"0123456789abcdef"}]}]}`))
	f.Add([]byte(`{"schema":{},"tables":[{"database":"d","table":"t","chunks":[{"id":1,"path":"d/t.1.tsv","row_sum":"xyz"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCatalog(data)
		if err != nil {
			return
		}
		for _, tb := range c.Tables {
			// A row sum read back prints as it was stored.
			for _, ch := range tb.Chunks {
				if ch.Sum != 0 {
					var back RowSum
					if err := back.UnmarshalText([]byte(ch.Sum.String())); err != nil || back != ch.Sum {
						t.Fatalf("row sum %s does not read back: %v", ch.Sum, err)
					}
				}
			}
			for _, ch := range tb.Chunks {
				if strings.HasPrefix(ch.Path, "/") || strings.HasPrefix(ch.Path, "..") {
					t.Fatalf("accepted path %q", ch.Path)
				}
			}
		}
	})
}
