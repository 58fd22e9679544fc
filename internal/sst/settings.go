package sst

import (
	"fmt"
	"strconv"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/options"
)

// Settings are this method's options, from the [sst] group of the option
// files the server reads (the group the stock scripts read too). Secrets
// are never values here, only the files that hold them.
type Settings struct {
	TokenFile  string // token-file: the token both ends share (required)
	Parallel   int    // parallel: streams and mariabackup copy threads
	Compress   string // compress: zstd, lz4, gzip or none[:level]
	MaxRate    int64  // max-rate: bytes per second read from the donor's mariabackup
	TLSCert    string // tls-cert, tls-key: the joiner's certificate instead of an ephemeral one
	TLSKey     string
	TLSCA      string // tls-ca: the donor verifies the joiner's certificate against it
	ServerName string // tls-server-name: the name it must carry (default: the joiner's host)
	// Mariabackup and UseMemory: the mariabackup binary, and its
	// --use-memory for the joiner's prepare.
	Mariabackup, UseMemory string
	// Auth is wsrep-sst-auth ("user:password"), read when the server
	// passed none.
	Auth string
}

// defaultParallel is the number of streams without a parallel setting.
const defaultParallel = 4

// optionFiles are the files the server reads, as it named them to the
// script.
func (r Request) optionFiles() []mariadb.OptionSource {
	return mariadb.OptionFiles(mariadb.Flags{DefaultsFile: r.DefaultsFile, DefaultsExtraFile: r.DefaultsExtraFile})
}

// ReadSettings reads [sst] (and [sst<suffix>] with a group suffix) from
// the server's option files.
func ReadSettings(r Request) (Settings, error) {
	s := Settings{Parallel: defaultParallel, Compress: codec.Default}
	groups := []string{"sst"}
	if r.GroupSuffix != "" {
		groups = append(groups, "sst"+r.GroupSuffix)
	}
	opts, err := mariadb.ReadOptionFiles(r.optionFiles(), groups...)
	if err != nil {
		return s, err
	}
	for _, o := range opts {
		where := fmt.Sprintf("%s:%d [%s] %s", o.File, o.Line, o.Group, o.Key)
		switch o.Key {
		case "token-file":
			s.TokenFile = o.Value
		case "parallel":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 1 {
				return s, fmt.Errorf("%s = %q: want a number of streams, at least 1", where, o.Value)
			}
			s.Parallel = n
		case "compress":
			if _, err := codec.Parse(o.Value); err != nil {
				return s, fmt.Errorf("%s: %w", where, err)
			}
			s.Compress = o.Value
		case "max-rate":
			v, err := options.ParseRate(o.Value)
			if err != nil {
				return s, fmt.Errorf("%s = %q: want bytes per second with a unit, like 100MiB/s", where, o.Value)
			}
			s.MaxRate = v
		case "tls-cert":
			s.TLSCert = o.Value
		case "tls-key":
			s.TLSKey = o.Value
		case "tls-ca":
			s.TLSCA = o.Value
		case "tls-server-name":
			s.ServerName = o.Value
		case "mariabackup":
			s.Mariabackup = o.Value
		case "use-memory":
			s.UseMemory = o.Value
		case "wsrep-sst-auth":
			s.Auth = o.Value
		}
	}
	if s.TokenFile == "" {
		return s, fmt.Errorf("no token-file in the [sst] group of the server's option files (%s): generate a token with `backstream token`, keep it in a 0600 file on every node and name it there", describe(r.optionFiles()))
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return s, fmt.Errorf("[sst] tls-cert and tls-key go together")
	}
	return s, nil
}

func describe(files []mariadb.OptionSource) string {
	if len(files) == 0 {
		return "none: the server reads no option files"
	}
	s := ""
	for i, f := range files {
		if i > 0 {
			s += ", "
		}
		s += f.Path
	}
	return s
}
