package replica

import "github.com/backstream/backstream/internal/refusal"

// Named is the primary as a command names it: the option file to read
// after the global ones (--primary-defaults-file), the values given on
// its command line (the Given flags say which), and how the primary
// relates to the backup's source (--primary-is).
type Named struct {
	File                                      string
	Given                                     Primary
	HostGiven, PortGiven, UserGiven, SSLGiven bool
	Is                                        string
}

// Resolve reads the [backstream-primary] group of the option files (the
// global ones, ~/.my.cnf, then File), then the values given over it;
// def's host and port stand where neither names a host. A primary without
// host or user, or an Is of neither kind, is refused.
func (n Named) Resolve(def Primary) (Primary, error) {
	p, err := LoadPrimary(n.File)
	if err != nil {
		return p, err
	}
	if p.Host == "" {
		p.Host = def.Host
		if p.Port == 0 {
			p.Port = def.Port
		}
	}
	if n.HostGiven {
		p.Host = n.Given.Host
	}
	if n.PortGiven {
		p.Port = n.Given.Port
	}
	if n.UserGiven {
		p.User = n.Given.User
	}
	if n.SSLGiven {
		p.SSL = n.Given.SSL
	}
	if p.Host == "" || p.User == "" {
		return p, refusal.New("name the primary: --primary-host and --primary-user (or host= and user= in [backstream-primary])")
	}
	switch n.Is {
	case "", PrimaryIsSource, PrimaryIsSourcePrimary:
	default:
		return p, refusal.Errorf("--primary-is %q: want %s (the primary is the backup's source) or %s (it is the source's primary)", n.Is, PrimaryIsSource, PrimaryIsSourcePrimary)
	}
	return p, nil
}
