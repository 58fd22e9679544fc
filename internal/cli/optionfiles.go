package cli

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/mariadb"
)

// Every long option of every command may be set in the option files the
// mariadb client reads (see mariadb.OptionFiles): in [backstream] for all
// commands, in [backstream-COMMAND] for one; with --defaults-group-suffix
// S also in [backstreamS] and [backstream-COMMANDS], read after them. The
// command line beats the files, and an environment variable that gives a
// flag its default (BACKSTREAM_REPO) beats them too. Within the files the
// last value read wins, as in MariaDB.
//
// The connection keys (host, socket, user, password, port, protocol) are
// left to the connection resolver, which reads the same files and groups
// with the client's groups; the keys that choose option files cannot be
// set in one. A key no command knows is an error in [backstream], and a
// key the command does not know is one in [backstream-COMMAND], naming
// the file and line; so is a value the option refuses.
//
// A repeatable option (a string array such as mask or
// mariabackup-option) takes one value per line, and its lines add up over
// every file and group read; a comma-separated list (database = a,b)
// replaces the list of an earlier line. The lines of a repeatable option
// marked with addsToCommandLine (mask) add to the values given on the
// command line too, so that a rule kept in an option file is never
// dropped by giving another on the command line.

// notFromFiles are the flags option files cannot set: those that choose
// the files, and those the connection resolver reads from the files on
// its own (setting them here would make them look given on the command
// line).
var notFromFiles = map[string]bool{
	"defaults-file": true, "defaults-extra-file": true, "no-defaults": true, "defaults-group-suffix": true,
	"host": true, "socket": true, "user": true, "password": true, "port": true, "protocol": true,
	"ssl": true, "skip-ssl": true, "ssl-ca": true, "ssl-capath": true, "ssl-cert": true, "ssl-key": true, "ssl-verify-server-cert": true,
	"help": true, "version": true,
}

// envDefaults are the flags whose default comes from an environment
// variable, which beats the option files.
var envDefaults = map[string]string{"repo": "BACKSTREAM_REPO", "mariadb-path": "BACKSTREAM_MARIADB_PATH"}

// addsToCommandLine is the annotation of a repeatable flag whose values in
// option files add to those of the command line instead of giving way.
const addsToCommandLine = "backstream-adds-to-command-line"

// repeatable reports a flag that takes one value per occurrence, never
// split at commas.
func repeatable(fl *pflag.Flag) bool { return fl.Value.Type() == "stringArray" }

// applyOptionFiles sets the flags of cmd that the command line left
// unset from the option files, and records where each value came from.
func (g *globals) applyOptionFiles(cmd *cobra.Command) error {
	g.sources = map[string]string{}
	flags := cmd.Flags()
	files := optionFiles(flags)
	name := cmd.Name()
	groups := []string{"backstream", "backstream-" + name}
	if g.groupSuffix != "" {
		groups = append(groups, "backstream"+g.groupSuffix, "backstream-"+name+g.groupSuffix)
	}
	known := allFlagNames(cmd.Root())
	opts, err := mariadb.ReadOptionFiles(files, groups...)
	if err != nil {
		return usagef("reading option files: %v", err)
	}
	fromFiles := map[string]bool{} // repeatable flags some line has set
	for _, o := range opts {
		key, loose := strings.CutPrefix(o.Key, "loose-")
		where := fmt.Sprintf("%s:%d [%s]", o.File, o.Line, o.Group)
		ownGroup := !strings.EqualFold(o.Group, "backstream") && !strings.EqualFold(o.Group, "backstream"+g.groupSuffix)
		fl := flags.Lookup(key)
		switch {
		case fl == nil && (loose || !ownGroup && known[key]):
			continue // another command's option, or one marked loose
		case fl == nil && ownGroup:
			return usagef("%s: unknown option %q for %s", where, key, name)
		case fl == nil:
			return usagef("%s: unknown option %q (no backstream command has it)", where, key)
		case notFromFiles[key]:
			continue
		case fl.Changed && fl.Annotations[addsToCommandLine] == nil:
			g.sources[key] = "command line"
			continue
		}
		if env := envDefaults[key]; env != "" && os.Getenv(env) != "" {
			g.sources[key] = "$" + env
			continue
		}
		value := o.Value
		if o.Bare {
			if fl.NoOptDefVal == "" {
				return usagef("%s: option %q needs a value", where, key)
			}
			value = fl.NoOptDefVal
		}
		sv, isSlice := fl.Value.(pflag.SliceValue)
		switch {
		case isSlice && repeatable(fl):
			// Every line adds one value; the first one read replaces the
			// default, unless the command line gave values to add to.
			if !fromFiles[key] && !fl.Changed {
				err = sv.Replace(nil)
			}
			if err == nil {
				err = sv.Append(value)
			}
		case isSlice:
			// A later file's list replaces an earlier one's.
			err = sv.Replace(strings.Split(value, ","))
		default:
			err = fl.Value.Set(value)
		}
		if err != nil {
			return usagef("%s: option %q: bad value %q: %v", where, key, value, err)
		}
		switch {
		case repeatable(fl) && fromFiles[key]:
			g.sources[key] += ", " + where
		case fl.Changed:
			g.sources[key] = "command line and " + where
		default:
			g.sources[key] = where
		}
		fromFiles[key] = true
	}
	return nil
}

// optionFiles lists the files to read, as the connection resolver does:
// the command's --no-defaults, --defaults-file and --defaults-extra-file
// where it has them.
func optionFiles(flags *pflag.FlagSet) []mariadb.OptionSource {
	var f mariadb.Flags
	if fl := flags.Lookup("no-defaults"); fl != nil {
		f.NoDefaults = fl.Value.String() == "true"
	}
	if fl := flags.Lookup("defaults-file"); fl != nil {
		f.DefaultsFile = fl.Value.String()
	}
	if fl := flags.Lookup("defaults-extra-file"); fl != nil {
		f.DefaultsExtraFile = fl.Value.String()
	}
	return mariadb.OptionFiles(f)
}

// allFlagNames are the long flags of every command under root.
func allFlagNames(root *cobra.Command) map[string]bool {
	known := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return known
}

// secretFlag reports whether a flag's value is a secret to mask.
func secretFlag(name string) bool {
	return name == "password" || strings.Contains(name, "passphrase") && !strings.HasSuffix(name, "-file") || name == "token"
}

// effectiveOptions lists cmd's flags with their values and sources, by
// name, secrets masked.
func (g *globals) effectiveOptions(cmd *cobra.Command) [][3]string {
	var out [][3]string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || slices.Contains(connFlagNames[:6], f.Name) {
			return // the connection is shown as resolved
		}
		src := g.sources[f.Name]
		switch {
		case src != "":
		case f.Changed:
			src = "command line"
		case envDefaults[f.Name] != "" && os.Getenv(envDefaults[f.Name]) != "":
			src = "$" + envDefaults[f.Name]
		default:
			src = "default"
		}
		v := f.Value.String()
		if secretFlag(f.Name) && v != "" && v != "[]" {
			v = "****"
		}
		out = append(out, [3]string{f.Name, v, src})
	})
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
