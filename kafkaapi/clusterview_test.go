package kafkaapi

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// listsEverything are the APIs whose request, with nothing named, asks
// about every topic or partition: they may build Cluster's whole view.
var listsEverything = map[kmsg.Key]bool{
	kmsg.Metadata:                true, // v1+: a null topic list is every topic
	kmsg.DescribeTopicPartitions: true,
	kmsg.ElectLeaders:            true, // null topics: every partition
}

// Every API the server supports, sent at its newest version with its
// fields at their defaults (no topic, group or resource named), answers
// without building Cluster's whole view unless its answer lists every
// topic. A handler that builds it regardless makes each of its requests
// cost more with every partition in the cluster; broker's
// TestPerRequestCostDoesNotGrowWithPartitions measures the kinds known
// today with a topic named, this sweep finds a new handler that does it.
func TestRequestsWithoutTheClusterView(t *testing.T) {
	calls := new(atomic.Int32)
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		return lookupElsewhere{leaderElsewhere{fb}, calls}
	})
	h.fb.addTopic("t", 2)
	for _, a := range apis {
		req := kmsg.RequestForKey(int16(a.key))
		if d, ok := req.(interface{ Default() }); ok {
			d.Default()
		}
		req.SetVersion(a.max)
		if p, ok := req.(*kmsg.ProduceRequest); ok {
			p.Acks = -1 // acks=0 is never answered
		}
		c := h.dial()
		calls.Store(0)
		c.send(req)
		_, _, err := c.readFrame() // a SASL request out of turn closes the connection
		c.nc.Close()
		built := calls.Load() > 0
		switch {
		case built && !listsEverything[a.key]:
			t.Errorf("%s v%d with nothing named built the whole cluster view (answered: %v)", kmsg.NameForKey(int16(a.key)), a.max, err == nil)
		case !built && listsEverything[a.key]:
			t.Errorf("%s v%d with nothing named did not read the cluster view: take it off listsEverything", kmsg.NameForKey(int16(a.key)), a.max)
		}
	}
}
