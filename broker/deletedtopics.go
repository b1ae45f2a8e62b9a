package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka-go/metadata"
)

// reportRemovedReplicas tells the metadata group which deleted topics this
// node holds no replica of any more, open or on disk
// (metadata.ReplicasRemoved), so that their ids are forgotten once every
// broker has said so. A topic whose replica is still on disk (its removal
// is under way, or failed) is not reported. It runs on the housekeeping
// goroutine; each proposal is bounded by Tuning.MetaProposal.
func (n *Node) reportRemovedReplicas() {
	state := n.meta.fsm.State()
	if _, registered := state.Broker(n.cfg.NodeID); !registered {
		return
	}
	pending := state.DeletedTopicsToReport(n.cfg.NodeID)
	if len(pending) == 0 {
		return
	}
	held, err := n.heldTopicIDs()
	if err != nil {
		n.logger.Warn("deleted topics: cannot tell which replicas are left", "err", err)
		return
	}
	var gone []metadata.TopicID
	for _, id := range pending {
		if !held[id] {
			gone = append(gone, id)
		}
	}
	for len(gone) > 0 {
		part := gone[:min(len(gone), metadata.MaxReplicasRemovedTopics)]
		gone = gone[len(part):]
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.MetaProposal)
		_, err := n.proposeMeta(ctx, metadata.ReplicasRemoved{Broker: n.cfg.NodeID, Topics: part})
		cancel()
		if err != nil {
			n.logger.Debug("deleted topics: report of removed replicas not applied", "topics", len(part), "err", err)
			return
		}
	}
}

// heldTopicIDs are the topic ids of the replicas this node runs and of
// those its partitions directory holds.
func (n *Node) heldTopicIDs() (map[metadata.TopicID]bool, error) {
	held := make(map[metadata.TopicID]bool)
	for _, lr := range n.reps.all() {
		held[lr.id] = true
	}
	entries, err := os.ReadDir(n.partitionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return held, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(n.partitionsDir(), e.Name(), "replica.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue // never opened (openFromDisk skips it), or being removed
		}
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		var info replicaInfo
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, fmt.Errorf("broker: %s/replica.json: %w", e.Name(), err)
		}
		if id, err := metadata.ParseTopicID(info.TopicID); err == nil {
			held[id] = true
		}
	}
	return held, nil
}
