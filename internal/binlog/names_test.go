package binlog

import "testing"

func TestNumberGap(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"mariadb-bin.000007", "mariadb-bin.000008", ""},
		{"mariadb-bin.000007", "mariadb-bin.000009", "mariadb-bin.000008"},
		{"mariadb-bin.000007", "mariadb-bin.000010", "mariadb-bin.000008 .. mariadb-bin.000009"},
		{"a.000001", "b.000005", ""},
	} {
		if got := NumberGap(c.a, c.b); got != c.want {
			t.Errorf("NumberGap(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
