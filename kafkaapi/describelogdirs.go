package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// startDescribeLogDirs answers DescribeLogDirs 1-5 from the backend's
// LogDirs, as Kafka's ReplicaManager.describeLogDirs does: each of this
// node's log directories with its disk's total and usable bytes, never
// cordoned (v5: a node has no cordoned.log.dirs setting), and the
// local replicas the request names (all of them when it names none, a
// null topic list), each with its size, offset lag and IsFuture false (a
// node moves no replica between its directories). It needs DESCRIBE on
// the cluster; without it the answer is CLUSTER_AUTHORIZATION_FAILED
// (v3+) and no directories.
func (s *Server) startDescribeLogDirs(req *kmsg.DescribeLogDirsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		if !s.authorizeCluster(ctx, acl.OpDescribe) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		ld, ok := s.backend.(LogDirs)
		if !ok {
			return resp, nil
		}
		var want map[topicPart]bool
		if req.Topics != nil {
			want = map[topicPart]bool{}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					want[topicPart{t.Topic, p}] = true
				}
			}
		}
		for _, d := range ld.LogDirs() {
			rd := kmsg.NewDescribeLogDirsResponseDir()
			rd.Dir, rd.TotalBytes, rd.UsableBytes = d.Path, d.TotalBytes, d.UsableBytes
			if d.Err != nil {
				rd.ErrorCode = kerr.KafkaStorageError.Code
				resp.Dirs = append(resp.Dirs, rd)
				continue
			}
			for _, r := range d.Replicas {
				if want != nil && !want[topicPart{r.Topic, r.Partition}] {
					continue
				}
				if n := len(rd.Topics); n == 0 || rd.Topics[n-1].Topic != r.Topic {
					rt := kmsg.NewDescribeLogDirsResponseDirTopic()
					rt.Topic = r.Topic
					rd.Topics = append(rd.Topics, rt)
				}
				rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				rp.Partition, rp.Size, rp.OffsetLag = r.Partition, r.Size, r.OffsetLag
				rt := &rd.Topics[len(rd.Topics)-1]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Dirs = append(resp.Dirs, rd)
		}
		return resp, nil
	}
}
