package interop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
)

func init() {
	// sarama's meters would start go-metrics' arbiter goroutine, which
	// never stops (goleak would report it).
	metrics.UseNilMetrics = true
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig() // speaks Kafka 2.8's request versions
	cfg.ClientID = "interop-sarama"
	return cfg
}

// saramaClient is IBM/sarama: an idempotent SyncProducer, and a
// ConsumerGroup with its default range balancer and manual commits.
func saramaClient() groupClient {
	return groupClient{
		name: "sarama",
		produce: func(t *testing.T, seeds []string, topic string, recs []record) []record {
			t.Helper()
			cfg := saramaConfig()
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1 // as sarama requires for idempotence
			cfg.Producer.Return.Successes = true
			p, err := sarama.NewSyncProducer(seeds, cfg)
			if err != nil {
				t.Fatalf("sarama producer: %v", err)
			}
			defer p.Close()
			var msgs []*sarama.ProducerMessage
			for _, r := range recs {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Value: sarama.StringEncoder(r.Value)})
			}
			if err := p.SendMessages(msgs); err != nil {
				t.Fatalf("sarama produces: %v", err)
			}
			var out []record
			for _, msg := range msgs {
				out = append(out, record{msg.Partition, msg.Offset, string(msg.Value.(sarama.StringEncoder))})
			}
			return out
		},
		join: func(t *testing.T, seeds []string, group, topic string) *member {
			t.Helper()
			cfg := saramaConfig()
			cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
			cfg.Consumer.Offsets.AutoCommit.Enable = false
			cfg.Consumer.Group.Session.Timeout = 6 * time.Second
			cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
			cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
			cfg.Consumer.Return.Errors = true
			grp, err := sarama.NewConsumerGroup(seeds, group, cfg)
			if err != nil {
				t.Fatalf("sarama consumer group: %v", err)
			}
			m := &member{}
			h := &saramaHandler{m: m, topic: topic}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() {
				// Consume returns at the end of each session (a
				// rebalance); the loop joins the next one.
				for ctx.Err() == nil {
					err := grp.Consume(ctx, []string{topic}, h)
					if errors.Is(err, sarama.ErrClosedConsumerGroup) {
						return
					}
					if err != nil {
						m.log.fail(err)
						return
					}
				}
			})
			wg.Go(func() {
				for err := range grp.Errors() { // closed by grp.Close
					m.log.fail(err)
				}
			})
			m.commit = func(context.Context) error {
				h.mu.Lock()
				defer h.mu.Unlock()
				if h.sess == nil {
					return errors.New("no session")
				}
				h.sess.Commit() // synchronous; errors go to grp.Errors()
				return nil
			}
			m.close = sync.OnceValue(func() error {
				cancel()
				err := grp.Close() // leaves the group
				wg.Wait()
				return err
			})
			t.Cleanup(func() { m.close() })
			return m
		},
	}
}

// saramaHandler delivers a session's messages to the member's log and
// marks them for the next commit.
type saramaHandler struct {
	m     *member
	topic string

	// mu guards sess, the current session, which commits run on.
	mu   sync.Mutex
	sess sarama.ConsumerGroupSession
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sess = s
	h.m.log.assign(s.Claims()[h.topic])
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sess = nil
	h.m.log.assign(nil)
	return nil
}

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(msg, "")
			h.m.log.deliver(record{msg.Partition, msg.Offset, string(msg.Value)})
		case <-s.Context().Done(): // the session ends: a rebalance or Close
			return nil
		}
	}
}
