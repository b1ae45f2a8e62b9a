package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka-go/metadata"
)

// heldTopicIDs are the topic ids of the replicas this node runs and of
// those its partitions directory holds: what the controller's report of
// removed replicas (controller.Controller.ReportRemovedReplicas) leaves out.
func (s *replicaSet) heldTopicIDs() (map[metadata.TopicID]bool, error) {
	held := make(map[metadata.TopicID]bool)
	for _, lr := range s.all() {
		held[lr.id] = true
	}
	entries, err := os.ReadDir(s.n.partitionsDir())
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
		b, err := os.ReadFile(filepath.Join(s.n.partitionsDir(), e.Name(), "replica.json"))
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
