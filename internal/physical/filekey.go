package physical

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/scratch"
)

// The file_key_management plugin reads its key file encrypted with a
// password, file_key_management_filekey, given in clear or as FILE:<path>
// of a file holding it. The server shows the clear one in SHOW VARIABLES,
// and mariabackup copies it into backup-my.cnf and its log. That password
// opens the key file that encrypts the data: a backup never holds it.
// backstream withholds it at backup time and takes it from the user at
// restore time; a FILE:<path> value names a file, not a secret, and stays.
const (
	// FileKeyVariable is the server variable, as SHOW VARIABLES and
	// backup-my.cnf spell it, and as manifests record it withheld.
	FileKeyVariable = "file_key_management_filekey"
	// FileKeyOption is the same as an option file's key (mariadb.Option).
	FileKeyOption = "file-key-management-filekey"
	// FileKeyEnv is where a restore also finds the password, when the
	// option file of --server-defaults-file does not give it.
	FileKeyEnv = "BACKSTREAM_FILE_KEY_MANAGEMENT_FILEKEY"
	// fileKeyPrefix starts a value that names a file holding the password.
	fileKeyPrefix = "FILE:"
	// withheldMark replaces the password wherever backstream stores text
	// that held it.
	withheldMark = "<withheld by backstream>"
)

// isFileKeyOption reports whether an option file's key (underscores or
// dashes, with or without loose-) is the key file's password.
func isFileKeyOption(key string) bool {
	key = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(key)), "_", "-")
	return strings.TrimPrefix(key, "loose-") == FileKeyOption
}

// secretFileKey reports whether v, a value of the option, is a password
// rather than FILE:<path>.
func secretFileKey(v string) bool {
	return v != "" && !strings.HasPrefix(v, fileKeyPrefix)
}

// serverFileKey returns the key file's password the server shows, or ""
// when it has none (no file_key_management plugin, no password, or one
// given as FILE:<path>).
func serverFileKey(ctx context.Context, db *sql.DB) (string, error) {
	var name, value string
	err := db.QueryRowContext(ctx, `SHOW GLOBAL VARIABLES LIKE 'file\_key\_management\_filekey'`).Scan(&name, &value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read %s: %w", FileKeyVariable, err)
	case !secretFileKey(value):
		return "", nil
	case strings.ContainsAny(value, "\r\n"):
		// mariabackup's log is withheld from line by line: a password over
		// several lines would leave its pieces in it.
		return "", fmt.Errorf("the server's %s holds a line break: backstream cannot keep such a password out of mariabackup's log; use a key file password of one line", FileKeyVariable)
	}
	return value, nil
}

// WithholdBackupMyCnf returns backup-my.cnf's content with every line
// that sets the key file's password to a secret turned into a comment
// saying it was withheld, and whether there was one. The other lines stay
// byte for byte: mariabackup --prepare and the server read them.
func WithholdBackupMyCnf(b []byte) ([]byte, bool) {
	var out []byte
	found := false
	for line := range bytes.Lines(b) {
		content := bytes.TrimRight(line, "\r\n")
		key, value, ok := strings.Cut(string(bytes.TrimSpace(content)), "=")
		value = strings.Trim(strings.TrimSpace(value), `"'`)
		if ok && isFileKeyOption(key) && secretFileKey(value) {
			found = true
			out = append(out, "# "+FileKeyVariable+"="+withheldMark+"\n"...)
			continue
		}
		out = append(out, line...)
	}
	return out, found
}

// withholdInfo returns xtrabackup_info's content with the password taken
// out of tool_command, mariabackup's command line, where it stands when
// given to mariabackup as an option. The other lines hold positions and
// times that a short password could occur in by chance: they stay.
func withholdInfo(b []byte, secret string) []byte {
	if secret == "" {
		return b
	}
	var out []byte
	for line := range bytes.Lines(b) {
		if k, _, ok := bytes.Cut(line, []byte("=")); ok && string(bytes.TrimSpace(k)) == "tool_command" {
			line = bytes.ReplaceAll(line, []byte(secret), []byte(withheldMark))
		}
		out = append(out, line...)
	}
	return out
}

// withheld reports whether the stream file p (top-level) is one that
// backstream rewrites before storing it, because it may hold the key
// file's password.
func withheld(p string) bool {
	p = strings.TrimPrefix(p, "./")
	return p == BackupMyCnf || p == "xtrabackup_info" || p == "mariadb_backup_info"
}

// withhold returns a withheld file's content as it is stored, and whether
// it held the password in backup-my.cnf's option.
func withhold(name string, b []byte, secret string) ([]byte, bool) {
	if name == BackupMyCnf {
		return WithholdBackupMyCnf(b)
	}
	return withholdInfo(b, secret), false
}

// UserFileKey returns the key file's password that the user gave for a
// restore: the last file_key_management_filekey of the server groups of
// the option file defaultsFile ("" for none), else $BACKSTREAM_FILE_KEY_MANAGEMENT_FILEKEY;
// "" if neither has one. A FILE:<path> value is returned as it is.
func UserFileKey(defaultsFile string) (string, error) {
	if defaultsFile != "" {
		opts, err := mariadb.ReadOptionFile(defaultsFile, serverGroups...)
		if err != nil {
			return "", err
		}
		key := ""
		for _, o := range opts {
			if isFileKeyOption(o.Key) {
				key = o.Value
			}
		}
		if key != "" {
			return key, nil
		}
	}
	return os.Getenv(FileKeyEnv), nil
}

// FileKeyInFile returns opts with each password of the key file moved
// into a 0600 file of the private scratch directory, the option naming it
// (FILE:<path>): an option file that a kept work directory or a child's
// log could show then holds a path only. remove deletes those files; the
// plugin reads them only when it starts.
func FileKeyInFile(opts []mariadb.Option) (out []mariadb.Option, remove func(), err error) {
	var files []string
	remove = func() {
		for _, f := range files {
			os.Remove(f)
		}
	}
	out = make([]mariadb.Option, len(opts))
	for i, o := range opts {
		if isFileKeyOption(o.Key) && secretFileKey(o.Value) {
			path, err := writeSecretFile(o.Value)
			if err != nil {
				remove()
				return nil, nil, fmt.Errorf("a private file for the key file's password: %w", err)
			}
			files = append(files, path)
			o.Value = fileKeyPrefix + path
		}
		out[i] = o
	}
	return out, remove, nil
}

// writeSecretFile writes secret, as it is, into a new file of the
// scratch directory (0600, as os.CreateTemp makes it). A failure leaves
// no file.
func writeSecretFile(secret string) (string, error) {
	f, err := scratch.CreateTemp("filekey-*")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(secret)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// prepareDefaults writes a 0600 option file into the scratch directory
// for mariabackup --prepare of dir: backup-my.cnf's [mysqld] options,
// then the key file's password as FILE:<path> of another 0600 file.
// --prepare reads backup-my.cnf only (it ignores --defaults-extra-file),
// and with --defaults-file it reads that file instead, so the file repeats
// backup-my.cnf. remove deletes both files.
func prepareDefaults(dir, fileKey string) (path string, remove func(), err error) {
	cnf, err := os.ReadFile(filepath.Join(dir, BackupMyCnf))
	if err != nil {
		return "", nil, fmt.Errorf("prepare %s: %w", dir, err)
	}
	opts, err := mariadb.ParseOptionFile(BackupMyCnf, cnf, "mysqld")
	if err != nil {
		return "", nil, fmt.Errorf("prepare %s: %w", dir, err)
	}
	opts, removeKey, err := FileKeyInFile(append(opts, mariadb.Option{Key: FileKeyOption, Value: fileKey}))
	if err != nil {
		return "", nil, err
	}
	work, err := scratch.MkdirTemp("prepare-*")
	if err != nil {
		removeKey()
		return "", nil, fmt.Errorf("prepare %s: %w", dir, err)
	}
	remove = func() {
		removeKey()
		os.RemoveAll(work)
	}
	path = filepath.Join(work, "prepare.cnf")
	if err := mariadb.WriteOptionFile(path, "mysqld", opts); err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}
