package main

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// consume --group-protocol consumer, group list and group describe of a
// KIP-848 group, against our 3-node cluster and against kfake.
func TestCLIConsumerGroup(t *testing.T) {
	t.Run("minikafka", func(t *testing.T) {
		c := testcluster.Start(t, 3)
		mustRun(t, "", "topic", "create", "events", "--partitions", "2", "--replication-factor", "3", "--brokers", strings.Join(c.Seeds(), ","))
		cliConsumerGroup(t, c.Seeds())
	})
	t.Run("kfake", func(t *testing.T) {
		kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"),
			kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "100"}))
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		cliConsumerGroup(t, kc.ListenAddrs())
	})
}

// cliConsumerGroup consumes in two runs as a KIP-848 member (the second
// continues after the first), lists the group as type consumer, and
// describes it while a member holds it: epochs, assignor, the member's
// epoch and assigned and target partitions.
func cliConsumerGroup(t *testing.T, brokers []string) {
	g := []string{"--brokers", strings.Join(brokers, ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	mustRun(t, "a\nb\nc\n", cmd("produce", "events", "--partition", "0")...)
	mustRun(t, "d\ne\n", cmd("produce", "events", "--partition", "1")...)
	run := func(n string) string {
		args := append([]string{"consume", "events", "--group", "k", "--group-protocol", "consumer", "--from-beginning", "-n", n, "--idle-timeout", "10s"}, format...)
		return mustRun(t, "", cmd(args...)...).stdout
	}
	got := strings.Split(strings.TrimSpace(run("3")+run("2")), "\n")
	slices.Sort(got)
	if want := []string{"0:0:a", "0:1:b", "0:2:c", "1:0:d", "1:1:e"}; !slices.Equal(got, want) {
		t.Fatalf("the two runs printed %q, want each record once: %q", got, want)
	}
	r := mustRun(t, "", cmd("group", "list")...)
	if !regexp.MustCompile(`(?m)^GROUP +TYPE +STATE +PROTOCOL-TYPE +COORDINATOR$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^k +consumer +Empty +\S+ +[0-9]+$`).MatchString(r.stdout) {
		t.Fatalf("group list printed:\n%s", r.stdout)
	}

	m, err := client.NewGroupConsumer(client.Brokers(brokers...), client.ClientID("member-a"), client.ConsumerGroup("k"),
		client.ConsumeTopics("events"), client.GroupProtocol(client.GroupProtocolConsumer), client.GroupRemoteAssignor(client.RangeAssignor))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	for deadline := time.Now().Add(20 * time.Second); len(m.Assigned()["events"]) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member got no assignment")
		}
	}
	memberID, epoch := m.Member()
	var out string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out = mustRun(t, "", cmd("group", "describe", "k")...).stdout
		if strings.Contains(out, "state Stable") || time.Now().After(deadline) {
			break
		}
	}
	for _, row := range []string{
		`^group "k": type consumer, state Stable, group epoch [1-9][0-9]*, assignment epoch [1-9][0-9]*, assignor range, 1 member, coordinator [0-9]+$`,
		`^MEMBER +INSTANCE +CLIENT-ID +HOST +EPOCH +ASSIGNED +TARGET$`,
		`^` + regexp.QuoteMeta(memberID) + ` +- +member-a +\S+ +` + strconv.Itoa(int(epoch)) + ` +events\[0,1\] +events\[0,1\]$`,
		`^events +0 +3 +3 +0 +` + regexp.QuoteMeta(memberID) + `$`,
	} {
		if !regexp.MustCompile(`(?m)` + row).MatchString(out) {
			t.Fatalf("group describe printed no line %s:\n%s", row, out)
		}
	}
}
