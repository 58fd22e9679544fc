package replica

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/backstream/backstream/internal/physical"
)

// BinlogInfoNames are the files, in the restored datadir, that hold the
// backup's binary log coordinates: mariabackup 11.1 renamed
// xtrabackup_binlog_info to mariadb_backup_binlog_info. Preferred first.
var BinlogInfoNames = []string{"mariadb_backup_binlog_info", "xtrabackup_binlog_info"}

// maxBinlogInfoSize bounds what is read: the real file is one short line,
// and a huge file in its place is not one.
const maxBinlogInfoSize = 64 << 10

// ReadCoordinates reads the backup's binary log coordinates from dir (a
// restored datadir or a backup target dir) and returns them with the path
// they came from. When both names exist they must agree: two different
// positions in one datadir mean it was assembled from two backups.
func ReadCoordinates(dir string) (physical.BinlogInfo, string, error) {
	var (
		found     physical.BinlogInfo
		foundPath string
		looked    []string
	)
	for _, name := range BinlogInfoNames {
		path := filepath.Join(dir, name)
		looked = append(looked, path)
		b, err := readSmall(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return physical.BinlogInfo{}, "", err
		}
		if strings.TrimSpace(string(b)) == "" {
			return physical.BinlogInfo{}, "", fmt.Errorf("%s is empty: the backup recorded no binary log position (was binary logging off on the source?)", path)
		}
		bi, err := physical.ParseBinlogInfo(b)
		if err != nil {
			return physical.BinlogInfo{}, "", fmt.Errorf("%s: %w", path, err)
		}
		if foundPath != "" {
			if bi != found {
				return physical.BinlogInfo{}, "", fmt.Errorf("%s (%s) and %s (%s) disagree: the datadir mixes two backups", foundPath, describe(found), path, describe(bi))
			}
			continue
		}
		found, foundPath = bi, path
	}
	if foundPath == "" {
		return physical.BinlogInfo{}, "", &noCoordinatesError{looked: looked, dir: dir}
	}
	return found, foundPath, nil
}

// noCoordinatesError is ReadCoordinates finding no binlog info file.
type noCoordinatesError struct {
	looked []string
	dir    string
}

func (e *noCoordinatesError) Error() string {
	return fmt.Sprintf("no binary log coordinates: none of %s exists (is %s a datadir restored from a backup of a server with binary logging on?)", strings.Join(e.looked, ", "), e.dir)
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBinlogInfoSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxBinlogInfoSize {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a binlog info file", path, maxBinlogInfoSize)
	}
	return b, nil
}

// describe formats coordinates for messages.
func describe(bi physical.BinlogInfo) string {
	s := fmt.Sprintf("%s:%d", bi.File, bi.Position)
	if bi.GTID != "" {
		s += " GTID " + bi.GTID
	}
	return s
}
