package partition

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test of the package leaks a goroutine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
