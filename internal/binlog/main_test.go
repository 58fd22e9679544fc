package binlog_test

import (
	"testing"

	"github.com/backstream/backstream/internal/usecasetest"
)

func TestMain(m *testing.M) { usecasetest.Main(m, nil) }
