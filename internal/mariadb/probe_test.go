package mariadb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The probe asks every probeEvery until stopped and reports its answers'
// count, median and slowest; a server it cannot reach gets no probes,
// and no error.
func TestProbe(t *testing.T) {
	sb := sandboxtest.Start(t, sandbox.Options{})
	ctx := context.Background()
	p := StartProbe(ctx, Config{User: "root", Socket: sb.Socket, Protocol: ProtocolSocket})
	time.Sleep(4*probeEvery + probeEvery/2)
	got := p.Stop()
	if got.Probes < 3 || got.Probes > 6 || got.ProbeMedianSeconds <= 0 || got.ProbeMaxSeconds < got.ProbeMedianSeconds {
		t.Errorf("probing for 4.5 periods: %+v; want 3 to 6 probes, a median above 0 and a maximum at least the median", got)
	}
	nowhere := StartProbe(ctx, Config{User: "root", Socket: filepath.Join(t.TempDir(), "none.sock"), Protocol: ProtocolSocket})
	time.Sleep(probeEvery)
	if got := nowhere.Stop(); got != (ProbeStats{}) {
		t.Errorf("probing no server: %+v, want nothing", got)
	}
}
