package broker

import "github.com/minikafka/minikafka-go/internal/quota"

// QuotaStats is what the node's client quota manager measures now.
func (n *Node) QuotaStats() []quota.EntityStats { return n.quotas.Stats() }
