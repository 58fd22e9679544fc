package pitr

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/gtid"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/toolpath"
)

// Applied says what Apply did.
type Applied struct {
	Server   string   // the server whose binary logs were applied, hostname-server_id
	Binlogs  []string // the archived files read
	From, To Position // the target server's position before and after
}

// Apply replays the archived binary logs of one server (t.Server, or the
// only one the repository has) onto the running server conn names, from
// the GTID position that server has reached (the later of gtid_binlog_pos
// and gtid_slave_pos, per domain) up to t: what it has is never applied
// twice. A position the archive does not hold (another server's
// transactions, or one before or after the archive) is refused, naming
// both. On a server without a binary log the new position is recorded in
// gtid_slave_pos, so that the next Apply starts after it. The binary logs
// are read with the mariadb-binlog of their server's version found on
// path (findBinlog), within the budget mem.
func Apply(ctx context.Context, r *repo.Repo, t Target, conn mariadb.Config, path toolpath.Path, mem *archive.Memory, log io.Writer) (*Applied, error) {
	db, err := mariadb.Open(ctx, conn, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var binlogPos, slavePos string
	var logBin bool
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos, @@gtid_slave_pos, @@log_bin").Scan(&binlogPos, &slavePos, &logBin); err != nil {
		return nil, fmt.Errorf("%s: read the GTID position: %w", conn, err)
	}
	bp, err1 := ParsePosition(binlogPos)
	sp, err2 := ParsePosition(slavePos)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%s: unreadable GTID position (gtid_binlog_pos %q, gtid_slave_pos %q)", conn, binlogPos, slavePos)
	}
	from := bp.merge(sp)
	if len(from) == 0 {
		return nil, fmt.Errorf("the server at %s has no GTID position (gtid_binlog_pos and gtid_slave_pos are empty), so what it holds of the archive is unknown: on a server restored from a backup, SET GLOBAL gtid_slave_pos to the backup's GTID (backstream list shows it) first", conn)
	}
	files, err := r.Binlogs(ctx)
	if err != nil {
		return nil, err
	}
	source, err := chooseSource(files, t.Server)
	if err != nil {
		return nil, err
	}
	var mine []repo.BinlogEntry
	for _, e := range files {
		if e.Source == source && e.Manifest != nil {
			mine = append(mine, e)
		}
	}
	first, err := startFile(mine, from)
	if err != nil {
		return nil, fmt.Errorf("the server at %s, at GTID position %s, is not on the archived binary logs of %s: %w", conn, from, source, err)
	}
	if t.GTID != "" {
		want, _ := ParseTargetGTIDs(t.GTID)
		if from.reaches(want) {
			return &Applied{Server: source, From: from, To: from}, nil
		}
	}
	m := mine[first].Manifest
	if err := checkGTIDReplay(m.Server.Version, "--apply-to", "restore a datadir with --until and a time or end instead, and start the server on it"); err != nil {
		return nil, err
	}
	binlog, err := findBinlog(ctx, path, m.Server.Version)
	if err != nil {
		return nil, err
	}
	at := &archive.Manifest{ID: "at the server's position " + from.String(), Server: m.Server, Positions: archive.Positions{BinlogFile: m.Binlog.Name}}
	needed, err := covering(ctx, r, at, files, t)
	if err != nil {
		return nil, err
	}
	if err := checkDomainsNamed(t, from, files, needed); err != nil {
		return nil, err
	}
	if err := checkReadable(ctx, r, needed); err != nil {
		return nil, err
	}
	work, err := scratch.MkdirTemp("apply-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	paths, err := fetchBinlogs(ctx, r, needed, filepath.Join(work, "binlogs"), mem)
	if err != nil {
		return nil, err
	}
	cnf := filepath.Join(work, "client.cnf")
	if err := mariadb.WriteDefaultsFile(cnf, conn); err != nil {
		return nil, err
	}
	applied, err := pipeBinlogs(ctx, binlog, cnf, append([]string{"--start-position=" + from.String()}, stopArgs(t)...), paths, log)
	if err != nil {
		if !logBin {
			// Which transactions got in before the failure is not known
			// here: the server's gtid_slave_pos is left as it was.
			return nil, fmt.Errorf("the server at %s: %w (some transactions after %s may be applied; the server has no binary log, so set gtid_slave_pos to what it holds before applying again)", conn, err, from)
		}
		return nil, fmt.Errorf("the server at %s: %w", conn, err)
	}
	res := &Applied{Server: source, From: from, To: from.merge(applied)}
	// Recorded first: applied transactions must never be applied twice,
	// also when the check below finds the target short.
	if !logBin && len(applied) > 0 {
		if err := setSlavePos(ctx, db, res.To); err != nil {
			return nil, fmt.Errorf("the server at %s: transactions up to %s applied, but recording that position failed: %w", conn, res.To, err)
		}
	}
	if err := checkReached(t, from, applied); err != nil {
		return nil, err
	}
	for _, c := range needed {
		res.Binlogs = append(res.Binlogs, c.Name)
	}
	return res, nil
}

// setSlavePos records pos as what the server has applied: without a
// binary log, nothing else keeps it.
func setSlavePos(ctx context.Context, db *sql.DB, pos Position) error {
	return mariadb.SetGTIDSlavePos(ctx, db, pos.String())
}

// chooseSource picks the server whose archived binary logs are applied.
func chooseSource(files []repo.BinlogEntry, server string) (string, error) {
	var sources []string
	for _, e := range files {
		if !slices.Contains(sources, e.Source) {
			sources = append(sources, e.Source)
		}
	}
	switch {
	case server != "" && slices.Contains(sources, server):
		return server, nil
	case server != "":
		return "", &restore.RefusedError{Err: fmt.Errorf("the repository has no archived binary logs of server %s; it has those of %s", server, strings.Join(sources, ", "))}
	case len(sources) == 0:
		return "", fmt.Errorf("the repository has no archived binary logs (run backstream binlog)")
	case len(sources) > 1:
		return "", &restore.RefusedError{Err: fmt.Errorf("the repository holds binary logs of several servers (%s): name the one to apply with --server", strings.Join(sources, ", "))}
	}
	return sources[0], nil
}

// startFile returns the index of the archived file that pos falls in: the
// last one whose starting position (its GTID list) pos has reached in
// every domain. pos must name only transactions of the archived stream:
// each domain's server among those the stream has in it, its sequence
// not past the archive's end.
func startFile(files []repo.BinlogEntry, pos Position) (int, error) {
	if len(files) == 0 {
		return 0, fmt.Errorf("nothing of that server is archived")
	}
	servers := map[uint32][]uint32{}
	var end Position = Position{}
	for i, e := range files {
		for _, s := range []string{e.Manifest.Binlog.Previous, e.Manifest.Binlog.FirstGTID, e.Manifest.Binlog.LastGTID} {
			for _, g := range gtid.Entries(s) {
				servers[g.Domain] = append(servers[g.Domain], g.Server)
			}
		}
		e, _ := endOf(files, i)
		end = end.merge(e)
	}
	for _, d := range pos.domains() {
		g := pos[d]
		if !slices.Contains(servers[d], g.server) {
			return 0, fmt.Errorf("the archive has no transaction of server %d in domain %d (the archive ends at %s)", g.server, d, end)
		}
		if e, ok := end[d]; !ok || g.seq > e.seq {
			return 0, fmt.Errorf("domain %d is past the archive, which ends at %s", d, end)
		}
	}
	first := -1
	for i, e := range files {
		start, _ := ParsePosition(e.Manifest.Binlog.Previous)
		if pos.reaches(start) {
			first = i
		}
	}
	if first < 0 {
		start := files[0].Manifest.Binlog
		return 0, fmt.Errorf("it is before the first archived file, %s, which starts after %s", start.Name, start.Previous)
	}
	return first, nil
}
