package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// kadm's ListConfigResources on a 3-node cluster lists the topics and the
// three brokers, and nothing for groups, which have no configs here.
func TestListConfigResourcesKadm(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "listed", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all, err := adm.ListConfigResources(ctx)
	if err != nil || all.Err != nil {
		t.Fatalf("ListConfigResources: %v %v", err, all.Err)
	}
	var topics, brokers []string
	for _, r := range all.Resources {
		switch r.Type {
		case kadm.ConfigResourceTopic:
			topics = append(topics, r.Name)
		case kadm.ConfigResourceBroker:
			brokers = append(brokers, r.Name)
		default:
			t.Errorf("listed %v %q", r.Type, r.Name)
		}
	}
	if !slices.Contains(topics, "listed") || !slices.Equal(brokers, []string{"1", "2", "3"}) {
		t.Fatalf("topics %v brokers %v", topics, brokers)
	}
	groups, err := adm.ListConfigResources(ctx, kadm.ConfigResourceGroupConfig)
	if err != nil || groups.Err != nil || len(groups.Resources) != 0 {
		t.Fatalf("groups: %v %v %v", err, groups.Err, groups.Resources)
	}
	loggers, err := adm.ListConfigResources(ctx, kadm.ConfigResourceBrokerLogger)
	if err != nil || !errors.Is(loggers.Err, kerr.UnsupportedVersion) {
		t.Fatalf("broker loggers: %v %v", err, loggers.Err)
	}
}
