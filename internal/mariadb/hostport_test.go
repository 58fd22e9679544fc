package mariadb

import (
	"errors"
	"testing"
)

// SplitHostPort takes HOST:PORT with a port from 1 to 65535, telling a
// missing port (net's error) from a bad one (ErrPort).
func TestSplitHostPort(t *testing.T) {
	if host, port, err := SplitHostPort("db1:3307"); host != "db1" || port != 3307 || err != nil {
		t.Errorf("SplitHostPort(db1:3307) = %q, %d, %v", host, port, err)
	}
	if host, port, err := SplitHostPort("[::1]:3306"); host != "::1" || port != 3306 || err != nil {
		t.Errorf("SplitHostPort([::1]:3306) = %q, %d, %v", host, port, err)
	}
	for _, s := range []string{"db1:0", "db1:65536", "db1:x"} {
		if _, _, err := SplitHostPort(s); !errors.Is(err, ErrPort) {
			t.Errorf("SplitHostPort(%s): %v, want ErrPort", s, err)
		}
	}
	if _, _, err := SplitHostPort("db1"); err == nil || errors.Is(err, ErrPort) {
		t.Errorf("SplitHostPort(db1): %v, want net's missing-port error", err)
	}
}
