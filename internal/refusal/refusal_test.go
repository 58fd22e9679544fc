package refusal

import (
	"errors"
	"fmt"
	"testing"
)

// A refusal is told apart anywhere in a chain of wrapped errors, by the
// method every refusal has, and says only its message.
func TestRefusalsAreToldApart(t *testing.T) {
	var r interface{ Refused() bool }
	err := fmt.Errorf("restore: %w", Errorf("--%s goes with --%s", "force", "datadir"))
	if !errors.As(err, &r) || !r.Refused() || err.Error() != "restore: --force goes with --datadir" {
		t.Errorf("%v: want a refusal, told apart through the wrapping", err)
	}
	if errors.As(errors.New("disk full"), &r) {
		t.Error("a failure taken for a refusal")
	}
	if New("x").Error() != "x" {
		t.Error("New's message")
	}
}
