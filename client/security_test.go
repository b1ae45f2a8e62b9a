package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Our client over SASL_SSL: TLS from a CA file, SCRAM and PLAIN, user
// management with the admin, and a wrong password is a non-retriable
// SASL_AUTHENTICATION_FAILED.
func TestClientSASLSSL(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key}}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	seeds := c.Seeds()
	secure := func(mech, user, pass string) []client.Opt {
		return []client.Opt{client.Brokers(seeds...), client.TLSCAFile(files.CA), client.SASL(mech, user, pass)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	adm, err := client.NewAdmin(secure(client.SASLScramSHA512, "admin", "admin-secret")...)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	// The node seeds admin right after the cluster forms; until then
	// authentication fails, so wait for it.
	for {
		_, err := adm.ListUsers(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("admin never authenticated: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := adm.UpsertUser(ctx, "app", "app-secret", client.SASLScramSHA256, 8192); err != nil {
		t.Fatal(err)
	}
	var ke *client.KafkaError
	if err := adm.UpsertUser(ctx, "app", "x", client.SASLScramSHA512, 100); !errors.As(err, &ke) || ke.Code != 93 { // UNACCEPTABLE_CREDENTIAL
		t.Fatalf("100 iterations: %v", err)
	}
	users, err := adm.ListUsers(ctx)
	if err != nil || len(users) != 3 {
		t.Fatalf("users %+v, %v", users, err)
	}
	if err := adm.CreateTopic(ctx, "secure", 1, 1, nil); err != nil {
		t.Fatal(err)
	}

	p, err := client.NewProducer(secure(client.SASLScramSHA256, "app", "app-secret")...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := p.ProduceSync(ctx, &client.Record{Topic: "secure", Value: []byte("over TLS")}); err != nil {
		t.Fatal(err)
	}
	// PLAIN checks the password against the stored SCRAM credential.
	cons, err := client.NewConsumer(append(secure(client.SASLPlain, "app", "app-secret"),
		client.ConsumeTopics("secure"), client.ConsumeResetOffset(client.AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	recs, err := cons.Poll(ctx)
	if err != nil || len(recs) != 1 || string(recs[0].Value) != "over TLS" {
		t.Fatalf("poll: %v, %v", recs, err)
	}

	if err := adm.DeleteUser(ctx, "app", client.SASLScramSHA256); err != nil {
		t.Fatal(err)
	}
	if err := adm.DeleteUser(ctx, "app", client.SASLScramSHA256); !errors.As(err, &ke) || ke.Code != 91 { // RESOURCE_NOT_FOUND
		t.Fatalf("deleting again: %v", err)
	}
	bad, err := client.NewAdmin(secure(client.SASLScramSHA256, "app", "app-secret")...)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.ListTopics(ctx)
	if !errors.As(err, &ke) || ke.Code != 58 || client.IsRetriable(err) { // SASL_AUTHENTICATION_FAILED
		t.Fatalf("deleted user: %v", err)
	}
}
