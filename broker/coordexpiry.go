package broker

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/topicconfig"
)

// Offset and transactional id expiry are decisions of the leaders of the
// internal topics' partitions, taken with their clocks: the coordinators
// they run write tombstones through the partitions' Raft groups
// (groupcoord.Coordinator.ExpireOffsets,
// txncoord.Coordinator.ExpireTransactionalIDs), so every replica's view
// forgets the same state. Coordinators still loading are skipped until the
// next round.

// TransactionalIDExpiration is transactional.id.expiration.ms: the cluster
// -wide dynamic default, else the node's static value, else Kafka's.
func (n *Node) TransactionalIDExpiration() time.Duration {
	return time.Duration(topicconfig.TransactionalIDExpirationMs(n.clusterConfigs(), n.static)) * time.Millisecond
}

// expireOffsets has each group coordinator this node runs expire the
// offsets past OffsetsRetention.
func (n *Node) expireOffsets() {
	coords, _ := n.coords.running()
	for _, c := range coords {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.ProduceEnqueue)
		got, err := c.ExpireOffsets(ctx, time.Now(), n.cfg.OffsetsRetention)
		cancel()
		if err != nil {
			n.logger.Debug("offset expiry incomplete", "expired", got.Offsets, "groups_removed", got.Groups, "err", err)
		}
	}
}

// expireTransactionalIDs has each transaction coordinator this node runs
// forget the transactional ids idle past TransactionalIDExpiration.
func (n *Node) expireTransactionalIDs() {
	coords, _ := n.txns.running()
	expiration := n.TransactionalIDExpiration()
	for _, c := range coords {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.ProduceEnqueue)
		removed, err := c.ExpireTransactionalIDs(ctx, time.Now(), expiration)
		cancel()
		if err != nil {
			n.logger.Debug("transactional id expiry incomplete", "expired", removed, "err", err)
		}
	}
}
