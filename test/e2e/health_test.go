package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// healthLag is --replica-lag-time-max in TestOneTruthAboutADeadNode.
const healthLag = 3 * time.Second

// One truth about replica health (issue 31): kill -9 of a node while its
// partitions are idle is, within the lag limit plus 5 s, reported by every
// surviving node's /metrics, status page and Metadata answer (the node
// down, the partitions under-replicated), and by cluster status (exit 1);
// once the node is back, all of them agree again. Before the kill, idle
// partitions (quiesced Raft groups) stay in sync past the lag limit.
func TestOneTruthAboutADeadNode(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	cli, err := Build(ctx, t.TempDir(), "./cmd/minikafka", "minikafka")
	must(t, err)
	c := startCluster(ctx, t, "--replica-lag-time-max", healthLag.String())
	const topic, dead = "idle", 3
	must(t, c.CreateTopic(ctx, topic, 3, 3))
	status := func() (string, error) {
		cmd := exec.CommandContext(ctx, cli, "cluster", "status", "--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	agree := func(what string, within time.Duration, want func(v nodeView) string) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			var wrong []string
			for _, id := range c.Running() {
				why := ""
				if v, err := viewOf(ctx, c.Node(id), topic); err != nil {
					why = err.Error()
				} else {
					why = want(v)
				}
				if why != "" {
					wrong = append(wrong, fmt.Sprintf("node %d: %s", id, why))
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
	time.Sleep(healthLag + time.Second) // idle: the groups quiesce
	agree("idle partitions stay in sync past the lag limit", 0, healthy)
	if out, err := status(); err != nil {
		t.Fatalf("cluster status of a healthy cluster: %v\n%s", err, out)
	}

	must(t, c.Kill(dead))
	agree("node 3 down everywhere", healthLag+5*time.Second, func(v nodeView) string { return v.sees(dead, false) })
	out, err := status()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !regexp.MustCompile(`(?m)^3 +DOWN since \S+`).MatchString(out) ||
		!strings.Contains(out, "broker 3 down since") {
		t.Fatalf("cluster status with node 3 down: %v\n%s", err, out)
	}

	must(t, c.StartNode(ctx, dead))
	agree("node 3 back everywhere", 60*time.Second, healthy)
	if out, err := status(); err != nil || strings.Contains(out, "DOWN") {
		t.Fatalf("cluster status once node 3 is back: %v\n%s", err, out)
	}
}

// nodeView is what one node says of the cluster in its three views.
type nodeView struct {
	self            int32
	metrics, status string
	isr             map[int32][]int32 // partition -> ISR, from its Metadata answer
	leader          map[int32]int32   // partition -> leader, from its Metadata answer
	brokers         []int32           // the brokers its Metadata answer lists
}

func healthy(v nodeView) string {
	for id := range int32(NodeCount) {
		if why := v.sees(id+1, true); why != "" {
			return why
		}
	}
	return ""
}

// sees checks that every view reports node id up with full ISRs, or down
// with id out of every ISR and each partition under-replicated.
func (v nodeView) sees(id int32, up bool) string {
	series := fmt.Sprintf(`minikafka_broker_up{broker="%d"} %d`, id, b2i(up))
	if !strings.Contains(v.metrics, series+"\n") {
		return "metrics lack " + series
	}
	downRow := regexp.MustCompile(fmt.Sprintf(`<tr><td>%d</td><td>[^<]*</td><td>[^<]*</td><td class="bad">down since `, id))
	if downRow.MatchString(v.status) == up {
		return fmt.Sprintf("status page: broker %d has a down row: %v", id, !up)
	}
	if slices.Contains(v.brokers, id) != up {
		return fmt.Sprintf("Metadata lists brokers %v", v.brokers)
	}
	for p, isr := range v.isr {
		if slices.Contains(isr, id) != up {
			return fmt.Sprintf("Metadata: partition %d ISR %v", p, isr)
		}
		if !up && !strings.Contains(v.status, fmt.Sprintf(`<td class="bad">%s</td>`, joinIDs(isr))) {
			return fmt.Sprintf("status page does not mark partition %d (ISR %v) under-replicated", p, isr)
		}
		if v.leader[p] == v.self {
			urp := fmt.Sprintf(`minikafka_partition_under_replicated{partition="%d",topic="idle"} %d`, p, b2i(!up))
			if !strings.Contains(v.metrics, urp+"\n") {
				return "metrics lack " + urp
			}
		}
	}
	return ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// viewOf reads node n's /metrics and status page, and asks it alone for
// the topic's metadata.
func viewOf(ctx context.Context, n *Node, topic string) (nodeView, error) {
	v := nodeView{self: int32(n.ID), isr: map[int32][]int32{}, leader: map[int32]int32{}}
	var err error
	if v.metrics, err = httpGet(ctx, "http://"+n.AdminAddr+"/metrics"); err != nil {
		return v, err
	}
	if v.status, err = httpGet(ctx, "http://"+n.AdminAddr+"/"); err != nil {
		return v, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr))
	if err != nil {
		return v, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl) // the only seed answers the first request
	if err != nil {
		return v, fmt.Errorf("metadata: %w", err)
	}
	for _, b := range resp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			v.isr[p.Partition], v.leader[p.Partition] = p.ISR, p.Leader
		}
	}
	return v, nil
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, resp.Body)
	return b.String(), err
}
