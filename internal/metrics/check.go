package metrics

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/backstream/backstream/internal/refusal"
)

// Check checks path (--metrics-file) before the command starts and
// returns the file to write: "" with a warning when its directory does
// not exist (a host without node_exporter's textfile directory), since
// the metrics are a report on the command, never a reason not to run it;
// a refusal when path is there but is not a regular file.
func Check(path string) (file, warning string, err error) {
	if path == "" {
		return "", "", nil
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Sprintf("--metrics-file %s: its directory %s does not exist; no metrics are written", path, dir), nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return path, "", refusal.Errorf("--metrics-file %s is not a regular file", path)
	}
	return path, "", nil
}
