package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/physical"
)

func newRestoreCmd(g *globals) *cobra.Command {
	var (
		target      string
		prepare     bool
		useMemory   string
		owner       string
		mariabackup string
		parallel    int
		verbose     bool
	)
	cmd := &cobra.Command{
		Use:   "restore [ID|latest]",
		Short: "Restore a physical backup into a new datadir",
		Long: `restore reads every stream of a backup in parallel, verifies every checksum and writes
the files into --target-dir, which must be empty or absent. With --prepare it then runs
mariabackup --prepare, so that a server starts on the result. Ownership and modes
(directories 0750, files 0640) are set at the end. A failed restore leaves the target empty.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if target == "" {
				return usagef("--target-dir is required")
			}
			if !cmd.Flags().Changed("owner") {
				owner = physical.DefaultOwner()
			}
			r, m, err := g.resolveBackup(cmd.Context(), args)
			if err != nil {
				return err
			}
			var log io.Writer
			if verbose {
				log = g.stderr
			}
			t := g.tracker("restore "+m.ID, m.Stats.StoredBytes)
			err = physical.RunRestore(cmd.Context(), physical.RestoreJob{
				Input: r.Input(m.ID), Manifest: m, TargetDir: target, Prepare: prepare, UseMemory: useMemory, Owner: owner,
				Mariabackup: mariabackup, Workers: parallel, Log: log, Progress: t,
			})
			t.Finish(err)
			if err != nil {
				return err
			}
			state := "restored (not prepared: run with --prepare, or mariabackup --prepare, before starting a server)"
			if prepare {
				state = "restored and prepared: a server can start on it"
			}
			fmt.Fprintf(g.stdout, "backup %s %s: %s\n", m.ID, state, target)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target-dir", "", "directory to restore into (must be empty or absent)")
	f.BoolVar(&prepare, "prepare", false, "run mariabackup --prepare on the result")
	f.StringVar(&useMemory, "use-memory", "", "memory for --prepare, e.g. 1G")
	f.StringVar(&owner, "owner", "", "user to own the restored files (default: mysql when running as root)")
	f.StringVar(&mariabackup, "mariabackup", "", "mariabackup binary for --prepare")
	f.IntVar(&parallel, "parallel", 0, "decoding threads (default: number of CPUs)")
	f.BoolVarP(&verbose, "verbose", "v", false, "copy mariabackup's prepare log to stderr")
	return cmd
}
