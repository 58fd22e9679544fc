package main

import (
	"errors"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode keeps test code out of the shipped binary: no
// package the binary is built from may import testing (or testing/...), and
// none of this module's test kits (sandboxtest, storagetest, s3test, ...)
// may be among them. Test kits are for _test.go files only.
func TestBinaryLinksNoTestCode(t *testing.T) {
	// The test runs in this package's directory, so "." is the binary.
	out := goList(t, "-deps", "-f", "{{.ImportPath}}\t{{with .Module}}{{.Main}}{{end}}\t{{join .Imports \" \"}}", ".")
	sawMain := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, rest, _ := strings.Cut(line, "\t")
		ours, imports, _ := strings.Cut(rest, "\t")
		if ours == "true" {
			if strings.HasSuffix(pkg, "/cmd/backstream") {
				sawMain = true
			}
			if isTestKit(pkg) {
				t.Errorf("the binary links the test kit %s", pkg)
			}
		}
		for _, imp := range strings.Fields(imports) {
			if imp == "testing" || strings.HasPrefix(imp, "testing/") {
				t.Errorf("%s imports %s, so the binary links test code", pkg, imp)
			}
		}
	}
	if !sawMain {
		t.Fatalf("go list -deps did not list cmd/backstream itself:\n%s", out)
	}
}

// isTestKit tells a test kit by its name, as Go names them (httptest,
// iotest): one that ends in "test" or "testkit".
func isTestKit(importPath string) bool {
	name := path.Base(importPath)
	if name == "restoretest" {
		// The use case behind verify --restore-test, not a test kit.
		return false
	}
	return strings.HasSuffix(name, "test") || strings.HasSuffix(name, "testkit")
}

// goList runs go list with args and returns its output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return out
}
