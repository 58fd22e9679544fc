package metrics

import (
	"fmt"
	"os"
	"path/filepath"
)

// RefusedError is a metrics file that cannot be written as one: the
// command was called wrongly.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused marks the error as a refusal of what was asked.
func (e *RefusedError) Refused() bool { return true }

// Check checks path (--metrics-file) before the command starts and
// returns the file to write: "" with a warning when its directory does
// not exist (a host without node_exporter's textfile directory), since
// the metrics are a report on the command, never a reason not to run it;
// a *RefusedError when path is there but is not a regular file.
func Check(path string) (file, warning string, err error) {
	if path == "" {
		return "", "", nil
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Sprintf("--metrics-file %s: its directory %s does not exist; no metrics are written", path, dir), nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return path, "", &RefusedError{fmt.Errorf("--metrics-file %s is not a regular file", path)}
	}
	return path, "", nil
}
