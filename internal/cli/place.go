package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/restorecase"
)

// placeFlags are restore's options of restoring into place and starting
// the server there (restore --datadir).
type placeFlags struct {
	datadir      string
	force        bool
	start        string
	startTimeout time.Duration
	checkTimeout time.Duration
}

func (p *placeFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.String("datadir", &p.datadir)
	o.Bool("force", &p.force)
	o.String("start", &p.start)
	o.Duration("start-timeout", &p.startTimeout)
	o.Duration("check-timeout", &p.checkTimeout)
}

// names are the flags that go with --datadir only.
func (p *placeFlags) names() []string {
	return []string{"datadir", "force", "start", "start-timeout", "check-timeout"}
}

// check refuses what goes with --datadir (or --start) without it.
func (p *placeFlags) check(f *pflag.FlagSet) error {
	return restorecase.CheckPlace(p.datadir, p.start, firstChanged(f, p.names()[1:]), firstChanged(f, p.names()[3:]))
}
