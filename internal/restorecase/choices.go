package restorecase

import (
	"strings"

	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
)

// Choices are what a logical load takes and how, as asked: restore's of a
// backup, copy's of a server.
type Choices struct {
	Databases, ExcludeDatabases, Tables, ExcludeTables  []string
	Rename                                              []string // from:to, a source database loaded as a target one
	Definer                                             string
	DropExisting, Resume, NoBinlog, Users, ReplaceUsers bool
	Skip                                                schema.Skip
}

// Parse checks the choices and returns the filter and the renaming
// (source database to target database); a refusal is a
// *restore.RefusedError.
func (c *Choices) Parse() (schema.Filter, map[string]string, error) {
	f := schema.Filter{Databases: c.Databases, ExcludeDatabases: c.ExcludeDatabases, Tables: c.Tables, ExcludeTables: c.ExcludeTables}
	rename := map[string]string{}
	for _, r := range c.Rename {
		from, to, ok := strings.Cut(r, ":")
		if !ok || from == "" || to == "" {
			return f, nil, refusedf("--rename-database %q: give it as from:to", r)
		}
		rename[from] = to
	}
	if err := f.CheckNames(); err != nil {
		return f, nil, refused(err)
	}
	switch {
	case c.Resume && c.DropExisting:
		return f, nil, refusedf("--resume and --drop-existing contradict each other")
	case c.ReplaceUsers && !c.Users:
		return f, nil, refusedf("--replace-users needs --users")
	case c.Users && c.Skip.Users:
		return f, nil, refusedf("--users and --skip-users contradict each other")
	}
	return f, rename, nil
}

// Job is the load job of the choices, less its connection, parallelism
// and mask.
func (c *Choices) Job() (logical.LoadJob, error) {
	filter, rename, err := c.Parse()
	if err != nil {
		return logical.LoadJob{}, err
	}
	return logical.LoadJob{Filter: filter, Rename: rename, Definer: c.Definer, Skip: c.Skip,
		DropExisting: c.DropExisting, Resume: c.Resume, NoBinlog: c.NoBinlog, Users: c.Users, ReplaceUsers: c.ReplaceUsers}, nil
}
