package main

import (
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// quota set|list|delete manage client quotas; a refused value and a
// missing or contradictory entity are clear errors.
func TestCLIQuotas(t *testing.T) {
	c := testcluster.Start(t, 1)
	g := []string{"--brokers", strings.Join(c.Seeds(), ",")}
	run := func(args ...string) cli { return mustRun(t, "", append(args, g...)...) }
	if r := run("quota", "list"); r.stdout != "no quotas\n" {
		t.Fatalf("quota list before any quota printed %q", r.stdout)
	}
	if r := run("quota", "set", "--client-id", "app", "--producer-byte-rate", "102400"); r.stdout != "quota client-id=app: producer_byte_rate = 102400\n" {
		t.Fatalf("quota set printed %q", r.stdout)
	}
	run("quota", "set", "--user", "alice", "--default-client", "--request-percentage", "12.5", "--consumer-byte-rate", "2048")
	want := "USER   CLIENT-ID  KEY                 VALUE\n" +
		"-      app        producer_byte_rate  102400\n" +
		"alice  <default>  consumer_byte_rate  2048\n" +
		"alice  <default>  request_percentage  12.5\n"
	if r := run("quota", "list"); r.stdout != want {
		t.Fatalf("quota list printed:\n%s\nwant:\n%s", r.stdout, want)
	}
	if r := run("quota", "list", "--client-id", "app"); !strings.Contains(r.stdout, "app") || strings.Contains(r.stdout, "alice") {
		t.Fatalf("quota list --client-id app printed:\n%s", r.stdout)
	}

	r := runCLI(t, "", append([]string{"quota", "set", "--client-id", "app", "--producer-byte-rate", "1.5"}, g...)...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "INVALID_REQUEST") || !strings.Contains(r.stderr, "must be a Long value") {
		t.Fatalf("fractional byte rate: %+v", r)
	}
	for _, bad := range [][]string{
		{"quota", "set", "--producer-byte-rate", "1"},
		{"quota", "set", "--client-id", "app"},
		{"quota", "set", "--user", "a", "--default-user", "--producer-byte-rate", "1"},
		{"quota", "delete", "--client-id", "app", "--key", "bogus"},
		{"quota", "delete"},
	} {
		if r := runCLI(t, "", append(bad, g...)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}

	run("quota", "delete", "--client-id", "app", "--key", "producer_byte_rate")
	run("quota", "delete", "--user", "alice", "--default-client")
	if r := run("quota", "list"); r.stdout != "no quotas\n" {
		t.Fatalf("quota list after delete printed %q", r.stdout)
	}
}
