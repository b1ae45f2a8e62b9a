package kafkabackend

import (
	"time"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Resolver resolves configs as the node should act on them, from the local
// metadata view and the node's static configs. The Backend and the node's
// wiring (its replicas, its housekeeping) share one.
type Resolver struct {
	meta   interface{ State() *metadata.Snapshot }
	static map[string]string // the node's static configs under Kafka's names; never written
}

// NewResolver makes a Resolver over meta's local metadata view and the
// node's static configs (StaticConfigs).
func NewResolver(meta interface{ State() *metadata.Snapshot }, static map[string]string) *Resolver {
	return &Resolver{meta: meta, static: static}
}

// Topic is a topic's resolved configs: the topic's overrides, else the
// cluster-wide dynamic defaults, else this node's static config, else
// Kafka's defaults. It reads the local metadata view, so it is cheap and
// may be polled; an unknown topic gets the defaults.
func (r *Resolver) Topic(topic string) topicconfig.Config {
	return topicconfig.Resolve(r.meta.State().TopicConfigs(topic), r.Cluster(), r.static)
}

// ProducerIDExpiration is producer.id.expiration.ms: how long a producer
// id's state may stay idle before it may be expired.
func (r *Resolver) ProducerIDExpiration() time.Duration {
	return time.Duration(topicconfig.ProducerIDExpirationMs(r.Cluster(), r.static)) * time.Millisecond
}

// Cluster is the cluster-wide dynamic broker defaults.
func (r *Resolver) Cluster() map[string]string { return r.meta.State().ClusterConfigs() }
