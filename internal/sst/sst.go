package sst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/transport"
)

// AuthEnv is the variable the server passes wsrep_sst_auth in
// ("user:password"), never on the command line.
const AuthEnv = "WSREP_SST_OPT_AUTH"

// Options are what a transfer needs besides the server's request.
type Options struct {
	// Stdout is the pipe the server reads the protocol's lines from;
	// nothing else goes there.
	Stdout io.Writer
	// Log is the server's error log (the script's stderr).
	Log io.Writer
	// Auth is wsrep_sst_auth as the server passed it (AuthEnv).
	Auth     string
	Progress physical.Progress
	Version  string // backstream's, for the manifest
}

// The messages of the conversation on the "sst" connection, which the
// donor opens before anything else.
const (
	purpose     = "sst"
	msgSnapshot = 'S' // donor: a snapshot follows (payload: the donor's position and domain)
	msgBypass   = 'I' // donor: no snapshot, the joiner's state suffices for IST (payload: position and domain)
	msgAck      = 'K' // joiner: understood
)

// Run performs the server's request: as joiner, receive (or be told IST
// suffices) and print the position; as donor, send and print done. Its
// failure is also written to the server's error log as the stock scripts
// write theirs (WSREP_SST: [ERROR]), where a DBA looks for the reason the
// server gives up on the transfer.
func Run(ctx context.Context, req Request, opt Options) (err error) {
	defer func() {
		if err != nil {
			logf(opt.Log, "ERROR", "%v", err)
		}
	}()
	set, err := ReadSettings(req)
	if err != nil {
		return err
	}
	tok, err := transport.LoadToken(set.TokenFile)
	if err != nil {
		return fmt.Errorf("[sst] token-file: %w", err)
	}
	if req.Role == Joiner {
		return join(ctx, req, set, tok, opt)
	}
	return donate(ctx, req, set, tok, opt)
}

// logf writes a line to the server's error log, marked as the stock
// scripts mark theirs.
func logf(w io.Writer, level, format string, a ...any) {
	fmt.Fprintf(w, "WSREP_SST: [%s] backstream: %s (%s)\n", level, fmt.Sprintf(format, a...), time.Now().Format("20060102 15:04:05.000"))
}

// watchParent cancels ctx once the process pid has ended: a joiner whose
// server died (it gave up on the transfer) stops listening and cleans up.
func watchParent(ctx context.Context, pid int, cancel context.CancelCauseFunc) {
	if pid <= 0 {
		return
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				cancel(fmt.Errorf("the joiner's server (pid %d) ended during the transfer", pid))
				return
			}
		}
	}
}

// credentials splits wsrep_sst_auth ("user:password"); without one the
// login name connects, as the clients default.
func credentials(auth string) (name, password string, set bool) {
	if auth == "" || auth == "(null)" {
		if u, err := user.Current(); err == nil {
			return u.Username, "", false
		}
		return "", "", false
	}
	name, password, set = strings.Cut(auth, ":")
	return name, password, set
}

// unsetAuth keeps the credentials out of the environment of the programs
// the transfer runs.
func unsetAuth() { os.Unsetenv(AuthEnv) }
