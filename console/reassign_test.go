package console_test

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A partition move that cannot finish (its new replica's node is down)
// is listed on the reassignments page with the replicas added and
// removed.
func TestConsoleReassignmentsInChromium(t *testing.T) {
	b := newBrowser(t)
	c, replicas, spare := testcluster.StuckMove(t)
	console := 1
	if spare == 1 {
		console = 2
	}
	srv := httptest.NewServer(c.Node(console).AdminHandler())
	t.Cleanup(srv.Close)
	row := func() []string {
		return b.texts(`[...document.querySelectorAll("#reassignments tbody tr:not(.empty)")].map(r => [...r.cells].map(c => c.innerText).join("|"))`)
	}
	want := []string{"moving|0|" + ids(spare, replicas[1], replicas[2], replicas[0]) + "|" + ids(spare) + "|" + ids(replicas[0])}
	b.openUntil(srv.URL+"/console/#/reassignments", "reassignments", func() bool { return slices.Equal(row(), want) })
	if got := row(); !slices.Equal(got, want) {
		t.Errorf("reassignments %q, want %q", got, want)
	}
	b.shot("reassignments")
	b.noErrors("reassignments")
}

// ids formats node ids as the pages do.
func ids(ns ...int32) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(int(n))
	}
	return strings.Join(out, ", ")
}
