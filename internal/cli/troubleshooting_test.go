package cli

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// troubleshootingPage lists every error message the binary can produce;
// TestTroubleshootingListsEveryMessage keeps it complete.
const troubleshootingPage = "../../docs/troubleshooting.md"

// errorMessage is one message format found in the source.
type errorMessage struct {
	pos    string // file:line, relative to the module root
	format string
	key    string
}

// messageConstructors maps the functions that turn a format into an error
// (or into a reason a user reads) to the index of their format argument.
// A call is matched by the function's name, with or without a package or
// receiver in front: usagef, archive.Corruptf, p.errorf, sink.failure.
var messageConstructors = map[string]int{
	"fmt.Errorf":     0,
	"errors.New":     0,
	"usagef":         0, // cli: bad flags or arguments, exit 2
	"refusal.Errorf": 0, // a refusal of what was asked, exit 2
	"refusal.New":    0,
	"refusedf":       0, // restorecase, importtable, pitr: a restore refused for what was asked
	"Corruptf":       0, // archive: data that fails a check, exit 3
	"corruptf":       1, // codec: (codec name, format, ...)
	"errorf":         0, // remote: prefixes the receiver's address
	"failure":        0, // physical: what of mariabackup failed, then its stderr
	"fail":           0, // restoretest: a problem in the restore test's report
	"Abort":          0, // transport: the reason sent to the peer, read as "peer says: ..."
}

var (
	// fmtVerb matches a fmt verb with its flags, width, precision and
	// index, or an escaped percent sign.
	fmtVerb = regexp.MustCompile(`%%|%[-+# 0]*(?:\[\d+\])?(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:\[\d+\])?[a-zA-Z]`)
	// word is what the two-word threshold counts.
	word = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_'-]*`)
)

// messageKey is the text the page must contain for a format: its longest
// run of literal text between verbs, trimmed of spaces and punctuation at
// both ends. A key of fewer than two words means the format only adds
// context to a cause ("backup %s: %w"), and it is skipped.
func messageKey(format string) (string, bool) {
	var runs []string
	var run strings.Builder
	last := 0
	for _, m := range fmtVerb.FindAllStringIndex(format, -1) {
		run.WriteString(format[last:m[0]])
		last = m[1]
		if format[m[0]:m[1]] == "%%" {
			run.WriteByte('%')
			continue
		}
		runs = append(runs, run.String())
		run.Reset()
	}
	run.WriteString(format[last:])
	runs = append(runs, run.String())
	key := ""
	for _, r := range runs {
		r = strings.Join(strings.Fields(strings.Trim(r, " \t\n:;,.()[]{}\"'`=")), " ")
		if len(r) > len(key) {
			key = r
		}
	}
	return key, len(word.FindAllString(key, -1)) >= 2
}

// binarySources lists the non-test Go files of the module's packages that
// cmd/backstream is built from: only those can print a message to a user
// (test helpers such as storagetest and the fault injector are left out).
func binarySources(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps",
		"-f", `{{with .Module}}{{if eq .Path "github.com/backstream/backstream"}}{{range $.GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}`,
		"./cmd/backstream")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	files := strings.Fields(string(out))
	if len(files) < 50 {
		t.Fatalf("go list found only %d source files of cmd/backstream", len(files))
	}
	return files
}

// collectMessages finds every message format in files.
func collectMessages(t *testing.T, root string, files []string) []errorMessage {
	t.Helper()
	fset := token.NewFileSet()
	var msgs []errorMessage
	seen := map[token.Pos]bool{}
	// add records the format whose literal starts at n, once: a literal
	// reached both as a Sprintf in an Error function and as the argument of
	// a constructor is one message.
	add := func(n ast.Node, format string) {
		key, ok := messageKey(format)
		if !ok || seen[n.Pos()] {
			return
		}
		seen[n.Pos()] = true
		p := fset.Position(n.Pos())
		rel, err := filepath.Rel(root, p.Filename)
		if err != nil {
			rel = p.Filename
		}
		msgs = append(msgs, errorMessage{pos: fmt.Sprintf("%s:%d", rel, p.Line), format: format, key: key})
	}
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", file, err)
		}
		for _, decl := range f.Decls {
			// Error methods (and helpers named like timeoutError) build
			// their text with fmt.Sprintf.
			fd, _ := decl.(*ast.FuncDecl)
			inError := fd != nil && strings.HasSuffix(fd.Name.Name, "Error")
			ast.Inspect(decl, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				name := calleeName(call.Fun)
				if inError && name == "fmt.Sprintf" && len(call.Args) > 0 {
					if s, lit, ok := stringConstant(call.Args[0]); ok {
						add(lit, s)
					}
					return true
				}
				i, ok := messageConstructors[name]
				if !ok {
					if dot := strings.LastIndexByte(name, '.'); dot >= 0 && name[:dot] != "fmt" && name[:dot] != "errors" {
						i, ok = messageConstructors[name[dot+1:]]
					}
				}
				if !ok || len(call.Args) <= i {
					return true
				}
				if s, lit, ok := stringConstant(call.Args[i]); ok {
					add(lit, s)
				}
				return true
			})
		}
	}
	return msgs
}

// calleeName spells a called function as pkg.Func, recv.Method or Func.
func calleeName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
		return "_." + f.Sel.Name
	}
	return ""
}

// stringConstant evaluates a string literal, a sum of them, or a
// fmt.Sprintf of one (the format then holds the message), and returns the
// expression the text starts at.
func stringConstant(e ast.Expr) (string, ast.Expr, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", nil, false
		}
		c := constant.MakeFromLiteral(v.Value, v.Kind, 0)
		if c.Kind() != constant.String {
			return "", nil, false
		}
		return constant.StringVal(c), v, true
	case *ast.BinaryExpr:
		if v.Op != token.ADD {
			return "", nil, false
		}
		a, start, ok1 := stringConstant(v.X)
		b, _, ok2 := stringConstant(v.Y)
		return a + b, start, ok1 && ok2
	case *ast.ParenExpr:
		return stringConstant(v.X)
	case *ast.CallExpr:
		if calleeName(v.Fun) == "fmt.Sprintf" && len(v.Args) > 0 {
			return stringConstant(v.Args[0])
		}
	}
	return "", nil, false
}

// TestTroubleshootingListsEveryMessage fails when a message in the code
// has no entry in docs/troubleshooting.md, naming where each one is made.
func TestTroubleshootingListsEveryMessage(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(troubleshootingPage)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(page)), " ")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	msgs := collectMessages(t, root, binarySources(t))
	// A floor, so that a parser that stopped finding messages fails loudly
	// instead of passing with nothing to check.
	if len(msgs) < 300 {
		t.Fatalf("found only %d messages in the source", len(msgs))
	}
	var missing []string
	keys := map[string]bool{}
	for _, m := range msgs {
		keys[m.key] = true
		if !strings.Contains(text, m.key) {
			missing = append(missing, fmt.Sprintf("%s: %q (key %q)", m.pos, m.format, m.key))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d error messages are not in docs/troubleshooting.md; add an entry (the message with <placeholders>, "+
			"what it means, what to do, the exit code) that contains each key:\n%s",
			len(missing), len(msgs), strings.Join(missing, "\n"))
	}
	t.Logf("%d messages, %d distinct keys, checked against %s", len(msgs), len(keys), troubleshootingPage)
}

// TestCollectMessages runs the collector on a file that uses every kind of
// constructor, so that a change in how the code makes errors that the
// collector misses fails here rather than leaving messages unchecked.
func TestCollectMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `package x

import ("errors"; "fmt")

var errSentinel = errors.New("sentinel message here")

type myError struct{ n int }

func (e *myError) Error() string { return fmt.Sprintf("custom error %d happened", e.n) }

func timeoutError(n int) error { return errors.New(fmt.Sprintf("timed out after %d seconds", n)) }

func f(p *peer, s *sink, r *report, c *conn, id string, err error) []error {
	fmt.Sprintf("not an error %d at all", 1)
	return []error{
		fmt.Errorf("backup %s: %w", id, err),
		fmt.Errorf("first part, " + "second part %s", id),
		usagef("--flag %q is wrong here", id),
		archive.Corruptf("frame %d is damaged", 1),
		Corruptf("local corrupt thing %d", 1),
		corruptf("zstd", "codec detail %d bytes", 1),
		p.errorf("peer said no %s", id),
		s.failure(fmt.Sprintf("child process %s failed", id), err),
		r.fail("%s: table check failed", id),
		c.Abort("reason sent over"),
		fmt.Errorf(id),
	}
}
`
	file := filepath.Join(dir, "x.go")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range collectMessages(t, dir, []string{file}) {
		got = append(got, m.format)
	}
	want := []string{
		"sentinel message here",
		"custom error %d happened",
		"timed out after %d seconds",
		"first part, second part %s",
		"--flag %q is wrong here",
		"frame %d is damaged",
		"local corrupt thing %d",
		"codec detail %d bytes",
		"peer said no %s",
		"child process %s failed",
		"%s: table check failed",
		"reason sent over",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("collected:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMessageKey pins the key rule the page's header explains.
func TestMessageKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, key string
		message     bool
	}{
		{"backup %s: %w", "backup", false},
		{"%s: %w", "", false},
		{"stream %d index: %w", "stream", false},
		{"malformed digest %q", "malformed digest", true},
		{"object suffix %q: no codec; known suffixes: %s", "no codec; known suffixes", true},
		{"truncated: %d bytes is shorter than a frame header", "bytes is shorter than a frame header", true},
		{"frame %d at offset %#x: %05d%% done", "at offset", true},
		{`mariabackup --backup exited 0 but never said "completed OK!"`, `mariabackup --backup exited 0 but never said "completed OK!`, true},
	} {
		key, message := messageKey(tc.format)
		if key != tc.key || message != tc.message {
			t.Errorf("messageKey(%q) = %q, %v; want %q, %v", tc.format, key, message, tc.key, tc.message)
		}
	}
}
