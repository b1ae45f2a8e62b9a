package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// secureNode starts one node whose only listener is SASL_PLAINTEXT, with
// ACLs on, admin a super user and alice allowed to read and describe
// topic public and group g-public only; topics public and secret hold a
// record each, and groups g-public and g-secret committed offsets. It
// returns the console's base URL.
func secureNode(t *testing.T) string {
	t.Helper()
	return secureNodeOn(t, broker.ListenerConfig{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"})
}

// secureNodeOn is secureNode with listener l; opts are what a client
// needs on it besides SASL (TLS).
func secureNodeOn(t *testing.T, l broker.ListenerConfig, opts ...kgo.Opt) string {
	t.Helper()
	clientOpts := opts
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{l}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}, {Name: "alice", Password: "alice-secret"}}
		cfg.AuthorizationEnabled = true
		cfg.SuperUsers = []string{"User:admin"}
		cfg.Security.RaftAllowUnauthenticated = true // one node: no peers to authenticate
	})
	admin := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...),
			kgo.SASL(kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())}, clientOpts...), opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	eventually(t, 20*time.Second, "user admin created", func() bool {
		cl := admin(kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err == nil
	})
	cl := admin()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"public", "secret"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic + " record")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"g-public", "g-secret"} {
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: "public", Partition: 0, At: 0, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, g, offsets); err != nil {
			t.Fatal(err)
		}
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("public").Groups("g-public").
		Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 4 || slices.ContainsFunc(res, func(r kadm.CreateACLsResult) bool { return r.Err != nil }) {
		t.Fatalf("create ACLs: %v %v", err, res)
	}
	srv := httptest.NewServer(c.Node(1).AdminHandler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// With SASL on, an anonymous visitor gets the login form and no data (the
// API answers 401); alice, logged in through the form in headless
// Chromium, sees topic public and group g-public, not secret nor
// g-secret, and is refused secret's page; admin, a super user, sees all.
func TestConsoleSecurityInChromium(t *testing.T) {
	b := newBrowser(t)
	url := secureNode(t)
	for _, path := range []string{"overview", "topics", "topics/secret", "records?topic=secret", "groups", "throughput", "reassignments"} {
		if code := getJSON(t, http.DefaultClient, url+"/console/api/"+path, nil); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET /console/api/%s: %d, want 401", path, code)
		}
	}
	base := url + "/console/#/"

	b.open(base+"topics", "login")
	if got := b.texts(`[...document.querySelectorAll("table")].map(t => t.id)`); len(got) != 0 {
		t.Errorf("anonymous visitor sees tables %v", got)
	}
	b.shot("login")
	b.noErrors("login")

	login(b, "alice", "wrong")
	b.do(chromedp.WaitVisible(chromedp.CSS("#login-error")))
	b.takeErrors() // the refused login's 401

	login(b, "alice", "alice-secret")
	b.do(chromedp.WaitReady(chromedp.CSS(`body[data-page="topics"][data-state="ready"]`)))
	if got := b.cells("topics", 0); !slices.Equal(got, []string{"public"}) {
		t.Errorf("alice sees topics %v, want only public", got)
	}
	b.shot("topics-alice")
	b.noErrors("topics as alice")

	b.open(base+"groups", "groups")
	if got := b.cells("groups", 0); !slices.Equal(got, []string{"g-public"}) {
		t.Errorf("alice sees groups %v, want only g-public", got)
	}
	b.open(base, "overview")
	if got := b.texts(`[...document.querySelectorAll("#summary .card")].map(c => c.innerText.replace("\n", " "))`); !slices.Contains(got, "1 topics") {
		t.Errorf("alice's overview cards %q: want 1 topics", got)
	}
	b.noErrors("groups and overview as alice")

	b.open(base+"messages?topic=public&partition=0&offset=0", "messages")
	if got := b.cells("records", 3); !slices.Equal(got, []string{"public record"}) {
		t.Errorf("alice browsing public: %v", got)
	}
	b.noErrors("messages as alice")

	b.openIn(base+"topic/secret", "topic", "error")
	if got := b.texts(`[document.getElementById("error").innerText]`); !strings.Contains(got[0], "Not authorized") {
		t.Errorf("alice on secret's page: %q", got[0])
	}
	b.shot("secret-alice")
	b.takeErrors() // the refused request's 403

	b.do(chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitReady(chromedp.CSS(`body[data-page="login"]`)))
	b.open(base+"topics", "login")
	login(b, "admin", "admin-secret")
	b.do(chromedp.WaitReady(chromedp.CSS(`body[data-page="topics"][data-state="ready"]`)))
	if got := b.cells("topics", 0); !slices.Contains(got, "public") || !slices.Contains(got, "secret") {
		t.Errorf("admin sees topics %v, want public and secret", got)
	}
	b.open(base+"groups", "groups")
	if got := b.cells("groups", 0); !slices.Equal(got, []string{"g-public", "g-secret"}) {
		// Seen once under load (rows reversed) and not explained: keep the
		// page and its whole text for the next time.
		b.shot("groups-admin-unexpected")
		t.Errorf("admin sees groups %v, want g-public and g-secret; the page: %v", got,
			b.texts(`[document.getElementById("view").innerHTML]`))
	}
	b.noErrors("topics and groups as admin")
	t.Logf("screenshots in %s", b.shots)
}

// login fills the login form shown and submits it.
func login(b *browser, user, password string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SetValue(chromedp.CSS("#user"), user),
		chromedp.SetValue(chromedp.CSS("#password"), password),
		chromedp.SetValue(chromedp.CSS("#mechanism"), "SCRAM-SHA-512"),
		chromedp.Click(chromedp.CSS("#login-submit")))
}

// The session cookie is HttpOnly and SameSite=Strict, a login takes JSON
// only, and a logged-out session is refused.
func TestConsoleSessionCookie(t *testing.T) {
	url := secureNode(t)
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	post := func(path, ctype, body string) *http.Response {
		t.Helper()
		resp, err := cl.Post(url+"/console/api/"+path, ctype, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("login", "application/x-www-form-urlencoded", "User=alice&Password=alice-secret"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("form-encoded login: %d, want 400", resp.StatusCode)
	}
	resp := post("login", "application/json", `{"User":"alice","Password":"alice-secret","Mechanism":"SCRAM-SHA-256"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v: want one, HttpOnly, SameSite=Strict", ck)
	}
	var topics []struct{ Name string }
	if code := getJSON(t, cl, url+"/console/api/topics", &topics); code != http.StatusOK || len(topics) != 1 || topics[0].Name != "public" {
		t.Errorf("alice's topics: %d %v", code, topics)
	}
	if code := getJSON(t, cl, url+"/console/api/records?topic=secret", nil); code != http.StatusForbidden {
		t.Errorf("alice browsing secret: %d, want 403", code)
	}
	post("logout", "application/json", "")
	jar.SetCookies(resp.Request.URL, ck) // replay the old cookie
	if code := getJSON(t, cl, url+"/console/api/topics", nil); code != http.StatusUnauthorized {
		t.Errorf("after logout: %d, want 401", code)
	}
}

// Over a SASL_SSL listener with no CA file, the console trusts the
// listener's own certificate chain: a login and a topic list work.
func TestConsoleOverSASLSSL(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cliTLS, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	url := secureNodeOn(t, broker.ListenerConfig{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key},
		kgo.DialTLSConfig(cliTLS))
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	resp, err := cl.Post(url+"/console/api/login", "application/json",
		strings.NewReader(`{"User":"alice","Password":"alice-secret","Mechanism":"SCRAM-SHA-512"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login over SASL_SSL: %d", resp.StatusCode)
	}
	var topics []struct{ Name string }
	if code := getJSON(t, cl, url+"/console/api/topics", &topics); code != http.StatusOK || len(topics) != 1 || topics[0].Name != "public" {
		t.Errorf("alice's topics over SASL_SSL: %d %v", code, topics)
	}
}
