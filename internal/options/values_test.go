package options

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/retention"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "64KiB": 64 << 10, "16MiB": 16 << 20, "1G": 1 << 30, "10MB": 10e6, "1.5 KiB": 1536} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "3 parsecs", "1e30"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	f.Add("16MiB")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{
		"": 0, "0": 0, "0/s": 0, "200MiB/s": 200 << 20, "200M": 200 << 20, "50MB/s": 50e6, " 1GiB/S ": 1 << 30, "64KiB/s": 64 << 10,
	} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestParseSpan(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"14d", 14 * 24 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"1w3d", 10 * 24 * time.Hour, true},
		{"6d12h", 156 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"", 0, false},
		{"d", 0, false},
		{"14", 0, false},
		{"14y", 0, false},
		{"0d", 0, false},
		{"-3h", 0, false},
		{"99999999999d", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSpan(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSpan(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	// retention prints the spans it was given as they are read.
	for _, d := range []time.Duration{14 * 24 * time.Hour, 36 * time.Hour, 3 * 24 * time.Hour, 90 * time.Minute} {
		back, err := ParseSpan(retention.FormatDuration(d))
		if err != nil || back != d {
			t.Errorf("FormatDuration(%v) = %q reads back as %v, %v", d, retention.FormatDuration(d), back, err)
		}
	}
}

func FuzzParseSpan(f *testing.F) {
	for _, s := range []string{"14d", "6d12h", "90m", "1w3d", "-3h", "99999999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseSpan(s); err == nil && d <= 0 {
			t.Fatalf("ParseSpan(%q) = %v", s, d)
		}
	})
}

// set gives the flag name of a command's flag set bound by bind the value
// s, as the command line and option files do, and returns the refusal.
func set(t *testing.T, command, name, s string, bind func(Flags)) error {
	t.Helper()
	fs := pflag.NewFlagSet(command, pflag.ContinueOnError)
	bind(Bind(fs))
	if err := fs.Set(name, s); err != nil {
		t.Fatalf("--%s %q: Set failed (%v): a refusal is for Refused", name, s, err)
	}
	return Refused(fs)
}

// Every rate a flag takes is no limit or at least the least taken, and
// every refusal names the flag and the value.
func FuzzRate(f *testing.F) {
	for _, s := range []string{"", "0", "200MiB/s", "50MB", " 1GiB/S ", "64KiB/s", "200", "-5MiB/s", "fast", "1e9/s", "9999999999999GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v int64
		err := set(t, "backup", "max-rate", s, func(f Flags) { f.Rate("max-rate", &v) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--max-rate ") || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("--max-rate %q: %v: does not name the flag and the value", s, err)
			}
			return
		}
		if v != 0 && v < minRate {
			t.Fatalf("--max-rate %q = %d, below the least taken", s, v)
		}
	})
}

// The parsed kinds check a value as it is set, with today's wording, and
// keep the text as given for help and config.
func TestParsedValues(t *testing.T) {
	var n int64
	var d time.Duration
	for _, c := range []struct {
		command, name, value string
		bind                 func(Flags)
		want                 string // the error's text; "" for none
	}{
		{"backup", "max-rate", "10", func(f Flags) { f.Rate("max-rate", &n) },
			`--max-rate "10" is 10 bytes per second, below the least taken (64KiB/s); give a unit, like 200MiB/s`},
		{"backup", "max-rate", "fast", func(f Flags) { f.Rate("max-rate", &n) },
			`--max-rate "fast": want bytes per second with a unit, like 200MiB/s or 50MB/s`},
		{"restore", "memory", "1", func(f Flags) { f.Size("memory", &n, 16<<20) },
			`--memory "1" is below the least taken (16MiB); give a unit, like 512MiB`},
		{"restore", "memory", "lots", func(f Flags) { f.Size("memory", &n, 16<<20) },
			`--memory: size "lots": want a number with an optional unit (KiB, MiB, GiB, KB, MB, GB)`},
		{"copy", "chunk-size", "1KiB", func(f Flags) { f.Size("chunk-size", &n, 64<<10) },
			`--chunk-size "1KiB" is below the least taken (64KiB); give a unit, like 16MiB`},
		{"backup", "full-every", "7y", func(f Flags) { f.Span("full-every", &d) },
			`--full-every: duration "7y": unknown unit 'y' (use h, d or w)`},
	} {
		err := set(t, c.command, c.name, c.value, c.bind)
		if err == nil || err.Error() != c.want {
			t.Errorf("--%s %q: %v; want %q", c.name, c.value, err, c.want)
		}
	}

	fs := pflag.NewFlagSet("backup", pflag.ContinueOnError)
	Bind(fs).Size("chunk-size", &n, 64<<10)
	Bind(fs).Span("full-every", &d)
	if n != 16<<20 || fs.Lookup("chunk-size").DefValue != "16MiB" || d != 0 {
		t.Errorf("defaults: --chunk-size %d (shown %q), --full-every %v", n, fs.Lookup("chunk-size").DefValue, d)
	}
	if err := fs.Parse([]string{"--chunk-size", "1MiB", "--full-every", "6d12h"}); err != nil || Refused(fs) != nil || n != 1<<20 || d != 156*time.Hour ||
		fs.Lookup("chunk-size").Value.String() != "1MiB" {
		t.Errorf("--chunk-size 1MiB --full-every 6d12h: %v: %d, %v", err, n, d)
	}
	// A refused value leaves the flag's value as it was, and a good one
	// given after it (an option file's, say) clears the refusal.
	if err := fs.Parse([]string{"--chunk-size", "1KiB"}); err != nil || Refused(fs) == nil || n != 1<<20 {
		t.Errorf("--chunk-size 1KiB: %v, refused %v, %d", err, Refused(fs), n)
	}
	if err := fs.Parse([]string{"--chunk-size", "2MiB"}); err != nil || Refused(fs) != nil || n != 2<<20 {
		t.Errorf("--chunk-size 2MiB after 1KiB: %v, refused %v, %d", err, Refused(fs), n)
	}
}

// A boolean takes the words option files write booleans with, in any
// case, on the command line too; given alone it is true.
func TestBoolTakesOptionFileWords(t *testing.T) {
	for value, want := range map[string]bool{"1": true, "ON": true, "true": true, "0": false, "off": false, "False": false} {
		fs := pflag.NewFlagSet("backup", pflag.ContinueOnError)
		v := !want
		Bind(fs).Bool("verbose", &v)
		if err := fs.Parse([]string{"--verbose=" + value}); err != nil || v != want {
			t.Errorf("--verbose=%s: %v, %v; want %v", value, v, err, want)
		}
	}
	fs := pflag.NewFlagSet("backup", pflag.ContinueOnError)
	var v bool
	Bind(fs).Bool("verbose", &v)
	if err := fs.Parse([]string{"--verbose"}); err != nil || !v || fs.Lookup("verbose").DefValue != "false" {
		t.Errorf("--verbose: %v, %v", v, err)
	}
	if err := fs.Set("verbose", "maybe"); err == nil {
		t.Error("--verbose=maybe accepted")
	}
}

// --compress and --hash are read once, by their binders, for every
// command that stores; --mariadb-path refuses an entry that is not a
// directory, from $BACKSTREAM_MARIADB_PATH too, and drops empty ones.
func TestStorageAndPathValues(t *testing.T) {
	var c codec.Codec
	var h string
	var dirs []string
	for _, v := range []struct {
		command, name, value string
		bind                 func(Flags)
		want                 string
	}{
		{"backup", "compress", "bogus", func(f Flags) { f.Codec("compress", &c) }, `--compress: compression "bogus": unknown codec`},
		{"binlog", "compress", "zstd:99", func(f Flags) { f.Codec("compress", &c) }, `--compress: compression "zstd:99": level "99" out of range`},
		{"merge", "hash", "md5", func(f Flags) { f.Hash("hash", &h) }, `--hash: unknown hash algorithm "md5"`},
		{"list", "mariadb-path", "/nonexistent/x", func(f Flags) { f.Paths("mariadb-path", &dirs) }, `--mariadb-path "/nonexistent/x": /nonexistent/x is not a directory`},
	} {
		if err := set(t, v.command, v.name, v.value, v.bind); err == nil || !strings.HasPrefix(err.Error(), v.want) {
			t.Errorf("--%s %q: %v; want %q...", v.name, v.value, err, v.want)
		}
	}
	if err := set(t, "send", "compress", "lz4:3", func(f Flags) { f.Codec("compress", &c) }); err != nil || c.String() != "lz4:3" {
		t.Errorf("--compress lz4:3: %v, %v", err, c)
	}
	if err := set(t, "backup", "hash", "sha256", func(f Flags) { f.Hash("hash", &h) }); err != nil || h != "sha256" {
		t.Errorf("--hash sha256: %v, %q", err, h)
	}
	dir := t.TempDir()
	if err := set(t, "restore", "mariadb-path", "::"+dir+":", func(f Flags) { f.Paths("mariadb-path", &dirs) }); err != nil || !slices.Equal(dirs, []string{dir}) {
		t.Errorf("--mariadb-path ::%s: %v, %q", dir, err, dirs)
	}
	t.Setenv("BACKSTREAM_MARIADB_PATH", "/nonexistent/y")
	fs := pflag.NewFlagSet("list", pflag.ContinueOnError)
	Bind(fs).Paths("mariadb-path", &dirs)
	if err := Refused(fs); err == nil || !strings.Contains(err.Error(), "/nonexistent/y is not a directory") {
		t.Errorf("$BACKSTREAM_MARIADB_PATH=/nonexistent/y: %v; want it refused", err)
	}
}
