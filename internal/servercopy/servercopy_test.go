package servercopy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// Which copy a run is: a new one, the unfinished one resumed or started
// over, or a refusal.
func TestCopyID(t *testing.T) {
	src := Server{Hostname: "db1", Port: 3306}
	earlier := &record{id: "copy-20261121T190512Z-7f3a", source: "db1:3306", started: time.Date(2026, 11, 21, 19, 5, 12, 0, time.UTC)}
	other := &record{id: earlier.id, source: "db9:3306", started: earlier.started}
	for _, tc := range []struct {
		name    string
		job     Job
		earlier *record
		id      string // "new": a new id
		err     string
	}{
		{"fresh", Job{}, nil, "new", ""},
		{"resume nothing", Job{Resume: true}, nil, "", "holds no unfinished copy"},
		{"unfinished", Job{}, earlier, "", "--resume continues it, --drop-existing starts over"},
		{"resume", Job{Resume: true}, earlier, earlier.id, ""},
		{"start over", Job{DropExisting: true}, earlier, earlier.id, ""},
		{"resume from another source", Job{Resume: true}, other, "", "is from db9:3306, not from db1:3306"},
		{"start over from another source", Job{DropExisting: true}, other, earlier.id, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := copyID(tc.job, tc.earlier, src)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one saying %q", err, tc.err)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case tc.id == "new" && (!strings.HasPrefix(id, "copy-") || id == earlier.id):
				t.Errorf("id %q, want a new one", id)
			case tc.id != "new" && id != tc.id:
				t.Errorf("id %q, want %q", id, tc.id)
			}
		})
	}
}

// A copy goes to the same or a newer MariaDB only.
func TestCheckVersions(t *testing.T) {
	v := func(major, minor int) *mariadb.Server {
		return &mariadb.Server{Major: major, Minor: minor, Version: fmt.Sprintf("%d.%d.1-MariaDB", major, minor)}
	}
	for _, tc := range []struct {
		src, dst *mariadb.Server
		ok       bool
	}{
		{v(10, 6), v(10, 11), true},
		{v(10, 11), v(10, 11), true},
		{v(10, 11), v(11, 4), true},
		{v(10, 11), v(10, 6), false},
		{v(11, 4), v(10, 11), false},
	} {
		err := checkVersions(tc.src, tc.dst)
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "older than the source's") {
			t.Errorf("%s into %s: %v", tc.src.Version, tc.dst.Version, err)
		}
	}
}

// A server is not copied onto itself, however it is reached; nothing
// changes on it. Another server is: the target records the copy and the
// source's position.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	bySocket := mariadb.Config{Socket: src.Socket, User: "root", Protocol: mariadb.ProtocolSocket}
	byTCP := mariadb.Config{Host: "127.0.0.1", Port: src.Port, User: "root", Protocol: mariadb.ProtocolTCP}
	for _, to := range []mariadb.Config{bySocket, byTCP} {
		_, err := Run(ctx, Job{From: bySocket, To: to, Parallel: 2})
		if err == nil || !strings.Contains(err.Error(), "the same server") {
			t.Errorf("a copy onto itself through %s: %v; want a refusal", to, err)
		}
	}
	var n int
	if err := src.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&n); err != nil || n != 0 {
		t.Errorf("a refused copy changed the server (%v)", err)
	}

	dst := sandboxtest.Start(t, sandbox.Options{})
	res, err := Run(ctx, Job{From: bySocket, To: mariadb.Config{Socket: dst.Socket, User: "root", Protocol: mariadb.ProtocolSocket}, Parallel: 2,
		Filter: schema.Filter{Databases: []string{"sample"}}, Skip: schema.Skip{Users: true}})
	if err != nil {
		t.Fatal(err)
	}
	var gtid, file string
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	if err := dst.DB().QueryRowContext(ctx, "SELECT gtid_binlog_pos, binlog_file FROM backstream_load.copies WHERE id = ?", res.ID).Scan(&gtid, &file); err != nil {
		t.Fatal(err)
	}
	if gtid != res.Position.GTID || file != res.Position.BinlogFile || res.Load.Tables != 2 {
		t.Errorf("recorded %s %s, the copy %+v, %d tables", gtid, file, res.Position, res.Load.Tables)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	got, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: checksum %q, the source's %q", k, got[k], v)
		}
	}
}
