package interop

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// kcat runs kcat against the cluster with args and returns its standard
// output; it fails the test if kcat fails or outlives the timeout.
func kcat(t *testing.T, c *testcluster.Cluster, stdin string, args ...string) string {
	t.Helper()
	path := requireKcat(t)
	cmd := exec.CommandContext(testContext(t), path, append([]string{"-b", strings.Join(c.Seeds(), ",")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\nstderr:\n%s", args, err, errOut.String())
	}
	return out.String()
}

func lines(s string) []string {
	out := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(out)
	return out
}

// The acceptance case of issue 12: librdkafka (kcat -C -e) reads a topic
// whose other partitions are empty and exits at their end. It used to
// fail every fetch with "invalid MessageSetSize -1" and never reach the
// end.
func TestKcatConsumesTopicWithEmptyPartitions(t *testing.T) {
	requireKcat(t)
	c := testcluster.Start(t, 1)
	createTopic(t, c, "sparse", 3, 1)
	produce(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "sparse", 1, "a", "b")

	out := kcat(t, c, "", "-C", "-e", "-q", "-t", "sparse", "-f", `%p %o %s\n`)
	if got, want := lines(out), []string{"1 0 a", "1 1 b"}; !slices.Equal(got, want) {
		t.Fatalf("kcat read %q, want %q", got, want)
	}
}

// librdkafka produces (idempotently, as kcat's defaults allow) and
// consumes back, and lists the cluster's metadata.
func TestKcatProducesAndConsumes(t *testing.T) {
	requireKcat(t)
	c := testcluster.Start(t, 1)
	createTopic(t, c, "lines", 2, 1)
	kcat(t, c, "one\ntwo\nthree\n", "-P", "-t", "lines", "-p", "0", "-X", "enable.idempotence=true")
	out := kcat(t, c, "", "-C", "-e", "-q", "-t", "lines", "-f", `%p %o %s\n`)
	if got, want := lines(out), []string{"0 0 one", "0 1 two", "0 2 three"}; !slices.Equal(got, want) {
		t.Fatalf("kcat read %q, want %q", got, want)
	}
	// -o -1: the last record, found with ListOffsets.
	if out := kcat(t, c, "", "-C", "-e", "-q", "-t", "lines", "-p", "0", "-o", "-1", "-f", `%o %s\n`); strings.TrimSpace(out) != "2 three" {
		t.Fatalf("last record: %q", out)
	}
	if md := kcat(t, c, "", "-L", "-t", "lines"); !strings.Contains(md, `topic "lines" with 2 partitions`) {
		t.Fatalf("metadata:\n%s", md)
	}
}
