package cli

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/options"
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
// A repeatable option (options.Repeatable, such as mask or
// mariabackup-option) takes one value per line, and its lines add up over
// every file and group read; a comma-separated list (options.List:
// database = a,b) replaces the list of an earlier line. The lines of a
// repeatable option marked AddsToCommandLine in the options table (mask)
// add to the values given on the command line too, so that a rule kept
// in an option file is never dropped by giving another on the command
// line. The options table says which options files cannot set, which
// take their default from the environment, and which are secrets.

// applyOptionFiles sets the flags of cmd that the command line left
// unset from the option files, and records where each value came from.
func (g *globals) applyOptionFiles(cmd *cobra.Command) error {
	g.sources = map[string]string{}
	flags := cmd.Flags()
	name := cmd.Name()
	groups := []string{"backstream", "backstream-" + name}
	if g.groupSuffix != "" {
		groups = append(groups, "backstream"+g.groupSuffix, "backstream-"+name+g.groupSuffix)
	}
	opts, err := mariadb.ReadOptionFiles(optionFiles(flags), groups...)
	if err != nil {
		return usagef("reading option files: %v", err)
	}
	fromFiles := map[string]bool{} // repeatable flags some line has set
	for _, o := range opts {
		key, loose := strings.CutPrefix(o.Key, "loose-")
		where := fmt.Sprintf("%s:%d [%s]", o.File, o.Line, o.Group)
		ownGroup := !strings.EqualFold(o.Group, "backstream") && !strings.EqualFold(o.Group, "backstream"+g.groupSuffix)
		fl := flags.Lookup(key)
		opt, _ := options.Of(name, string(flags.GetNormalizeFunc()(flags, key))) // an alias's (databases) is its option's
		switch {
		case fl == nil && (loose || !ownGroup && options.Known(key)):
			continue // another command's option, or one marked loose
		case fl == nil && ownGroup:
			return usagef("%s: unknown option %q for %s", where, key, name)
		case fl == nil:
			return usagef("%s: unknown option %q (no backstream command has it)", where, key)
		case opt.CommandLineOnly != "":
			continue
		case fl.Changed && !opt.AddsToCommandLine:
			g.sources[key] = "command line"
			continue
		}
		if opt.Env != "" && os.Getenv(opt.Env) != "" {
			g.sources[key] = "$" + opt.Env
			continue
		}
		value := o.Value
		if o.Bare {
			if fl.NoOptDefVal == "" {
				return usagef("%s: option %q needs a value", where, key)
			}
			value = fl.NoOptDefVal
		}
		if err := setFromFile(fl, opt.Kind, value, !fromFiles[key]); err != nil {
			return usagef("%s: option %q: bad value %q: %v", where, key, value, err)
		}
		switch {
		case opt.Kind == options.Repeatable && fromFiles[key]:
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

// setFromFile gives fl the value of a line of an option file, the first
// line of the option when first.
func setFromFile(fl *pflag.Flag, kind options.Kind, value string, first bool) error {
	sv, _ := fl.Value.(pflag.SliceValue)
	switch kind {
	case options.Repeatable:
		// Every line adds one value; the first one read replaces the
		// default, unless the command line gave values to add to.
		if first && !fl.Changed {
			if err := sv.Replace(nil); err != nil {
				return err
			}
		}
		return sv.Append(value)
	case options.List:
		// A later file's list replaces an earlier one's.
		return sv.Replace(strings.Split(value, ","))
	}
	return fl.Value.Set(value)
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

// effectiveOptions lists cmd's flags with their values and sources, by
// name, secrets masked.
func (g *globals) effectiveOptions(cmd *cobra.Command) [][3]string {
	var out [][3]string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		opt, _ := options.Of(cmd.Name(), f.Name)
		if f.Hidden || opt.CommandLineOnly == options.NotAnOption || opt.CommandLineOnly == options.ClientConnection {
			return // the connection is shown as resolved
		}
		src := g.sources[f.Name]
		switch {
		case src != "":
		case f.Changed:
			src = "command line"
		case opt.Env != "" && os.Getenv(opt.Env) != "":
			src = "$" + opt.Env
		default:
			src = "default"
		}
		v := f.Value.String()
		if opt.Secret && v != "" && v != "[]" {
			v = "****"
		}
		out = append(out, [3]string{f.Name, v, src})
	})
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
