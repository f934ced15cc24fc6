package robottools

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// server, client session and connection a test opens is closed by then.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
