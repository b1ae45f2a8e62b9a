package interop

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaGoClient is segmentio/kafka-go: a Writer (acks=all; kafka-go has no
// idempotent producer), and a ConsumerGroup whose generations each start a
// partition Reader per assigned partition at the group's committed offset,
// as kafka-go's group Reader does inside; the ConsumerGroup API shows the
// assignment, which the group Reader keeps to itself.
func kafkaGoClient() groupClient {
	return groupClient{
		name: "kafka-go",
		produce: func(t *testing.T, seeds []string, topic string, recs []record) []record {
			t.Helper()
			var (
				mu  sync.Mutex
				out []record
			)
			tr := &kafka.Transport{}
			defer tr.CloseIdleConnections()
			w := &kafka.Writer{
				Addr:         kafka.TCP(seeds...),
				Topic:        topic,
				RequiredAcks: kafka.RequireAll,
				Transport:    tr,
				BatchTimeout: 10 * time.Millisecond,
				// Each message names its partition in its key.
				Balancer: kafka.BalancerFunc(func(msg kafka.Message, _ ...int) int {
					p, _ := strconv.Atoi(string(msg.Key))
					return p
				}),
				Completion: func(msgs []kafka.Message, err error) {
					mu.Lock()
					defer mu.Unlock()
					for _, msg := range msgs {
						if err == nil {
							out = append(out, record{int32(msg.Partition), msg.Offset, string(msg.Value)})
						}
					}
				},
			}
			var msgs []kafka.Message
			for _, r := range recs {
				msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(int(r.Partition))), Value: []byte(r.Value)})
			}
			err := w.WriteMessages(testContext(t), msgs...)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatalf("kafka-go produces: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			return out
		},
		join: func(t *testing.T, seeds []string, group, topic string) *member {
			t.Helper()
			cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
				ID:                group,
				Brokers:           seeds,
				Topics:            []string{topic},
				StartOffset:       kafka.FirstOffset,
				SessionTimeout:    6 * time.Second,
				HeartbeatInterval: 500 * time.Millisecond,
				JoinGroupBackoff:  200 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			m := &member{}
			h := &kafkaGoGeneration{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					gen, err := cg.Next(ctx)
					if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
						return
					}
					if err != nil {
						// Rebalances surface here too; the group joins
						// again by itself.
						m.log.note("next generation: %v", err)
						continue
					}
					h.start(gen)
					var ps []int32
					for _, pa := range gen.Assignments[topic] {
						ps = append(ps, int32(pa.ID))
					}
					m.log.assign(ps)
					gen.Start(func(ctx context.Context) {
						<-ctx.Done()
						m.log.assign(nil)
					})
					for _, pa := range gen.Assignments[topic] {
						gen.Start(func(ctx context.Context) { h.read(ctx, m, seeds, topic, pa) })
					}
				}
			}()
			m.commit = func(context.Context) error {
				gen, next := h.current()
				if gen == nil {
					return errors.New("no generation")
				}
				return gen.CommitOffsets(map[string]map[int]int64{topic: next})
			}
			m.close = sync.OnceValue(func() error {
				cancel()
				err := cg.Close() // ends the generation, leaves the group
				<-done
				return err
			})
			t.Cleanup(func() { m.close() })
			return m
		},
	}
}

// kafkaGoGeneration is a kafka-go member's current generation and the
// offset after the last record delivered on each of its partitions.
type kafkaGoGeneration struct {
	// mu guards both: readers advance next while a commit reads it.
	mu   sync.Mutex
	gen  *kafka.Generation
	next map[int]int64
}

func (h *kafkaGoGeneration) start(gen *kafka.Generation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen, h.next = gen, map[int]int64{}
}

func (h *kafkaGoGeneration) current() (*kafka.Generation, map[int]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := map[int]int64{}
	for p, o := range h.next {
		next[p] = o
	}
	return h.gen, next
}

// read delivers one assigned partition's records until the generation
// ends.
func (h *kafkaGoGeneration) read(ctx context.Context, m *member, seeds []string, topic string, pa kafka.PartitionAssignment) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: seeds, Topic: topic, Partition: pa.ID, MaxWait: 250 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(pa.Offset); err != nil {
		m.log.fail(err)
		return
	}
	for {
		msg, err := r.ReadMessage(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.log.fail(err)
			return
		}
		m.log.deliver(record{int32(msg.Partition), msg.Offset, string(msg.Value)})
		h.mu.Lock()
		h.next[pa.ID] = msg.Offset + 1
		h.mu.Unlock()
	}
}
