package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/mariadb"
)

func newConfigCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:                "config",
		Args:               cobra.MinimumNArgs(1),
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			target, rest, err := cmd.Root().Find(args)
			if err != nil || target == cmd.Root() || target == cmd {
				return usagef("config: no command %q", strings.Join(args, " "))
			}
			if err := target.ParseFlags(rest); err != nil {
				return usageError{err}
			}
			if v, _ := target.Flags().GetString("defaults-group-suffix"); v != "" {
				g.groupSuffix = v
			}
			if err := g.applyOptionFiles(target); err != nil {
				return err
			}
			w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "OPTION\tVALUE\tFROM\n")
			for _, o := range g.effectiveOptions(target) {
				fmt.Fprintf(w, "--%s\t%s\t%s\n", o[0], o[1], o[2])
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if target.Flags().Lookup("socket") == nil {
				return nil // a command that connects to no server
			}
			return g.printConnection(target.Flags())
		},
	}
}

// printConnection prints the connection as the client would make it,
// from the same files ([client], [client-server], [client-mariadb] too),
// and where each of its settings comes from.
func (g *globals) printConnection(flags *pflag.FlagSet) error {
	str := func(name string) string { return flags.Lookup(name).Value.String() }
	port, _ := flags.GetInt("port")
	cfg, err := mariadb.Resolve(mariadb.Flags{Host: str("host"), Socket: str("socket"), User: str("user"), Port: port,
		Protocol: str("protocol"), DefaultsFile: str("defaults-file"), DefaultsExtraFile: str("defaults-extra-file"), NoDefaults: str("no-defaults") == "true"})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "\nconnection: %s\n", cfg)
	for _, k := range []string{"host", "port", "socket", "user", "password"} {
		if from := cfg.Sources[k]; from != "" {
			fmt.Fprintf(g.stdout, "  %s from %s\n", k, from)
		}
	}
	return nil
}
