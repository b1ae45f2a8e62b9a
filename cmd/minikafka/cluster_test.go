package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The flow of the issue against an in-process 3-node cluster: create a
// topic, produce 3 lines, consume them back, see the leaders in cluster
// status; then the other commands and the errors a user meets.
func TestCLIAgainstCluster(t *testing.T) {
	c := testcluster.Start(t, 3)
	brokers := strings.Join(c.Seeds(), ",")
	g := []string{"--brokers", brokers, "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }

	t.Run("flow", func(t *testing.T) {
		r := mustRun(t, "", cmd("topic", "create", "events", "--partitions", "2", "--replication-factor", "3")...)
		if want := "created topic \"events\": 2 partitions, replication factor 3\n"; r.stdout != want {
			t.Fatalf("topic create printed %q, want %q", r.stdout, want)
		}
		r = mustRun(t, "", cmd("topic", "list")...)
		if !slices.Contains(strings.Split(r.stdout, "\n"), "events") {
			t.Fatalf("topic list printed %q, without events", r.stdout)
		}

		// crc32("same") % 2 == 0: the seed's lab puts all three on partition 0.
		r = mustRun(t, "one\ntwo\nthree\n", cmd("produce", "events", "--key", "same")...)
		if want := "3 records produced to \"events\", 0 failed\n  partition 0: 3 records, offsets 0-2\n"; r.stdout != want {
			t.Fatalf("produce printed %q, want %q", r.stdout, want)
		}
		r = mustRun(t, "", cmd("consume", "events", "--from-beginning", "-n", "3")...)
		if want := "one\ntwo\nthree\n"; r.stdout != want {
			t.Fatalf("consume printed %q, want %q", r.stdout, want)
		}
		if r.stderr != "consumed 3 records\n" {
			t.Fatalf("consume reported %q", r.stderr)
		}
		r = mustRun(t, "", cmd("consume", "events", "--from-beginning", "-n", "3", "--format", `%t %p:%o %k=%v`)...)
		if want := "events 0:0 same=one\nevents 0:1 same=two\nevents 0:2 same=three\n"; r.stdout != want {
			t.Fatalf("consume --format printed %q, want %q", r.stdout, want)
		}

		checkLeaders(t, c, cmd("cluster", "status"), []string{"events"}, 2)
		checkLeaders(t, c, cmd("topic", "describe", "events"), []string{"events"}, 2)
	})

	t.Run("status lists brokers and controller", func(t *testing.T) {
		r := mustRun(t, "", cmd("cluster", "status", "--wait", "20s")...)
		for _, nd := range c.Running() {
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +%s\b`, nd.ID(), regexp.QuoteMeta(nd.KafkaAddr())))
			if !row.MatchString(r.stdout) {
				t.Errorf("status does not list broker %d at %s:\n%s", nd.ID(), nd.KafkaAddr(), r.stdout)
			}
		}
		m := regexp.MustCompile(`controller ([0-9]+)\n`).FindStringSubmatch(r.stdout)
		if m == nil || m[1] < "1" || m[1] > "3" {
			t.Fatalf("status names no controller:\n%s", r.stdout)
		}
		if !regexp.MustCompile(`(?m)^` + m[1] + ` +\S+ +yes +[0-9]+ +\S+$`).MatchString(r.stdout) {
			t.Fatalf("controller %s not marked in the broker list:\n%s", m[1], r.stdout)
		}
		// Every broker holds the 2 replicas of events (and maybe internal
		// topics'), out of the default capacity.
		rows := regexp.MustCompile(`(?m)^[0-9]+ +\S+ +(?:yes)? +([0-9]+) +([0-9]+)$`).FindAllStringSubmatch(r.stdout, -1)
		if len(rows) != len(c.Running()) {
			t.Fatalf("status shows replicas and capacity for %d brokers, want %d:\n%s", len(rows), len(c.Running()), r.stdout)
		}
		for _, row := range rows {
			if n, _ := strconv.Atoi(row[1]); n < 2 || row[2] != strconv.Itoa(broker.DefaultMaxNodeReplicas) {
				t.Errorf("a broker row shows %s replicas of capacity %s; want at least 2 of %d:\n%s", row[1], row[2], broker.DefaultMaxNodeReplicas, r.stdout)
			}
		}
	})

	t.Run("produce options", func(t *testing.T) {
		mustRun(t, "", cmd("topic", "create", "opts", "--partitions", "3")...)
		r := mustRun(t, "a\r\nb\n\nc", cmd("produce", "opts", "--partition", "2")...)
		if want := "4 records produced to \"opts\", 0 failed\n  partition 2: 4 records, offsets 0-3\n"; r.stdout != want {
			t.Fatalf("produce --partition printed %q, want %q", r.stdout, want)
		}
		r = mustRun(t, "d\n", cmd("produce", "opts", "--partition", "2", "--acks", "1")...)
		if want := "1 record produced to \"opts\", 0 failed\n  partition 2: 1 record, offset 4\n"; r.stdout != want {
			t.Fatalf("produce --acks 1 printed %q, want %q", r.stdout, want)
		}
		r = mustRun(t, "e\n", cmd("produce", "opts", "--partition", "2", "--acks", "0")...)
		if want := "1 record produced to \"opts\", 0 failed\n  partition 2: 1 record, offsets unknown (acks=0)\n"; r.stdout != want {
			t.Fatalf("produce --acks 0 printed %q, want %q", r.stdout, want)
		}
		// Empty lines and CRLF: a record each, line ends stripped. Without
		// -n, --idle-timeout ends the consume once the partition is drained.
		r = mustRun(t, "", cmd("consume", "opts", "--from-beginning", "--partition", "2", "--idle-timeout", "1s", "--format", "%o[%v]")...)
		if want := "0[a]\n1[b]\n2[]\n3[c]\n4[d]\n5[e]\n"; r.stdout != want {
			t.Fatalf("consume printed %q, want %q", r.stdout, want)
		}
		r = mustRun(t, "", cmd("consume", "opts", "--from-beginning", "--partition", "0", "--idle-timeout", "300ms")...)
		if r.stdout != "" || r.stderr != "consumed 0 records\n" {
			t.Fatalf("empty partition: stdout %q stderr %q", r.stdout, r.stderr)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args  []string
			stdin string
			want  string
		}{
			{cmd("consume", "nope", "--from-beginning"), "", `minikafka: topic "nope" does not exist`},
			{cmd("produce", "nope"), "x\n", `minikafka: topic "nope" does not exist`},
			{cmd("topic", "describe", "nope"), "", `minikafka: topic "nope" does not exist`},
			{cmd("topic", "create", "events"), "", `minikafka: topic "events" already exists`},
			{cmd("produce", "events", "--partition", "7"), "x\n", `minikafka: topic "events" has no partition 7 (it has 2)`},
			{cmd("consume", "events", "--partition", "2"), "", `minikafka: topic "events" has no partition 2 (it has 2)`},
			// The code appears once: the broker's message adds only what the code does not say.
			{cmd("topic", "add-partitions", "events", "--partitions", "1"), "",
				`minikafka: add partitions to "events": kafka: INVALID_PARTITIONS (37): topic "events" has 2 partitions; the new count must be larger`},
			{cmd("topic", "create", "big", "--replication-factor", "5"), "",
				`minikafka: create topic "big": kafka: INVALID_REPLICATION_FACTOR (38): replication factor 5 is larger than the 3 live brokers`},
		} {
			r := runCLI(t, tc.stdin, tc.args...)
			if r.code != exitFailure || r.stderr != tc.want+"\n" || r.stdout != "" {
				t.Errorf("minikafka %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
			}
		}
		// A wrong address among good ones is not an error: another seed answers.
		r := mustRun(t, "", "topic", "list", "--brokers", closedPort(t)+","+brokers)
		if !strings.Contains(r.stdout, "events") {
			t.Fatalf("topic list printed %q", r.stdout)
		}
	})
}

// checkLeaders runs a command that prints the partition table and checks
// that every partition of the topics shows the leader and epoch the nodes
// agree on. Leaders may move (preferred-leader rebalance) between the
// look and the command, so it tries a few times.
func checkLeaders(t *testing.T, c *testcluster.Cluster, args, topics []string, parts int32) {
	t.Helper()
	var last string
	for range 10 {
		type le struct{ leader, epoch int32 }
		want := map[string]le{}
		for _, topic := range topics {
			for p := range parts {
				l, e := c.Leader(topic, p, 10*time.Second)
				if l < 0 {
					t.Fatalf("%s[%d] has no leader", topic, p)
				}
				want[fmt.Sprintf("%s/%d", topic, p)] = le{l, e}
			}
		}
		r := mustRun(t, "", args...)
		last = r.stdout
		ok := true
		for k, v := range want {
			topic, p, _ := strings.Cut(k, "/")
			// topic describe adds start and end offsets.
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%s +%d +%d +[0-9,]+ +[0-9,]+( +[0-9]+ +[0-9]+)?$`, regexp.QuoteMeta(topic), p, v.leader, v.epoch))
			if !row.MatchString(r.stdout) {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("minikafka %v never showed the leaders the nodes agree on; last output:\n%s", args, last)
}
