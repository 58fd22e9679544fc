package pitr

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restoredserver"
)

// readCatalog reads and checks the catalog of logical backup m.
func readCatalog(ctx context.Context, r *repo.Repo, m *archive.Manifest) (*logical.Catalog, error) {
	data, err := r.ReadMeta(ctx, m, logical.CatalogName)
	if err != nil {
		return nil, err
	}
	cat, err := logical.ParseCatalog(data)
	if err == nil {
		err = cat.Check(m)
	}
	if err != nil {
		return nil, archive.Corruptf("backup %s: %v", m.ID, err)
	}
	return cat, nil
}

// fromLogical makes job.TargetDir the datadir of a new server holding the
// logical backup base (catalog cat) replayed to t: mariadb-install-db
// makes the system tables there (with the options of serverDefaults, so
// that a format or encryption option holds from the start), the server
// started on it loads the backup, accounts included, and replays the
// needed binary logs from the backup's position, then stops cleanly. The
// result is the source's server: its accounts replace those the install
// made.
func fromLogical(ctx context.Context, r *repo.Repo, t Target, job restore.Job, serverDefaults string, base *archive.Manifest, cat *logical.Catalog, needed []covered) (res *Result, err error) {
	if len(job.DataDirs) > 0 {
		return nil, &restore.RefusedError{Err: fmt.Errorf("backup %s, the base of this point-in-time restore, is logical: its tables are created in the new server's datadir, and --map-data-directory is for a physical base", base.ID)}
	}
	if err := r.CheckReadable(ctx, base); err != nil {
		return nil, err
	}
	mariadbd, err := restoredserver.FindServer(ctx, job.MariadbPath, base.Server.Version)
	if err != nil {
		return nil, err
	}
	binlog, err := findBinlog(ctx, job.MariadbPath, base.Server.Version)
	if err != nil {
		return nil, err
	}
	opts, err := restoredserver.ServerOptions(ctx, r, nil, serverDefaults, "")
	if err != nil {
		return nil, err
	}
	target, err := restore.Claim(job.TargetDir, base.ID)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = target.Abandon(err)
		}
	}()
	// The binary logs first: damage there fails before the load, which
	// can take long.
	work, paths, err := fetchInto(ctx, r, job.Options, needed)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	route, err := chooseRoute(work, base, paths, t, job.Options)
	if err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.Stage("making a server in the target directory")
	}
	srv, account, err := startReplayServer(ctx, restoredserver.Options{Dir: filepath.Join(work, "server"), Datadir: target.WorkDir(), UseMemory: job.UseMemory, Server: mariadbd, Options: opts, Install: true, Args: route.args()})
	if err != nil {
		return nil, fmt.Errorf("start a server in %s: %w", target.WorkDir(), err)
	}
	defer srv.Close()
	if err := dropInstalledAccounts(ctx, srv.DB(), account); err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.Stage("loading backup " + base.ID)
	}
	tracker, _ := job.Progress.(*progress.Tracker)
	_, err = logical.Load(ctx, logical.LoadJob{
		Conn: account.Config(srv), Input: r.Input(base), Manifest: base, Catalog: cat,
		Parallel: max(job.Workers, 1), NoBinlog: true, Users: true, Progress: tracker, Memory: job.Memory,
	})
	if err != nil {
		return nil, fmt.Errorf("load backup %s: %w", base.ID, err)
	}
	if job.Progress != nil {
		job.Progress.Stage("replaying binary logs")
	}
	workers, err := route.replay(ctx, work, binlog, srv, account, base, paths, t, job.Log)
	if err != nil {
		return nil, err
	}
	if err := stopReplay(ctx, srv, account); err != nil {
		return nil, err
	}
	if err := target.Finish(job.Owner); err != nil {
		return nil, err
	}
	return result(base, t, opts, needed, workers), nil
}

// dropInstalledAccounts drops the accounts mariadb-install-db made (root
// without a password among them), but for the server's own mariadb.sys,
// the PUBLIC role and the replay's account: the backup's accounts take
// their place.
func dropInstalledAccounts(ctx context.Context, db *sql.DB, account *restoredserver.Account) error {
	rows, err := db.QueryContext(ctx, `SELECT User, Host FROM mysql.user
		WHERE NOT (User = 'mariadb.sys' AND Host = 'localhost') AND NOT (User = 'PUBLIC' AND Host = '') AND NOT (User = ? AND Host = 'localhost')`, account.User)
	if err != nil {
		return fmt.Errorf("list the installed accounts: %w", err)
	}
	var drop []string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			rows.Close()
			return err
		}
		drop = append(drop, mariadb.QuoteString(u, false)+"@"+mariadb.QuoteString(h, false))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, a := range drop {
		if _, err := db.ExecContext(ctx, "DROP USER "+a); err != nil {
			return fmt.Errorf("drop the installed account %s: %w", a, err)
		}
	}
	return nil
}
