package cli

import (
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
)

// share makes what everything the command stores or reads shares: the
// limiters of the storage's rates, the memory budget and the count of
// object-store requests; and has a lock's notes said on stderr.
func (g *globals) share() {
	g.repos.Location.Limits = repoaccess.NewLimits(g.limitUpload, g.limitDownload)
	g.repos.Location.Requests = new(repoaccess.Requests)
	g.repos.Memory, g.repos.Notes = repoaccess.NewMemory(g.memory), g.stderr
}

// registerEncrypt adds the flags of the commands that store encrypted.
func (g *globals) registerEncrypt(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("encrypt", &g.repos.Encrypt)
	o.String("recipient-file", &g.repos.Keys.RecipientFile)
}
