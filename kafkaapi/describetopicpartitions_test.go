package kafkaapi

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describePage sends one DescribeTopicPartitions and returns the
// partitions answered ("topic-p", in order), the topics' error codes and
// the next cursor ("" when none).
func describePage(c *client, topics []string, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor) (parts []string, errs map[string]int16, next string) {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
	}
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	resp := c.roundTrip(req).(*kmsg.DescribeTopicPartitionsResponse)
	errs = map[string]int16{}
	for _, rt := range resp.Topics {
		errs[*rt.Topic] = rt.ErrorCode
		for _, p := range rt.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
		}
	}
	if resp.NextCursor != nil {
		next = fmt.Sprintf("%s-%d", resp.NextCursor.Topic, resp.NextCursor.Partition)
	}
	return parts, errs, next
}

// Pages stop mid-topic and between topics with a cursor pointing where
// the next starts; a limit below 1 is 1, one above 2000 is 2000; named
// topics are answered sorted, unknown ones with their error.
func TestDescribeTopicPartitionsCursor(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("a", 3)
	h.fb.addTopic("b", 2)
	c := h.dial()
	for _, tc := range []struct {
		topics []string
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		want   []string
		next   string
	}{
		{nil, 2, nil, []string{"a-0", "a-1"}, "a-2"},
		{nil, 2, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: 2}, []string{"a-2", "b-0"}, "b-1"},
		{nil, 1, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: 2}, []string{"a-2"}, "b-0"},
		{nil, 0, nil, []string{"a-0"}, "a-1"},
		{nil, 3, nil, []string{"a-0", "a-1", "a-2"}, "b-0"},
		{nil, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b", Partition: 1}, []string{"b-1"}, ""},
		{[]string{"b", "a", "b"}, 10, nil, []string{"a-0", "a-1", "a-2", "b-0", "b-1"}, ""},
	} {
		got, errs, next := describePage(c, tc.topics, tc.limit, tc.cursor)
		if !slices.Equal(got, tc.want) || next != tc.next {
			t.Errorf("topics %v limit %d cursor %+v: %v next %q, want %v next %q", tc.topics, tc.limit, tc.cursor, got, next, tc.want, tc.next)
		}
		for name, code := range errs {
			if code != 0 {
				t.Errorf("topic %s: error %d", name, code)
			}
		}
	}

	_, errs, _ := describePage(c, []string{"nosuch", "bad/name", "a"}, 10, nil)
	if errs["nosuch"] != kerr.UnknownTopicOrPartition.Code || errs["bad/name"] != kerr.InvalidTopicException.Code || errs["a"] != 0 {
		t.Errorf("unknown and invalid topics: %v", errs)
	}
	for _, cursor := range []kmsg.DescribeTopicPartitionsRequestCursor{{Topic: "b"}, {Topic: "a", Partition: -1}} {
		got, errs, next := describePage(c, []string{"a"}, 10, &cursor)
		if len(got) != 0 || next != "" || errs["a"] != kerr.InvalidRequest.Code {
			t.Errorf("cursor %+v: %v %v %q, want INVALID_REQUEST", cursor, got, errs, next)
		}
	}

	h.fb.addTopic("big", 2500)
	got, _, next := describePage(c, []string{"big"}, 5000, nil)
	if len(got) != describePartitionLimit || next != "big-2000" {
		t.Errorf("limit 5000: %d partitions, next %q; want 2000, big-2000", len(got), next)
	}
}
