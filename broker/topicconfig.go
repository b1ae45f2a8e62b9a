package broker

import (
	"time"

	"github.com/minikafka/minikafka-go/topicconfig"
)

// TopicConfig is a topic's resolved configs as the node should act on
// them: the topic's overrides, else the cluster-wide dynamic defaults,
// else this node's static config, else Kafka's defaults. It reads the
// local metadata view, so it is cheap and may be polled; an unknown topic
// gets the defaults.
func (n *Node) TopicConfig(topic string) topicconfig.Config {
	return topicconfig.Resolve(n.meta.State().TopicConfigs(topic), n.clusterConfigs(), n.static)
}

// ProducerIDExpiration is producer.id.expiration.ms: how long a producer
// id's state may stay idle before it may be expired.
func (n *Node) ProducerIDExpiration() time.Duration {
	return time.Duration(topicconfig.ProducerIDExpirationMs(n.clusterConfigs(), n.static)) * time.Millisecond
}

// clusterConfigs are the cluster-wide dynamic broker defaults.
func (n *Node) clusterConfigs() map[string]string { return n.meta.State().ClusterConfigs() }

// staticConfigs are the node's static configs by their Kafka names, as
// DescribeConfigs reports them (backend.Configs).
func staticConfigs(b *backend) map[string]string {
	m := make(map[string]string)
	for _, c := range b.Configs() {
		m[c.Name] = c.Value
	}
	return m
}
