package interop

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// librdkafka (kcat) as a SASL user without WRITE on a topic is refused
// with TOPIC_AUTHORIZATION_FAILED, and produces once an ACL allows it.
func TestKcatACLDenied(t *testing.T) {
	path := requireKcat(t)
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key}}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}, {Name: "alice", Password: "alice-secret"}}
		cfg.AuthorizationEnabled = true
		cfg.SuperUsers = []string{"User:admin"}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	tlsCfg, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	authed := func(user, pass string) *kgo.Client {
		cl := c.Client(t, kgo.DialTLSConfig(tlsCfg.Clone()), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
			cancel()
			if err == nil {
				return cl
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never authenticated: %v", user, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	adm := kadm.NewClient(authed("admin", "admin-secret"))
	authed("alice", "alice-secret")
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "guarded"); err != nil {
		t.Fatal(err)
	}
	kcat := func(stdin string, args ...string) (string, error) {
		base := []string{"-b", strings.Join(c.Seeds(), ","),
			"-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + files.CA,
			"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
		cmd := exec.CommandContext(ctx, path, append(base, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err := cmd.Run()
		return errOut.String(), err
	}
	errOut, err := kcat("x\n", "-P", "-t", "guarded", "-X", "message.timeout.ms=5000")
	if err == nil || !strings.Contains(errOut, "Topic authorization failed") {
		t.Fatalf("kcat without WRITE: err %v\nstderr:\n%s", err, errOut)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("guarded").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create ACL: %+v, %v", res, err)
	}
	if errOut, err := kcat("x\n", "-P", "-t", "guarded"); err != nil {
		t.Fatalf("kcat with WRITE: %v\nstderr:\n%s", err, errOut)
	}
}
