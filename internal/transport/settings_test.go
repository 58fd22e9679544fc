package transport

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Settle takes 0 as no idle limit, refuses a timeout shorter than three
// heartbeats and a missing token, both as SettingError.
func TestSettings(t *testing.T) {
	t.Setenv(TokenEnv, strings.Repeat("k", MinTokenLen))
	var opt Options
	err := opt.Settle(0, "")
	if err != nil || opt.IdleTimeout != -1 || len(opt.Token) != MinTokenLen {
		t.Errorf("Settle(0): %+v, %v; want no idle limit and the token of $%s", opt, err, TokenEnv)
	}
	var se *SettingError
	if err := new(Options).Settle(time.Second, ""); !errors.As(err, &se) || !strings.Contains(err.Error(), "--idle-timeout 1s: want at least") {
		t.Errorf("Settle(1s): %v, want a SettingError about --idle-timeout", err)
	}
	t.Setenv(TokenEnv, "")
	if err := new(Options).Settle(time.Minute, t.TempDir()+"/none"); !errors.As(err, &se) || !strings.Contains(err.Error(), "generate one with `backstream token`") {
		t.Errorf("Settle without a token file: %v, want a SettingError saying how to make one", err)
	}
}
