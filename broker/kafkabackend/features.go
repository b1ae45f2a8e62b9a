package kafkabackend

import (
	"context"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

var _ kafkaapi.Features = (*Backend)(nil)

// FeatureLevels reports the features this build supports and the
// cluster's finalized levels from the local metadata view; the epoch is
// the view's applied index, as Kafka's is its metadata offset.
func (b *Backend) FeatureLevels() ([]kafkaapi.SupportedFeature, []kafkaapi.FeatureLevel, int64) {
	state := b.deps.Meta.State()
	supported := make([]kafkaapi.SupportedFeature, 0, len(metadata.SupportedFeatures))
	for _, f := range metadata.SupportedFeatures {
		supported = append(supported, kafkaapi.SupportedFeature{Name: f.Name, Min: f.Min, Max: f.Max})
	}
	var finalized []kafkaapi.FeatureLevel
	for _, l := range state.FinalizedFeatures() {
		finalized = append(finalized, kafkaapi.FeatureLevel{Name: l.Name, Level: l.Level})
	}
	return supported, finalized, int64(state.AppliedIndex())
}

// SetFeatureLevels checks the levels against the current state (all
// validateOnly does) and proposes them to the metadata group.
func (b *Backend) SetFeatureLevels(ctx context.Context, levels []kafkaapi.FeatureLevel, validateOnly bool) error {
	cmd := metadata.SetFeatureLevels{}
	for _, l := range levels {
		cmd.Levels = append(cmd.Levels, metadata.FeatureLevel{Name: l.Name, Level: l.Level})
	}
	return b.checkAndPropose(ctx, cmd, validateOnly)
}

var _ kafkaapi.TopicNamer = (*Backend)(nil)

// TopicName returns the name of the topic with an id, from the local
// metadata view (Produce v13).
func (b *Backend) TopicName(id [16]byte) (string, bool) {
	return b.deps.Meta.State().TopicNameByID(metadata.TopicID(id))
}
