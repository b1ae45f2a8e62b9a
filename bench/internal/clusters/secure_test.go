package clusters

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

// A Secure cluster serves Kafka only on SASL_SSL: our client with the
// cluster's ClientOpts creates a topic and produces; a plaintext client
// gets nowhere.
func TestSecureCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	repo, _ := filepath.Abs("../../..")
	bin := filepath.Join(dir, "minikafka-node")
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := BuildNode(ctx, repo, bin); err != nil {
		t.Fatal(err)
	}
	c, err := StartMiniKafka(ctx, MiniKafkaConfig{Bin: bin, RepoDir: repo, DataDir: filepath.Join(dir, "data"),
		LogDir: filepath.Join(dir, "logs"), Nodes: 3, Name: "secure", Secure: &Secure{Dir: filepath.Join(dir, "certs")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	if _, err := c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(append(c.ClientOpts(), client.Brokers(c.Brokers()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := p.ProduceSync(ctx, &client.Record{Topic: "t", Value: []byte("v")}); err != nil {
		t.Fatalf("produce over SASL_SSL: %v", err)
	}
	plain, err := client.NewProducer(client.Brokers(c.Brokers()...), client.RequestTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	if err := plain.ProduceSync(pctx, &client.Record{Topic: "t", Value: []byte("v")}); err == nil {
		t.Fatal("a plaintext client produced to a SASL_SSL-only cluster")
	}
}
