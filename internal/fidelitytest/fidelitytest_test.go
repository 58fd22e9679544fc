package fidelitytest

import "testing"

// A fixture's version guards: since and logical-since parse, and a server
// older than the guard is told apart from the same minor and newer ones.
func TestVersionGuards(t *testing.T) {
	f, err := parse("g", []byte("-- title: t\n-- source: s\n-- since: 10.10 (INET4)\n-- logical-since: 10.11 (history)\nSELECT 1;\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		version        string
		since, logical bool
	}{
		{"10.5.23-MariaDB-0+deb11u1-log", false, false},
		{"10.10.0", true, false},
		{"10.11.19-MariaDB-0+deb12u1", true, true},
		{"11.8.9-MariaDB", true, true},
	} {
		if ok, why := f.RunsOn(c.version); ok != c.since || !ok && why != "needs MariaDB 10.10 or newer (INET4)" {
			t.Errorf("since 10.10 on %s: %v, %q", c.version, ok, why)
		}
		if ok, _ := f.LogicalSince.Allows(c.version); ok != c.logical {
			t.Errorf("logical-since 10.11 on %s: %v", c.version, ok)
		}
	}
	for _, bad := range []string{"10", "10.x (why)", "10.5", "ten.5 (why)"} {
		if _, err := parse("g", []byte("-- title: t\n-- source: s\n-- since: "+bad+"\n")); err == nil {
			t.Errorf("since: %s parsed", bad)
		}
	}
	fixtures, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no fixture")
	}
}
