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
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// newShareKfake is a kfake serving share groups, whose group s reads
// from the start of each partition.
func newShareKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	kc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(2, "events"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "50"})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kc.SetGroupConfigs("s", map[string]string{"share.auto.offset.reset": "earliest"})
	return kc
}

// consume --share-group (accept, reject, the unprinted rest released),
// share-group list, describe and reset-offsets, against kfake and against
// our cluster; both answer a drained partition's lag, 0.
func TestCLIShareGroup(t *testing.T) {
	t.Run("kfake", func(t *testing.T) {
		kc := newShareKfake(t)
		cliShareFlow(t, kc.ListenAddrs())
	})
	t.Run("minikafka", func(t *testing.T) {
		c := testcluster.Start(t, 1, func(cfg *broker.Config) {
			cfg.ShareGroups.ResetEarliest = true
			cfg.GroupShare.HeartbeatInterval = 50 * time.Millisecond
		})
		mustRun(t, "", "topic", "create", "events", "--partitions", "2", "--replication-factor", "1", "--brokers", strings.Join(c.Seeds(), ","))
		cliShareFlow(t, c.Seeds())
	})
}

// cliShareFlow is TestCLIShareGroup against the cluster at seeds, with a
// topic events of 2 partitions, whose share group s reads from the start
// of each partition.
func cliShareFlow(t *testing.T, seeds []string) {
	g := []string{"--brokers", strings.Join(seeds, ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	consume := func(n string, extra ...string) cli {
		args := append([]string{"consume", "events", "--share-group", "s", "-n", n, "--idle-timeout", "2s"}, format...)
		return mustRun(t, "", cmd(append(args, extra...)...)...)
	}
	if out := mustRun(t, "", cmd("share-group", "list")...).stdout; out != "no share groups\n" {
		t.Fatalf("share-group list before any: %q", out)
	}
	mustRun(t, "a\nb\nc\n", cmd("produce", "events", "--partition", "0")...)
	mustRun(t, "d\ne\n", cmd("produce", "events", "--partition", "1")...)
	first, second := consume("3"), consume("5")
	got := strings.Split(strings.TrimSpace(first.stdout+second.stdout), "\n")
	slices.Sort(got)
	if want := []string{"0:0:a", "0:1:b", "0:2:c", "1:0:d", "1:1:e"}; !slices.Equal(got, want) {
		t.Fatalf("the two runs printed %q, want each record once: %q", got, want)
	}
	if second.stderr != "consumed 2 records\n" {
		t.Fatalf("second run said %q", second.stderr)
	}
	// A rejected record never comes back.
	mustRun(t, "f\n", cmd("produce", "events", "--partition", "0")...)
	if out := consume("1", "--ack", "reject").stdout; out != "0:3:f\n" {
		t.Fatalf("consume --ack reject printed %q", out)
	}
	if r := consume("1"); r.stdout != "" || r.stderr != "consumed 0 records\n" {
		t.Fatalf("after reject a run printed %q, %q", r.stdout, r.stderr)
	}
	r := mustRun(t, "", cmd("share-group", "list")...)
	if !regexp.MustCompile(`(?m)^GROUP +STATE +COORDINATOR\ns +Empty +[0-9]+$`).MatchString(r.stdout) {
		t.Fatalf("share-group list printed:\n%s", r.stdout)
	}
	out := mustRun(t, "", cmd("share-group", "describe", "s")...).stdout
	for _, row := range []string{
		`^share group "s": state Empty, group epoch [0-9]+, assignment epoch [0-9]+, assignor \S+, 0 members, coordinator [0-9]+$`,
		`^TOPIC +PARTITION +START-OFFSET +LAG +ERROR$`,
		`^events +0 +4 +0 +-$`,
		`^events +1 +2 +0 +-$`,
	} {
		if !regexp.MustCompile(`(?m)` + row).MatchString(out) {
			t.Fatalf("share-group describe printed no line %s:\n%s", row, out)
		}
	}
	out = mustRun(t, "", cmd("share-group", "reset-offsets", "s", "--topic", "events", "--to-offset", "1")...).stdout
	if !strings.HasPrefix(out, "reset 2 partitions of group \"s\"\n") || !regexp.MustCompile(`(?m)^events +0 +4 +1$`).MatchString(out) {
		t.Fatalf("reset-offsets printed:\n%s", out)
	}
	got = strings.Split(strings.TrimSpace(consume("4").stdout), "\n")
	slices.Sort(got)
	if want := []string{"0:1:b", "0:2:c", "0:3:f", "1:1:e"}; !slices.Equal(got, want) {
		t.Fatalf("after the reset to 1 a run printed %q, want %q", got, want)
	}
	cliShareMember(t, seeds, cmd)
}

// cliShareMember describes the group while a member holds it, and checks
// that reset-offsets refuses it then.
func cliShareMember(t *testing.T, seeds []string, cmd func(...string) []string) {
	s, err := client.NewShareConsumer(client.Brokers(seeds...), client.ClientID("member-a"), client.ShareGroup("s"), client.ConsumeTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for deadline := time.Now().Add(20 * time.Second); len(s.Assigned()["events"]) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member got no assignment")
		}
	}
	id, epoch := s.MemberID()
	out := mustRun(t, "", cmd("share-group", "describe", "s")...).stdout
	for _, row := range []string{
		`^share group "s": state Stable, .*, 1 member, coordinator [0-9]+$`,
		`^MEMBER +CLIENT-ID +HOST +EPOCH +ASSIGNED$`,
		`^` + regexp.QuoteMeta(id) + ` +member-a +\S+ +` + strconv.Itoa(int(epoch)) + ` +events\[0,1\]$`,
	} {
		if !regexp.MustCompile(`(?m)` + row).MatchString(out) {
			t.Fatalf("share-group describe printed no line %s:\n%s", row, out)
		}
	}
	r := runCLI(t, "", cmd("share-group", "reset-offsets", "s", "--topic", "events", "--to-earliest")...)
	if r.code == 0 || !strings.Contains(r.stderr, "it has active members") {
		t.Fatalf("reset-offsets with a member: exit %d, %q", r.code, r.stderr)
	}
}

// The CLI says plainly when the cluster does not serve ShareFetch, and
// checks its flags.
func TestCLIShareGroupErrors(t *testing.T) {
	noFetch := kversion.V4_1_0()
	noFetch.SetMaxKeyVersion(76, 1)
	noFetch.SetMaxKeyVersion(77, 1)
	noFetch.SetMaxKeyVersion(78, -1)
	noFetch.SetMaxKeyVersion(79, -1)
	kc := newShareKfake(t, kfake.MaxVersions(noFetch))
	g := []string{"--brokers", strings.Join(kc.ListenAddrs(), ","), "--timeout", "20s"}
	r := runCLI(t, "", append([]string{"consume", "events", "--share-group", "s", "-n", "1"}, g...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "the cluster does not serve share groups (ShareFetch)") {
		t.Fatalf("consume --share-group without ShareFetch: exit %d, %q", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"consume", "events", "--share-group", "s", "--ack", "drop"},
		{"consume", "events", "--ack", "reject"},
		{"consume", "events", "--share-group", "s", "--group", "g"},
		{"consume", "events", "--share-group", "s", "--from-beginning"},
		{"share-group", "reset-offsets", "s", "--to-earliest"},
		{"share-group", "reset-offsets", "s", "--topic", "events"},
	} {
		if r := runCLI(t, "", append(args, g...)...); r.code != 2 {
			t.Errorf("minikafka %v: exit %d (%q), want a usage error", args, r.code, r.stderr)
		}
	}
}
