// Command backstream backs up and restores MariaDB servers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/cli"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/transport"
)

// drainWait bounds how long an exiting backstream waits for the peers of
// the connections it aborted to read the reason and close.
const drainWait = 2 * time.Second

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cli.NewProcessRoot(version)
	hideSecretArgs(root) // first: a password on the command line is visible until then
	scratch.Sweep()      // temporary directories of a backstream that was killed; best effort
	// mariabackup opens a file per tablespace; best effort, as ulimit -n.
	_ = childenv.RaiseOpenFiles()
	err := root.ExecuteContext(ctx)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "backstream: %v\n", err)
	}
	if cerr := scratch.Cleanup(); cerr != nil {
		fmt.Fprintf(os.Stderr, "backstream: %v\n", cerr)
	}
	// A peer still reading why a connection was aborted gets the reason,
	// not the reset an exit would send.
	transport.WaitDrains(drainWait)
	os.Exit(cli.ExitCode(err, interrupted))
}
