package options

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
)

// The parsers of the value kinds, each the only one of its kind: a
// flag's value (Set) goes through it whether the command line or an
// option file gave it, and so does any other reader of such a value.

// ParseSize reads a byte count as people write it: 4096, 64KiB, 16MiB,
// 1GiB, 10MB (decimal), 1G (binary, as MariaDB's options take it).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (KiB, MiB, GiB, KB, MB, GB)", s)
	}
	mult := map[string]float64{"": 1, "B": 1,
		"K": 1 << 10, "KIB": 1 << 10, "KB": 1e3,
		"M": 1 << 20, "MIB": 1 << 20, "MB": 1e6,
		"G": 1 << 30, "GIB": 1 << 30, "GB": 1e9,
		"T": 1 << 40, "TIB": 1 << 40, "TB": 1e12,
	}[strings.ToUpper(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (KiB, MiB, GiB, KB, MB, GB)", s, unit)
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("size %q: too big", s)
	}
	return int64(v * mult), nil
}

// ParseRate reads bytes per second: a size with an optional "/s", e.g.
// 200MiB/s or 50MB; "" and 0 mean no limit.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if strings.HasSuffix(strings.ToLower(t), "/s") {
		t = t[:len(t)-2]
	}
	return ParseSize(t)
}

// ParseSpan reads a span of time as retention rules and schedules give
// it: a number with the unit d (days), w (weeks) or h (hours), several of
// them together ("1w3d", "6d12h"), or any Go duration ("90m"). It is
// positive.
func ParseSpan(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, fmt.Errorf("duration %q must be positive", s)
		}
		return d, nil
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, fmt.Errorf("duration %q: want a number and a unit, e.g. 14d, 36h or 2w", s)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > 1e6 {
			return 0, fmt.Errorf("duration %q: number %q out of range", s, rest[:i])
		}
		var unit time.Duration
		switch rest[i] {
		case 'h':
			unit = time.Hour
		case 'd':
			unit = 24 * time.Hour
		case 'w':
			unit = 7 * 24 * time.Hour
		default:
			return 0, fmt.Errorf("duration %q: unknown unit %q (use h, d or w)", s, rest[i])
		}
		total += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	if total <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return total, nil
}

// minRate is the smallest rate a Rate option takes, 0 (no limit) aside:
// below it the number was most likely meant in other units, and a backup
// would take days.
const minRate = 64 << 10

// parsed is a flag's value that its kind's parser reads once, on Set.
// A value it refuses is kept for Refused rather than returned: the
// command reports it once every flag is parsed and its option files
// read, as one of its own checks (recorded like them), not as the flag
// parser's error. It shows the text as given, so that help's default and
// config show what was written; Type is "string", as help has always
// named these.
type parsed struct {
	text  string
	parse func(s string) error
	err   error // the refusal of text
}

func (v *parsed) String() string { return v.text }
func (v *parsed) Type() string   { return "string" }
func (v *parsed) Set(s string) error {
	v.text, v.err = s, v.parse(s)
	return nil
}

// Refused is why the parser of the first flag of fs (by name) whose
// value it refused did so; nil when there is none. The message starts
// with the flag and the value (`--max-rate "10" is ...`), as every usage
// error about a flag's value does, so that the command can add the file
// and line when an option file gave it.
func Refused(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if v, ok := f.Value.(*parsed); ok && v.err != nil && err == nil {
			err = v.err
		}
	})
	return err
}

// bindParsed binds o to a parsed value whose default is o's default text.
func (f Flags) bindParsed(o Option, parse func(s string) error) {
	def := defaultOf[string](o)
	if err := parse(def); err != nil {
		panic(fmt.Sprintf("options: the default of --%s: %v", o.Name, err))
	}
	f.fs.VarP(&parsed{text: def, parse: parse}, o.Name, o.Short, o.Help)
	f.done(o)
}

// Size binds a byte count of at least least bytes (ParseSize); the option
// has a default.
func (f Flags) Size(name string, p *int64, least int64) {
	o := f.option(name, Size)
	f.bindParsed(o, func(s string) error {
		n, err := ParseSize(s)
		if err != nil {
			return fmt.Errorf("--%s: %v", name, err)
		}
		if n < least {
			return fmt.Errorf("--%s %q is below the least taken (%s); give a unit, like %s", name, s, leastText(least), o.Default)
		}
		*p = n
		return nil
	})
}

// leastText is a least size as a size is written: 64KiB, 16MiB.
func leastText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Rate binds bytes per second (ParseRate): 0 for no limit, else at least
// minRate.
func (f Flags) Rate(name string, p *int64) {
	o := f.option(name, Rate)
	f.bindParsed(o, func(s string) error {
		v, err := ParseRate(s)
		if err != nil {
			return fmt.Errorf("--%s %q: want bytes per second with a unit, like 200MiB/s or 50MB/s", name, s)
		}
		if v > 0 && v < minRate {
			return fmt.Errorf("--%s %q is %d bytes per second, below the least taken (64KiB/s); give a unit, like 200MiB/s", name, s, v)
		}
		*p = v
		return nil
	})
}

// Span binds a span of time that may count days and weeks (ParseSpan),
// 0 until given.
func (f Flags) Span(name string, p *time.Duration) {
	o := f.option(name, Span)
	f.bindParsed(o, func(s string) error {
		if s == "" {
			*p = 0
			return nil
		}
		d, err := ParseSpan(s)
		if err != nil {
			return fmt.Errorf("--%s: %v", name, err)
		}
		*p = d
		return nil
	})
}

// boolValue is a boolean flag that reads its value as option files write
// booleans (mariadb.ParseOptionBool), on the command line too.
type boolValue struct{ p *bool }

func (v boolValue) String() string   { return strconv.FormatBool(*v.p) }
func (v boolValue) Type() string     { return "bool" }
func (v boolValue) IsBoolFlag() bool { return true }
func (v boolValue) Set(s string) error {
	b, err := mariadb.ParseOptionBool(s, false)
	if err != nil {
		return err
	}
	*v.p = b
	return nil
}

// Codec binds a compression option: a codec and an optional level
// (codec.Parse), like zstd or lz4:3.
func (f Flags) Codec(name string, p *codec.Codec) {
	f.bindParsed(f.option(name, String), func(s string) error {
		c, err := codec.Parse(s)
		if err != nil {
			return fmt.Errorf("--%s: %v", name, err)
		}
		*p = c
		return nil
	})
}

// Hash binds the name of a digest algorithm that backups are hashed
// with (archive.NewHash).
func (f Flags) Hash(name string, p *string) {
	f.bindParsed(f.option(name, String), func(s string) error {
		if _, err := archive.NewHash(s); err != nil {
			return fmt.Errorf("--%s: %v", name, err)
		}
		*p = s
		return nil
	})
}

// Paths binds a colon-separated list of directories, as PATH is written
// (empty entries dropped), whose default comes from the option's
// environment variable. An entry that is not a directory is refused, as
// a bad $VAR is: mistyped, it would only show later, as a tool of the
// wrong version "found" in PATH.
func (f Flags) Paths(name string, p *[]string) {
	o := f.option(name, String)
	v := &parsed{parse: func(s string) error {
		var dirs []string
		for _, dir := range filepath.SplitList(s) {
			if dir == "" {
				continue
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return fmt.Errorf("--%s %q: %s is not a directory (want MariaDB installations, each a basedir or a directory of programs, separated by colons)", name, s, dir)
			}
			dirs = append(dirs, dir)
		}
		*p = dirs
		return nil
	}}
	if o.Env != "" {
		_ = v.Set(os.Getenv(o.Env)) // a refusal is kept for Refused
	}
	f.fs.VarP(v, o.Name, o.Short, o.Help)
	f.done(o)
}
