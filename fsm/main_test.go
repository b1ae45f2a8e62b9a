package fsm_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The snapshot expansion starts a goroutine per open snapshot; none may
// outlive its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
