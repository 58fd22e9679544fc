package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// placeFlags are restore's options of restoring into place and starting
// the server there (restore --datadir).
type placeFlags struct {
	datadir      string
	force        bool
	start        string
	startTimeout time.Duration
	checkTimeout time.Duration
}

func (p *placeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.datadir, "datadir", "", "physical: restore and prepare beside this datadir (inside it, when it is a mount point or a symbolic link), then swap the result into place (the datadir must be empty or absent unless --force)")
	f.BoolVar(&p.force, "force", false, "with --datadir: move what the datadir holds aside to <datadir>.replaced-<time> (never deleted) instead of refusing")
	f.StringVar(&p.start, "start", "", "with --datadir: start the server on it, with systemd (--start, or --start=systemd: systemctl start mariadb) or a command (--start='...'), wait until it answers on --socket/--host, check it")
	f.Lookup("start").NoOptDefVal = serverup.Systemd
	f.DurationVar(&p.startTimeout, "start-timeout", 5*time.Minute, "with --start: how long the start command and the wait until the server answers may take together")
	f.DurationVar(&p.checkTimeout, "check-timeout", serverup.DefaultCheckTimeout, "with --start: how long the checks once the server answers may take (CHECK TABLE of the system tables, then row counts of the biggest tables: those not counted by then are reported so)")
}

// names are the flags that go with --datadir only.
func (p *placeFlags) names() []string {
	return []string{"datadir", "force", "start", "start-timeout", "check-timeout"}
}

// check refuses what goes with --datadir (or --start) without it.
func (p *placeFlags) check(f *pflag.FlagSet) error {
	if p.datadir == "" {
		if name := firstChanged(f, p.names()[1:]); name != "" {
			return usagef("--%s goes with --datadir", name)
		}
	}
	for _, name := range []string{"start-timeout", "check-timeout"} {
		if f.Changed(name) && p.start == "" {
			return usagef("--%s goes with --start", name)
		}
	}
	return nil
}

// serverFiles reads where the server that will run on the datadir keeps
// files of its state outside it, from the option files backstream can
// know it reads: serverDefaults (--server-defaults-file) when given;
// otherwise, with --start=systemd, the global option files; with
// --start='COMMAND', those the command's words choose (--no-defaults,
// --defaults-file, --defaults-extra-file, else the global files) and the
// options among its words; without --start, none.
func (p *placeFlags) serverFiles(serverDefaults string) (mariadb.ServerFiles, error) {
	var src mariadb.ServerSource
	switch {
	case serverDefaults != "":
		src.DefaultsFile = serverDefaults
	case p.start == "":
		return mariadb.ServerFiles{}, nil
	case p.start == serverup.Systemd:
	default:
		words, err := shellWords(p.start)
		if err != nil {
			return mariadb.ServerFiles{}, usagef("--start: %v", err)
		}
		src.ArgsFrom = "the --start command"
		for _, w := range words {
			switch {
			case w == "--no-defaults":
				src.NoDefaults = true
			case strings.HasPrefix(w, "--defaults-file="):
				src.DefaultsFile = strings.TrimPrefix(w, "--defaults-file=")
			case strings.HasPrefix(w, "--defaults-extra-file="):
				src.DefaultsExtraFile = strings.TrimPrefix(w, "--defaults-extra-file=")
			case strings.HasPrefix(w, "--"):
				src.Args = append(src.Args, w)
			}
		}
	}
	sf, err := mariadb.ReadServerFiles(src)
	if err != nil {
		return sf, fmt.Errorf("the options of the server to start on the datadir: %w", err)
	}
	return sf, nil
}

// shellWords splits a command into words as /bin/sh would for simple
// commands: blanks separate words, single quotes keep everything, double
// quotes and backslashes work as in the shell. Expansions are not done.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// inPlace is what finish did, as --json prints it: where what the datadir
// held went, what moved outside it, and the server started on it.
type inPlace struct {
	Replaced string           `json:"replaced,omitempty"` // where what the datadir held was moved aside
	Outside  []restore.Aside  `json:"outside,omitempty"`  // what moved aside from, and was placed in, the places outside it
	Started  *serverup.Report `json:"started,omitempty"`  // the server --start started there, checked
}

// finish swaps the restored datadir into place, and starts and checks the
// server with --start. What it did is returned also with an error.
func (p *placeFlags) finish(cmd *cobra.Command, out io.Writer, conn *connFlags, m *archive.Manifest, place *restore.Place) (inPlace, error) {
	sw, err := place.Swap()
	did := inPlace{Replaced: sw.Replaced, Outside: sw.Outside}
	if sw.Replaced != "" {
		fmt.Fprintf(out, "what %s held was moved aside to %s\n", place.Dir, sw.Replaced)
	}
	for _, a := range sw.Outside {
		fmt.Fprintln(out, a)
	}
	if err != nil {
		return did, err
	}
	fmt.Fprintf(out, "backup %s restored and prepared in place: %s\n", m.ID, place.Dir)
	if p.start == "" {
		return did, nil
	}
	cfg, err := conn.resolve(cmd.Flags())
	if err != nil {
		return did, err
	}
	rep, err := serverup.Start(cmd.Context(), serverup.Options{How: p.start, Conn: cfg, Datadir: place.Dir, DatadirVersion: m.Server.Version, Timeout: p.startTimeout, CheckTimeout: p.checkTimeout, Biggest: 5})
	if err != nil {
		return did, err
	}
	did.Started = rep
	fmt.Fprintf(out, "server %s (%s)"+serverRunsOn+"%s: CHECK TABLE of %d system tables OK\n", rep.Version, rep.Hostname, place.Dir, rep.SystemTables)
	if len(rep.Counted) > 0 {
		parts := make([]string, len(rep.Counted))
		for i, c := range rep.Counted {
			parts[i] = fmt.Sprintf("%s %d rows", c.Table, c.Rows)
			if !c.Counted {
				parts[i] = fmt.Sprintf("%s not counted within --check-timeout %s", c.Table, p.checkTimeout)
			}
		}
		fmt.Fprintf(out, "biggest tables: %s\n", strings.Join(parts, ", "))
	}
	if rep.Upgrade != "" {
		fmt.Fprintln(out, rep.Upgrade)
	}
	return did, nil
}

// serverRunsOn is in the line a restore into place prints once the server
// it started answers (provision --replicate=false looks for it in each
// receiver's report).
const serverRunsOn = " runs on "
