package xbstream

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func p(path string, off uint64, data string) Chunk {
	return Chunk{Type: TypePayload, Path: path, Offset: off, Payload: []byte(data)}
}
func pw(path string, off uint64, data string) Chunk {
	c := p(path, off, data)
	c.Flags = FlagRewrite
	return c
}
func e(path string) Chunk             { return Chunk{Type: TypeEOF, Path: path} }
func s(path string, off uint64) Chunk { return Chunk{Type: TypeSeek, Path: path, Offset: off} }
func d(path string) Chunk             { return Chunk{Type: TypeRemove, Path: path} }
func r(oldPath, newPath string) Chunk {
	return Chunk{Type: TypeRename, Path: oldPath, NewPath: newPath}
}
func sw(path string, off uint64) Chunk { c := s(path, off); c.Flags = FlagRewrite; return c }

func TestValidator(t *testing.T) {
	tests := []struct {
		name    string
		chunks  []Chunk
		failAt  int    // index of the chunk Check must refuse; -1 if none
		want    string // substring of that error
		openEnd bool   // End must report open files
	}{
		{"one file", []Chunk{p("a", 0, "xx"), p("a", 2, "y"), e("a")}, -1, "", false},
		{"empty file is an E alone", []Chunk{e("a")}, -1, "", false},
		{"interleaved files", []Chunk{p("a", 0, "x"), p("b", 0, "y"), p("a", 1, "x"), e("b"), e("a")}, -1, "", false},
		{"zero length payload", []Chunk{p("a", 0, ""), p("a", 0, "x"), e("a")}, -1, "", false},
		{"gap", []Chunk{p("a", 0, "xx"), p("a", 3, "y")}, 1, "expected 2", false},
		{"overlap", []Chunk{p("a", 0, "xx"), p("a", 1, "y")}, 1, "expected 2", false},
		{"first chunk not at 0", []Chunk{p("a", 5, "x")}, 0, "expected 0", false},
		{"seek back and overwrite", []Chunk{p("a", 0, "xxxx"), s("a", 1), p("a", 1, "y"), p("a", 2, "z"), e("a")}, -1, "", false},
		{"seek forward leaves a hole", []Chunk{p("a", 0, "x"), s("a", 100), p("a", 100, "y"), e("a")}, -1, "", false},
		{"seek opens a file", []Chunk{s("a", 10), p("a", 10, "y"), e("a")}, -1, "", false},
		{"payload after seek elsewhere", []Chunk{p("a", 0, "xxxx"), s("a", 1), p("a", 4, "y")}, 2, "expected 1", false},
		{"reopen after E", []Chunk{p("a", 0, "x"), e("a"), p("a", 0, "y")}, 2, "without the rewrite flag", false},
		{"reopen E after E", []Chunk{e("a"), e("a")}, 1, "without the rewrite flag", false},
		{"reopen with seek after E", []Chunk{e("a"), s("a", 0)}, 1, "without the rewrite flag", false},
		{"rewrite after E", []Chunk{p("a", 0, "x"), e("a"), pw("a", 0, "yy"), p("a", 2, "z"), e("a")}, -1, "", false},
		{"rewrite seek after E", []Chunk{p("a", 0, "x"), e("a"), sw("a", 4), p("a", 4, "z"), e("a")}, -1, "", false},
		{"rewrite must start at 0", []Chunk{p("a", 0, "x"), e("a"), pw("a", 5, "y")}, 2, "expected 0", false},
		{"rewrite of a new file", []Chunk{pw("a", 0, "x"), e("a")}, -1, "", false},
		{"reopen after remove", []Chunk{p("a", 0, "x"), e("a"), d("a"), p("a", 0, "y"), e("a")}, -1, "", false},
		{"remove unknown path", []Chunk{d("db/t.MAD")}, -1, "", false},
		{"remove open file", []Chunk{p("a", 0, "x"), d("a")}, 1, `"a" is still open`, false},
		{"remove directory with open file", []Chunk{p("db/t", 0, "x"), d("db")}, 1, `"db/t" is still open`, false},
		{"remove directory then reopen content", []Chunk{e("db/t"), d("db"), e("db/t")}, -1, "", false},
		{"remove sibling prefix keeps file", []Chunk{e("db/t"), d("d"), e("db/t")}, 2, "without the rewrite flag", false},
		{"rename", []Chunk{p("a", 0, "x"), e("a"), r("a", "b"), e("a")}, -1, "", false},
		{"rename target exists", []Chunk{e("a"), r("a", "b"), p("b", 0, "x")}, 2, "without the rewrite flag", false},
		{"rename target rewritten", []Chunk{e("a"), r("a", "b"), pw("b", 0, "x"), e("b")}, -1, "", false},
		{"rename directory", []Chunk{e("db/t"), r("db", "db2"), e("db/t"), e("db2/t")}, 3, "without the rewrite flag", false},
		{"rename open file", []Chunk{p("a", 0, "x"), r("a", "b")}, 1, `"a" is still open`, false},
		{"rename onto open file", []Chunk{e("a"), p("b", 0, "x"), r("a", "b")}, 2, `"b" is open`, false},
		{"open at end", []Chunk{p("a", 0, "x"), e("b")}, -1, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewValidator()
			for i := range tt.chunks {
				err := v.Check(&tt.chunks[i])
				if i == tt.failAt {
					if err == nil || !strings.Contains(err.Error(), tt.want) {
						t.Fatalf("chunk %d: error %v, want one containing %q", i, err, tt.want)
					}
					return
				}
				if err != nil {
					t.Fatalf("chunk %d (%v %q): %v", i, tt.chunks[i].Type, tt.chunks[i].Path, err)
				}
			}
			err := v.End()
			if tt.openEnd != (err != nil) {
				t.Fatalf("End() = %v, want open files: %v", err, tt.openEnd)
			}
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("End() error %q does not match io.ErrUnexpectedEOF", err)
			}
		})
	}
}

func TestValidatorRejectedChunkLeavesState(t *testing.T) {
	v := NewValidator()
	c := p("a", 0, "xx")
	if err := v.Check(&c); err != nil {
		t.Fatal(err)
	}
	bad := p("a", 7, "y")
	if err := v.Check(&bad); err == nil {
		t.Fatal("out-of-order chunk accepted")
	}
	good := p("a", 2, "y")
	if err := v.Check(&good); err != nil {
		t.Fatalf("state changed by a rejected chunk: %v", err)
	}
}

func TestValidatorEndNamesFiles(t *testing.T) {
	v := NewValidator()
	for _, path := range []string{"z", "b", "a"} {
		c := p(path, 0, "x")
		if err := v.Check(&c); err != nil {
			t.Fatal(err)
		}
	}
	err := v.End()
	if err == nil || !strings.Contains(err.Error(), `3 file(s) open`) || !strings.Contains(err.Error(), `"a", "b", "z"`) {
		t.Fatalf("End() = %v, want the three sorted paths", err)
	}
	for i := range 20 {
		c := p("f"+strings.Repeat("x", i), 0, "x")
		if err := v.Check(&c); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.End(); err == nil || !strings.Contains(err.Error(), "and 13 more") {
		t.Fatalf("End() = %v, want a capped list", err)
	}
}

func TestValidatorChecksFields(t *testing.T) {
	v := NewValidator()
	c := Chunk{Type: TypeEOF, Path: "../x"}
	if err := v.Check(&c); err == nil {
		t.Fatal("Check accepted a path with ..")
	}
}
