package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/metrics"
)

// checkMetricsFile refuses a --metrics-file that is not a file, before the
// command starts. One whose directory does not exist (a host without
// node_exporter's textfile directory) is a warning and no metrics are
// written: the metrics are a report on the command, never a reason not
// to run it.
func (g *globals) checkMetricsFile() error {
	if g.metricsFile == "" {
		return nil
	}
	dir := filepath.Dir(g.metricsFile)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		fmt.Fprintf(g.stderr, "backstream: warning: --metrics-file %s: its directory %s does not exist; no metrics are written\n", g.metricsFile, dir)
		g.metricsFile = ""
		return nil
	}
	if fi, err := os.Stat(g.metricsFile); err == nil && !fi.Mode().IsRegular() {
		return usagef("--metrics-file %s is not a regular file", g.metricsFile)
	}
	return nil
}

// recordMetrics writes how cmd ended into --metrics-file, if one is
// given. A failure to write it is a warning: the command's own outcome
// and exit code stand.
func (g *globals) recordMetrics(cmd *cobra.Command, start time.Time, err error) {
	if g.metricsFile == "" {
		return
	}
	command := cmd.Name()
	if g.metricsCommand != "" {
		command = g.metricsCommand
	}
	run := metrics.Run{Command: command, Repository: g.repo, Server: serverLabel(cmd.Flags()),
		Start: start, End: time.Now(), ExitCode: ExitCode(err, cmd.Context().Err() != nil)}
	if m := g.made; m.ID != "" && err == nil {
		run.RawBytes, run.StoredBytes = m.RawBytes, m.StoredBytes
	}
	if werr := metrics.Write(g.metricsFile, run); werr != nil {
		fmt.Fprintf(g.stderr, "backstream: warning: --metrics-file: %v\n", werr)
	}
}

// serverLabel is the server a command's connection options name, for the
// metrics' server label: its socket, or host:port; "" for a command
// without connection options. It is read from the flags and option files
// alone, so that every run of the same command line has the same label,
// whether it reached the server or not; it never holds the account.
func serverLabel(fs *pflag.FlagSet) string {
	if fs.Lookup("socket") == nil || fs.Lookup("defaults-extra-file") == nil {
		return ""
	}
	var f mariadb.Flags
	f.Host, _ = fs.GetString("host")
	f.Port, _ = fs.GetInt("port")
	f.Socket, _ = fs.GetString("socket")
	f.Protocol, _ = fs.GetString("protocol")
	f.DefaultsFile, _ = fs.GetString("defaults-file")
	f.DefaultsExtraFile, _ = fs.GetString("defaults-extra-file")
	f.NoDefaults, _ = fs.GetBool("no-defaults")
	cfg, err := mariadb.Resolve(f)
	if err != nil {
		// The command failed on the same options; label it as given.
		cfg = mariadb.Config{Host: f.Host, Port: f.Port, Socket: f.Socket, Protocol: f.Protocol}
	}
	if cfg.UsesSocket() {
		return cfg.SocketPath()
	}
	return cfg.Addr()
}
