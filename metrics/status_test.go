package metrics_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestStatusPageInChromium opens a node's status page in headless
// Chromium: the rendered page lists the three brokers and a partition
// table with the topic's partitions, their leader and replicas, and the
// group's lag. With MINIKAFKA_UPDATE_DOCS=1 the screenshot goes to
// docs/status-page.png, else to a temporary directory.
func TestStatusPageInChromium(t *testing.T) {
	chromium := needTool(t, "chromium", "chromium")
	c := testcluster.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 12 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 3), Value: []byte("order")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "billing", offsets); err != nil {
		t.Fatal(err)
	}
	urls := adminServers(t, c)
	// The coordinator of "billing" shows the group; find its page (a
	// leadership may be moving to its preferred replica meanwhile).
	url := ""
	for url == "" && ctx.Err() == nil {
		for _, u := range urls {
			if body, _ := get(t, u+"/"); strings.Contains(body, "<td>billing</td>") {
				url = u
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if url == "" {
		t.Fatal("no node's status page shows the group billing")
	}

	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
		// Its own deadline: Chromium starts slowly on a loaded machine.
		cctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, chromium, args...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return out.String()
	}
	dom := run("--dump-dom", url+"/")
	for _, want := range []string{
		`<table id="brokers">`, `<table id="partitions">`, `<table id="groups">`,
		"<td>1</td>", "<td>2</td>", "<td>3</td>", // broker ids
		"<td>orders</td>",
		"<td>billing</td>",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %s:\n%s", want, dom)
		}
	}
	parts, _, _ := strings.Cut(dom[strings.Index(dom, `<table id="partitions">`)+1:], "</table>")
	if n := strings.Count(parts, "<td>orders</td>"); n != 3 {
		t.Errorf("partition table has %d rows of orders, want 3", n)
	}
	// Each row names its three replicas.
	if n := len(regexp.MustCompile(`<td>[123], [123], [123]</td>`).FindAllString(parts, -1)); n < 3 {
		t.Errorf("%d replica lists in the partition table, want at least 3", n)
	}

	shot := filepath.Join(dir, "status-page.png")
	if os.Getenv("MINIKAFKA_UPDATE_DOCS") != "" {
		shot, _ = filepath.Abs(filepath.Join("..", "docs", "status-page.png"))
	}
	run("--screenshot="+shot, "--window-size=1100,900", url+"/")
	st, err := os.Stat(shot)
	if err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

// A partition move that cannot finish (its new replica's node is down) is
// listed on the status page with the replicas added and removed.
func TestStatusPageListsReassignments(t *testing.T) {
	c, replicas, spare := testcluster.StuckMove(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := fmt.Sprintf("<td>moving</td><td class=\"num\">0</td><td>%d, %d, %d, %d</td><td>%d</td><td>%d</td>",
		spare, replicas[1], replicas[2], replicas[0], spare, replicas[0])
	url := adminServers(t, c)[0] + "/"
	var table string
	for ctx.Err() == nil { // this node's copy of the metadata may lag the one that took the request
		body, _ := get(t, url)
		table, _, _ = strings.Cut(body[strings.Index(body, `<table id="reassignments">`):], "</table>")
		if strings.Contains(table, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("reassignments table lacks %s:\n%s", want, table)
}
