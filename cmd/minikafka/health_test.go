package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// healthLag is replica_lag_time_max in TestOneTruthAboutADeadNode.
const healthLag = 3 * time.Second

// One truth about replica health (issue 31): a node halted abruptly (no
// gossip leave, no handoff) while its partitions are idle is, within the
// lag limit plus 5 s, reported down and its partitions under-replicated by
// every surviving node's /metrics, status page and Metadata answer, and by
// cluster status (exit 1); once restarted, all of them agree it is back.
// Before the halt, idle partitions (quiesced groups) stay in sync for
// longer than the lag limit.
func TestOneTruthAboutADeadNode(t *testing.T) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.Tuning.ReplicaLagMax = healthLag })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "idle"
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s"}
	mustRun(t, "", append([]string{"topic", "create", topic, "--partitions", "3", "--replication-factor", "3"}, g...)...)
	for p := range 3 {
		mustRun(t, "x\n", append([]string{"produce", topic, "--partition", fmt.Sprint(p)}, g...)...)
	}
	const dead = 2
	agree := func(what string, within time.Duration, want func(v nodeView) string) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			var wrong []string
			for _, nd := range c.Running() {
				if why := want(viewOf(ctx, t, nd, topic)); why != "" {
					wrong = append(wrong, fmt.Sprintf("node %d: %s", nd.ID(), why))
				}
			}
			if len(wrong) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v:\n%s", what, within, strings.Join(wrong, "\n"))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	agree("all in sync", 30*time.Second, healthy)
	time.Sleep(healthLag + time.Second) // idle: the groups quiesce, nothing is sent
	agree("idle partitions stay in sync past the lag limit", 0, healthy)
	if r := runCLI(t, "", append([]string{"cluster", "status"}, g...)...); r.code != 0 {
		t.Fatalf("cluster status of a healthy cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	c.HaltNode(dead)
	agree("node 2 down everywhere", healthLag+5*time.Second, func(v nodeView) string { return v.sees(dead, false) })
	r := runCLI(t, "", append([]string{"cluster", "status"}, g...)...)
	if r.code != exitFailure || !regexp.MustCompile(`(?m)^2 +DOWN since \S+`).MatchString(r.stdout) ||
		!strings.Contains(r.stderr, "broker 2 down since") {
		t.Fatalf("cluster status with node 2 down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	c.StartNode(dead)
	agree("node 2 back everywhere", 60*time.Second, healthy)
	if r := runCLI(t, "", append([]string{"cluster", "status"}, g...)...); r.code != 0 || strings.Contains(r.stdout, "DOWN") {
		t.Fatalf("cluster status once node 2 is back: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// nodeView is what one node says of the cluster through its three views.
type nodeView struct {
	metrics, status string
	isr             map[int32][]int32 // partition -> ISR, from its Metadata answer
	leader          map[int32]int32   // partition -> leader, from its Metadata answer
	self            int32
	brokers         []int32 // the brokers its Metadata answer lists
}

func healthy(v nodeView) string {
	for _, id := range []int32{1, 2, 3} {
		if why := v.sees(id, true); why != "" {
			return why
		}
	}
	return ""
}

// sees checks that every view reports node id up (with full ISRs) or down
// (every partition of the topic under-replicated, id out of its ISR).
func (v nodeView) sees(id int32, up bool) string {
	upSeries := fmt.Sprintf(`minikafka_broker_up{broker="%d"} %d`, id, map[bool]int{true: 1, false: 0}[up])
	if !strings.Contains(v.metrics, upSeries+"\n") {
		return "metrics lack " + upSeries
	}
	downRow := regexp.MustCompile(fmt.Sprintf(`<tr><td>%d</td><td>[^<]*</td><td>[^<]*</td><td class="bad">down since `, id))
	if downRow.MatchString(v.status) == up {
		return fmt.Sprintf("status page: broker %d down row is %v, want %v", id, !up, !up)
	}
	if slices.Contains(v.brokers, id) != up {
		return fmt.Sprintf("Metadata lists brokers %v", v.brokers)
	}
	for p := range int32(3) {
		in := slices.Contains(v.isr[p], id)
		if in != up {
			return fmt.Sprintf("Metadata: partition %d ISR %v", p, v.isr[p])
		}
		if !up && !strings.Contains(v.status, fmt.Sprintf(`<td class="bad">%s</td>`, isrText(v.isr[p]))) {
			return fmt.Sprintf("status page does not mark partition %d (ISR %v) under-replicated", p, v.isr[p])
		}
	}
	for p, l := range v.leader {
		if l != v.self {
			continue
		}
		series := fmt.Sprintf(`minikafka_partition_under_replicated{partition="%d",topic="idle"} %d`, p, map[bool]int{true: 0, false: 1}[up])
		if !strings.Contains(v.metrics, series+"\n") {
			return "metrics lack " + series
		}
	}
	return ""
}

func isrText(isr []int32) string {
	s := make([]string, len(isr))
	for i, id := range isr {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// viewOf reads node nd's /metrics and status page, and asks it alone for
// the topic's metadata.
func viewOf(ctx context.Context, t *testing.T, nd *broker.Node, topic string) nodeView {
	t.Helper()
	srv := httptest.NewServer(nd.AdminHandler())
	defer srv.Close()
	v := nodeView{metrics: httpGet(t, srv.URL+"/metrics"), status: httpGet(t, srv.URL+"/"), isr: map[int32][]int32{},
		leader: map[int32]int32{}, self: nd.ID()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(nd.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl) // the only seed answers the first request
	if err != nil {
		t.Fatalf("Metadata from node %d: %v", nd.ID(), err)
	}
	for _, b := range resp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			v.isr[p.Partition], v.leader[p.Partition] = p.ISR, p.Leader
		}
	}
	return v
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
