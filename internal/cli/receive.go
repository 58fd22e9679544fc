package cli

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/remote"
)

// receiveFlags are receive's flags.
type receiveFlags struct {
	d         datadirFlags
	p         placeFlags
	conn      options.Conn
	primary   primaryFlags
	replicate bool
	catchUp   bool
	listen    string
	tokenFile string
	certFile  string
	keyFile   string
	keep      bool
	asJSON    bool
	idle      time.Duration
}

func newReceiveCmd(g *globals) *cobra.Command {
	var rf receiveFlags
	cmd := &cobra.Command{Use: "receive"}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		res, err := provision.Run(cmd.Context(), rf.request(cmd, g))
		return rf.printProvisioned(g, res, err)
	}
	rf.register(cmd, g)
	return cmd
}

func (rf *receiveFlags) register(cmd *cobra.Command, g *globals) {
	f := cmd.Flags()
	rf.d.register(f)
	rf.p.register(f)
	rf.conn.Register(f)
	rf.primary.register(f)
	rf.primary.registerIs(f)
	o := options.Bind(f)
	o.Bool("replicate", &rf.replicate)
	o.Bool("catch-up", &rf.catchUp)
	o.String("listen", &rf.listen)
	o.String("token-file", &rf.tokenFile)
	o.String("tls-cert", &rf.certFile)
	o.String("tls-key", &rf.keyFile)
	o.Bool("keep-listening", &rf.keep)
	o.Bool("resume", &rf.d.r.Restore.Resume)
	o.Duration("idle-timeout", &rf.idle)
	o.Bool("json", &rf.asJSON)
	g.registerEncrypt(f)
}

// request is receive's request: provision.Run chooses from it between
// storing and provisioning.
func (rf *receiveFlags) request(cmd *cobra.Command, g *globals) provision.ReceiveRequest {
	f, p := cmd.Flags(), &rf.p
	rf.d.settle(g, f)
	return provision.ReceiveRequest{Listen: rf.listen, TokenFile: rf.tokenFile, CertFile: rf.certFile, KeyFile: rf.keyFile, Idle: rf.idle,
		Keep: rf.keep, Restore: rf.d.r.Restore, Datadir: p.datadir, Force: p.force, Start: p.start, StartTimeout: p.startTimeout,
		CheckTimeout: p.checkTimeout, Replicate: rf.replicate, CatchUp: rf.catchUp, Primary: rf.primary.named(f),
		Repos: g.repos, RepoGiven: f.Changed("repo"),
		Given: provision.ReceiveGiven{Place: firstChanged(f, p.names()[1:]), Timeout: firstChanged(f, p.names()[3:]),
			Conn: firstChanged(f, options.ConnNames), Replicate: firstChanged(f, append(rf.primary.names(), "catch-up"))},
		Conn: rf.conn.Resolve,
		Progress: func() (remote.Progress, func(error)) {
			t := g.tracker("receive", 0)
			return t, func(err error) { t.Finish(err) }
		},
		Listening: func(a net.Addr) { fmt.Fprintf(g.stderr, "receive: listening on %s\n", a) },
		Rejected:  func(err error) { fmt.Fprintf(g.stderr, "receive: refused: %v\n", err) },
		Stored:    func(s remote.Stored) error { return rf.printStored(g, s) },
		Failed:    func(err error) { fmt.Fprintf(g.stderr, "receive: %v\n", err) },
	}
}

// printProvisioned prints what became of the backup received into place:
// with --json the one object (also when what followed its arrival
// failed), else the lines its receiver said; and returns err.
func (rf *receiveFlags) printProvisioned(g *globals, res *provision.Result, err error) error {
	if res == nil || res.Backup == "" {
		return err
	}
	if !rf.asJSON {
		fmt.Fprint(g.stdout, provision.DefaultMessages.Text(res, rf.p.checkTimeout))
		return err
	}
	if perr := printJSON(g.stdout, res.Report(err)); perr != nil {
		return perr
	}
	return err
}

// printStored prints a backup received and verified: with --json one
// object (with --keep-listening one a line), else a line.
func (rf *receiveFlags) printStored(g *globals, got remote.Stored) error {
	switch {
	case !rf.asJSON:
		return got.WriteText(g.stdout)
	case rf.keep:
		return printJSONLine(g.stdout, got)
	}
	return printJSON(g.stdout, got)
}
