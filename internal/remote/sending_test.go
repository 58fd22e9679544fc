package remote

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
)

func TestSendingPrinters(t *testing.T) {
	s := &Sending{Manifest: &archive.Manifest{ID: "B", Kind: archive.KindPhysical, Streams: make([]archive.Stream, 2),
		Files: make([]archive.File, 5), Stats: archive.Stats{RawBytes: 200, StoredBytes: 100}},
		Sent: &Sent{Receivers: []ReceiverOutcome{{Address: "a:1", OK: true, Report: "stored\n"}, {Address: "b:2", Error: "refused"}}}, Elapsed: 1234 * time.Millisecond}
	var b bytes.Buffer
	s.WriteText(&b)
	if got, want := b.String(), "backup B sent to a:1: 2 streams, 5 files, 100 bytes (2.00x of 200) on the wire in 1.23s\nreceiver a:1: stored\n"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	raw, err := json.Marshal(s.JSON())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"B"`, `"kind":"physical"`, `"stored_bytes":100`, `"streams":2`, `"receivers":[{"address":"a:1","ok":true,"report":"stored\n"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON %s lacks %s", raw, want)
		}
	}
}
