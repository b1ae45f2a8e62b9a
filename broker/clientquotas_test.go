package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// quotaSummary describes every stored quota through node id, as
// "entity key=value" lines in the order the node answers.
func quotaSummary(ctx context.Context, cl *kgo.Client, id int32) ([]string, error) {
	kresp, err := cl.Broker(int(id)).Request(ctx, kmsg.NewPtrDescribeClientQuotasRequest())
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	var out []string
	for _, e := range resp.Entries {
		var ent kadm.ClientQuotaEntity
		for _, c := range e.Entity {
			ent = append(ent, kadm.ClientQuotaEntityComponent{Type: c.Type, Name: c.Name})
		}
		for _, v := range e.Values {
			out = append(out, fmt.Sprintf("%v %s=%v", ent, v.Key, v.Value))
		}
	}
	return out, nil
}

// Client quotas set with kadm go through the metadata Raft group: a
// validate_only alter stores nothing, a bad key or value is
// INVALID_REQUEST for its entry only, every node describes the same
// quotas and resolves them in Kafka's precedence, and a full restart
// keeps them.
func TestClientQuotasThroughKadm(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	alice, app := "alice", "app"
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &app}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 102400}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &alice}, {Type: "client-id"}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}, {Key: "request_percentage", Value: 50}}},
	}
	res, err := adm.ValidateAlterClientQuotas(ctx, entries)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("validate: %+v, %v", res, err)
	}
	if got, err := quotaSummary(ctx, cl, 1); err != nil || len(got) != 0 {
		t.Fatalf("after validate_only: %v, %v", got, err)
	}

	bad := append(entries, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &alice}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}}},
		kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "user"}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1.5}}})
	res, err = adm.AlterClientQuotas(ctx, bad)
	if err != nil || len(res) != 4 || res[0].Err != nil || res[1].Err != nil ||
		!errors.Is(res[2].Err, kerr.InvalidRequest) || !errors.Is(res[3].Err, kerr.InvalidRequest) {
		t.Fatalf("alter: %+v, %v", res, err)
	}

	want := []string{
		"{client-id=app} producer_byte_rate=102400",
		"{user=alice, client-id=<default>} consumer_byte_rate=2048",
		"{user=alice, client-id=<default>} request_percentage=50",
	}
	sameEverywhere := func(what string) {
		t.Helper()
		for _, nd := range c.Running() {
			eventually(t, 20*time.Second, fmt.Sprintf("%s: node %d describes the quotas", what, nd.ID()), func() bool {
				got, err := quotaSummary(ctx, cl, nd.ID())
				return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
			})
			s := nd.MetadataState()
			if v, ok := s.ClientQuota("alice", "app", metadata.QuotaConsumerByteRate); !ok || v != 2048 {
				t.Fatalf("%s: node %d resolves alice/app consumer_byte_rate %v %v", what, nd.ID(), v, ok)
			}
			if v, ok := s.ClientQuota("alice", "app", metadata.QuotaProducerByteRate); !ok || v != 102400 {
				t.Fatalf("%s: node %d resolves alice/app producer_byte_rate %v %v", what, nd.ID(), v, ok)
			}
		}
	}
	sameEverywhere("after the alter")

	got, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &app}})
	if err != nil || len(got) != 1 || got[0].Values[0].Value != 102400 {
		t.Fatalf("strict client-id=app: %+v, %v", got, err)
	}

	restartAll(t, c, 3, nil)
	cl = c.Client(t)
	sameEverywhere("after a full restart")

	// Removing the last key forgets the entity.
	res, err = kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entries[0].Entity,
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("remove: %+v, %v", res, err)
	}
	want = want[1:]
	for _, nd := range c.Running() {
		eventually(t, 20*time.Second, fmt.Sprintf("node %d forgets client-id=app", nd.ID()), func() bool {
			got, err := quotaSummary(ctx, cl, nd.ID())
			return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
		})
	}
}
