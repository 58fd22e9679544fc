package physical

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// Checkpoints is the content of xtrabackup_checkpoints (mariadb_backup_checkpoints
// since 11.1): what kind of backup it is and the LSN range it covers. An
// incremental backup's FromLSN is its parent's ToLSN.
type Checkpoints struct {
	BackupType        string // "full-backuped", "incremental", "full-prepared", "log-applied"
	FromLSN           uint64
	ToLSN             uint64
	LastLSN           uint64
	RecoverBinlogInfo bool
	// Extra holds keys this parser does not know, so nothing a newer
	// mariabackup writes is lost.
	Extra map[string]string
}

// ParseCheckpoints parses a checkpoints file. backup_type, from_lsn and
// to_lsn are required; last_lsn defaults to to_lsn when absent.
func ParseCheckpoints(b []byte) (Checkpoints, error) {
	kv, err := ParseInfo(b)
	if err != nil {
		return Checkpoints{}, fmt.Errorf("checkpoints: %w", err)
	}
	var c Checkpoints
	lsn := func(key string, required bool) (uint64, error) {
		v, ok := kv[key]
		if !ok {
			if required {
				return 0, fmt.Errorf("checkpoints: missing %s", key)
			}
			return 0, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("checkpoints: %s = %q: %w", key, v, err)
		}
		return n, nil
	}
	c.BackupType = kv["backup_type"]
	if c.BackupType == "" {
		return Checkpoints{}, fmt.Errorf("checkpoints: missing backup_type")
	}
	if c.FromLSN, err = lsn("from_lsn", true); err != nil {
		return Checkpoints{}, err
	}
	if c.ToLSN, err = lsn("to_lsn", true); err != nil {
		return Checkpoints{}, err
	}
	if _, ok := kv["last_lsn"]; ok {
		if c.LastLSN, err = lsn("last_lsn", false); err != nil {
			return Checkpoints{}, err
		}
	} else {
		c.LastLSN = c.ToLSN
	}
	if v, ok := kv["recover_binlog_info"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Checkpoints{}, fmt.Errorf("checkpoints: recover_binlog_info = %q: %w", v, err)
		}
		c.RecoverBinlogInfo = n != 0
	}
	for k, v := range kv {
		switch k {
		case "backup_type", "from_lsn", "to_lsn", "last_lsn", "recover_binlog_info":
		default:
			if c.Extra == nil {
				c.Extra = make(map[string]string)
			}
			c.Extra[k] = v
		}
	}
	return c, nil
}

// BinlogInfo is the binary log position of a backup, from
// xtrabackup_binlog_info / mariadb_backup_binlog_info, a file inside the stream.
type BinlogInfo struct {
	File     string
	Position uint64
	GTID     string // gtid_binlog_pos at the backup's lock; may be empty
}

// ParseBinlogInfo parses "file<TAB>position[<TAB>gtid]". mariabackup writes a
// single line; an empty GTID column is accepted because servers without GTIDs
// write only two columns.
func ParseBinlogInfo(b []byte) (BinlogInfo, error) {
	line := strings.TrimRight(string(b), "\r\n")
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		if strings.TrimSpace(line[i:]) != "" {
			return BinlogInfo{}, fmt.Errorf("binlog info: more than one line: %q", truncate(line, 80))
		}
		line = line[:i]
	}
	fields := strings.Split(line, "\t")
	if len(fields) < 2 || len(fields) > 3 {
		return BinlogInfo{}, fmt.Errorf("binlog info: want file, position and optional GTID separated by tabs, got %q", truncate(line, 80))
	}
	var bi BinlogInfo
	bi.File = strings.TrimSpace(fields[0])
	if bi.File == "" {
		return BinlogInfo{}, fmt.Errorf("binlog info: empty file name in %q", truncate(line, 80))
	}
	pos, err := strconv.ParseUint(strings.TrimSpace(fields[1]), 10, 64)
	if err != nil {
		return BinlogInfo{}, fmt.Errorf("binlog info: position %q: %w", truncate(fields[1], 40), err)
	}
	bi.Position = pos
	if len(fields) == 3 {
		bi.GTID = strings.TrimSpace(fields[2])
	}
	return bi, nil
}

// ParseInfo parses the "key = value" lines of xtrabackup_info and
// xtrabackup_checkpoints. Blank lines are skipped; a value may be empty or
// contain " = " itself (tool_command does), so only the first separator
// counts. A line without "=" or a repeated key is an error: both mean the
// file is not what we think it is.
func ParseInfo(b []byte) (map[string]string, error) {
	m := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: no '=' in %q", n, truncate(line, 80))
		}
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, fmt.Errorf("line %d: empty key in %q", n, truncate(line, 80))
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("line %d: key %q repeated", n, k)
		}
		m[k] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return m, nil
}

// metadataSuffixes are the small files mariabackup puts in every backup,
// named with either prefix: xtrabackup_ (up to 11.0) or mariadb_backup_ (11.1+).
var metadataSuffixes = []string{"binlog_info", "galera_info", "checkpoints", "info", "slave_info", "binlog_pos_innodb"}

// MetadataNames lists the top-level files of a backup stream worth keeping as
// metadata copies, under both naming schemes.
func MetadataNames() []string {
	names := []string{BackupMyCnf, SourceInfoName}
	for _, prefix := range []string{"xtrabackup_", "mariadb_backup_"} {
		for _, s := range metadataSuffixes {
			names = append(names, prefix+s)
		}
	}
	return names
}

// IsMetadata reports whether a stream path is one of MetadataNames. Only
// top-level files count ("./" is tolerated): a table named db/xtrabackup_info
// is user data.
func IsMetadata(p string) bool {
	p = strings.TrimPrefix(p, "./")
	if p == "" || strings.Contains(p, "/") {
		return false
	}
	for _, n := range MetadataNames() {
		if p == n {
			return true
		}
	}
	return false
}

// metadataCandidates lists the names a metadata file may have, old name
// first; suffix is e.g. "checkpoints".
func metadataCandidates(suffix string) []string {
	return []string{"xtrabackup_" + suffix, "mariadb_backup_" + suffix}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// BackupMyCnf is the option file mariabackup writes into every backup: the
// [mysqld] options its datadir needs. Besides InnoDB's format (page size,
// undo tablespaces, checksum algorithm, ...) it records, for a server with
// data-at-rest encryption, the encryption plugin and its options, among
// them the key file's path, never its content. --prepare reads it in the
// restored datadir.
const BackupMyCnf = "backup-my.cnf"

// serverGroups are the groups of a user's option file that a server reads.
var serverGroups = []string{"mysqld", "server", "mariadb", "mariadbd"}

// ServerOptions returns the options a server started on a restored datadir
// needs: those of each backup-my.cnf in cnfs (a chain's, base first), then
// those of the option file extra ("" for none) in its [mysqld], [server],
// [mariadb] and [mariadbd] groups, which override them.
//
// It fails when one of them names a file this host lacks, naming the
// option, the path and where it was read: --prepare loads the encryption
// plugin from backup-my.cnf, and the server without it would call every
// encrypted table corrupt. The key file is never in a backup, so it has to
// be put on the host that restores.
func ServerOptions(cnfs [][]byte, extra string) ([]mariadb.Option, error) {
	var opts []mariadb.Option
	for _, cnf := range cnfs {
		o, err := mariadb.ParseOptionFile(BackupMyCnf, cnf, "mysqld")
		if err != nil {
			return nil, err
		}
		opts = append(opts, o...)
	}
	if extra != "" {
		o, err := mariadb.ReadOptionFile(extra, serverGroups...)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o...)
	}
	for _, o := range opts {
		if err := checkHostPath(o); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// hostPaths maps the options whose value names a file or directory the
// prepare or the server opens to the prefix that comes off the value first
// (a key file's password may be given as FILE:<path>).
var hostPaths = map[string]string{
	"file-key-management-filename": "",
	"file-key-management-filekey":  "FILE:",
	"plugin-dir":                   "",
}

// checkHostPath fails if o names a file that is not on this host. A
// relative path is the server's to resolve (against the datadir), and
// goes unchecked.
func checkHostPath(o mariadb.Option) error {
	prefix, ok := hostPaths[strings.TrimPrefix(o.Key, "loose-")]
	if !ok || !strings.HasPrefix(o.Value, prefix) {
		return nil
	}
	path := strings.TrimPrefix(o.Value, prefix)
	if !filepath.IsAbs(path) {
		return nil
	}
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case o.File == BackupMyCnf:
		return fmt.Errorf("the backup's %s names %s = %s, which this host lacks (%w): mariabackup --prepare and the server need it at that path, and the backup holds no copy of it",
			BackupMyCnf, o.Key, path, err)
	default:
		return fmt.Errorf("%s line %d: %s = %s, which this host lacks: %w", o.File, o.Line, o.Key, path, err)
	}
}

// ContinueAt sets to_lsn to lsn in the checkpoints file of dir, a target
// prepared up to an incremental's parent, before that incremental is
// applied: mariabackup --prepare --incremental-dir applies an incremental
// only to a target whose to_lsn equals the incremental's from_lsn, and
// incrementals continue from their parent's last_lsn (IncrementalLSN), not
// from the to_lsn mariabackup wrote. The caller has checked that lsn is
// where the parent ends (CheckChain) and the parent's prepare, which
// applies its whole redo log, has succeeded: the target then holds every
// change up to lsn.
func ContinueAt(dir string, lsn uint64) error {
	_, _, err := SetCheckpoints(dir, map[string]uint64{"to_lsn": lsn})
	return err
}

// SetCheckpoints sets the LSNs lsns names (to_lsn, last_lsn, ...) in the
// checkpoints file of the backup in dir, keeping its other lines, and
// returns the file's name and new content.
func SetCheckpoints(dir string, lsns map[string]uint64) (string, []byte, error) {
	for _, name := range CheckpointsNames {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		lines := strings.SplitAfter(string(b), "\n")
		for i, l := range lines {
			if k, _, ok := strings.Cut(l, "="); ok {
				if v, ok := lsns[strings.TrimSpace(k)]; ok {
					lines[i] = fmt.Sprintf("%s = %d\n", strings.TrimSpace(k), v)
				}
			}
		}
		fi, err := os.Stat(p)
		if err != nil {
			return "", nil, err
		}
		out := []byte(strings.Join(lines, ""))
		return name, out, os.WriteFile(p, out, fi.Mode().Perm())
	}
	return "", nil, fmt.Errorf("%s has no checkpoints file (%s)", dir, strings.Join(CheckpointsNames, " or "))
}
