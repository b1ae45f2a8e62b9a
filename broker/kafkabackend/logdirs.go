package kafkabackend

import "github.com/minikafka/minikafka-go/kafkaapi"

var _ kafkaapi.LogDirs = (*Backend)(nil)

// LogDirs is the node's data directory with its local replicas, for
// DescribeLogDirs.
func (b *Backend) LogDirs() []kafkaapi.LogDir {
	if b.deps.LogDirs == nil {
		return nil
	}
	return b.deps.LogDirs()
}
