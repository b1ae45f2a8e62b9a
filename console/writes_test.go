package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

const adminKey = "test-admin-key-0123456789"

// post sends a write with the given admin key ("" for none) and returns
// the status.
func post(t *testing.T, url, key, ctype, body string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if key != "" {
		req.Header.Set("X-Console-Admin-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// With console_admin_key set, the write actions run for a request that
// presents the key, and only then: through the API (wrong key, no key,
// not JSON refused), and through the pages in headless Chromium (unlock,
// create a topic, reset a group's offsets to the end, delete the topic).
func TestConsoleWritesWithAdminKey(t *testing.T) {
	b := newBrowser(t)
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.ConsoleAdminKey = adminKey })
	srv := httptest.NewServer(c.Node(1).AdminHandler())
	t.Cleanup(srv.Close)
	api := srv.URL + "/console/api/"
	adm := kadm.NewClient(c.Client(t))

	writesThroughAPI(t, api, adm)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A group 3 records behind on topic made, reset to the end through
	// the page.
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "made", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "made", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "late", offsets); err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/console/#/"
	b.open(base+"group/late", "group")
	if got := b.cells("offsets", 4); !slices.Equal(got, []string{"3"}) {
		t.Fatalf("late's lag %v, want 3", got)
	}
	if got := b.texts(`[...document.querySelectorAll("form.write")].map(f => f.id)`); len(got) != 0 {
		t.Errorf("write forms %v before unlocking", got)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#admin-key"), adminKey), chromedp.Click(chromedp.CSS("#unlock button")),
		chromedp.WaitReady(chromedp.CSS("#reset-group")),
		chromedp.SetValue(chromedp.CSS(`#reset-group select[name="to"]`), "latest"),
		chromedp.Click(chromedp.CSS("#reset-group button")))
	// Every partition of the topic is reset, as Kafka's tool does.
	eventually(t, 20*time.Second, "late's offsets reset to the ends", func() bool {
		return slices.Equal(b.cells("offsets", 2), []string{"3", "0"}) && slices.Equal(b.cells("offsets", 4), []string{"0", "0"})
	})
	b.shot("group-reset")
	b.noErrors("group reset")

	// Delete the topic from its page; the unlock holds across pages.
	b.texts(`location.hash = "#/topic/made"; []`)
	b.do(chromedp.WaitReady(chromedp.CSS(`body[data-page="topic"][data-state="ready"] #delete-topic`)),
		chromedp.Click(chromedp.CSS("#delete-confirm")), chromedp.Click(chromedp.CSS("#delete-topic button")),
		chromedp.WaitReady(chromedp.CSS(`body[data-page="topics"][data-state="ready"] #create-topic`)))
	eventually(t, 20*time.Second, "topic made gone", func() bool {
		md, err := adm.Metadata(ctx, "made")
		return err == nil && md.Topics["made"].Err != nil
	})
	b.noErrors("delete topic")

	// Create one through the topics page.
	b.do(chromedp.SetValue(chromedp.CSS(`#create-topic input[name="name"]`), "from-page"),
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name="partitions"]`), "3"),
		chromedp.Click(chromedp.CSS("#create-topic button")))
	eventually(t, 20*time.Second, "topic from-page listed", func() bool {
		return slices.Contains(b.cells("topics", 0), "from-page")
	})
	if md, err := adm.Metadata(ctx, "from-page"); err != nil || len(md.Topics["from-page"].Partitions) != 3 {
		t.Errorf("from-page: %v %+v", err, md.Topics)
	}
	b.shot("topics-created")
	b.noErrors("create topic")
	resetRefusedWhileMembers(t, c, api)
}

// resetRefusedWhileMembers: a group with a member is not reset (409); its
// member would overwrite the offsets.
func resetRefusedWhileMembers(t *testing.T, c *testcluster.Cluster, api string) {
	t.Helper()
	member := c.Client(t, kgo.ConsumerGroup("busy"), kgo.ConsumeTopics("from-page"))
	adm := kadm.NewClient(c.Client(t))
	eventually(t, 20*time.Second, "busy has a member", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		member.PollFetches(ctx)
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := adm.DescribeGroups(ctx, "busy")
		return err == nil && len(d["busy"].Members) == 1
	})
	if code := post(t, api+"groups/busy/reset", adminKey, "application/json", `{"topic":"from-page","to":"earliest"}`); code != http.StatusConflict {
		t.Errorf("reset of a group with a member: %d, want 409", code)
	}

	// A KIP-848 consumer group, which DescribeGroups does not describe,
	// with its member: refused too; a share group, which commits no
	// offsets, is refused; a group that does not exist yet is given the
	// offsets.
	modern := c.Client(t, kgo.ConsumerGroup("busy848"), kgo.ConsumeTopics("from-page"), kgo.ServerSideBalancer())
	eventually(t, 20*time.Second, "busy848 has a member", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		modern.PollFetches(ctx)
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := adm.DescribeConsumerGroups(ctx, "busy848")
		return err == nil && len(d["busy848"].Members) == 1
	})
	if code := post(t, api+"groups/busy848/reset", adminKey, "application/json", `{"topic":"from-page","to":"earliest"}`); code != http.StatusConflict {
		t.Errorf("reset of a KIP-848 group with a member: %d, want 409", code)
	}
	shareJoin(t, c.Client(t), "shared", "shared-member-1", "from-page")
	if code := post(t, api+"groups/shared/reset", adminKey, "application/json", `{"topic":"from-page","to":"earliest"}`); code != http.StatusBadRequest {
		t.Errorf("reset of a share group: %d, want 400", code)
	}
	if code := post(t, api+"groups/fresh/reset", adminKey, "application/json", `{"topic":"from-page","to":"latest"}`); code != http.StatusOK {
		t.Errorf("reset of a group that does not exist: %d, want 200", code)
	}
}

// writesThroughAPI checks that a write needs the key and a JSON body, and
// creates topic made (2 partitions) with the key.
func writesThroughAPI(t *testing.T, api string, adm *kadm.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		key, ctype string
		want       int
	}{
		{"", "application/json", http.StatusForbidden},
		{"wrong-key-0123456789", "application/json", http.StatusForbidden},
		{adminKey, "text/plain", http.StatusBadRequest},
	} {
		if code := post(t, api+"topics", tc.key, tc.ctype, `{"name":"refused"}`); code != tc.want {
			t.Errorf("create with key %q, %s: %d, want %d", tc.key, tc.ctype, code, tc.want)
		}
	}
	if code := post(t, api+"topics", adminKey, "application/json", `{"name":"made","partitions":2,"replicationFactor":1}`); code != http.StatusOK {
		t.Fatalf("create with the key: %d", code)
	}
	if code := post(t, api+"topics", adminKey, "application/json", `{"name":"made"}`); code != http.StatusConflict {
		t.Errorf("create again: %d, want 409", code)
	}
	if md, err := adm.Metadata(ctx, "made", "refused"); err != nil || len(md.Topics["made"].Partitions) != 2 || md.Topics["refused"].Err == nil {
		t.Fatalf("after the creates: %v %+v", err, md.Topics)
	}
}
