package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// txn list shows a franz-go producer's transactional id once its commit
// completes, and --state filters by state.
func TestCLITxnList(t *testing.T) {
	c := testcluster.Start(t, 3)
	brokers := strings.Join(c.Seeds(), ",")
	if r := mustRun(t, "", "txn", "list", "--brokers", brokers); r.stdout != "no transactions\n" {
		t.Fatalf("txn list before any transaction printed %q", r.stdout)
	}
	mustRun(t, "", "topic", "create", "events", "--partitions", "1", "--replication-factor", "3", "--brokers", brokers)
	p := c.Client(t, kgo.TransactionalID("cli-tx"), kgo.DefaultProduceTopic("events"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^cli-tx +CompleteCommit +[0-9]+ +[1-3]$`)
	var out string
	for deadline := time.Now().Add(10 * time.Second); !row.MatchString(out); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("txn list printed:\n%s", out)
		}
		out = mustRun(t, "", "txn", "list", "--brokers", brokers).stdout
	}
	if !strings.HasPrefix(out, "TRANSACTIONAL-ID") {
		t.Fatalf("txn list printed no header:\n%s", out)
	}
	if r := mustRun(t, "", "txn", "list", "--state", "Ongoing", "--brokers", brokers); r.stdout != "no transactions\n" {
		t.Fatalf("txn list --state Ongoing printed %q", r.stdout)
	}
}
