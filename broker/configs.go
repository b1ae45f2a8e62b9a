package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/metadata"
)

// TopicConfigs returns a topic's overrides from the local metadata view.
func (b *backend) TopicConfigs(topic string) (map[string]string, error) {
	t, ok := b.n.meta.State().Topic(topic)
	if !ok {
		return nil, fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	return t.Configs, nil
}

// ClusterConfigs returns the cluster-wide dynamic broker defaults from the
// local metadata view.
func (b *backend) ClusterConfigs() map[string]string { return b.n.clusterConfigs() }

// AlterTopicConfigs replaces a topic's overrides through the metadata
// group, which validates them again at their log position.
func (b *backend) AlterTopicConfigs(ctx context.Context, topic string, configs map[string]string, validateOnly bool) error {
	return b.alterConfigs(ctx, metadata.AlterConfigs{Resource: metadata.ConfigTopic, Topic: topic, Configs: configs}, validateOnly)
}

// AlterClusterConfigs replaces the cluster-wide dynamic broker defaults
// through the metadata group.
func (b *backend) AlterClusterConfigs(ctx context.Context, configs map[string]string, validateOnly bool) error {
	return b.alterConfigs(ctx, metadata.AlterConfigs{Resource: metadata.ConfigClusterDefaults, Configs: configs}, validateOnly)
}

// alterConfigs checks cmd against the current state (all validateOnly
// does) and proposes it; the metadata leader may be another node.
func (b *backend) alterConfigs(ctx context.Context, cmd metadata.AlterConfigs, validateOnly bool) error {
	state := b.n.meta.State()
	if !state.Initialized() {
		return fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	if _, _, err := state.Apply(state.AppliedIndex()+1, cmd); err != nil {
		return fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
	}
	if validateOnly {
		return nil
	}
	_, err := b.n.meta.Propose(ctx, cmd)
	return err
}
