package usecasetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/testkit"
)

// PlaceOf is the request `restore --datadir datadir` makes of the latest
// backup of r: restored into place with the default start and check
// timeouts. Unlike RestoreOf's, it syncs what it writes, as the command
// does unless told --no-sync: the restores into place are where the
// suite checks end to end that a restore syncs.
func PlaceOf(r Repo, datadir string) restorecase.Request {
	req := RestoreOf(r, "")
	req.Restore.Options.NoSync = false
	req.Datadir, req.Given.Place = datadir, "datadir"
	req.StartTimeout, req.CheckTimeout = optionDefault[time.Duration]("restore", "start-timeout"), optionDefault[time.Duration]("restore", "check-timeout")
	return req
}

// Started is req with `--start how --socket socket --user root
// --no-defaults`: the server how starts is reached, and checked, there.
func Started(req restorecase.Request, how, socket string) restorecase.Request {
	req.Start = how
	return withConn(req, mariadb.Config{Socket: socket, User: "root", Protocol: "socket"})
}

// ImportOf is the request `restore --table tables --apply-to --no-binlog`
// makes of the latest backup of r with the connection flags of the
// sandbox server s (see Conn): the tables imported into s, without
// writing its binary log (a sandbox server writes one, and an import
// refuses it otherwise). The test sets what else it asks for (As,
// Load.Databases, ...).
func ImportOf(r Repo, s *sandbox.Server, tables ...string) restorecase.Request {
	req := withConn(RestoreOf(r, ""), Conn(s))
	req.ApplyTo, req.Load.Tables, req.Load.NoBinlog = true, tables, true
	return req
}

// withConn is req with the connection flags that reach conn given: the
// first of the options of a load that restore was given is one of them.
func withConn(req restorecase.Request, conn mariadb.Config) restorecase.Request {
	req.Given.Load, req.Given.LoadIsConn = "socket", true
	req.Deferred.Conn = func() (mariadb.Config, error) { return conn, nil }
	return req
}

// AgeKeys writes a fresh X25519 key pair: a recipients file and an
// identities file, as age-keygen would.
func AgeKeys(t testing.TB) (recipients, identities string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	recipients, identities = filepath.Join(dir, "backup.pub"), filepath.Join(dir, "backup.key")
	if err := os.WriteFile(recipients, []byte(id.Recipient().String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(identities, []byte("# test key\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return recipients, identities
}

// AccessWith is how a command reaches r with `--repo Location` and the
// key files keys (--recipient-file, --identity-file, --passphrase-file).
func (r Repo) AccessWith(keys repoaccess.KeyFiles) repoaccess.Options {
	o := r.Access()
	o.Keys = keys
	return o
}

// JSONProgress records what a use case reports through the trackers it
// makes (a request's Deferred.Tracker is JSONProgress.Tracker), as
// `--progress json` prints it: one JSON event a line; trackers may share
// it. The zero value is ready for use.
type JSONProgress struct{ testkit.SyncBuffer }

// Tracker starts a tracker of JSON events into p at the default interval,
// as `--progress json` makes one.
func (p *JSONProgress) Tracker(title string, total int64) *progress.Tracker {
	return progress.Start(progress.Options{Mode: progress.ModeJSON, Out: p, Title: title, Total: total})
}

// Events are the progress and summary events recorded (not the log
// events), in order.
func (p *JSONProgress) Events(t testing.TB) []progress.Event { return ProgressEvents(t, p.String()) }

// Summary is the summary event recorded: the bytes the operation read
// (BytesIn), whether it succeeded.
func (p *JSONProgress) Summary(t testing.TB) progress.Event {
	t.Helper()
	events := p.Events(t)
	if len(events) == 0 || events[len(events)-1].Event != "summary" {
		t.Fatalf("no progress summary in %+v", events)
	}
	return events[len(events)-1]
}

// Check is CheckProgress of what p recorded.
func (p *JSONProgress) Check(t testing.TB, what, id string, minLast float64) []progress.Event {
	t.Helper()
	return CheckProgress(t, what, p.String(), id, minLast)
}

// ProgressEvents are the progress and summary events (not the log
// events) of the JSON lines of out (`--progress json`'s; other lines are
// skipped), in order.
func ProgressEvents(t testing.TB, out string) []progress.Event {
	t.Helper()
	var events []progress.Event
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e progress.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("progress line %q: %v", line, err)
		}
		if e.Event != "log" {
			events = append(events, e)
		}
	}
	return events
}

// CheckProgress checks the `--progress json` lines in out of a successful
// operation on backup id: every event after the id is known names it; the
// percent never goes back; the last progress event, once the data has
// moved, says at least minLast percent (the estimate was near the truth);
// and the summary says 100% of a total that is the bytes that came in. It
// returns the progress events.
func CheckProgress(t testing.TB, what, out, id string, minLast float64) []progress.Event {
	t.Helper()
	events := ProgressEvents(t, out)
	if len(events) < 2 {
		t.Fatalf("%s: %d events, want progress and a summary:\n%s", what, len(events), out)
	}
	sum, events := events[len(events)-1], events[:len(events)-1]
	if sum.Event != "summary" || sum.OK == nil || !*sum.OK {
		t.Fatalf("%s: the last event is not a successful summary: %+v", what, sum)
	}
	if sum.Backup != id || sum.Percent == nil || *sum.Percent != 100 || sum.Total != sum.BytesIn || sum.BytesIn == 0 {
		t.Errorf("%s: summary names backup %q, says %v%% of %d with %d in; want %s, 100%% of what came in", what, sum.Backup, PercentOf(sum.Percent), sum.Total, sum.BytesIn, id)
	}
	var last float64
	named := false
	for i, e := range events {
		named = named || e.Backup != ""
		if named && e.Backup != id {
			t.Errorf("%s: event %d (%s) names backup %q, want %s", what, i, e.Stage, e.Backup, id)
		}
		if e.Percent == nil {
			continue
		}
		if *e.Percent < last {
			t.Errorf("%s: event %d (%s) says %.1f%%, after %.1f%%", what, i, e.Stage, *e.Percent, last)
		}
		last = *e.Percent
	}
	if last < minLast {
		t.Errorf("%s: the last progress event says %.1f%%, want at least %.0f%%: the estimate was far off\n%s", what, last, minLast, out)
	}
	return events
}

// PercentOf is an event's percent as it prints: null when unknown.
func PercentOf(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

// EncryptedBackupOf is BackupOf for `backup --encrypt --recipient-file
// recipients`: the backup stored encrypted to the recipients.
func EncryptedBackupOf(t testing.TB, r Repo, src *sandbox.Server, recipients string) backup.Request {
	t.Helper()
	return Encrypted(t, r, BackupOf(t, r, src), repoaccess.KeyFiles{RecipientFile: recipients})
}
