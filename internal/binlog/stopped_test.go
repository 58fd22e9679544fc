package binlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/usecasetest"
)

// binlog --follow stopped while it stores a segment (the upload held by
// a fault until the stop cuts it short): its status says it stopped,
// as when the stop comes between two stores.
func TestBinlogFollowStoppedMidStore(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 1)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	held := faulty.New(r.Backend)
	a := usecasetest.ArchiverOf(t, r, src)
	var err error
	if a.Repo, err = repo.Open(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	a.FlushInterval = 100 * time.Millisecond
	stop := usecasetest.Follow(t, a)
	following := func() string {
		out, err := json.Marshal(usecasetest.ListBinlogs(t, r).JSON(true))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	for i := 0; !strings.Contains(following(), `"following":true`); i++ {
		if i == 100 {
			t.Fatalf("no status says the follower follows:\n%s", following())
		}
		src.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* %d */", i))
		time.Sleep(100 * time.Millisecond)
	}
	held.Add(faulty.Fault{Op: faulty.OpPut, Name: "segments", Delay: time.Hour})
	for i := 0; held.Fired() == 0; i++ {
		if i == 100 {
			t.Fatal("no segment upload began after the fault was set")
		}
		src.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* held %d */", i))
		time.Sleep(100 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Errorf("binlog --follow stopped: %v", err)
	}
	if got := following(); !strings.Contains(got, `"following":false`) {
		t.Errorf("stopped inside a store, list --binlogs --status --json says:\n%s\nwant following false", got)
	}
}
