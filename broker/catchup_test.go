package broker_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A restarted node answers no Kafka request before its metadata has caught
// up with the cluster's, as Kafka's broker waits for its initial metadata
// catch-up: before, it answered from what it knew when it stopped, and a
// topic created meanwhile did not exist for it (UNKNOWN_TOPIC_OR_PARTITION,
// a zero topic id). Here node 3 restarts alone, with no metadata quorum to
// catch up from: a Metadata request waits, and once node 1 is back the
// answer knows the topic created while node 3 was down.
func TestRestartedNodeAnswersOnceItsMetadataCaughtUp(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	c.HaltNode(3)
	cl := c.Client(t)
	createTopic(t, cl, "made-while-down", 2, 2)
	cl.Close()
	c.HaltNode(2)
	c.HaltNode(1)

	c.StartNode(3)
	answered := rawMetadata(t, c.Node(3).KafkaAddr(), "made-while-down")

	c.StartNode(1) // a quorum again: node 3 catches up
	resp := <-answered
	if resp == nil {
		t.Fatal("no answer to Metadata")
	}
	if got := resp.Topics[0]; got.ErrorCode != 0 || got.TopicID == [16]byte{} || len(got.Partitions) != 2 {
		t.Fatalf("the restarted node answered topic error %d, id %x, %d partitions: want it known, with 2 partitions",
			got.ErrorCode, got.TopicID, len(got.Partitions))
	}
}

// Without a metadata quorum to catch up from, a starting node serves what
// it knows once tuning.metadata_catch_up has passed.
func TestNodeServesWithoutMetadataQuorumAfterTheBound(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	c.HaltNode(3)
	c.HaltNode(2)
	c.HaltNode(1)
	c.Configure(3, func(cfg *broker.Config) { cfg.Tuning.MetadataCatchUp = 500 * time.Millisecond })
	c.StartNode(3)
	if resp := <-rawMetadata(t, c.Node(3).KafkaAddr(), "never-made"); resp == nil {
		t.Fatal("no answer to Metadata past the bound")
	}
}

// rawMetadata sends a Metadata request (v12) for topic on a connection of
// its own and returns where its answer comes (nil: none within 2 minutes,
// or one that does not decode to a single topic).
func rawMetadata(t *testing.T, addr, topic string) <-chan *kmsg.MetadataResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	if _, err := conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	answered := make(chan *kmsg.MetadataResponse, 1)
	go func() {
		answered <- readMetadata(conn)
	}()
	return answered
}

func readMetadata(conn net.Conn) *kmsg.MetadataResponse {
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil || len(body) < 5 {
		return nil
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[5:]); err != nil || len(resp.Topics) != 1 { // after the correlation id and the header's tags
		return nil
	}
	return resp
}
