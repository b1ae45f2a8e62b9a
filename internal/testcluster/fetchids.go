package testcluster

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NameTopicsByID fills in the id of each topic of a raw Fetch, asking b's
// Metadata. kgo sends a request at the highest version both sides speak,
// and from v13 a Fetch names its topics by id only; with both the name and
// the id set, the request means the same at every version.
func NameTopicsByID(ctx context.Context, b *kgo.Broker, req *kmsg.FetchRequest) error {
	meta := kmsg.NewPtrMetadataRequest()
	for _, rt := range req.Topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(rt.Topic)
		meta.Topics = append(meta.Topics, mt)
	}
	resp, err := meta.RequestWith(ctx, b)
	if err != nil {
		return err
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for _, t := range resp.Topics {
			if t.Topic != nil && *t.Topic == rt.Topic && t.ErrorCode == 0 {
				rt.TopicID = t.TopicID
			}
		}
		if rt.TopicID == ([16]byte{}) {
			return fmt.Errorf("testcluster: no id for topic %q", rt.Topic)
		}
	}
	return nil
}
