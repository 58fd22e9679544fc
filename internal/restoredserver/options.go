package restoredserver

import (
	"context"
	"fmt"
	"slices"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/sandbox"
)

// ServerOptions returns what a server on the restored datadir of links
// needs: the options each link's backup-my.cnf recorded (base first, so
// the newest link's win), then those of the option file defaultsFile (""
// for none), then the key file's password fileKey if the backup withheld
// it (restore.FileKeyWithheld). It fails before anything is written if
// they name a file this host lacks (see physical.ServerOptions): prepare
// needs the same files.
func ServerOptions(ctx context.Context, r *repo.Repo, links []restore.Link, defaultsFile, fileKey string) ([]mariadb.Option, error) {
	name := "meta/" + physical.BackupMyCnf
	var cnfs [][]byte
	for _, l := range links {
		if !slices.ContainsFunc(l.Manifest.Meta, func(o archive.Object) bool { return o.Name == name }) {
			continue
		}
		cnf, err := r.ReadMeta(ctx, l.Manifest, name)
		if err != nil {
			return nil, err
		}
		cnfs = append(cnfs, cnf)
	}
	opts, err := physical.ServerOptions(cnfs, defaultsFile)
	if err != nil || fileKey == "" || !restore.FileKeyWithheld(links) {
		return opts, err
	}
	return append(opts, mariadb.Option{Key: physical.FileKeyOption, Value: fileKey}), nil
}

// checkEncryption fails, with the end of the error log, if opts load a plugin from backup-my.cnf (mariabackup records only the
// encryption plugin there) and no encryption plugin is active: a plugin
// that fails to load does not stop the server, which would then call
// every encrypted table corrupt. The key file on this host is then not
// one the plugin can read: the backup is not at fault.
func checkEncryption(ctx context.Context, srv *sandbox.Server, opts []mariadb.Option) error {
	load := ""
	for _, o := range opts {
		if o.File == physical.BackupMyCnf && (o.Key == "plugin-load" || o.Key == "plugin-load-add") {
			load = o.Value
		}
	}
	if load == "" {
		return nil
	}
	var active int
	err := srv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_TYPE = 'ENCRYPTION' AND PLUGIN_STATUS = 'ACTIVE'").Scan(&active)
	if err != nil {
		return fmt.Errorf("list the server's encryption plugins: %w", err)
	}
	if active == 0 {
		return fmt.Errorf("the server started without the encryption plugin that the backup's options load (plugin_load = %s): is the key file on this host the one the backup's server used? The end of its error log %s:\n%s",
			load, srv.ErrorLog, srv.ErrorLogTail(10))
	}
	return nil
}
