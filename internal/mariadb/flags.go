package mariadb

// Flags holds the connection values given on the command line. Every field
// that is set overrides option files and the environment.
type Flags struct {
	Host   string
	Socket string
	User   string
	Port   int
	// Protocol is "tcp" or "socket" (--protocol); empty lets the host decide.
	Protocol string
	// Password is nil when no password was given; a pointer to "" is an
	// explicit empty password.
	Password *string
	// DefaultsFile, when set, is the only option file read
	// (--defaults-file).
	DefaultsFile string
	// DefaultsExtraFile is read after the global option files and before the
	// user's ~/.my.cnf (--defaults-extra-file).
	DefaultsExtraFile string
	// NoDefaults skips every option file (--no-defaults).
	NoDefaults bool
	// SSL is --ssl (true) or --skip-ssl (false); nil when neither was
	// given. Given, it overrides what the other TLS flags imply.
	SSL *bool
	// SSLCA, SSLCAPath, SSLCert and SSLKey are --ssl-ca, --ssl-capath,
	// --ssl-cert and --ssl-key; empty when not given. Each implies --ssl.
	SSLCA     string
	SSLCAPath string
	SSLCert   string
	SSLKey    string
	// SSLVerifyServerCert is --ssl-verify-server-cert; nil when not
	// given. True implies --ssl.
	SSLVerifyServerCert *bool
}

// Label is the server f names, for a label (the metrics' server): its
// socket, or host:port, resolved with the option files f chooses. It
// never holds the account; options that do not resolve are labelled as
// given, so that every run of the same command line has the same label,
// whether it reached the server or not.
func (f Flags) Label() string {
	cfg, err := Resolve(Flags{Host: f.Host, Port: f.Port, Socket: f.Socket, Protocol: f.Protocol,
		DefaultsFile: f.DefaultsFile, DefaultsExtraFile: f.DefaultsExtraFile, NoDefaults: f.NoDefaults})
	if err != nil {
		cfg = Config{Host: f.Host, Port: f.Port, Socket: f.Socket, Protocol: f.Protocol}
	}
	if cfg.UsesSocket() {
		return cfg.SocketPath()
	}
	return cfg.Addr()
}
