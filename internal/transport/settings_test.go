package transport

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Settings takes 0 as no idle limit, refuses a timeout shorter than three
// heartbeats and a missing token, both as SettingError.
func TestSettings(t *testing.T) {
	t.Setenv(TokenEnv, strings.Repeat("k", MinTokenLen))
	opt, err := Settings(0, "")
	if err != nil || opt.IdleTimeout != -1 || len(opt.Token) != MinTokenLen {
		t.Errorf("Settings(0): %+v, %v; want no idle limit and the token of $%s", opt, err, TokenEnv)
	}
	var se *SettingError
	if _, err := Settings(time.Second, ""); !errors.As(err, &se) || !strings.Contains(err.Error(), "--idle-timeout 1s: want at least") {
		t.Errorf("Settings(1s): %v, want a SettingError about --idle-timeout", err)
	}
	t.Setenv(TokenEnv, "")
	if _, err := Settings(time.Minute, t.TempDir()+"/none"); !errors.As(err, &se) || !strings.Contains(err.Error(), "generate one with `backstream token`") {
		t.Errorf("Settings without a token file: %v, want a SettingError saying how to make one", err)
	}
}
