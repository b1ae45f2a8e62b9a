package broker_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/metadata"
)

// A deleted topic's id is kept while a node that held replicas of it is
// down, so that the node removes them when it returns, and forgotten by
// every node once each has removed its replicas: the set of deleted ids
// does not grow with every delete.
func TestDeletedTopicIDForgottenOnceReplicasAreGone(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "gone", 2, 3)
	id, _ := c.Node(1).MetadataState().TopicID("gone")
	replicaDirs := func(node int) []string {
		dirs, _ := filepath.Glob(filepath.Join(c.DataDir(node), "partitions", "gone-*"))
		return dirs
	}
	c.HaltNode(3)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eventually(t, 30*time.Second, "delete accepted", func() bool {
		resp, err := adm.DeleteTopics(ctx, "gone")
		return err == nil && resp["gone"].Err == nil
	})
	eventually(t, 30*time.Second, "the live nodes removed their replicas and said so", func() bool {
		s := c.Node(1).MetadataState()
		return len(replicaDirs(1)) == 0 && len(replicaDirs(2)) == 0 &&
			len(s.DeletedTopicsToReport(1)) == 0 && len(s.DeletedTopicsToReport(2)) == 0
	})
	for _, nd := range c.Running() {
		if !nd.MetadataState().TopicDeleted(id) {
			t.Fatalf("node %d forgot the deleted id while node 3, which holds replicas of it, is down", nd.ID())
		}
	}

	c.StartNode(3)
	c.WaitReady()
	eventually(t, 30*time.Second, "the returning node removed its replicas", func() bool { return len(replicaDirs(3)) == 0 })
	eventually(t, 30*time.Second, "every node forgot the deleted id", func() bool {
		for _, nd := range c.Running() {
			if s := nd.MetadataState(); s.TopicDeleted(id) || len(s.DeletedTopicsToReport(nd.ID())) != 0 {
				return false
			}
		}
		return true
	})
	var zero metadata.TopicID
	if id == zero {
		t.Fatal("the topic had no id")
	}
}

// A node removes a deleted topic's replicas in the background: a topic
// created meanwhile has its replica opened and led at once, not after the
// last removal (10,000 of them take a node about a minute). The removals
// are held at their first file operation until the new topic is led.
func TestNewTopicOpensWhileADeletedTopicIsRemoved(t *testing.T) {
	t.Parallel()
	held := &removalGate{FS: vfs.OS, prefix: "big-", open: make(chan struct{})}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.PartitionFS = held })
	t.Cleanup(held.release) // before the cluster's own cleanup closes the node
	cl := c.Client(t)
	const parts = 8
	createTopic(t, cl, "big", parts, 1)
	bigDirs := func() int {
		dirs, _ := filepath.Glob(filepath.Join(c.DataDir(1), "partitions", "big-*"))
		return len(dirs)
	}
	if leader, _ := c.Leader("big", parts-1, 60*time.Second); leader != 1 {
		t.Fatalf("big-%d: leader %d", parts-1, leader)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).DeleteTopics(ctx, "big"); err != nil || resp["big"].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resp["big"].Err)
	}
	createTopic(t, cl, "next", 1, 1)
	if leader, _ := c.Leader("next", 0, 30*time.Second); leader != 1 {
		t.Fatalf("next-0: leader %d", leader)
	}
	if left := bigDirs(); left != parts {
		t.Fatalf("%d of %d replica directories of the deleted topic left while its removal was held", left, parts)
	}
	held.release()
	eventually(t, 60*time.Second, "the deleted topic's replicas removed", func() bool { return bigDirs() == 0 })
}

// removalGate is a file system whose removals of files in the partition
// directories named with prefix wait until release.
type removalGate struct {
	vfs.FS
	prefix string
	open   chan struct{}
	once   sync.Once
}

func (g *removalGate) Remove(name string) error {
	if strings.HasPrefix(filepath.Base(filepath.Dir(name)), g.prefix) {
		<-g.open
	}
	return g.FS.Remove(name)
}

func (g *removalGate) release() { g.once.Do(func() { close(g.open) }) }
