package options

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

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
// A repeatable option (Repeatable, such as mask or mariabackup-option)
// takes one value per line, and its lines add up over every file and
// group read; a comma-separated list (List: database = a,b) replaces the
// list of an earlier line. The lines of a repeatable option marked
// AddsToCommandLine (mask) add to the values given on the command line
// too, so that a rule kept in an option file is never dropped by giving
// another on the command line. The table says which options files cannot
// set, which take their default from the environment, and which are
// secrets.

// Sources says where each flag's value came from: "command line",
// "file:line [group]", "$VAR", or a mix of a command line and files.
type Sources map[string]string

// ApplyFiles sets the flags of command that the command line left unset
// from the option files (those its --no-defaults, --defaults-file and
// --defaults-extra-file choose), with groupSuffix the
// --defaults-group-suffix, and says where each value came from. Its
// errors are mistakes of the user's files: usage errors.
func ApplyFiles(command string, flags *pflag.FlagSet, groupSuffix string) (Sources, error) {
	sources := Sources{}
	groups := []string{"backstream", "backstream-" + command}
	if groupSuffix != "" {
		groups = append(groups, "backstream"+groupSuffix, "backstream-"+command+groupSuffix)
	}
	opts, err := mariadb.ReadOptionFiles(optionFiles(flags), groups...)
	if err != nil {
		return sources, fmt.Errorf("reading option files: %v", err)
	}
	fromFiles := map[string]bool{} // repeatable flags some line has set
	for _, o := range opts {
		key, loose := strings.CutPrefix(o.Key, "loose-")
		where := fmt.Sprintf("%s:%d [%s]", o.File, o.Line, o.Group)
		ownGroup := !strings.EqualFold(o.Group, "backstream") && !strings.EqualFold(o.Group, "backstream"+groupSuffix)
		fl := flags.Lookup(key)
		opt, _ := Of(command, string(flags.GetNormalizeFunc()(flags, key))) // an alias's (databases) is its option's
		switch {
		case fl == nil && (loose || !ownGroup && Known(key)):
			continue // another command's option, or one marked loose
		case fl == nil && ownGroup:
			return sources, fmt.Errorf("%s: unknown option %q for %s", where, key, command)
		case fl == nil:
			return sources, fmt.Errorf("%s: unknown option %q (no backstream command has it)", where, key)
		case opt.CommandLineOnly != "":
			continue
		case fl.Changed && !opt.AddsToCommandLine:
			sources[key] = "command line"
			continue
		}
		if opt.Env != "" && os.Getenv(opt.Env) != "" {
			sources[key] = "$" + opt.Env
			continue
		}
		value := o.Value
		if o.Bare {
			if fl.NoOptDefVal == "" {
				return sources, fmt.Errorf("%s: option %q needs a value", where, key)
			}
			value = fl.NoOptDefVal
		}
		if err := setFromFile(fl, opt.Kind, value, !fromFiles[key]); err != nil {
			return sources, fmt.Errorf("%s: option %q: bad value %q: %v", where, key, value, err)
		}
		switch {
		case opt.Kind == Repeatable && fromFiles[key]:
			sources[key] += ", " + where
		case fl.Changed:
			sources[key] = "command line and " + where
		default:
			sources[key] = where
		}
		fromFiles[key] = true
	}
	return sources, nil
}

// setFromFile gives fl the value of a line of an option file, the first
// line of the option when first.
func setFromFile(fl *pflag.Flag, kind Kind, value string, first bool) error {
	sv, _ := fl.Value.(pflag.SliceValue)
	switch kind {
	case Repeatable:
		// Every line adds one value; the first one read replaces the
		// default, unless the command line gave values to add to.
		if first && !fl.Changed {
			if err := sv.Replace(nil); err != nil {
				return err
			}
		}
		return sv.Append(value)
	case List:
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

// File is the option file and line that set the flag a usage error is
// about, "" when none did: such an error starts with the flag
// ("--max-rate \"10\" is ..."), as every check of a flag's value words
// it.
func (s Sources) File(err error) string {
	name, ok := strings.CutPrefix(err.Error(), "--")
	if !ok {
		return ""
	}
	if end := strings.IndexFunc(name, func(r rune) bool { return r != '-' && (r < 'a' || r > 'z') && (r < '0' || r > '9') }); end >= 0 {
		name = name[:end]
	}
	where := s[name]
	if where == "" || strings.HasPrefix(where, "command line") || strings.HasPrefix(where, "$") {
		return ""
	}
	return where
}

// WriteEffective writes what config prints: the table of command's
// flags, each option with its value and where it came from, by name,
// secrets masked; then, for a command that connects to a server, the
// connection (writeConnection).
func (s Sources) WriteEffective(w io.Writer, command string, flags *pflag.FlagSet) error {
	var rows [][3]string
	flags.VisitAll(func(f *pflag.Flag) {
		opt, _ := Of(command, f.Name)
		if f.Hidden || opt.CommandLineOnly == NotAnOption || opt.CommandLineOnly == ClientConnection {
			return // the connection is shown as resolved
		}
		src := s[f.Name]
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
		rows = append(rows, [3]string{f.Name, v, src})
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "OPTION\tVALUE\tFROM\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "--%s\t%s\t%s\n", r[0], r[1], r[2])
	}
	if err := tw.Flush(); err != nil || flags.Lookup("socket") == nil {
		return err // or a command that connects to no server
	}
	return writeConnection(w, flags)
}
