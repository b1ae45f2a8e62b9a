package multiraft

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// leakyChild is set in a child test process that runs one test whose
// goroutines cannot end (inChild): it skips the leak check.
const leakyChild = "MINIKAFKA_MULTIRAFT_LEAKY_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(leakyChild) != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
