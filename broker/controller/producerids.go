package controller

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/metadata"
)

// proposeProducerIDKey proposes a fresh random producer-id key (the
// metadata leader's duty, once per cluster): from then on producer ids are
// a keyed permutation of a counter, which outsiders cannot guess
// (metadata/producerid.go).
func (c *Controller) proposeProducerIDKey(ctx context.Context) error {
	key := make([]byte, metadata.ProducerIDKeySize)
	_, _ = rand.Read(key) // crypto/rand never fails on Linux
	if _, err := c.Propose(ctx, metadata.SetProducerIDKey{Key: key}); err != nil {
		return fmt.Errorf("producer-id key: %w", err)
	}
	return nil
}

// NewProducerID allocates a producer id from the metadata group. Until the
// cluster has its producer-id key (just after it is created) the answer is
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry, so that no id is
// handed out that could be guessed.
func (c *Controller) NewProducerID(ctx context.Context) (metadata.ProducerIdentity, error) {
	if !c.fsm.State().HasProducerIDKey() {
		return metadata.ProducerIdentity{}, fmt.Errorf("%w: producer ids are not keyed yet", kerr.CoordinatorLoadInProgress)
	}
	r, err := c.Propose(ctx, metadata.AllocateProducerID{})
	return metadata.ProducerIdentity{ProducerID: r.ProducerID, Epoch: r.Epoch}, err
}
