package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/usecasetest"
)

// The end-to-end tests of send, receive, provision and replicate live
// with their use cases, in internal/remote (into a directory or a
// repository, bad peers, broken transfers) and internal/provision (into
// place, started, replicating); what stays here is the command's own.

// provision --from takes the source as HOST:PORT, and refuses a malformed
// one and connection flags that name another place, before anything runs.
func TestProvisionFromRefusals(t *testing.T) {
	t.Parallel()
	tok := usecasetest.TokenFile(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "127.0.0.1:3306", "--socket", "/run/x.sock"}, "names the server already; leave out --socket"},
		{[]string{"--from", "127.0.0.1:3306", "--host", "db"}, "leave out --host"},
		{[]string{"--from", "db-without-port"}, "want HOST:PORT"},
		{[]string{"--from", "127.0.0.1:0"}, "with a port from 1 to 65535"},
		{[]string{"--from", ":3306"}, "with a port from 1 to 65535"},
	} {
		r := run(t, append([]string{"provision", "--to", "127.0.0.1:1", "--token-file", tok, "--no-defaults"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr+fmt.Sprint(r.err), tc.want) {
			t.Errorf("provision %v: exit %d, %v; want exit 2 saying %q", tc.args, r.code, r.err, tc.want)
		}
	}
}
