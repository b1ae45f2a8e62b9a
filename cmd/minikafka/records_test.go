package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// topic delete-records against a 3-node cluster: the partition then starts
// at the offset, a consumer from the beginning sees only the rest, and an
// offset past the end is refused with a clear message.
func TestCLIDeleteRecords(t *testing.T) {
	c := testcluster.Start(t, 3)
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	mustRun(t, "", cmd("topic", "create", "recs", "--partitions", "1", "--replication-factor", "3")...)
	mustRun(t, "a\nb\nc\nd\n", cmd("produce", "recs")...)

	r := mustRun(t, "", cmd("topic", "delete-records", "recs", "--partition", "0", "--offset", "2")...)
	if want := "partition 0 of \"recs\" now starts at offset 2\n"; r.stdout != want {
		t.Fatalf("delete-records printed %q, want %q", r.stdout, want)
	}
	// topic describe shows where each partition starts and ends.
	r = mustRun(t, "", cmd("topic", "describe", "recs")...)
	if !regexp.MustCompile(`(?m)^TOPIC +PARTITION +LEADER +EPOCH +REPLICAS +ISR +START +END$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^recs +0 +[0-9]+ +[0-9]+ +[0-9,]+ +[0-9,]+ +2 +4$`).MatchString(r.stdout) {
		t.Fatalf("topic describe shows no start 2 and end 4 for partition 0:\n%s", r.stdout)
	}
	r = mustRun(t, "", cmd("consume", "recs", "--from-beginning", "-n", "2")...)
	if r.stdout != "c\nd\n" {
		t.Fatalf("consume after delete-records printed %q, want c and d", r.stdout)
	}
	r = runCLI(t, "", cmd("topic", "delete-records", "recs", "--offset", "9")...)
	if r.code == 0 || !strings.Contains(r.stderr, "offset 9 is past the partition's last record") {
		t.Fatalf("delete-records past the end: exit %d, stderr %q", r.code, r.stderr)
	}
	r = mustRun(t, "", cmd("topic", "delete-records", "recs", "--offset", "-1")...)
	if want := "partition 0 of \"recs\" now starts at offset 4\n"; r.stdout != want {
		t.Fatalf("delete-records --offset -1 printed %q, want %q", r.stdout, want)
	}
}
