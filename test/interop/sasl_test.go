package interop

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
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

// saslSSLCluster starts one node whose only listener is SASL_SSL, with the
// user admin/admin-secret, and waits until admin can authenticate.
func saslSSLCluster(t *testing.T) (*testcluster.Cluster, testcert.Files, *kgo.Client) {
	t.Helper()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key}}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	tlsCfg, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Client(t, kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()))
	ctx := testContext(t)
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("admin never authenticated: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c, files, cl
}

// kcatSASL runs kcat over SASL_SSL; it returns stdout, stderr and the
// run's error.
func kcatSASL(t *testing.T, c *testcluster.Cluster, files testcert.Files, mech, pass, stdin string, args ...string) (string, string, error) {
	t.Helper()
	path := requireKcat(t)
	base := []string{"-b", strings.Join(c.Seeds(), ","),
		"-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + files.CA,
		"-X", "sasl.mechanisms=" + mech, "-X", "sasl.username=admin", "-X", "sasl.password=" + pass}
	cmd := exec.CommandContext(testContext(t), path, append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// librdkafka (kcat) produces and consumes over SASL_SSL with SCRAM-SHA-512
// and SCRAM-SHA-256, verifying the broker's certificate; with a wrong
// password it fails authentication.
func TestKcatSASLSSL(t *testing.T) {
	requireKcat(t)
	c, files, cl := saslSSLCluster(t)
	if _, err := kadm.NewClient(cl).CreateTopic(testContext(t), 1, 1, nil, "secure"); err != nil {
		t.Fatal(err)
	}
	must := func(out, errOut string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("kcat: %v\nstderr:\n%s", err, errOut)
		}
		return out
	}
	must(kcatSASL(t, c, files, "SCRAM-SHA-512", "admin-secret", "one\ntwo\n", "-P", "-t", "secure"))
	must(kcatSASL(t, c, files, "SCRAM-SHA-256", "admin-secret", "three\n", "-P", "-t", "secure"))
	out := must(kcatSASL(t, c, files, "SCRAM-SHA-256", "admin-secret", "", "-C", "-e", "-q", "-t", "secure", "-f", `%o %s\n`))
	if got, want := lines(out), []string{"0 one", "1 two", "2 three"}; !slices.Equal(got, want) {
		t.Fatalf("kcat read %q, want %q", got, want)
	}

	_, errOut, err := kcatSASL(t, c, files, "SCRAM-SHA-512", "wrong", "", "-L", "-m", "5")
	if err == nil || !strings.Contains(errOut, "Authentication failed") {
		t.Fatalf("wrong password: err %v\nstderr:\n%s", err, errOut)
	}
}
