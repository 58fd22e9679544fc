package mariadb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Option is one setting read from an option file.
type Option struct {
	// Group is the [group] the option was found in, as written.
	Group string
	// Key is the option name with underscores turned into dashes, because
	// MariaDB treats "max_allowed_packet" and "max-allowed-packet" alike.
	Key string
	// Value is the value after unquoting and unescaping; "" for a bare key.
	Value string
	// Bare is true for a key written without "=", e.g. "password" on its
	// own, which the clients read as "ask for it".
	Bare bool
	// File and Line locate the option, for messages.
	File string
	Line int
}

// maxIncludeDepth is how deep !include and !includedir nest before MariaDB
// skips further directives (mysys/my_default.c uses 10).
const maxIncludeDepth = 10

// ReadOptionFile parses one my.cnf-style file and returns, in file order, the
// options of the given groups (all options when no group is given). It
// follows MariaDB's reader (mysys/my_default.c) so that backstream sees what
// mariabackup and the mariadb client see:
//
//   - Lines are trimmed; empty lines and lines starting with '#' or ';' are
//     comments.
//   - "[name]" starts a group; the name ends at the first ']' and loses
//     trailing blanks (not leading ones). Group names match case-insensitively.
//     Text after ']' is ignored. An option before any group is an error.
//   - "key", "key=value" and "key = value": blanks around key and value are
//     dropped. A '#' outside quotes ends the line (a trailing ';' does not).
//   - A value that starts and ends with the same quote (' or ") loses them.
//     In any value, \n \t \r \b \s (space) \\ \" \' are escapes; a backslash
//     before any other character is kept as is.
//   - "!include FILE" reads FILE at that point; a missing FILE (or one that
//     is not a regular file) is ignored, as MariaDB does. "!includedir DIR" reads DIR's *.cnf files in name
//     order; a missing DIR is an error. Other "!" directives are ignored.
//     Nesting stops at depth 10, and a file that is already being read
//     (an include loop) is not read again: either way the last value of
//     every key is the one MariaDB ends with.
//   - A world-writable file is ignored, as MariaDB ignores it to keep others
//     from planting options.
//
// A missing path is reported with an error that wraps fs.ErrNotExist.
// Errors name the file and line.
func ReadOptionFile(path string, groups ...string) ([]Option, error) {
	r := optionReader{groups: groups, active: map[string]bool{}}
	if err := r.readFile(path, 0); err != nil {
		return nil, err
	}
	return r.opts, nil
}

type optionReader struct {
	groups []string
	opts   []Option
	// active holds the files being read, to break include loops.
	active map[string]bool
}

func (r *optionReader) wanted(group string) bool {
	if len(r.groups) == 0 {
		return true
	}
	for _, g := range r.groups {
		if asciiEqualFold(g, group) {
			return true
		}
	}
	return false
}

func (r *optionReader) readFile(path string, depth int) error {
	key := path
	if abs, err := filepath.Abs(path); err == nil {
		key = abs
	}
	if r.active[key] {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("option file %s: %w", path, err)
	}
	if fi.Mode().IsRegular() && fi.Mode().Perm()&0o002 != 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("option file %s: %w", path, err)
	}
	defer f.Close()
	r.active[key] = true
	defer delete(r.active, key)
	return r.parse(path, f, depth)
}

// ParseOptionFile is ReadOptionFile for the content of a file read from
// elsewhere (a backup's backup-my.cnf); name is its name in messages.
func ParseOptionFile(name string, data []byte, groups ...string) ([]Option, error) {
	r := optionReader{groups: groups, active: map[string]bool{}}
	if err := r.parse(name, bytes.NewReader(data), 0); err != nil {
		return nil, err
	}
	return r.opts, nil
}

// parse reads the lines of the file path from f.
func (r *optionReader) parse(path string, f io.Reader, depth int) error {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var group string
	foundGroup := false
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), blanks)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		switch line[0] {
		case '!':
			if depth >= maxIncludeDepth {
				continue
			}
			if err := r.directive(path, lineNo, line[1:], depth); err != nil {
				return err
			}
			continue
		case '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return fmt.Errorf("option file %s:%d: group header without ']'", path, lineNo)
			}
			group = strings.TrimRight(line[1:end], blanks)
			foundGroup = true
			continue
		}
		if !foundGroup {
			return fmt.Errorf("option file %s:%d: option %q before any [group]", path, lineNo, strings.TrimRight(line, blanks))
		}
		opt, err := parseOptionLine(line)
		if err != nil {
			return fmt.Errorf("option file %s:%d: %w", path, lineNo, err)
		}
		if !r.wanted(group) {
			continue
		}
		opt.Group, opt.File, opt.Line = group, path, lineNo
		r.opts = append(r.opts, opt)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("option file %s: after line %d: %w", path, lineNo, err)
	}
	return nil
}

// directive handles the text after '!' on a line.
func (r *optionReader) directive(path string, lineNo int, rest string, depth int) error {
	rest = strings.TrimLeft(rest, blanks)
	keyword := ""
	for _, k := range []string{"includedir", "include"} {
		if strings.HasPrefix(rest, k) && len(rest) > len(k) && isBlank(rest[len(k)]) {
			keyword = k
			break
		}
	}
	if keyword == "" {
		// MariaDB also accepts "!include" followed by the end of the line as
		// a keyword with an empty argument, which is an error.
		if rest == "include" || rest == "includedir" {
			return fmt.Errorf("option file %s:%d: !%s without an argument", path, lineNo, rest)
		}
		return nil
	}
	arg := strings.Trim(rest[len(keyword):], blanks)
	if arg == "" {
		return fmt.Errorf("option file %s:%d: !%s without an argument", path, lineNo, keyword)
	}
	if keyword == "include" {
		// MariaDB ignores a missing file, and reads nothing from a
		// directory; a FIFO or device would block or never end, so only
		// regular files are read.
		fi, err := os.Stat(arg)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
			return nil
		}
		if err := r.readFile(arg, depth+1); err != nil {
			return fmt.Errorf("option file %s:%d: !include: %w", path, lineNo, err)
		}
		return nil
	}
	entries, err := os.ReadDir(arg)
	if err != nil {
		return fmt.Errorf("option file %s:%d: !includedir: %w", path, lineNo, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".cnf" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		file := filepath.Join(arg, name)
		if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
			continue // vanished since the listing, or not a file to read
		}
		if err := r.readFile(file, depth+1); err != nil {
			return fmt.Errorf("option file %s:%d: !includedir: %w", path, lineNo, err)
		}
	}
	return nil
}

// parseOptionLine parses "key", "key=value" (with comments) as MariaDB does.
// line has no leading blanks and is not a comment, group or directive.
func parseOptionLine(line string) (Option, error) {
	line = line[:endOfContent(line)]
	var keyPart, value string
	eq := strings.IndexByte(line, '=')
	bare := eq < 0
	if bare {
		keyPart = line
	} else {
		keyPart = line[:eq]
		value = strings.Trim(line[eq+1:], blanks)
	}
	key := strings.TrimRight(keyPart, blanks)
	if key == "" {
		return Option{}, errors.New("option without a name")
	}
	if !bare {
		if len(value) > 1 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		value = unescapeOptionValue(value)
	}
	return Option{Key: strings.ReplaceAll(key, "_", "-"), Value: value, Bare: bare}, nil
}

// endOfContent returns where a '#' comment starts in line, or len(line). Like
// MariaDB, it tracks quotes from the start of the line (the key included)
// and honours backslash escapes only inside quotes.
func endOfContent(line string) int {
	var quote byte
	escape := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if (c == '\'' || c == '"') && !escape {
			if quote == 0 {
				quote = c
			} else if quote == c {
				quote = 0
			}
		}
		if quote == 0 && c == '#' {
			return i
		}
		escape = quote != 0 && c == '\\' && !escape
	}
	return len(line)
}

func unescapeOptionValue(v string) string {
	if strings.IndexByte(v, '\\') < 0 {
		return v
	}
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i == len(v)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 's':
			b.WriteByte(' ')
		case '"', '\'', '\\':
			b.WriteByte(v[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// blanks are the characters MariaDB's reader trims (isspace in latin1).
const blanks = " \t\n\v\f\r"

func isBlank(c byte) bool { return strings.IndexByte(blanks, c) >= 0 }

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
