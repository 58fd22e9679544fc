package mariadb

import (
	"strings"
	"testing"
)

// Option files' booleans, as the server's my_getopt reads them, in any
// case; anything else is refused rather than read as off. Every boolean
// of backstream's own options goes through this parser too.
func TestParseOptionBool(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "on": true, "ON": true, "true": true, "True": true,
		"0": false, "off": false, "Off": false, "false": false, "FALSE": false} {
		if got, err := ParseOptionBool(v, false); err != nil || got != want {
			t.Errorf("ParseOptionBool(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	if got, err := ParseOptionBool("", true); err != nil || !got {
		t.Errorf("a bare key: %v, %v; want true", got, err)
	}
	for _, v := range []string{"", "yes", "no", "2", "t", "enabled"} {
		if _, err := ParseOptionBool(v, false); err == nil {
			t.Errorf("ParseOptionBool(%q) accepted", v)
		}
	}
}

func FuzzParseOptionBool(f *testing.F) {
	for _, s := range []string{"1", "On", "false", "yes", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		on, err := ParseOptionBool(s, false)
		if err != nil {
			return
		}
		// Whatever it takes, it takes in any case, with the same meaning.
		for _, v := range []string{s, strings.ToUpper(s)} {
			if again, err := ParseOptionBool(v, false); err != nil || again != on {
				t.Fatalf("ParseOptionBool(%q) = %v, but %q reads as %v, %v", s, on, v, again, err)
			}
		}
	})
}
