package binlog

import (
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
)

// What cannot be archived or replayed is refused naming the setting; an
// older untested version is a warning naming it; a newer one is refused
// naming it and the newest tested (12.3 and later also that their binary
// log can live inside InnoDB); the rest passes quietly.
func TestSettingsCheck(t *testing.T) {
	ok := mariadb.Server{Version: "10.11.19-MariaDB", Major: 10, Minor: 11, LogBin: true}
	for _, c := range []struct {
		name     string
		edit     func(*mariadb.Server)
		checksum string
		refuse   string
		warning  string
	}{
		{"crc32", func(*mariadb.Server) {}, "CRC32", "", ""},
		{"checksum none", func(*mariadb.Server) {}, "NONE", "", ""},
		{"log_bin off", func(s *mariadb.Server) { s.LogBin = false }, "CRC32", "log_bin is OFF", ""},
		{"unknown checksum", func(*mariadb.Server) {}, "XXH3", "binlog_checksum = XXH3", ""},
		{"11.3", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "11.3.2-MariaDB", 11, 3 }, "CRC32", "", ""},
		{"11.4", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "11.4.2-MariaDB", 11, 4 }, "CRC32", "", ""},
		{"11.8", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "11.8.5-MariaDB-deb13-log", 11, 8 }, "CRC32", "", ""},
		{"11.9", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "11.9.1-MariaDB", 11, 9 }, "CRC32",
			"the server is MariaDB 11.9.1-MariaDB, newer than MariaDB 11.8, the newest binary log archiving is tested with (10.5 to 11.8); it is refused until a test proves", ""},
		{"12.2", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "12.2.1-MariaDB", 12, 2 }, "CRC32", "MariaDB 12.2.1-MariaDB, newer than MariaDB 11.8", ""},
		{"12.3", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "12.3.1-MariaDB", 12, 3 }, "CRC32",
			"the server is MariaDB 12.3.1-MariaDB, newer than MariaDB 11.8, the newest binary log archiving is tested with (10.5 to 11.8); from MariaDB 12.3 the binary log can live inside InnoDB", ""},
		{"13.0", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "13.0.0-MariaDB", 13, 0 }, "CRC32", "binary log can live inside InnoDB", ""},
		{"10.4", func(s *mariadb.Server) { s.Version, s.Major, s.Minor = "10.4.34-MariaDB", 10, 4 }, "CRC32", "", "MariaDB 10.4.34-MariaDB"},
	} {
		s := ok
		c.edit(&s)
		warnings, err := checkSettings(&s, c.checksum)
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.refuse)
		case c.warning == "" && len(warnings) > 0:
			t.Errorf("%s: warnings %q", c.name, warnings)
		case c.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], c.warning) || !strings.Contains(warnings[0], "10.5 to 11.8")):
			t.Errorf("%s: warnings %q, want one naming %q and the supported range", c.name, warnings, c.warning)
		}
	}
}
