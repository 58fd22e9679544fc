package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/remote"
)

func newSendCmd(g *globals, version string) *cobra.Command {
	return newTransferCmd(g, version, false)
}

// newProvisionCmd is send that insists on new replicas: every receiver
// must report the server it started replicating.
func newProvisionCmd(g *globals, version string) *cobra.Command {
	return newTransferCmd(g, version, true)
}

// transferFlags are send's and provision's flags, the sending's bound
// into its request.
type transferFlags struct {
	b         backupFlags
	req       remote.SendRequest
	asJSON    bool
	replicate bool // provision: insist on replicas, not only started servers
}

func newTransferCmd(g *globals, version string, provision bool) *cobra.Command {
	var tf transferFlags
	cmd := &cobra.Command{Use: "send"}
	if provision {
		cmd.Use = "provision"
	}
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req, err := tf.request(cmd, args, g, version, provision)
		if err != nil {
			return err
		}
		req.Progress = func() (remote.Progress, func(error) time.Duration) {
			t := g.tracker("send", 0)
			return t, func(err error) time.Duration { return t.Finish(err).Elapsed }
		}
		res, err := remote.Send(cmd.Context(), req)
		if res == nil {
			return err
		}
		return errors.Join(tf.print(g, res), err)
	}
	tf.register(cmd, provision)
	return cmd
}

// request checks the flags and builds the sending they ask for: the
// backup job, or the stored backup args name, and the receivers.
func (tf *transferFlags) request(cmd *cobra.Command, args []string, g *globals, version string, provision bool) (remote.SendRequest, error) {
	req := tf.req
	req.Want, req.FromGiven = remote.WantOf(provision, tf.replicate), firstChanged(cmd.Flags(), []string{"host", "port", "socket", "protocol"})
	if len(args) == 1 {
		req.Stored, req.Repos = args[0], g.repos
	}
	if err := req.Check(); err != nil || req.Stored != "" {
		return req, err
	}
	r, err := tf.b.request(g, version, tf.b.r)
	if err != nil {
		return req, err
	}
	req.Job = backup.PhysicalJob(r)
	return req, nil
}

func (tf *transferFlags) register(cmd *cobra.Command, provision bool) {
	f := cmd.Flags()
	tf.b.register(f)
	o := options.Bind(f)
	o.Strings("to", &tf.req.To)
	o.String("token-file", &tf.req.TokenFile)
	o.String("tls-ca", &tf.req.Transport.CAFile)
	o.String("tls-server-name", &tf.req.Transport.ServerName)
	o.Duration("idle-timeout", &tf.req.Idle)
	o.Bool("json", &tf.asJSON)
	if provision {
		o.String("from", &tf.req.From)
		o.Bool("replicate", &tf.replicate)
	}
}

// print names the receivers that failed on stderr, then says what was
// sent where and what each receiver reported, as text or JSON.
func (tf *transferFlags) print(g *globals, res *remote.Sending) error {
	res.Sent.WriteFailed(g.stderr)
	if tf.asJSON {
		return printJSON(g.stdout, res.JSON())
	}
	res.WriteText(g.stdout)
	return nil
}

func newTokenCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:  "token",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(g.stdout, remote.NewToken())
			return err
		},
	}
}
