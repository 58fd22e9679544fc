package backupid

import (
	"testing"
	"time"
)

func TestNewIsValidAndSortsByTime(t *testing.T) {
	at := time.Date(2026, 11, 21, 19, 5, 12, 900, time.FixedZone("x", 3600))
	id := New(at)
	if !Valid(id) {
		t.Fatalf("New made %q, which Valid refuses", id)
	}
	if id[:17] != "20261121T180512Z-" {
		t.Fatalf("New(%v) = %q: want the UTC time first", at, id)
	}
	got, ok := Time(id)
	if !ok || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("Time(%q) = %v, %v; want %v", id, got, ok, at.Truncate(time.Second))
	}
	if later := New(at.Add(time.Second)); later <= id {
		t.Fatalf("an id a second later, %q, does not sort after %q", later, id)
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"20261121T190512Z-7f3a", true},
		{"20261121T190512Z-7F3A", false},
		{"20261121T190512Z-7f3", false},
		{"20261121T190512-7f3a", false},
		{"x20261121T190512Z-7f3a", false},
		{"20261121T190512Z-7f3a/..", false},
		{"", false},
	} {
		if got := Valid(tc.s); got != tc.ok {
			t.Errorf("Valid(%q) = %v, want %v", tc.s, got, tc.ok)
		}
		if _, ok := Time(tc.s); ok != tc.ok {
			t.Errorf("Time(%q) ok = %v, want %v", tc.s, ok, tc.ok)
		}
	}
}
