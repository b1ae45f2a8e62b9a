package interop

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// targetEnv names the Kafka that the group suite runs against:
//
//   - "cluster" (the default): our own 3-node cluster (internal/testcluster);
//   - "kfake": franz-go's in-process fake Kafka with 3 brokers, which
//     serves the group APIs. It proves the suite itself: a client test that
//     passes there and fails against our cluster points at the broker.
const targetEnv = "MINIKAFKA_INTEROP_TARGET"

// A target is a running 3-broker Kafka for the group suite.
type target struct {
	name  string
	seeds []string
	admin *kadm.Client
	// createTopic creates a topic and returns once every partition has a
	// leader.
	createTopic func(t *testing.T, name string, partitions int32)

	groupAPIs struct {
		once    sync.Once
		missing []string // group APIs the target does not serve
		err     error    // ApiVersions failed
	}
}

func startTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{name: os.Getenv(targetEnv)}
	switch tg.name {
	case "", "cluster":
		tg.name = "cluster"
		c := testcluster.Start(t, 3)
		tg.seeds = c.Seeds()
		tg.createTopic = func(t *testing.T, name string, partitions int32) {
			t.Helper()
			createTopic(t, c, name, partitions, 3)
		}
	case "kfake":
		kc, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(kc.Close)
		tg.seeds = kc.ListenAddrs()
		tg.createTopic = func(t *testing.T, name string, partitions int32) {
			t.Helper()
			resp, err := tg.admin.CreateTopic(testContext(t), partitions, 3, nil, name)
			if err != nil || resp.Err != nil {
				t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
			}
		}
	default:
		t.Fatalf("%s=%q: want cluster (the default) or kfake", targetEnv, tg.name)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	tg.admin = kadm.NewClient(cl)
	return tg
}

// groupAPIKeys are the requests that a classic consumer group needs from
// the broker, all of which the clients of the suite send.
var groupAPIKeys = []int16{
	kmsg.FindCoordinator.Int16(), kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16(),
	kmsg.Heartbeat.Int16(), kmsg.LeaveGroup.Int16(), kmsg.OffsetCommit.Int16(),
	kmsg.OffsetFetch.Int16(), kmsg.DescribeGroups.Int16(),
}

// requireGroupAPIs fails the test, clearly and at once, if the target does
// not serve the group APIs: without them every client would only time out
// or report "broker too old" in its own words.
func (tg *target) requireGroupAPIs(t *testing.T) {
	t.Helper()
	tg.groupAPIs.once.Do(func() {
		versions, err := tg.admin.ApiVersions(testContext(t))
		if err != nil {
			tg.groupAPIs.err = err
			return
		}
		for _, v := range versions.Sorted() {
			if v.Err != nil {
				tg.groupAPIs.err = fmt.Errorf("broker %d: %w", v.NodeID, v.Err)
				return
			}
			for _, key := range groupAPIKeys {
				if _, _, ok := v.KeyVersions(key); !ok {
					name := kmsg.NameForKey(key)
					if !slices.Contains(tg.groupAPIs.missing, name) {
						tg.groupAPIs.missing = append(tg.groupAPIs.missing, name)
					}
				}
			}
		}
	})
	if err := tg.groupAPIs.err; err != nil {
		t.Fatalf("ApiVersions on the %s target: %v", tg.name, err)
	}
	if m := tg.groupAPIs.missing; len(m) > 0 {
		t.Fatalf("the %s target does not serve %v, which every consumer group needs (issue 12, "+
			"point 2); %s=kfake runs this test against franz-go's fake Kafka", tg.name, m, targetEnv)
	}
}
