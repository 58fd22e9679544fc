package storage

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"backups/20261121T190512Z-7f3a/manifest.json", true},
		{".hidden", true},
		{"x.tmp", true},
		{".tmpx", true},
		{"a..b", true},
		{"...", true},
		{"a b/ü", true},
		{"", false},
		{"/", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{".", false},
		{"..", false},
		{"./a", false},
		{"a/.", false},
		{"a/../b", false},
		{`a\b`, false},
		{"a\x00", false},
		{"\xe7", false},
		{"a/\xff/b", false},
		{".tmp", false},
		{".a.tmp", false},
		{"d/.obj.0123.tmp/x", false},
	}
	for _, tc := range tests {
		err := CheckName(tc.name)
		if tc.ok && err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, ErrInvalidName) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalidName", tc.name, err)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{"a", true},
		{"a/", true},
		{"a/b", true},
		{"a/.", true},  // begins "a/.x"
		{"a/..", true}, // begins "a/..x"
		{".x.tmp", true},
		{"/", false},
		{"/a", false},
		{"a//", false},
		{"./", false},
		{"../", false},
		{".x.tmp/", false},
		{"a\\", false},
	}
	for _, tc := range tests {
		err := CheckPrefix(tc.prefix)
		if tc.ok && err != nil {
			t.Errorf("CheckPrefix(%q) = %v, want nil", tc.prefix, err)
		}
		if !tc.ok && !errors.Is(err, ErrInvalidName) {
			t.Errorf("CheckPrefix(%q) = %v, want ErrInvalidName", tc.prefix, err)
		}
	}
}

// FuzzCheckName checks that an accepted name can reach nothing outside a
// root however a backend maps it to a path, and that CheckPrefix accepts
// every beginning of an accepted name.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a//b", ".x.tmp", "a\\b", "/a", "a/./b", "ü/.tmp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckName(name) != nil {
			return
		}
		if !fs.ValidPath(name) || path.Clean(name) != name || path.IsAbs(name) {
			t.Fatalf("CheckName accepted %q, which is not a clean relative path", name)
		}
		if strings.ContainsAny(name, "\x00\\") {
			t.Fatalf("CheckName accepted %q with NUL or backslash", name)
		}
		if IsTempName(path.Base(name)) {
			t.Fatalf("CheckName accepted %q, whose base is a temporary name", name)
		}
		for i := range len(name) + 1 {
			if i < len(name) && !utf8.RuneStart(name[i]) {
				continue // prefixes must not split a character
			}
			if err := CheckPrefix(name[:i]); err != nil {
				t.Fatalf("CheckPrefix(%q) = %v, though it begins the valid %q", name[:i], err, name)
			}
		}
	})
}

// FuzzCheckPrefix checks that an accepted prefix begins some valid name.
func FuzzCheckPrefix(f *testing.F) {
	for _, s := range []string{"", "a/", "a/b", "../", "a//", ".x.tmp/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prefix string) {
		err := CheckPrefix(prefix)
		if err != nil {
			return
		}
		for _, suffix := range []string{"", "x", "/x", "x/y"} {
			if CheckName(prefix+suffix) == nil {
				return
			}
		}
		t.Fatalf("CheckPrefix accepted %q, but it begins no name tried", prefix)
	})
}
