// Package metrics records what backstream's commands did as Prometheus
// metrics in a text file, the way node_exporter's textfile collector
// expects one: the whole file written to a temporary file in the same
// directory and renamed over the old one, so the collector never reads
// half of it. The file holds one series per command, repository and
// server; a run replaces its own series and keeps the others (a failed
// run keeps the time and size of the last success). It knows nothing of
// backups, flags or exit-code rules: it is told what ran and how it
// ended, and it keeps credentials out of every label.
package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Run is one command that ran.
type Run struct {
	// Command is the command's name (backup, binlog, expire, ...).
	Command string
	// Repository is the repository's location as given; Write keeps the
	// user name, password and query of a URL out of the label.
	Repository string
	// Server is the server the command ran against (host:port, or a
	// socket path); "" for commands that reach none.
	Server string
	// Start and End bound the run; ExitCode is its process exit code
	// (0: success).
	Start, End time.Time
	ExitCode   int
	// RawBytes and StoredBytes are the size of the backup a successful
	// run made, before and after compression (and encryption); 0 when
	// it made none.
	RawBytes, StoredBytes int64
	// WriteRequests and ReadRequests are the object-store requests the
	// run sent, by billing class (see s3.Requests); both 0 for a
	// repository in a directory.
	WriteRequests, ReadRequests int64
}

// The metrics, each a gauge with the labels command, repository and
// server.
const (
	LastRunTime            = "backstream_last_run_timestamp_seconds"
	LastRunDuration        = "backstream_last_run_duration_seconds"
	LastRunSuccess         = "backstream_last_run_success"
	LastRunExitCode        = "backstream_last_run_exit_code"
	LastRunWriteRequests   = "backstream_last_run_s3_write_requests"
	LastRunReadRequests    = "backstream_last_run_s3_read_requests"
	LastSuccessTime        = "backstream_last_success_timestamp_seconds"
	LastSuccessDuration    = "backstream_last_success_duration_seconds"
	LastSuccessRawBytes    = "backstream_last_success_raw_bytes"
	LastSuccessStoredBytes = "backstream_last_success_stored_bytes"
	LastSuccessRatio       = "backstream_last_success_compression_ratio"
)

// help is each metric's HELP text, in the order they are written.
var help = []struct{ name, help string }{
	{LastRunTime, "When the last run of the command ended, success or not (Unix time)."},
	{LastRunDuration, "How long the last run of the command took."},
	{LastRunSuccess, "1 if the last run of the command succeeded, else 0."},
	{LastRunExitCode, "The exit code of the last run of the command (0 success, 1 failure, 2 bad flags, 3 damaged data, 130 interrupted)."},
	{LastRunWriteRequests, "The PUT, POST and LIST requests the last run of the command sent to its S3 repository (the requests billed at the higher rate)."},
	{LastRunReadRequests, "The GET and HEAD requests the last run of the command sent to its S3 repository."},
	{LastSuccessTime, "When the last successful run of the command ended (Unix time)."},
	{LastSuccessDuration, "How long the last successful run of the command took."},
	{LastSuccessRawBytes, "The size of the backup the last successful run made, before compression."},
	{LastSuccessStoredBytes, "The bytes the backup the last successful run made stores in the repository."},
	{LastSuccessRatio, "Raw bytes over stored bytes of the backup the last successful run made."},
}

// labels are every metric's labels, in this order.
var labels = []string{"command", "repository", "server"}

// key is one series: a command on a repository and server.
type key struct{ command, repository, server string }

// series holds the values of one key's metrics; a metric absent from
// the map is not written.
type series map[string]float64

// lockWait bounds the wait for another backstream writing the same file.
const lockWait = 30 * time.Second

// Write records run in the metrics file at path, creating it, and keeping
// the series of other commands, repositories and servers that the file
// holds. Concurrent writers (a backup and binlog --follow sharing a file)
// take turns through the lock file path+".lock". A file that holds no
// metrics Write can read is replaced, and said so in the error returned
// after the new file is written.
func Write(path string, run Run) error {
	unlock, err := lock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	state, readErr := read(path)
	state.record(run)
	reg := prometheus.NewRegistry()
	for _, h := range help {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: h.name, Help: h.help}, labels)
		for k, s := range state {
			if v, ok := s[h.name]; ok {
				g.WithLabelValues(k.command, k.repository, k.server).Set(v)
			}
		}
		reg.MustRegister(g)
	}
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	if readErr != nil {
		return fmt.Errorf("metrics file %s held no metrics backstream can read, so it was replaced: %w", path, readErr)
	}
	return nil
}

// state is a metrics file's series.
type state map[key]series

// record puts run into s: the last run's metrics always, the last
// success's only when it succeeded.
func (s state) record(run Run) {
	k := key{run.Command, Location(run.Repository), run.Server}
	v := s[k]
	if v == nil {
		v = series{}
		s[k] = v
	}
	end := float64(run.End.UnixNano()) / 1e9
	took := run.End.Sub(run.Start).Seconds()
	v[LastRunTime], v[LastRunDuration], v[LastRunExitCode] = end, took, float64(run.ExitCode)
	v[LastRunSuccess] = 0
	delete(v, LastRunWriteRequests)
	delete(v, LastRunReadRequests)
	if run.WriteRequests > 0 || run.ReadRequests > 0 {
		v[LastRunWriteRequests], v[LastRunReadRequests] = float64(run.WriteRequests), float64(run.ReadRequests)
	}
	if run.ExitCode != 0 {
		return
	}
	v[LastRunSuccess] = 1
	v[LastSuccessTime], v[LastSuccessDuration] = end, took
	delete(v, LastSuccessRawBytes)
	delete(v, LastSuccessStoredBytes)
	delete(v, LastSuccessRatio)
	if run.RawBytes > 0 || run.StoredBytes > 0 {
		v[LastSuccessRawBytes], v[LastSuccessStoredBytes] = float64(run.RawBytes), float64(run.StoredBytes)
		if run.StoredBytes > 0 {
			v[LastSuccessRatio] = float64(run.RawBytes) / float64(run.StoredBytes)
		}
	}
}

// read parses the metrics file at path: the series of this package's
// metrics, by key. A missing file is an empty state; one that does not
// parse is too, with the parser's error.
func read(path string) (state, error) {
	s := state{}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(f)
	if err != nil {
		return s, err
	}
	for _, h := range help {
		mf := families[h.name]
		if mf == nil || mf.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, m := range mf.GetMetric() {
			var k key
			n := 0
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "command":
					k.command, n = l.GetValue(), n+1
				case "repository":
					k.repository, n = l.GetValue(), n+1
				case "server":
					k.server, n = l.GetValue(), n+1
				}
			}
			if n != len(labels) || len(m.GetLabel()) != len(labels) || k.command == "" {
				continue
			}
			if s[k] == nil {
				s[k] = series{}
			}
			s[k][h.name] = m.GetGauge().GetValue()
		}
	}
	return s, nil
}

// Location is a repository location fit for a label: of a URL, what
// comes before its last '@' after the scheme (a user name and password),
// and its query and fragment (where tokens go), are left out; a path is
// kept as it is. It errs on the side of secrecy: a prefix holding an '@'
// loses what comes before it.
func Location(loc string) string {
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok {
		return loc
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + rest
}

// lock takes the lock file at path, waiting up to lockWait for another
// writer, and returns its release.
func lock(path string) (func(), error) {
	// Read-only, so that writers running as other users (a backup as
	// mysql, binlog --follow as backstream) can share a lock file that
	// one of them made, if both can read it.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics file lock: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("metrics file lock %s: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
