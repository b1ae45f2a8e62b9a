package console_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A partition move that cannot finish (its new replica's node is down)
// is listed on the reassignments page with the replicas added and
// removed.
func TestConsoleReassignmentsInChromium(t *testing.T) {
	b := newBrowser(t)
	c := testcluster.Start(t, 4, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "moving"); err != nil {
		t.Fatal(err)
	}
	var replicas []int32
	for len(replicas) != 3 && ctx.Err() == nil {
		if md, err := adm.Metadata(ctx, "moving"); err == nil {
			replicas = md.Topics["moving"].Partitions[0].Replicas
		}
	}
	spare := int32(1)
	for slices.Contains(replicas, spare) {
		spare++
	}
	console := 1
	if spare == 1 {
		console = 2
	}
	c.StopNode(int(spare))
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moving", 0, []int32{spare, replicas[1], replicas[2]})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res["moving"][0].Err != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res)
	}
	srv := httptest.NewServer(c.Node(console).AdminHandler())
	t.Cleanup(srv.Close)
	row := func() []string {
		return b.texts(`[...document.querySelectorAll("#reassignments tbody tr:not(.empty)")].map(r => [...r.cells].map(c => c.innerText).join("|"))`)
	}
	want := []string{"moving|0|" + ids(spare, replicas[1], replicas[2], replicas[0]) + "|" + ids(spare) + "|" + ids(replicas[0])}
	b.openUntil(srv.URL+"/console/#/reassignments", "reassignments", func() bool { return slices.Equal(row(), want) })
	if got := row(); !slices.Equal(got, want) {
		t.Errorf("reassignments %q, want %q", got, want)
	}
	b.shot("reassignments")
	b.noErrors("reassignments")
}

// ids formats node ids as the pages do.
func ids(ns ...int32) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(int(n))
	}
	return strings.Join(out, ", ")
}
