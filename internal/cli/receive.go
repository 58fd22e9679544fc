package cli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/repoaccess"
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
		intoRepo := cmd.Flags().Changed("repo") || (rf.d.r.Restore.TargetDir == "" && g.repos.Location.Repo != "" && rf.p.datadir == "")
		if err := rf.check(cmd, g, intoRepo); err != nil {
			return err
		}
		if rf.p.datadir == "" {
			req, err := rf.storeRequest(cmd, g, intoRepo)
			if err != nil {
				return err
			}
			return remote.Store(cmd.Context(), req)
		}
		req, err := rf.provisionRequest(cmd, g)
		if err != nil {
			return err
		}
		t := g.tracker("receive", 0)
		req.Progress = t
		res, err := provision.Receive(cmd.Context(), req)
		t.Finish(err)
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
	registerIdleTimeout(f, &rf.idle, "the sender")
	o.Bool("json", &rf.asJSON)
	g.registerEncrypt(f)
}

// check refuses flags that contradict each other.
func (rf *receiveFlags) check(cmd *cobra.Command, g *globals, intoRepo bool) error {
	d, p := &rf.d, &rf.p
	switch {
	case rf.listen == "":
		return usagef("--listen ADDR is required, e.g. --listen :4444")
	case d.r.Restore.TargetDir != "" && intoRepo:
		return usagef("give either --target-dir or --repo, not both")
	case d.r.Restore.TargetDir == "" && !intoRepo && p.datadir == "":
		return usagef("give --target-dir DIR (restore), --datadir DIR (restore into place) or --repo DIR (store)")
	case d.r.Restore.ServerDefaults != "" && !d.r.Restore.Options.Prepare && p.datadir == "":
		return usagef("--server-defaults-file goes with --prepare or --datadir: it gives what the prepare needs")
	case rf.keep && d.r.Restore.TargetDir != "":
		return usagef("--keep-listening needs --repo: a target directory takes one backup")
	case g.repos.Encrypt && (d.r.Restore.TargetDir != "" || p.datadir != ""):
		return usagef("--encrypt is for storing into a repository (--repo); a restored datadir is not encrypted")
	case (rf.certFile == "") != (rf.keyFile == ""):
		return usagef("--tls-cert and --tls-key go together")
	case p.datadir != "" && (d.r.Restore.TargetDir != "" || cmd.Flags().Changed("repo")):
		return usagef("--datadir restores into place: it takes neither --target-dir nor --repo")
	case p.datadir != "" && rf.keep:
		return usagef("--keep-listening needs --repo: a datadir takes one backup")
	}
	if err := p.check(cmd.Flags()); err != nil {
		return err
	}
	if f := firstChanged(cmd.Flags(), options.ConnNames); f != "" && p.start == "" {
		return usagef("--%s reaches the started server: it goes with --datadir and --start", f)
	}
	if f := firstChanged(cmd.Flags(), append(rf.primary.names(), "catch-up")); f != "" && !rf.replicate {
		return usagef("--%s goes with --replicate", f)
	}
	if rf.replicate && p.start == "" {
		return usagef("--replicate points the server --start started at its primary: give --datadir and --start")
	}
	return nil
}

// provisionRequest is the provisioning the flags ask for: receive
// --datadir, with --start and --replicate.
func (rf *receiveFlags) provisionRequest(cmd *cobra.Command, g *globals) (provision.Request, error) {
	req := provision.Request{Listen: rf.listen, Datadir: rf.p.datadir, Force: rf.p.force, ServerDefaults: rf.d.r.Restore.ServerDefaults}
	req.Listening, req.Rejected = receiveNotes(g)
	var err error
	req.Transport.CertFile, req.Transport.KeyFile = rf.certFile, rf.keyFile
	if err = req.Transport.Settle(rf.idle, rf.tokenFile); err != nil {
		return req, err
	}
	rf.d.settle(g, cmd.Flags())
	req.Restore = rf.d.r.Restore
	if rf.p.start == "" {
		return req, nil
	}
	cfg, err := rf.conn.Resolve()
	if err != nil {
		return req, err
	}
	p := &rf.p
	req.Start = &provision.Start{How: p.start, Conn: cfg, Timeout: p.startTimeout, CheckTimeout: p.checkTimeout}
	if rf.replicate {
		prim, err := rf.primary.resolve(cmd.Flags(), replica.Primary{})
		if err != nil {
			return req, err
		}
		req.Replicate = &provision.Replicate{Primary: prim, PrimaryIs: rf.primary.is, CatchUp: rf.catchUp, WaitTimeout: replica.DefaultWaitTimeout}
	}
	return req, nil
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

// receiveNotes say on stderr where receive listens and which connections
// it refused.
func receiveNotes(g *globals) (listening func(net.Addr), rejected func(error)) {
	return func(a net.Addr) { fmt.Fprintf(g.stderr, "receive: listening on %s\n", a) },
		func(err error) { fmt.Fprintf(g.stderr, "receive: refused: %v\n", err) }
}

// storeRequest is the receiving into --target-dir or --repo the flags
// ask for: one backup, or with --keep-listening one after another.
func (rf *receiveFlags) storeRequest(cmd *cobra.Command, g *globals, intoRepo bool) (remote.StoreRequest, error) {
	req := remote.StoreRequest{Listen: rf.listen, Workers: rf.d.r.Restore.Options.Workers, Memory: g.repos.Memory, Keep: rf.keep,
		Progress: func() (remote.Progress, func(error)) {
			t := g.tracker("receive", 0)
			return t, func(err error) { t.Finish(err) }
		},
		Stored: func(s remote.Stored) error { return rf.printStored(g, s) },
		Failed: func(err error) { fmt.Fprintf(g.stderr, "receive: %v\n", err) }}
	req.Listening, req.Rejected = receiveNotes(g)
	var err error
	if intoRepo {
		err = storeIntoRepo(cmd.Context(), g, &req)
	} else {
		rf.d.settle(g, cmd.Flags())
		req.TargetDir = &rf.d.r.Restore
	}
	if err != nil {
		return req, err
	}
	req.Transport.CertFile, req.Transport.KeyFile = rf.certFile, rf.keyFile
	return req, req.Transport.Settle(rf.idle, rf.tokenFile)
}

// storeIntoRepo sets req to store into the repository, locked for each
// transfer once a sender has announced its backup.
func storeIntoRepo(ctx context.Context, g *globals, req *remote.StoreRequest) error {
	r, err := g.repos.Open(ctx)
	if err != nil {
		return err
	}
	req.Repo = r
	if req.Encryption, err = g.repos.Encryption(ctx, r); err != nil {
		return err
	}
	req.LockRepo = func(ctx context.Context) (context.Context, func(), error) {
		return g.repos.Acquire(ctx, r, repoaccess.OpReceive, true)
	}
	return nil
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
