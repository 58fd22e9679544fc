package restorecase

import (
	"context"
	"fmt"
	"io"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repoaccess"
)

// Cat writes the backup ref names (an id, a unique prefix of one, or
// latest) to w as one xbstream, as mbstream -x takes it, holding a
// shared lock of the repository: what backstream cat prints, a backup
// for stock tools. Every frame is checked before it is written.
func Cat(ctx context.Context, repos repoaccess.Options, ref string, w io.Writer) error {
	r, m, ctx, release, err := repos.ResolveLocked(ctx, ref, "", repoaccess.OpCat)
	if err != nil {
		return err
	}
	defer release()
	if err := archive.WriteStream(ctx, archive.ReadOptions{Input: r.Input(m), Manifest: m, Memory: repos.Memory}, w); err != nil {
		return fmt.Errorf("backup %s: %w", m.ID, err)
	}
	return nil
}
