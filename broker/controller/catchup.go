package controller

import (
	"context"

	"github.com/minikafka/minikafka-go/metadata"
)

// CatchUp returns once this node's copy of the metadata holds every entry
// the metadata leader had committed when it was called, or ctx ends: a
// read barrier. It waits for the cluster's id (a node that never saw it
// gets it by replication), then has the leader apply InitCluster with that
// id, a no-op every node may propose, and waits for this node to apply it
// (Propose). Kafka's broker likewise serves no request before its initial
// metadata catch-up.
func (c *Controller) CatchUp(ctx context.Context) error {
	s, err := c.fsm.WaitFor(ctx, (*metadata.Snapshot).Initialized)
	if err != nil {
		return err
	}
	_, err = c.Propose(ctx, metadata.InitCluster{ClusterID: s.ClusterID()})
	return err
}
