package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The group commands and consume --group, against our 3-node cluster and
// against franz-go's kfake (Kafka's behaviour as another implementation
// reads it): consume in a group in two runs (the second continues exactly
// after what the first printed), describe, reset and delete the group, and
// the refusals while it has a member.
func TestCLIGroups(t *testing.T) {
	t.Run("minikafka", func(t *testing.T) {
		c := testcluster.Start(t, 3)
		brokers := strings.Join(c.Seeds(), ",")
		mustRun(t, "", "topic", "create", "events", "--partitions", "2", "--replication-factor", "3", "--brokers", brokers)
		cliGroups(t, c.Seeds())
		// The groups made __consumer_offsets; topic list shows it only
		// when asked.
		r := mustRun(t, "", "topic", "list", "--brokers", brokers)
		all := mustRun(t, "", "topic", "list", "--internal", "--brokers", brokers)
		if r.stdout != "events\n" || all.stdout != "__consumer_offsets\nevents\n" {
			t.Fatalf("topic list printed %q, with --internal %q", r.stdout, all.stdout)
		}
		// topic add-partitions grows a topic; a count not above it is refused.
		r = mustRun(t, "", "topic", "add-partitions", "events", "--partitions", "3", "--brokers", brokers)
		if r.stdout != "topic \"events\" now has 3 partitions\n" {
			t.Fatalf("add-partitions printed %q", r.stdout)
		}
		if r := runCLI(t, "", "topic", "add-partitions", "events", "--partitions", "2", "--brokers", brokers); r.code != 1 ||
			!strings.Contains(r.stderr, "INVALID_PARTITIONS") {
			t.Fatalf("add-partitions to fewer: exit %d, stderr %q", r.code, r.stderr)
		}
		// topic delete removes it; a second delete says it does not exist.
		if r := mustRun(t, "", "topic", "delete", "events", "--brokers", brokers); r.stdout != "deleted topic \"events\"\n" {
			t.Fatalf("delete printed %q", r.stdout)
		}
		if r := runCLI(t, "", "topic", "delete", "events", "--brokers", brokers); r.code != 1 || r.stderr != "minikafka: topic \"events\" does not exist\n" {
			t.Fatalf("second delete: exit %d, stderr %q", r.code, r.stderr)
		}
		if r := mustRun(t, "", "topic", "list", "--brokers", brokers); r.stdout != "" {
			t.Fatalf("topic list after the delete printed %q", r.stdout)
		}
	})
	t.Run("kfake", func(t *testing.T) {
		kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		cliGroups(t, kc.ListenAddrs())
	})
}

func cliGroups(t *testing.T, brokers []string) {
	g := []string{"--brokers", strings.Join(brokers, ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	mustRun(t, "a\nb\nc\n", cmd("produce", "events", "--partition", "0")...)
	mustRun(t, "d\ne\n", cmd("produce", "events", "--partition", "1")...)
	// The steps share the group: each starts where the previous left it.
	t.Run("consume in two runs", func(t *testing.T) { cliConsumeTwice(t, cmd) })
	t.Run("describe and reset", func(t *testing.T) { cliDescribeAndReset(t, cmd) })
	t.Run("with a member", func(t *testing.T) { cliWithMember(t, brokers, cmd) })
}

// format prints partition:offset:value.
var format = []string{"--format", "%p:%o:%v"}

// cliConsumeTwice consumes the 5 records in two runs of consume --group:
// the second prints exactly what the first did not.
func cliConsumeTwice(t *testing.T, cmd func(...string) []string) {
	// -n ends each run; --idle-timeout only bounds a broken one.
	first := mustRun(t, "", cmd(append([]string{"consume", "events", "--group", "g", "--from-beginning", "-n", "3"}, format...)...)...)
	// --from-beginning again: a partition the first run printed nothing of
	// has no committed offset.
	second := mustRun(t, "", cmd(append([]string{"consume", "events", "--group", "g", "--from-beginning", "-n", "2", "--idle-timeout", "10s"}, format...)...)...)
	// Each run says where it starts: the first, a new group, at the start;
	// the second from the first one's commits, where it made any.
	if want := "group \"g\" has no committed offsets on \"events\": starting at the start of each partition (--from-beginning)\nconsumed 3 records\n"; first.stderr != want {
		t.Fatalf("stderr of the first run: %q, want %q", first.stderr, want)
	}
	if !regexp.MustCompile(`^group "g" continues from its committed offsets on "events" \(partitions? [01](, 1)?\).*\nconsumed 2 records\n$`).MatchString(second.stderr) {
		t.Fatalf("stderr of the second run: %q", second.stderr)
	}
	// A new group without --from-beginning starts at the end, and says so.
	r := mustRun(t, "", cmd("consume", "events", "--group", "fresh", "--idle-timeout", "300ms")...)
	if want := "group \"fresh\" has no committed offsets on \"events\": starting at the end of each partition (only new records; --from-beginning reads from the start)\nconsumed 0 records\n"; r.stderr != want || r.stdout != "" {
		t.Fatalf("consume with a new group: stdout %q, stderr %q; want stderr %q", r.stdout, r.stderr, want)
	}
	got := strings.Split(strings.TrimSpace(first.stdout+second.stdout), "\n")
	slices.Sort(got)
	if want := []string{"0:0:a", "0:1:b", "0:2:c", "1:0:d", "1:1:e"}; !slices.Equal(got, want) {
		t.Fatalf("the two runs printed %q, want each record once: %q", got, want)
	}
}

// cliDescribeAndReset describes the empty group, resets its offsets, and
// consumes from the reset offsets.
func cliDescribeAndReset(t *testing.T, cmd func(...string) []string) {

	r := mustRun(t, "", cmd("group", "list")...)
	if !regexp.MustCompile(`(?m)^g +classic +Empty +consumer +[0-9]+$`).MatchString(r.stdout) {
		t.Fatalf("group list printed:\n%s", r.stdout)
	}
	r = mustRun(t, "", cmd("group", "describe", "g")...)
	for _, row := range []string{`^group "g": state Empty, 0 members, coordinator [0-9]+$`,
		`^TOPIC +PARTITION +COMMITTED +LOG-END +LAG +MEMBER$`, `^events +0 +3 +3 +0 +-$`, `^events +1 +2 +2 +0 +-$`} {
		if !regexp.MustCompile(`(?m)` + row).MatchString(r.stdout) {
			t.Fatalf("group describe printed no line %s:\n%s", row, r.stdout)
		}
	}

	r = mustRun(t, "", cmd("group", "reset-offsets", "g", "--to-earliest")...)
	if !strings.HasPrefix(r.stdout, "reset 2 partitions of group \"g\"\n") || !regexp.MustCompile(`(?m)^events +0 +3 +0$`).MatchString(r.stdout) {
		t.Fatalf("reset-offsets printed:\n%s", r.stdout)
	}
	r = mustRun(t, "", cmd("group", "reset-offsets", "g", "--to-offset", "1", "--topic", "events")...)
	if !regexp.MustCompile(`(?m)^events +1 +0 +1$`).MatchString(r.stdout) {
		t.Fatalf("reset-offsets --to-offset printed:\n%s", r.stdout)
	}
	r = mustRun(t, "", cmd(append([]string{"consume", "events", "--group", "g", "-n", "3", "--idle-timeout", "10s"}, format...)...)...)
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(got)
	if want := []string{"0:1:b", "0:2:c", "1:1:e"}; !slices.Equal(got, want) {
		t.Fatalf("after reset to 1, consume printed %q, want %q", got, want)
	}
}

// cliWithMember: while a member is in the group, describe shows it, and
// reset and delete refuse; once it has left, delete works.
func cliWithMember(t *testing.T, brokers []string, cmd func(...string) []string) {

	// A member in the group: describe shows it; reset and delete refuse.
	m, err := client.NewGroupConsumer(client.Brokers(brokers...), client.ClientID("member-a"),
		client.ConsumerGroup("g"), client.ConsumeTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	for deadline := time.Now().Add(20 * time.Second); len(m.Assigned()["events"]) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member got no assignment")
		}
	}
	memberID, _ := m.Member()
	r := mustRun(t, "", cmd("group", "describe", "g")...)
	for _, row := range []string{`^group "g": state Stable, 1 member, strategy range, coordinator [0-9]+$`,
		`^` + regexp.QuoteMeta(memberID) + ` +- +member-a +\S+ +events\[0,1\]$`,
		`^events +0 +3 +3 +0 +` + regexp.QuoteMeta(memberID) + `$`} {
		if !regexp.MustCompile(`(?m)` + row).MatchString(r.stdout) {
			t.Fatalf("group describe printed no line %s:\n%s", row, r.stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{cmd("group", "reset-offsets", "g", "--to-latest"), `minikafka: cannot reset the offsets of group "g": it has active members (state Stable); stop its consumers first`},
		{cmd("group", "delete", "g"), `minikafka: group "g" has active members: stop its consumers first`},
		{cmd("group", "describe", "nope"), `minikafka: group "nope" does not exist`},
		{cmd("group", "delete", "nope"), `minikafka: group "nope" does not exist`},
		{cmd("group", "reset-offsets", "nope", "--to-latest"), `minikafka: group "nope" does not exist: name the topics to reset with --topic (the group need not exist yet)`},
		{cmd("group", "reset-offsets", "new", "--to-latest", "--topic", "nope"), `minikafka: topic "nope" does not exist`},
		{cmd("consume", "nope", "--group", "g"), `minikafka: topic "nope" does not exist`},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != exitFailure || r.stderr != tc.want+"\n" || r.stdout != "" {
			t.Errorf("minikafka %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "", cmd("group", "delete", "g")...)
	if r.stdout != "deleted group \"g\"\n" {
		t.Fatalf("group delete printed %q", r.stdout)
	}
	r = mustRun(t, "", cmd("group", "list")...)
	if strings.Contains(r.stdout, "g ") {
		t.Fatalf("group list after the delete:\n%s", r.stdout)
	}
}

// Bad group command lines exit 2 with a message saying what is wrong.
func TestGroupUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "describe"}, "minikafka group describe needs a group NAME"},
		{[]string{"group", "delete", "a", "b"}, "minikafka group delete takes one group NAME, got 2 arguments"},
		{[]string{"group", "reset-offsets", "g"}, "say where to reset to: --to-earliest, --to-latest or --to-offset N"},
		{[]string{"group", "reset-offsets", "g", "--to-earliest", "--to-latest"}, "--to-earliest and --to-latest cannot be used together"},
		{[]string{"group", "reset-offsets", "g", "--to-offset", "-3"}, "--to-offset must not be negative, got -3"},
		{[]string{"group", "reset-offsets", "g", "--to-offset", "x"}, "invalid argument"},
		{[]string{"group", "reset-offsets", "g", "--to-latest", "--topic", ""}, "--topic needs a topic name"},
		{[]string{"group", "lst"}, `unknown command "lst"`},
		{[]string{"consume", "t", "--group", "g", "--partition", "0"}, "--partition cannot be used with --group"},
		{[]string{"consume", "t", "--group", ""}, "--group needs a group name"},
		{[]string{"consume", "t", "--group", "g", "--group-protocol", "eager"}, `--group-protocol is classic or consumer, got "eager"`},
		{[]string{"consume", "t", "--group-protocol", "consumer"}, "--group-protocol needs --group"},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != exitUsage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("minikafka %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

// A broker without group APIs gets a message that says so.
func TestUnsupportedGroupsMessage(t *testing.T) {
	ve := &client.VersionError{Key: 10, BrokerMax: -1, ClientRange: [2]int16{1, 4}}
	err := unsupportedGroups(fmt.Errorf("describe group %q: %w", "g", ve))
	want := `the broker does not support consumer groups (FindCoordinator: describe group "g": client: api key 10: broker max version -1, client speaks 1..4)`
	if err.Error() != want || !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("got %q, want %q", err, want)
	}
	if other := errors.New("x"); unsupportedGroups(other) != other {
		t.Fatal("other errors must pass unchanged")
	}
}

// --idle-timeout counts from when the member has joined its group: a
// group's first join waits for group_initial_rebalance_delay (3 s by
// default), longer than a short idle timeout.
func TestCLIGroupIdleTimeoutCountsFromJoin(t *testing.T) {
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.GroupInitialRebalanceDelay = 2 * time.Second })
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	mustRun(t, "", cmd("topic", "create", "late", "--partitions", "1", "--replication-factor", "1")...)
	mustRun(t, "a\nb\nc\n", cmd("produce", "late")...)
	r := mustRun(t, "", cmd("consume", "late", "--group", "slow", "--from-beginning", "--idle-timeout", "500ms")...)
	if r.stdout != "a\nb\nc\n" || !strings.HasSuffix(r.stderr, "consumed 3 records\n") {
		t.Fatalf("consume --group --idle-timeout 500ms on a new group: stdout %q, stderr %q; want a, b, c", r.stdout, r.stderr)
	}
}
