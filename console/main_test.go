package console_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Every goroutine the console, its Kafka clients and the browser start
// ends with the test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testcluster.GoleakOptions()...)
}
