package mariadb

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeCnf writes content to name in dir with mode 0600 and returns its path.
func writeCnf(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// kv renders options as "key=value" (or "key" when bare) for comparisons.
func kv(opts []Option) []string {
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		if o.Bare {
			out = append(out, o.Key)
		} else {
			out = append(out, o.Key+"="+o.Value)
		}
	}
	return out
}

func TestReadOptionFileSyntax(t *testing.T) {
	tests := []struct {
		name    string
		content string
		groups  []string
		want    []string
		wantErr string
	}{
		{name: "key value forms", content: "[client]\nuser=a\nhost = h \n  port\t=\t3307\nskip-ssl\n", want: []string{"user=a", "host=h", "port=3307", "skip-ssl"}},
		{name: "comments and blank lines", content: "# top\n; semi\n\n[client]\n  # indented\nuser=a # trailing\nhost=h;not-a-comment\n", want: []string{"user=a", "host=h;not-a-comment"}},
		{name: "double quotes keep blanks and hash", content: "[client]\npassword=\" a #b \"\n", want: []string{"password= a #b "}},
		{name: "single quotes", content: "[client]\npassword='x\"y'\n", want: []string{"password=x\"y"}},
		{name: "escapes", content: "[client]\npassword=\"\\\\ \\\" \\' \\n \\t \\r \\b \\s \\x\"\n", want: []string{"password=\\ \" ' \n \t \r \b   \\x"}},
		{name: "escaped quote does not end quote", content: "[client]\npassword=\"a\\\"#b\" # c\n", want: []string{"password=a\"#b"}},
		{name: "unmatched quote kept", content: "[client]\nuser=\"abc\nhost='x\"\n", want: []string{"user=\"abc", "host='x\""}},
		{name: "single quote char value", content: "[client]\nuser=\"\n", want: []string{"user=\""}},
		{name: "empty quoted", content: "[client]\npassword=\"\"\n", want: []string{"password="}},
		{name: "trailing backslash kept", content: "[client]\nuser=a\\\n", want: []string{"user=a\\"}},
		{name: "underscores become dashes", content: "[client]\nmax_allowed_packet=1M\n", want: []string{"max-allowed-packet=1M"}},
		{name: "first equals splits", content: "[client]\npassword=a=b\n", want: []string{"password=a=b"}},
		{name: "group filter and case", content: "[mysqld]\ndatadir=/x\n[CLIENT]\nuser=a\n[client ]  junk\nhost=h\n[ client]\nport=1\n", groups: []string{"client"}, want: []string{"user=a", "host=h"}},
		{name: "all groups when none given", content: "[a]\nx=1\n[b]\ny=2\n", want: []string{"x=1", "y=2"}},
		{name: "crlf", content: "[client]\r\nuser=a\r\n", want: []string{"user=a"}},
		{name: "quote in key affects comment", content: "[client]\nit's=1 #c'\n", want: []string{"it's=1 #c'"}},
		{name: "unknown directive ignored", content: "[client]\n!foo bar\nuser=a\n", want: []string{"user=a"}},
		{name: "option before group", content: "user=a\n", wantErr: ":1: option \"user=a\" before any [group]"},
		{name: "unterminated group", content: "[client\n", wantErr: ":1: group header without ']'"},
		{name: "empty key", content: "[client]\n=x\n", wantErr: ":2: option without a name"},
		{name: "include without argument", content: "[client]\n!include  \n", wantErr: ":2: !include without an argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeCnf(t, t.TempDir(), "my.cnf", tt.content)
			opts, err := ReadOptionFile(p, tt.groups...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err = %v, want one naming %s and containing %q", err, p, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := kv(opts); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadOptionFileLocations(t *testing.T) {
	p := writeCnf(t, t.TempDir(), "my.cnf", "[client]\n\nuser=a\n[client-server]\nhost=h\n")
	opts, err := ReadOptionFile(p, "client", "client-server")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2 || opts[0].Line != 3 || opts[0].Group != "client" || opts[1].Line != 5 || opts[1].Group != "client-server" || opts[1].File != p {
		t.Fatalf("got %+v", opts)
	}
}

func TestReadOptionFileIncludes(t *testing.T) {
	dir := t.TempDir()
	incdir := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(incdir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeCnf(t, incdir, "b.cnf", "[client]\nuser=from-b\n")
	writeCnf(t, incdir, "a.cnf", "[client]\nuser=from-a\n")
	writeCnf(t, incdir, "c.txt", "[client]\nuser=from-txt\n")
	inc := writeCnf(t, dir, "inc.cnf", "[client]\nhost=from-inc\n")
	main := writeCnf(t, dir, "my.cnf", "[client]\nport=1\n!include "+inc+"\n!include "+filepath.Join(dir, "missing.cnf")+"\n!includedir "+incdir+"\nsocket=/s\n")
	opts, err := ReadOptionFile(main, "client")
	if err != nil {
		t.Fatal(err)
	}
	want := "port=1|host=from-inc|user=from-a|user=from-b|socket=/s"
	if got := strings.Join(kv(opts), "|"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// An option read from an included file keeps that file's group state:
	// the including file's group continues after the include.
	if opts[1].File != inc || opts[4].Group != "client" {
		t.Fatalf("locations: %+v", opts)
	}

	bad := writeCnf(t, dir, "bad.cnf", "[client]\n!includedir "+filepath.Join(dir, "nodir")+"\n")
	if _, err := ReadOptionFile(bad); err == nil || !strings.Contains(err.Error(), bad+":2") {
		t.Fatalf("missing includedir: err = %v", err)
	}
}

func TestReadOptionFileIncludeLoop(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.cnf")
	b := filepath.Join(dir, "b.cnf")
	writeCnf(t, dir, "a.cnf", "[client]\nuser=a1\n!include "+b+"\nuser=a2\n")
	writeCnf(t, dir, "b.cnf", "[client]\nhost=b\n!include "+a+"\n!include "+b+"\n")
	opts, err := ReadOptionFile(a, "client")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(kv(opts), "|"), "user=a1|host=b|user=a2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestReadOptionFileDepthLimit(t *testing.T) {
	dir := t.TempDir()
	// f0 includes f1 ... includes f12; MariaDB stops following at depth 10.
	for i := 0; i <= 12; i++ {
		content := "[client]\nport=" + strconv.Itoa(i) + "\n"
		if i < 12 {
			content += "!include " + filepath.Join(dir, "f"+strconv.Itoa(i+1)+".cnf") + "\n"
		}
		writeCnf(t, dir, "f"+strconv.Itoa(i)+".cnf", content)
	}
	opts, err := ReadOptionFile(filepath.Join(dir, "f0.cnf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 11 || opts[10].Value != "10" {
		t.Fatalf("got %q, want ports 0..10", kv(opts))
	}
}

func TestReadOptionFileMissingAndWorldWritable(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadOptionFile(filepath.Join(dir, "nope.cnf"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	p := writeCnf(t, dir, "ww.cnf", "[client]\nuser=planted\n")
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	opts, err := ReadOptionFile(p)
	if err != nil || len(opts) != 0 {
		t.Fatalf("world-writable file: opts %v, err %v; want it ignored", opts, err)
	}
}

// mariadbGroups are the groups the mariadb client reads.
var mariadbGroups = []string{"mysql", "mariadb-client", "client", "client-server", "client-mariadb"}

// printDefaults runs the real client's option parser on file.
func printDefaults(t *testing.T, file string) string {
	t.Helper()
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Fatalf("the mariadb client is not installed (scripts/deps.sh installs it): %v", err)
	}
	cmd := exec.Command(bin, "--defaults-file="+file, "--print-defaults")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mariadb --print-defaults: %v", err)
	}
	// The first line names the program: "<argv0> would have been started
	// with the following arguments:"; the arguments follow.
	_, args, ok := strings.Cut(string(out), "following arguments:\n")
	if !ok {
		t.Fatalf("mariadb --print-defaults: unexpected output %q", out)
	}
	return args
}

// ourPrintDefaults renders opts the way "mariadb --print-defaults" does.
func ourPrintDefaults(opts []Option) string {
	var b strings.Builder
	for _, o := range opts {
		b.WriteString("--" + o.Key)
		if !o.Bare {
			b.WriteString("=" + o.Value)
		}
		b.WriteString(" ")
	}
	b.WriteString("\n")
	return b.String()
}

// TestReadOptionFileMatchesMariaDB feeds awkward lines to the real client and
// to ReadOptionFile and requires the same result.
func TestReadOptionFileMatchesMariaDB(t *testing.T) {
	lines := []string{
		`user=plain`,
		`user = spaced  `,
		`user="double # quoted"`,
		`user='single # quoted'`,
		`user=unquoted # comment`,
		`user=a;b`,
		`user="a\"b" # c`,
		`user='a\'b'`,
		`user=\\\"\'\n\t\r\b\s\x`,
		`user="unbalanced`,
		`user="`,
		`user=""`,
		`user=a\`,
		`user=a"b"c`,
		`user=a'#'b`,
		`user= "x" `,
		`user="x"y"`,
		`host`,
		`host # c`,
		"user=\ttab\t",
		`password=a=b=c`,
		`ssl-ca=/p/a b`,
	}
	dir := t.TempDir()
	for i, line := range lines {
		p := writeCnf(t, dir, "c"+strconv.Itoa(i)+".cnf", "[client]\n"+line+"\n[mysqld]\nuser=ignored\n[client-mariadb]\nport=1\n")
		opts, err := ReadOptionFile(p, mariadbGroups...)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if got, want := ourPrintDefaults(opts), printDefaults(t, p); got != want {
			t.Errorf("%q:\n got %q\nwant %q", line, got, want)
		}
	}
}

func FuzzReadOptionFile(f *testing.F) {
	f.Add("[client]\nuser=a\npassword=\"p \\\" # x\"\n")
	f.Add("[client]\n!include /nonexistent\nhost = h # c\n")
	f.Add("[a]\nk\n[b ]\nk2='v'\n")
	f.Add("user=a\n")
	f.Add("[client\n")
	f.Fuzz(func(t *testing.T, content string) {
		p := filepath.Join(t.TempDir(), "f.cnf")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		opts, err := ReadOptionFile(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, o := range opts {
			if o.Key == "" || strings.Contains(o.Key, "_") || o.Line < 1 {
				t.Fatalf("bad option %+v", o)
			}
			if o.Bare && o.Value != "" {
				t.Fatalf("bare option with value %+v", o)
			}
		}
	})
}
