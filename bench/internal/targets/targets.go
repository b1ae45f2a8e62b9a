// Package targets wraps each producer client the bench compares in the
// load.Target interface: our client package, franz-go's kgo (idempotent,
// and transactional), and nats.go's JetStream async publisher. Every one sends the same values, waits for
// acknowledgement after replication, and leaves batching to the client's
// defaults, except where a default would change what is measured (each
// such setting is documented on its constructor).
//
// A caller's duties: create a target per run, drive it with load.Run, and
// Close it (Close flushes what is still outstanding).
package targets

import (
	"context"

	"github.com/minikafka/minikafka-go/bench/internal/load"
)

// Target is a load.Target that can be closed.
type Target interface {
	load.Target
	// Close waits for outstanding records (bounded by ctx) and releases
	// connections.
	Close(ctx context.Context) error
}

var (
	_ Target = (*Ours)(nil)
	_ Target = (*Franz)(nil)
	_ Target = (*FranzTxn)(nil)
	_ Target = (*JetStream)(nil)
)
