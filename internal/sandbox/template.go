package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A fresh datadir costs a mariadb-install-db run (2 s on an idle machine,
// over 10 s on a busy one); copying an initialised one costs a fraction of
// that. So each distinct (binaries, format options) pair is installed once
// into a cache directory and later datadirs are copies of it. The template is
// taken right after mariadb-install-db, whose bootstrap server shut down
// cleanly, so a copy is as good as a new install.

// templateMu serialises template creation inside one process; between
// processes the atomic rename in ensureTemplate decides.
var templateMu sync.Mutex

// templateCacheDir is where templates live; a variable for tests.
var templateCacheDir = defaultTemplateCacheDir

func defaultTemplateCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "backstream-sandbox")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("backstream-sandbox-%d", os.Getuid()))
}

// templateKey names a template by everything that shapes the datadir
// mariadb-install-db produces.
func templateKey(mariadbd, script string, formatArgs []string) (string, error) {
	h := sha256.New()
	for _, p := range []string{mariadbd, script} {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("sandbox: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, fi.Size(), fi.ModTime().UnixNano())
	}
	// "sparse": templates made before they were kept sparse are not used.
	fmt.Fprintf(h, "sparse\x00%d\x00", os.Geteuid())
	for _, a := range formatArgs {
		fmt.Fprintf(h, "%s\x00", a)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ensureTemplate returns the path of an initialised template datadir for
// the key, creating it with install if missing.
func ensureTemplate(key string, install func(datadir, tmpdir string) error) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	root := templateCacheDir()
	final := filepath.Join(root, key)
	// The marker is written last, so a half-made template is never used.
	if _, err := os.Stat(filepath.Join(final, ".complete")); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return "", fmt.Errorf("sandbox: template cache %s: %w", root, err)
	}
	staging, err := os.MkdirTemp(root, key+".tmp-")
	if err != nil {
		return "", fmt.Errorf("sandbox: template cache %s: %w", root, err)
	}
	defer os.RemoveAll(staging)
	datadir := filepath.Join(staging, "data")
	tmpdir := filepath.Join(staging, "tmp")
	if err := os.MkdirAll(tmpdir, 0o750); err != nil {
		return "", fmt.Errorf("sandbox: template tmpdir: %w", err)
	}
	if err := install(datadir, tmpdir); err != nil {
		return "", err
	}
	// The template is kept sparse (the redo log's zeros as holes), so
	// that each copy of it reads its data only.
	installed := datadir
	datadir = filepath.Join(staging, "sparse")
	if err := copyDatadir(installed, datadir); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(datadir, ".complete"), nil, 0o640); err != nil {
		return "", fmt.Errorf("sandbox: template %s: %w", datadir, err)
	}
	if err := os.Rename(datadir, final); err != nil {
		// Another process may have won the race; its template is as good.
		if _, serr := os.Stat(filepath.Join(final, ".complete")); serr == nil {
			return final, nil
		}
		if _, serr := os.Stat(final); serr == nil {
			// A leftover without marker (crash mid-way long ago): replace it.
			if rerr := os.RemoveAll(final); rerr == nil {
				if err = os.Rename(datadir, final); err == nil {
					return final, nil
				}
			}
		}
		return "", fmt.Errorf("sandbox: publish template %s: %w", final, err)
	}
	return final, nil
}

// copyDatadir copies the template tree src into dst (which must not hold a
// datadir yet), leaving out the completion marker.
func copyDatadir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("sandbox: copy template: %w", err)
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return fmt.Errorf("sandbox: copy template: %w", err)
		}
		if rel == ".complete" || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o750); err != nil {
				return fmt.Errorf("sandbox: copy template: %w", err)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("sandbox: copy template: %s: not a regular file", path)
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("sandbox: copy template: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("sandbox: copy template: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("sandbox: copy template: %w", err)
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("sandbox: copy template: %w", cerr)
		}
	}()
	if err := copySparse(out, in, fi.Size()); err != nil {
		return fmt.Errorf("sandbox: copy template %s to %s: %w", src, dst, err)
	}
	return nil
}

// zeroBlock is a block of zeros to compare with; nothing writes it.
var zeroBlock [1 << 20]byte

// copySparse copies size bytes of in to out, leaving a hole where in has
// one and where a whole block is zeros: a template's redo log is mostly
// zeros (96 MiB of them for the default size, a GiB for a test's
// --innodb-log-file-size=1G), and a suite starts a hundred servers and
// more. Only the data extents are read (SEEK_DATA, SEEK_HOLE), so copying
// a template that is sparse itself costs its data, not its size: under the
// race detector every byte read is checked, and the copies of whole
// templates were 12% of internal/cli's CPU. The server reads a hole as
// the zeros it is.
func copySparse(out, in *os.File, size int64) error {
	// Most of a datadir's files are small: a buffer of a whole block
	// for each would be most of what a server start allocates.
	buf := make([]byte, min(int64(len(zeroBlock)), size))
	zeros := zeroBlock[:]
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // a hole to the end
		}
		if err != nil {
			return err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		end = min(end, size)
		for off = start; off < end; {
			n, err := in.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
			if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
				return err
			}
			// bytes.Equal compares in assembly: a loop over the bytes
			// would cost seconds per server under the race detector.
			if !bytes.Equal(buf[:n], zeros[:n]) {
				if _, err := out.WriteAt(buf[:n], off); err != nil {
					return err
				}
			}
			off += int64(n)
		}
	}
	return out.Truncate(size)
}
