package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/transport"
)

// tokenFlag loads the shared token of send and receive.
func loadToken(file string) ([]byte, error) {
	tok, err := transport.LoadToken(file)
	if err != nil {
		return nil, usageError{fmt.Errorf("%w (generate one with `backstream token`, keep it in a 0600 file, pass --token-file or set %s)", err, transport.TokenEnv)}
	}
	return tok, nil
}

func newSendCmd(g *globals, version string) *cobra.Command {
	return newTransferCmd(g, version, false)
}

// newProvisionCmd is send that insists on new replicas: every receiver
// must report the server it started replicating.
func newProvisionCmd(g *globals, version string) *cobra.Command {
	return newTransferCmd(g, version, true)
}

func newTransferCmd(g *globals, version string, provision bool) *cobra.Command {
	var (
		b          backupFlags
		to         []string
		tokenFile  string
		caFile     string
		serverName string
		asJSON     bool
		idle       time.Duration
		from       string // provision: the source as HOST:PORT
		replicate  bool   // provision: insist on replicas, not only started servers
	)
	use, short, long := "send --to HOST:PORT [--to HOST:PORT ...]",
		"Take a physical backup and stream it straight into receivers on other hosts",
		`send is backup with other hosts as the destination: each of the --parallel streams travels
over its own TLS connection to every receiver (started with backstream receive), which
restores it as it arrives or stores it in its repository. The sender prints each receiver's
outcome, and succeeds only when every receiver reports that the whole backup arrived and
verified; otherwise it names the receivers that failed. The token that both
ends share comes from --token-file or the BACKSTREAM_TOKEN environment variable.`
	if provision {
		use, short, long = "provision --to HOST:PORT [--to HOST:PORT ...]",
			"Make new replicas of this server: send to receivers that restore, start and replicate",
			`provision is send for new replicas: every receiver (started with backstream receive
--datadir DIR --start --replicate) restores the backup into place as it arrives, starts the
server, checks it and points it at its primary from the backup's position before it
answers; provision prints what each one reported and fails unless every one replicates.

Run on a replica, the backup also records where the replica stood in its primary's
history (mariabackup --slave-info), and a receiver pointed at that primary starts there:
new replicas of the primary are made without loading it.`
	}
	example := `  backstream send --to replica1:4444 --to replica2:4444 --parallel 4 --token-file /etc/backstream/token`
	if provision {
		example = `  backstream provision --to replica1:4444 --to replica2:4444 --token-file /etc/backstream/token
  backstream provision --from 127.0.0.1:3306 --to replica1:4444 --replicate --token-file /etc/backstream/token`
	}
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Example: example,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(to) == 0 {
				return usagef("name at least one receiver with --to HOST:PORT")
			}
			job, err := b.job(g, cmd, version)
			if err != nil {
				return err
			}
			if from != "" {
				if job.Conn, err = sourceAt(cmd, job.Conn, from); err != nil {
					return err
				}
			}
			idleTimeout, err := parseIdleTimeout(idle)
			if err != nil {
				return err
			}
			tok, err := loadToken(tokenFile)
			if err != nil {
				return err
			}
			s, err := remote.Dial(cmd.Context(), to, transport.Options{Token: tok, CAFile: caFile, ServerName: serverName, IdleTimeout: idleTimeout})
			if err != nil {
				return err
			}
			defer s.Close()
			job.Dest = s
			m, sum, err := runBackupJob(cmd.Context(), g, "send", job)
			if err != nil {
				return err
			}
			// What each receiver did with it (into place, started,
			// replicating), or why it did not take it.
			var took, failed, idle []string
			res := sentResult{madeResult: madeOf(m), Receivers: []receiverOutcome{}}
			for _, r := range s.Reports() {
				out := receiverOutcome{Address: r.Addr, OK: r.Err == nil, Report: strings.TrimSpace(r.Text),
					Replicating: r.Err == nil && strings.Contains(r.Text, replicatingFrom)}
				if r.Err != nil {
					out.Error = r.Err.Error()
					failed = append(failed, r.Addr)
				} else {
					took = append(took, r.Addr)
				}
				res.Receivers = append(res.Receivers, out)
			}
			if !asJSON {
				fmt.Fprintf(g.stdout, "backup %s sent to %s: %d streams, %d files, %s on the wire in %s\n", m.ID,
					strings.Join(took, ", "), len(m.Streams), len(m.Files), humanRatio(m), sum.Elapsed.Round(1e7))
			}
			for _, r := range res.Receivers {
				if !r.OK {
					fmt.Fprintf(g.stderr, "receiver %s failed: %s\n", r.Address, r.Error)
					continue
				}
				if !r.Replicating {
					idle = append(idle, r.Address)
				}
				if asJSON {
					continue
				}
				for _, line := range strings.Split(r.Report, "\n") {
					if line != "" {
						fmt.Fprintf(g.stdout, "receiver %s: %s\n", r.Address, line)
					}
				}
			}
			if asJSON {
				if err := printJSON(g.stdout, res); err != nil {
					return err
				}
			}
			var errs []error
			if len(failed) > 0 {
				errs = append(errs, fmt.Errorf("backup %s did not reach receiver %s (see above); it reached %s", m.ID, strings.Join(failed, ", "), strings.Join(took, ", ")))
			}
			if provision && replicate && len(idle) > 0 {
				errs = append(errs, fmt.Errorf("receiver %s took the backup but reports no replication: a replica is provisioned by a receiver started with receive --datadir DIR --start --replicate", strings.Join(idle, ", ")))
			}
			if provision && !replicate {
				var stopped []string
				for _, r := range res.Receivers {
					if r.OK && !strings.Contains(r.Report, serverRunsOn) {
						stopped = append(stopped, r.Address)
					}
				}
				if len(stopped) > 0 {
					errs = append(errs, fmt.Errorf("receiver %s took the backup but reports no server started on it: provision needs receivers started with receive --datadir DIR --start", strings.Join(stopped, ", ")))
				}
			}
			return errors.Join(errs...)
		},
	}
	f := cmd.Flags()
	b.register(f)
	f.StringArrayVar(&to, "to", nil, "receiver HOST:PORT (repeatable: one mariabackup run feeds every receiver)")
	f.StringVar(&tokenFile, "token-file", "", "file holding the shared token (mode 0600); default: $"+transport.TokenEnv)
	f.StringVar(&caFile, "tls-ca", "", "verify receivers' certificates against this CA (PEM) instead of the token-only default")
	f.StringVar(&serverName, "tls-server-name", "", "name the receivers' certificates must carry (default: the host of --to)")
	registerIdleTimeout(f, &idle, "a receiver")
	f.BoolVar(&asJSON, "json", false, "print the backup sent (as backup --json has it) and each receiver's outcome (address, ok, report, replicating, error) as one JSON object instead of text; printed also when a receiver failed, with the exit code as without it")
	if provision {
		f.StringVar(&from, "from", "", "the server to provision from, as HOST:PORT over TCP (instead of --host/--port/--socket); it must run on this host, whose files mariabackup reads")
		f.BoolVar(&replicate, "replicate", true, "insist that every receiver's server replicates from its primary; --replicate=false accepts receivers that only started a server on the backup")
	}
	return cmd
}

// sourceAt is cfg connecting to from (HOST:PORT) over TCP, for provision
// --from, which the connection flags that name another place contradict.
func sourceAt(cmd *cobra.Command, cfg mariadb.Config, from string) (mariadb.Config, error) {
	for _, name := range []string{"host", "port", "socket", "protocol"} {
		if cmd.Flags().Changed(name) {
			return cfg, usagef("--from %s names the server already; leave out --%s", from, name)
		}
	}
	host, port, err := net.SplitHostPort(from)
	if err != nil {
		return cfg, usagef("--from %q: want HOST:PORT (%v)", from, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || host == "" {
		return cfg, usagef("--from %q: want HOST:PORT, with a port from 1 to 65535", from)
	}
	cfg.Host, cfg.Port, cfg.Protocol = host, n, mariadb.ProtocolTCP
	if cfg.Sources != nil {
		cfg.Sources["host"], cfg.Sources["port"] = "--from", "--from"
	}
	return cfg, nil
}

// receivedResult is what receive --json prints of a backup that arrived
// whole and verified: where it went, and with --datadir what was moved
// aside, the server started and its replication. Error says what failed
// after its arrival (into place, the start, replication).
type receivedResult struct {
	Backup   string `json:"backup"`
	Into     string `json:"into"`  // target-dir, datadir or repository
	Where    string `json:"where"` // the directory, or the repository's location
	Prepared bool   `json:"prepared"`
	inPlace
	Replicating *replicationResult `json:"replicating,omitempty"`
	Error       string             `json:"error,omitempty"`
}

// sentResult is what send --json and provision --json print: the backup
// sent, as backup --json has it, and what became of it on each receiver.
type sentResult struct {
	madeResult
	Receivers []receiverOutcome `json:"receivers"`
}

// receiverOutcome is one receiver's outcome: it took the backup whole and
// verified (ok) and said what it did with it (report: the lines receive
// printed, into place, started, replicating), or why it did not (error).
type receiverOutcome struct {
	Address     string `json:"address"`
	OK          bool   `json:"ok"`
	Report      string `json:"report,omitempty"`
	Replicating bool   `json:"replicating"` // its report says its server replicates (what provision insists on)
	Error       string `json:"error,omitempty"`
}

func newReceiveCmd(g *globals) *cobra.Command {
	var (
		d         datadirFlags
		p         placeFlags
		conn      connFlags
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
	)
	cmd := &cobra.Command{
		Use:   "receive --listen ADDR (--target-dir DIR [--prepare] | --datadir DIR [--start] | --repo DIR)",
		Short: "Take a backup streamed by send: restore it as it arrives, or store it in a repository",
		Example: `  backstream receive --listen :4444 --target-dir /var/lib/mysql.new --prepare --token-file /etc/backstream/token
  backstream receive --listen :4444 --datadir /var/lib/mysql --start --replicate --primary-host db1 --token-file /etc/backstream/token
  backstream receive --listen :4444 --repo /backups --keep-listening --token-file /etc/backstream/token`,
		Long: `receive listens for one transfer from backstream send. With --target-dir it restores the
backup into that (empty) directory as it arrives, verifying every byte, and with
--prepare prepares it; with --repo it stores the backup in a repository on this host,
verified, and commits it. It exits 0 only if the whole backup arrived and verified;
--keep-listening serves one transfer after another (into a repository).

With --datadir DIR it restores and prepares beside DIR (inside it, for a mount point or
a symbolic link) and swaps the result into place, as restore --datadir does (--force moves what DIR holds aside), and --start then
starts the server there, waits until it answers on the connection flags and checks it:
a new replica's datadir in one step. --replicate then points it at its primary from the
backup's position, as backstream replicate does (the primary's settings from
[backstream-primary] and the --primary-* flags), and with --catch-up waits until it has
caught up. All this happens before the sender is told, and send prints what each
receiver reported: one send provisions every replica it names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			intoRepo := cmd.Flags().Changed("repo") || (d.target == "" && g.repo != "" && p.datadir == "")
			switch {
			case listen == "":
				return usagef("--listen ADDR is required, e.g. --listen :4444")
			case d.target != "" && intoRepo:
				return usagef("give either --target-dir or --repo, not both")
			case d.target == "" && !intoRepo && p.datadir == "":
				return usagef("give --target-dir DIR (restore), --datadir DIR (restore into place) or --repo DIR (store)")
			case d.serverDefaults != "" && !d.prepare && p.datadir == "":
				return usagef("--server-defaults-file goes with --prepare or --datadir: it gives what the prepare needs")
			case keep && d.target != "":
				return usagef("--keep-listening needs --repo: a target directory takes one backup")
			case g.encrypt && (d.target != "" || p.datadir != ""):
				return usagef("--encrypt is for storing into a repository (--repo); a restored datadir is not encrypted")
			case (certFile == "") != (keyFile == ""):
				return usagef("--tls-cert and --tls-key go together")
			case p.datadir != "" && (d.target != "" || cmd.Flags().Changed("repo")):
				return usagef("--datadir restores into place: it takes neither --target-dir nor --repo")
			case p.datadir != "" && keep:
				return usagef("--keep-listening needs --repo: a datadir takes one backup")
			}
			if err := p.check(cmd.Flags()); err != nil {
				return err
			}
			if f := firstChanged(cmd.Flags(), connFlagNames); f != "" && p.start == "" {
				return usagef("--%s reaches the started server: it goes with --datadir and --start", f)
			}
			if f := firstChanged(cmd.Flags(), append(primary.names(), "catch-up")); f != "" && !replicate {
				return usagef("--%s goes with --replicate", f)
			}
			var prim replica.Primary
			if replicate {
				if p.start == "" {
					return usagef("--replicate points the server --start started at its primary: give --datadir and --start")
				}
				if prim, err = primary.resolve(cmd.Flags(), replica.Primary{}); err != nil {
					return err
				}
			}
			var place *restore.Place
			if p.datadir != "" {
				sf, err := p.serverFiles(d.serverDefaults)
				if err != nil {
					return err
				}
				if place, err = restore.PlaceFor(p.datadir, p.force, sf); err != nil {
					return refused(err)
				}
				// A datadir in place is prepared: a server runs on it.
				d.target, d.prepare, intoRepo = place.Staging, true, false
			}
			tok, err := loadToken(tokenFile)
			if err != nil {
				return err
			}
			rv := &remote.Receiver{Workers: d.parallel,
				Rejected: func(err error) { fmt.Fprintf(g.stderr, "receive: refused: %v\n", err) }}
			got := receivedResult{Into: "target-dir", Where: d.target, Prepared: d.prepare}
			if d.target != "" {
				job, err := d.job(g, cmd.Flags())
				if err != nil {
					return err
				}
				rv.Datadir = &job
			} else {
				if rv.Repo, err = g.openRepo(ctx, false); err != nil {
					return err
				}
				if rv.Encryption, err = g.encryption(ctx, rv.Repo); err != nil {
					return err
				}
				got.Into, got.Where = "repository", rv.Repo.Backend.Location()
			}
			// arrived is the backup Finish ran for: it arrived whole and
			// verified, whatever became of it then.
			var arrived *archive.Manifest
			if place != nil {
				got.Into, got.Where = "datadir", place.Dir
				// Into place, started and replicating before the sender is
				// told, which prints what this prints.
				rv.Finish = func(ctx context.Context, m *archive.Manifest) (string, error) {
					arrived = m
					var said bytes.Buffer
					out := io.Writer(&said)
					if !asJSON {
						out = io.MultiWriter(g.stdout, &said)
					}
					var err error
					if got.inPlace, err = p.finish(cmd, out, &conn, m, place); err != nil || !replicate {
						return said.String(), err
					}
					cfg, err := conn.resolve(cmd.Flags())
					if err != nil {
						return said.String(), err
					}
					// The manifest names the source and, for a backup of
					// a replica, its primary: the positions to choose from.
					got.Replicating, err = startReplication(ctx, out, cfg, prim, replica.Options{Backup: replica.FromManifest(m), PrimaryIs: primary.is,
						CatchUp: catchUp, WaitTimeout: replica.DefaultWaitTimeout})
					return said.String(), err
				}
			}
			// One object, or with --keep-listening one a line.
			report := printJSON
			if keep {
				report = printJSONLine
			}
			idleTimeout, err := parseIdleTimeout(idle)
			if err != nil {
				return err
			}
			ln, err := transport.Listen(ctx, listen, transport.Options{Token: tok, CertFile: certFile, KeyFile: keyFile, IdleTimeout: idleTimeout})
			if err != nil {
				return err
			}
			defer ln.Close()
			rv.Listener = ln
			fmt.Fprintf(g.stderr, "receive: listening on %s\n", ln.Addr())
			for {
				t := g.tracker("receive", 0)
				rv.Progress = t
				m, err := g.serveLocked(ctx, rv)
				err = refused(err)
				t.Finish(err)
				if err != nil && arrived != nil {
					m = arrived // what followed its arrival failed
				}
				if asJSON && m != nil {
					r := got
					r.Backup = m.ID
					if err != nil {
						r.Error = err.Error()
					}
					if perr := report(g.stdout, r); perr != nil {
						return perr
					}
				}
				if err == nil && place != nil {
					return nil // Finish said what became of it
				}
				if err == nil && !asJSON {
					fmt.Fprintf(g.stdout, "backup %s received and verified into %s\n", m.ID, got.Where)
				}
				if !keep || ctx.Err() != nil {
					return err
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					fmt.Fprintf(g.stderr, "receive: %v\n", err)
				}
			}
		},
	}
	f := cmd.Flags()
	d.register(f)
	p.register(f)
	conn.register(f)
	primary.register(f)
	primary.registerIs(f)
	f.BoolVar(&replicate, "replicate", false, "with --datadir and --start: then make the started server replicate from its primary (--primary-host, ... as replicate takes them), from the backup's position")
	f.BoolVar(&catchUp, "catch-up", false, "with --replicate: also wait until the replica has applied what the primary had when replication started")
	f.StringVar(&listen, "listen", "", "address to listen on, e.g. :4444 or 10.0.0.5:4444")
	f.StringVar(&tokenFile, "token-file", "", "file holding the shared token (mode 0600); default: $"+transport.TokenEnv)
	f.StringVar(&certFile, "tls-cert", "", "serve this certificate (PEM) instead of an ephemeral self-signed one")
	f.StringVar(&keyFile, "tls-key", "", "key of --tls-cert (PEM)")
	f.BoolVar(&keep, "keep-listening", false, "serve transfers one after another (with --repo)")
	registerIdleTimeout(f, &idle, "the sender")
	f.BoolVar(&asJSON, "json", false, "print what became of the backup received as one JSON object instead of text (backup, into, where, prepared; with --datadir what was moved aside, the server started, its replication; error if what followed its arrival failed); with --keep-listening one object a line per backup")
	g.registerEncrypt(f)
	return cmd
}

func newTokenCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "token",
		Short:   "Print a new random token for send and receive",
		Example: `  umask 077; backstream token > /etc/backstream/token`,
		Long: `token prints 32 random bytes, base64url-encoded. Store it in a file only the backup user
can read, on both hosts:  backstream token > /etc/backstream/token && chmod 600 /etc/backstream/token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(g.stdout, transport.GenerateToken())
			return err
		},
	}
}

// minIdleTimeout is the shortest --idle-timeout taken: three of the
// peer's heartbeats, so that one late heartbeat never ends a transfer.
const minIdleTimeout = 3 * transport.DefaultHeartbeat

// registerIdleTimeout adds --idle-timeout, how long a connection to peer
// may bring nothing, not even a heartbeat.
func registerIdleTimeout(f *pflag.FlagSet, idle *time.Duration, peer string) {
	f.DurationVar(idle, "idle-timeout", transport.DefaultIdleTimeout, "give up when "+peer+" sends nothing for this long, not even the heartbeat every backstream sends each 10s while it has nothing else to say (a stopped process, a lost network); 0: wait for ever")
}

// parseIdleTimeout checks --idle-timeout and makes it transport's: 0 is
// no limit there.
func parseIdleTimeout(idle time.Duration) (time.Duration, error) {
	switch {
	case idle == 0:
		return -1, nil
	case idle < minIdleTimeout:
		return 0, usagef("--idle-timeout %s: want at least %s (three of the peer's heartbeats), or 0 for no limit", idle, minIdleTimeout)
	}
	return idle, nil
}
