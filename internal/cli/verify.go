package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/repo"
)

func newVerifyCmd(g *globals) *cobra.Command {
	var parallel int
	cmd := &cobra.Command{
		Use:   "verify [ID|latest]",
		Short: "Read a whole backup and check every checksum, writing nothing",
		Long: `verify reads every stream object of a backup in parallel and checks the CRC of each
stored frame, the CRC of each xbstream chunk, the stream structure, the digest of each
object and the size and digest of each file against the manifest, and every metadata
object (for a logical backup also that its catalog and its data files agree). Exit
code 3 means the backup is corrupt.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, m, ctx, release, err := g.resolveLocked(cmd.Context(), args, repo.OpVerify)
			if err != nil {
				return err
			}
			defer release()
			for _, o := range m.Meta {
				data, err := r.ReadMeta(ctx, m, o.Name)
				if err != nil {
					return err
				}
				if o.Name == logical.CatalogName {
					c, err := logical.ParseCatalog(data)
					if err == nil {
						err = c.Check(m)
					}
					if err != nil {
						return archive.Corruptf("backup %s: %v", m.ID, err)
					}
				}
			}
			t := g.tracker("verify "+m.ID, m.Stats.StoredBytes)
			err = archive.Read(ctx, archive.ReadOptions{
				Input: r.Input(m.ID), Manifest: m, Workers: parallel, Counter: t,
			})
			t.Finish(err)
			if err != nil {
				return fmt.Errorf("backup %s: %w", m.ID, err)
			}
			fmt.Fprintf(g.stdout, "backup %s: OK (%d streams, %d files, every checksum matches)\n", m.ID, len(m.Streams), len(m.Files))
			return nil
		},
	}
	cmd.Flags().IntVar(&parallel, "parallel", 0, "decoding threads (default: number of CPUs)")
	return cmd
}
