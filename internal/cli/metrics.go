package cli

import (
	"cmp"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/metrics"
	"github.com/backstream/backstream/internal/options"
)

// checkMetricsFile checks --metrics-file before the command starts (see
// metrics.Check).
func (g *globals) checkMetricsFile() error {
	file, warning, err := metrics.Check(g.metricsFile)
	if warning != "" {
		fmt.Fprintf(g.stderr, "backstream: warning: %s\n", warning)
	}
	g.metricsFile = file
	return err
}

// recordMetrics writes how cmd ended into --metrics-file, if one is
// given. A failure to write it is a warning: the command's own outcome
// and exit code stand.
func (g *globals) recordMetrics(cmd *cobra.Command, start time.Time, err error) {
	if g.metricsFile == "" {
		return
	}
	run := metrics.Run{Command: cmp.Or(g.metricsCommand, cmd.Name()), Repository: g.repos.Location.Repo,
		Start: start, End: time.Now(), ExitCode: ExitCode(err, cmd.Context().Err() != nil)}
	if !g.serverless {
		run.Server = options.ServerLabel(cmd.Flags())
	}
	reqs := g.repos.Location.Requests.Counts()
	run.WriteRequests, run.ReadRequests = reqs.Write, reqs.Read
	if m := g.made; m.ID != "" && err == nil {
		run.RawBytes, run.StoredBytes = m.RawBytes, m.StoredBytes
	}
	if werr := metrics.Write(g.metricsFile, run); werr != nil {
		fmt.Fprintf(g.stderr, "backstream: warning: --metrics-file: %v\n", werr)
	}
}
