package gtid

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]GTID{
		"0-1-4711": {0, 1, 4711},
		"4294967295-4294967295-18446744073709551615": {4294967295, 4294967295, 18446744073709551615},
		"00-01-02": {0, 1, 2},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := Parse(want.String()); err != nil || back != want {
			t.Errorf("%v does not read back: %v, %v", want, back, err)
		}
	}
	for _, in := range []string{
		"", "0", "0-1", "0-1-2-3", "a-1-2", "0-b-2", "0-1-c", "-1-2", "0--2", "0-1-", " 0-1-2", "0-1-2 ", "1 -2-3",
		"4294967296-1-2", "0-4294967296-2", "0-1-18446744073709551616", "+0-1-2", "0-1-2,0-1-3", "0x1-1-2", "0-0x1-2",
		"0-1-0x2", "0-1-1_000", "1-2-3garbage",
	} {
		if g, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, %v; want ErrSyntax", in, g, err)
		}
	}
}

func TestLists(t *testing.T) {
	got, err := ParseList(" 0-1-5, 1-2-7 ,2-3-9")
	if want := []GTID{{0, 1, 5}, {1, 2, 7}, {2, 3, 9}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseList = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseList("  "); err != nil || got != nil {
		t.Errorf("ParseList(blank) = %v, %v; want none", got, err)
	}
	if _, err := ParseList("0-1-5,junk"); err == nil || !errors.Is(err, ErrSyntax) {
		t.Errorf("ParseList with junk: %v, want an error naming it", err)
	}
	if got := Entries("0-1-5,junk, 1-1-1"); !slices.Equal(got, []GTID{{0, 1, 5}, {1, 1, 1}}) {
		t.Errorf("Entries = %v", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("0-1-4711")
	f.Add("1-2-3,4-5-6")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := Parse(s)
		if err != nil {
			return
		}
		if back, err := Parse(g.String()); err != nil || back != g {
			t.Fatalf("%q read as %v, which reads back as %v, %v", s, g, back, err)
		}
	})
}

// A list read whole is what Entries reads of it, and reads back the same
// from its entries written out; --until-gtid and the server's positions
// go through it.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"0-1-4711", " 0-1-5, 1-2-7 ,2-3-9", "", "0-1-2,", "0-1-5,junk", "1-2-3,,4-5-6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseList(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("ParseList(%q): %v, not ErrSyntax", s, err)
			}
			return
		}
		if got := Entries(s); !slices.Equal(got, list) {
			t.Fatalf("ParseList(%q) = %v, Entries %v", s, list, got)
		}
		var out []string
		for _, g := range list {
			out = append(out, g.String())
		}
		if back, err := ParseList(strings.Join(out, ",")); err != nil || !slices.Equal(back, list) {
			t.Fatalf("%q read as %v, which reads back as %v, %v", s, list, back, err)
		}
	})
}
