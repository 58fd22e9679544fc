package remote

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// storeEvents is what a Store's callbacks heard.
type storeEvents struct {
	mu             sync.Mutex
	stored         []Stored
	failed         []error
	began, endedOK int
}

// Store with Keep takes one transfer after another into the repository:
// each backup arrives whole and Stored hears where it went; a transfer
// that fails (a backup the repository holds) is told to Failed and Store
// listens on; each transfer has its own progress, ended with its error;
// an error of Stored ends Store.
func TestStoreKeepsListening(t *testing.T) {
	ctx := testContext(t)
	r := repotest.New(t)
	addr := make(chan string, 1)
	var ev storeEvents
	stop := errors.New("stop after the second")
	req := StoreRequest{Listen: "127.0.0.1:0", Transport: testOptions(), Repo: r, Workers: 2, Keep: true,
		Listening: func(a net.Addr) { addr <- a.String() },
		Progress: func() (physical.Progress, func(error)) {
			ev.mu.Lock()
			defer ev.mu.Unlock()
			ev.began++
			return nil, func(err error) {
				ev.mu.Lock()
				defer ev.mu.Unlock()
				if err == nil {
					ev.endedOK++
				}
			}
		},
		Stored: func(s Stored) error {
			ev.mu.Lock()
			defer ev.mu.Unlock()
			if ev.stored = append(ev.stored, s); len(ev.stored) == 2 {
				return stop
			}
			return nil
		},
		Failed: func(err error) { ev.mu.Lock(); ev.failed = append(ev.failed, err); ev.mu.Unlock() }}
	done := make(chan error, 1)
	go func() { done <- Store(ctx, req) }()
	var to string
	select {
	case to = <-addr:
	case err := <-done:
		t.Fatalf("Store ended before listening: %v", err)
	}
	ids := []string{testID, testID, "20261121T190513Z-8a4b"}
	for i, id := range ids {
		s, err := Dial(ctx, []string{to}, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		files := testFiles(uint64(10 + i))
		_, err = writeBackupAs(ctx, t, s, id, files, 2)
		s.Close()
		if (err != nil) != (i == 1) {
			t.Fatalf("send %d of %s: %v; want only the second refused", i, id, err)
		}
		if i != 1 {
			checkStored(t, r, id, files)
		}
	}
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("Store returned %v, want Stored's error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Store did not end on Stored's error")
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for i, s := range ev.stored {
		want := Stored{Backup: []string{ids[0], ids[2]}[i], Into: IntoRepository, Where: r.Backend.Location()}
		if s != want {
			t.Errorf("Stored heard %+v, want %+v", s, want)
		}
	}
	if len(ev.stored) != 2 || ev.began != 3 || ev.endedOK != 2 {
		t.Errorf("%d backups stored, %d transfers begun, %d ended well; want 2, 3, 2", len(ev.stored), ev.began, ev.endedOK)
	}
	if len(ev.failed) != 1 || !strings.Contains(ev.failed[0].Error(), "already holds backup "+testID) {
		t.Errorf("Failed heard %v, want the second transfer's refusal", ev.failed)
	}
}
