package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/procargs"
)

// hideSecretArgs makes root run with the process's own arguments, a
// password given on the command line as the mariadb client takes it
// (--password=VALUE, -pVALUE, also after other short flags: -vpVALUE) handed
// to the command as --password=VALUE and overwritten with x's in the
// process's command line, where ps and /proc/PID/cmdline show it. pflag
// alone would read -pVALUE as -p (prompt) followed by more short flags.
func hideSecretArgs(root *cobra.Command) {
	args := os.Args[1:]
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		cmd = root
	}
	short := func(c byte) *pflag.Flag {
		if f := cmd.Flags().ShorthandLookup(string(c)); f != nil {
			return f
		}
		return cmd.InheritedFlags().ShorthandLookup(string(c))
	}
	const long = "--password="
	var out []string
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if strings.HasPrefix(a, long) {
			procargs.Mask(i+1, len(long))
			out = append(out, os.Args[i+1]) // Mask's copy: a is x's now
			continue
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			out = append(out, a)
			continue
		}
		kept := a
		for j := 1; j < len(a); j++ {
			f := short(a[j])
			if f == nil || (f.Name != "password" && f.Value.Type() != "bool") {
				break // unknown, or the rest is this flag's value: pflag's to read
			}
			if f.Name == "password" {
				if value := strings.TrimPrefix(a[j+1:], "="); value != "" {
					if j > 1 {
						out = append(out, a[:j])
					}
					kept = long + strings.Clone(value)
					procargs.Mask(i+1, j+1)
				}
				break
			}
		}
		out = append(out, kept)
	}
	root.SetArgs(out)
}
