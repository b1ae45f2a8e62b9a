package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// partition reassign and reassignments, then node decommission --wait on
// a four-node cluster: afterwards no partition (internal ones included)
// names the node, and with it stopped every record is still read.
func TestCLIReassignAndDecommission(t *testing.T) {
	c := testcluster.Start(t, 4, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "60s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	mustRun(t, "", cmd("topic", "create", "drain", "--partitions", "4", "--replication-factor", "3")...)
	mustRun(t, "a\nb\nc\nd\ne\nf\n", cmd("produce", "drain")...)
	mustRun(t, "", cmd("consume", "drain", "--group", "g1", "--from-beginning", "-n", "6")...)

	r := runCLI(t, "", cmd("partition", "reassign", "drain", "0")...)
	if r.code != exitUsage {
		t.Fatalf("reassign without --replicas or --cancel: %+v", r)
	}
	r = runCLI(t, "", cmd("partition", "reassign", "drain", "0", "--replicas", "1,2,9")...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "INVALID_REPLICA_ASSIGNMENT") {
		t.Fatalf("reassign to an unknown broker: %+v", r)
	}
	r = mustRun(t, "", cmd("partition", "reassign", "drain", "0", "--replicas", "4,3,2", "--wait")...)
	if want := "drain[0]: on [4 3 2]\n"; r.stdout != want {
		t.Fatalf("reassign --wait printed %q, want %q", r.stdout, want)
	}
	r = mustRun(t, "", cmd("partition", "reassignments")...)
	if r.stdout != "no reassignments in progress\n" {
		t.Fatalf("reassignments printed %q", r.stdout)
	}

	const gone = 2
	r = mustRun(t, "", cmd("node", "decommission", strconv.Itoa(gone), "--wait")...)
	if !strings.HasSuffix(r.stdout, "node 2 holds no replicas: it can be stopped\n") {
		t.Fatalf("decommission printed %q", r.stdout)
	}
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := adm.DescribeCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range d.Topics {
		for _, p := range tp.Partitions {
			if slices.Contains(p.Replicas, gone) || len(p.Replicas) != 3 {
				t.Errorf("%s[%d] on %v after decommissioning %d", tp.Name, p.Partition, p.Replicas, gone)
			}
		}
	}
	c.StopNode(gone)
	var seeds []string
	for _, nd := range c.Running() {
		seeds = append(seeds, nd.KafkaAddr())
	}
	g = []string{"--brokers", strings.Join(seeds, ","), "--timeout", "60s"}
	r = mustRun(t, "", cmd("consume", "drain", "--from-beginning", "-n", "6")...)
	if got := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(got) != 6 {
		t.Fatalf("consumed %q after stopping the node", r.stdout)
	}
}
