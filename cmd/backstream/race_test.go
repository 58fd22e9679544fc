package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// noraceList matches scripts/test.sh's list of the packages whose tests
// run without the race detector.
var noraceList = regexp.MustCompile(`(?m)^norace="([^"]*)"$`)

// The suite leaves the race detector off only for packages whose own code
// starts no goroutine (scripts/test.sh says why): a package listed there
// has no go statement, calls no Go method (errgroup's, sync.WaitGroup's)
// and imports no errgroup. One that starts to must leave the list, so
// that its tests run with the detector again.
func TestRaceFreePackagesStartNoGoroutine(t *testing.T) {
	script, err := os.ReadFile("../../scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := noraceList.FindSubmatch(script)
	if m == nil {
		t.Fatal(`scripts/test.sh has no norace="..." line`)
	}
	dirs := strings.Fields(string(m[1]))
	if len(dirs) == 0 {
		t.Fatal("scripts/test.sh's norace list is empty")
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("norace package %s: no Go files (%v)", dir, err)
			continue
		}
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				for _, why := range goroutinesStarted(t, f) {
					t.Errorf("%s is in scripts/test.sh's norace list but %s: take it off the list", dir, why)
				}
			}
		}
	}
}

// goroutinesStarted says where file starts goroutines, or may.
func goroutinesStarted(t *testing.T, file string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); strings.HasSuffix(p, "/errgroup") {
			found = append(found, fset.Position(imp.Pos()).String()+" imports "+p)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = append(found, fset.Position(n.Pos()).String()+" has a go statement")
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" {
				found = append(found, fset.Position(n.Pos()).String()+" calls a Go method")
			}
		}
		return true
	})
	return found
}
