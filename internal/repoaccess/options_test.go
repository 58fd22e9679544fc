package repoaccess

import (
	"testing"

	"github.com/backstream/backstream/internal/storage/s3"
)

type parallel int

func (p parallel) GetInt(string) (int, error) { return int(p), nil }

// A backup into an object store splits --memory between its frames and
// its uploads, and its runtime limit makes room for each stream's part
// being filled; into a directory, and for every other command, the budget
// stays whole.
func TestShareMemory(t *testing.T) {
	const budget = 512 << 20
	for _, c := range []struct {
		command, repo  string
		writer, upload int64
		limit          int64
		limited        bool
	}{
		{"backup", "s3://bucket/db1", budget / 2, budget / 2, budget + runtimeHeadroom + 4*s3.DefaultPartSize, true},
		{"backup", "/backups", budget, 0, budget + runtimeHeadroom, true},
		{"restore", "s3://bucket/db1", budget, 0, budget + runtimeHeadroom, true},
		{"expire", "s3://bucket/db1", budget, 0, budget + runtimeHeadroom, false},
	} {
		o := Options{Location: Location{Repo: c.repo}, Memory: NewMemory(budget)}
		limit, limited := o.ShareMemory(c.command, parallel(4))
		if o.Memory.Size() != c.writer || o.Location.UploadMemory != c.upload || limit != c.limit || limited != c.limited {
			t.Errorf("%s into %s: budget %d, uploads %d, limit %d (%v); want %d, %d, %d (%v)", c.command, c.repo,
				o.Memory.Size(), o.Location.UploadMemory, limit, limited, c.writer, c.upload, c.limit, c.limited)
		}
	}
}
