package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Topic configs from the command line: created with the topic, changed
// with alter-config, shown by topic describe with their source, and clear
// errors for bad names and values.
func TestCLITopicConfigs(t *testing.T) {
	c := testcluster.Start(t, 3)
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }

	mustRun(t, "", cmd("topic", "create", "cfg", "--partitions", "1", "--replication-factor", "3",
		"--config", "retention.ms=3600000", "--config", "cleanup.policy=delete")...)
	row := func(name, value, source string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^cfg +` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(value) + ` +` + source + `$`)
	}
	// describe may ask a broker whose copy of the metadata has not applied
	// the change yet (as in Kafka): it is asked again until it has.
	describe := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := mustRun(t, "", cmd("topic", "describe", "cfg")...)
			if ok(r.stdout) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("describe %s:\n%s", what, r.stdout)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	describe("after create", func(out string) bool {
		return row("retention.ms", "3600000", "topic").MatchString(out) && row("cleanup.policy", "delete", "topic").MatchString(out)
	})

	r := mustRun(t, "", cmd("topic", "alter-config", "cfg", "--set", "segment.ms=60000", "--delete", "retention.ms")...)
	if r.stdout != "altered configs of topic \"cfg\"\n" {
		t.Fatalf("alter-config printed %q", r.stdout)
	}
	describe("after alter-config", func(out string) bool {
		return row("segment.ms", "60000", "topic").MatchString(out) && !row("retention.ms", "3600000", "topic").MatchString(out)
	})

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{cmd("topic", "alter-config", "cfg", "--set", "retention.ms=soon"), exitFailure,
			`minikafka: invalid config for topic "cfg": Invalid value soon for configuration retention.ms: Not a number of type LONG`},
		{cmd("topic", "create", "bad", "--config", "retentoin.ms=1"), exitFailure,
			`minikafka: invalid config for topic "bad": Unknown topic config name: retentoin.ms`},
		{cmd("topic", "alter-config", "nope", "--set", "retention.ms=1"), exitFailure, `minikafka: topic "nope" does not exist`},
		{cmd("topic", "alter-config", "cfg"), exitUsage, `minikafka: nothing to change: give --set NAME=VALUE or --delete NAME (see --help)`},
		{cmd("topic", "create", "bad", "--config", "retention.ms"), exitUsage, `minikafka: --config wants NAME=VALUE, got "retention.ms" (see --help)`},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != tc.code || r.stderr != tc.want+"\n" {
			t.Errorf("minikafka %v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
