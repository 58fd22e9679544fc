package restorecase

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/restore"
)

// What goes with no mode, or not with the one chosen, is refused (a
// *restore.RefusedError, which the cli makes exit 2) before the
// repository is opened or a connection resolved.
func TestRunRefusesBeforeOpening(t *testing.T) {
	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"kind with until", Request{Kind: "physical", Until: "end"}, "--kind chooses what latest names"},
		{"kind with apply-to", Request{Kind: "logical", ApplyTo: true}, "--kind chooses what latest names"},
		{"mask with until", Request{Masking: true, Until: "end"}, "--until, --until-gtid and --apply-to restore, replay or import data as it is"},
		{"as alone", Request{As: "a.b"}, "--as goes with --table and --apply-to"},
		{"until into place", Request{Until: "end", Given: Given{Place: "datadir"}}, "--datadir restores a backup into place; a point-in-time restore writes a --target-dir"},
		{"server defaults alone", Request{Restore: restore.Request{ServerDefaults: "/etc/my.cnf"}}, "--server-defaults-file goes with --prepare"},
		{"apply-to alone", Request{ApplyTo: true}, "--apply-to, --server and --base go with --until or --until-gtid"},
		{"server alone", Request{Server: "db1-1"}, "--apply-to, --server and --base go with --until or --until-gtid"},
		{"place misuse", Request{Given: Given{PlaceMisuse: errors.New("--force goes with --datadir")}}, "--force goes with --datadir"},
		{"both targets", Request{Until: "end", UntilGTID: "0-1-1"}, "give --until or --until-gtid, not both"},
		{"bad time", Request{Until: "yesterday"}, `--until "yesterday": want a time like`},
		{"bad gtid", Request{UntilGTID: "0-1"}, `--until-gtid "0-1"`},
		{"bad base", Request{Until: "end", Base: "binlog"}, `--base "binlog": want physical or logical`},
		{"until with an id", Request{Until: "end", Named: true}, "give no backup id"},
		{"until without target", Request{Until: "end"}, "--target-dir is required"},
		{"apply from a base", Request{Until: "end", ApplyTo: true, Base: "physical"}, "--base chooses the backup a point-in-time restore starts from"},
		{"apply into a directory", Request{Until: "end", ApplyTo: true, Restore: restore.Request{TargetDir: "/x"}}, "it takes no --target-dir, --prepare or --server-defaults-file"},
		{"import with server", Request{ApplyTo: true, Load: Choices{Tables: []string{"a.b"}}, Server: "s"}, "--server and --base go with --until or --until-gtid"},
		{"import into place", Request{ApplyTo: true, Load: Choices{Tables: []string{"a.b"}}, Given: Given{Place: "force"}}, "--force restores a whole backup into place"},
		{"import into a directory", Request{ApplyTo: true, Load: Choices{Tables: []string{"a.b"}}, Restore: restore.Request{Options: restore.Options{Prepare: true}}}, "it takes no --target-dir or --prepare"},
		{"import renamed", Request{ApplyTo: true, Load: Choices{Tables: []string{"a.b"}}, Given: Given{Load: "rename-database"}}, "--rename-database does not go with --table/--database --apply-to"},
		{"import as with database", Request{ApplyTo: true, Load: Choices{Databases: []string{"a"}}, As: "a.c"}, "--as names one table: it does not go with --database"},
		{"import as with two tables", Request{ApplyTo: true, Load: Choices{Tables: []string{"a.b", "a.c"}}, As: "a.d"}, "--as names one table: give one --table with it"},
		{"import bad name", Request{ApplyTo: true, Load: Choices{Tables: []string{"ab"}}}, `table "ab": give it as database.table`},
		{"import twice", Request{ApplyTo: true, Load: Choices{Tables: []string{"a.b", "a.b"}}}, "table a.b is named twice"},
	} {
		c.req.Deferred = Deferred{
			Open: func(context.Context) (*repo.Repo, error) {
				t.Errorf("%s: the repository was opened", c.name)
				return nil, errors.New("not opened")
			},
			Conn: func() (mariadb.Config, error) {
				t.Errorf("%s: the connection was resolved", c.name)
				return mariadb.Config{}, errors.New("not resolved")
			},
		}
		_, err := Run(context.Background(), c.req)
		var re *restore.RefusedError
		if (!errors.As(err, &re) && c.name != "place misuse") || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want refused, saying %q", c.name, err, c.want)
		}
	}
}

// Once the manifest says the backup's kind, what is for the other kind is
// refused.
func TestCheckKind(t *testing.T) {
	physical := &archive.Manifest{ID: "20261121T190512Z-0001", Kind: archive.KindPhysical}
	logical := &archive.Manifest{ID: "20261121T190512Z-0002", Kind: archive.KindLogical}
	for _, c := range []struct {
		name string
		req  Request
		m    *archive.Manifest
		want string // "" for accepted
	}{
		{"logical into a directory", Request{Restore: restore.Request{TargetDir: "/x"}}, logical, "is logical: it loads into a running server"},
		{"logical into place", Request{Datadir: "/x"}, logical, "is logical: it loads into a running server"},
		{"logical", Request{Given: Given{Load: "socket", LoadIsConn: true}}, logical, ""},
		{"physical masked", Request{Restore: restore.Request{TargetDir: "/x"}, Masking: true}, physical, "is physical: its files are restored as they are and cannot be masked"},
		{"physical filtered", Request{Restore: restore.Request{TargetDir: "/x"}, Given: Given{Load: "database"}}, physical, "--database is for logical backups"},
		{"physical with a connection", Request{Restore: restore.Request{TargetDir: "/x"}, Given: Given{Load: "socket", LoadIsConn: true}}, physical, "--socket is for logical backups"},
		{"physical started", Request{Datadir: "/x", Start: "systemd", Given: Given{Load: "socket", LoadIsConn: true}}, physical, ""},
		{"physical as JSON", Request{Restore: restore.Request{TargetDir: "/x"}, Given: Given{Load: "json"}}, physical, ""},
		{"physical in two places", Request{Restore: restore.Request{TargetDir: "/x"}, Datadir: "/y"}, physical, "give one"},
		{"physical nowhere", Request{}, physical, "--target-dir (or --datadir) is required"},
	} {
		err := c.req.checkKind(c.m)
		var re *restore.RefusedError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v; want accepted", c.name, err)
		case c.want != "" && (!errors.As(err, &re) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want refused, saying %q", c.name, err, c.want)
		}
	}
}

// The load's choices that contradict each other are refused; renames are
// read as from:to.
func TestChoicesParse(t *testing.T) {
	for _, c := range []struct {
		c    Choices
		want string
	}{
		{Choices{Rename: []string{"a"}}, `--rename-database "a": give it as from:to`},
		{Choices{ExcludeTables: []string{"t"}}, `table "t": give it as database.table`},
		{Choices{Resume: true, DropExisting: true}, "--resume and --drop-existing contradict each other"},
		{Choices{ReplaceUsers: true}, "--replace-users needs --users"},
	} {
		_, _, err := c.c.Parse()
		var re *restore.RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want refused, saying %q", c.c, err, c.want)
		}
	}
	_, rename, err := (&Choices{Rename: []string{"a:b"}, Tables: []string{"a.t"}}).Parse()
	if err != nil || rename["a"] != "b" {
		t.Errorf("a:b: %v, %v", rename, err)
	}
}

// Run restores a backup named by a prefix of its id through the engine
// its manifest chooses, under a lock, with the title and total of its
// progress; a physical backup refuses what only a load takes once the
// manifest says its kind, before the datadir is claimed.
func TestRunByName(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0001", Files: files})
	target := filepath.Join(t.TempDir(), "datadir")
	var title string
	req := Request{Backup: "20261121T1905", Named: true, Restore: restore.Request{TargetDir: target, OwnerGiven: true, Options: restore.Options{NoSync: true}}, Lock: repo.LockOptions{Operation: repo.OpRestore},
		Deferred: Deferred{
			Open:    func(context.Context) (*repo.Repo, error) { return r, nil },
			Tracker: func(s string, total int64) *progress.Tracker { title = s; return nil },
		}}
	refused := req
	refused.Given.Load = "database"
	var re *restore.RefusedError
	if _, err := Run(ctx, refused); !errors.As(err, &re) || !strings.Contains(err.Error(), "--database is for logical backups") {
		t.Fatalf("a physical backup with --database: %v; want refused", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused restore made its target: %v", err)
	}
	res, err := Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Datadir == nil || res.Datadir.Backup.ID != m.ID || res.Datadir.Target != target || title != "restore "+m.ID {
		t.Errorf("result %+v, progress %q", res, title)
	}
	if got, err := os.ReadFile(filepath.Join(target, "db/t.ibd")); err != nil || string(got) != files["db/t.ibd"] {
		t.Errorf("db/t.ibd: %q, %v", got, err)
	}
}
