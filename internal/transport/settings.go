package transport

import (
	"fmt"
	"time"
)

// MinIdleTimeout is the shortest idle timeout Settle takes: three of
// the peer's heartbeats, so that one late heartbeat never ends a transfer.
const MinIdleTimeout = 3 * DefaultHeartbeat

// SettingError is a setting of send's or receive's that cannot be right:
// a token that is missing or unsafe, an idle timeout too short. The
// commands take it as a mistake in how they were called.
type SettingError struct{ Err error }

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Refused marks the error as a refusal of what was asked: the command
// reports it as a mistake in how it was called.
func (e *SettingError) Refused() bool { return true }

// Settle sets the options send and receive share: the token of
// tokenFile (--token-file, else $BACKSTREAM_TOKEN) and the idle timeout
// (--idle-timeout), where 0 is no limit.
func (o *Options) Settle(idle time.Duration, tokenFile string) error {
	switch {
	case idle == 0:
		idle = -1
	case idle < MinIdleTimeout:
		return &SettingError{fmt.Errorf("--idle-timeout %s: want at least %s (three of the peer's heartbeats), or 0 for no limit", idle, MinIdleTimeout)}
	}
	tok, err := LoadToken(tokenFile)
	if err != nil {
		return &SettingError{fmt.Errorf("%w (generate one with `backstream token`, keep it in a 0600 file, pass --token-file or set %s)", err, TokenEnv)}
	}
	o.Token, o.IdleTimeout = tok, idle
	return nil
}
