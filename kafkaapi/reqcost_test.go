package kafkaapi

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocated is what f allocates, in bytes.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// requestFrame is req's frame as the server reads it (no size prefix).
func requestFrame(req kmsg.Request) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)[4:]
}

// shape is a request built to amplify when decoded.
type shape struct {
	name  string
	frame []byte
}

// sliceFields are the indexes of v's fields that are slices of entries
// (not bytes).
func sliceFields(t reflect.Type) []int {
	var out []int
	for i := range t.NumField() {
		if f := t.Field(i).Type; f.Kind() == reflect.Slice && f.Elem().Kind() != reflect.Uint8 {
			out = append(out, i)
		}
	}
	return out
}

// fill sets the slice s to n zero entries, each carrying an unknown
// tagged field if tagged.
func fill(s reflect.Value, n int, tagged bool) {
	s.Set(reflect.MakeSlice(s.Type(), n, n))
	if !tagged || s.Type().Elem().Kind() != reflect.Struct {
		return
	}
	for i := range n {
		if f := s.Index(i).FieldByName("UnknownTags"); f.IsValid() {
			f.Addr().Interface().(*kmsg.Tags).Set(100, nil)
		}
	}
}

// amplifying builds, for every supported API version, the shapes that
// amplify most: each top-level array, and each array of one entry of a
// top-level array, holding n zero entries, with and without an unknown
// tagged field on each; and n tagged fields on the request itself.
func amplifying(n int) []shape {
	var out []shape
	add := func(name string, req kmsg.Request) {
		if f := requestFrame(req); len(f) > 1000 { // fields not in the version stay empty
			out = append(out, shape{name, f})
		}
	}
	for _, a := range apis {
		for v := a.min; v <= a.max; v++ {
			newReq := func() (kmsg.Request, reflect.Value) {
				r := kmsg.RequestForKey(int16(a.key))
				r.SetVersion(v)
				return r, reflect.ValueOf(r).Elem()
			}
			name := fmt.Sprintf("%s v%d", kmsg.NameForKey(int16(a.key)), v)
			if r, rv := newReq(); rv.FieldByName("UnknownTags").IsValid() {
				for k := range n {
					rv.FieldByName("UnknownTags").Addr().Interface().(*kmsg.Tags).Set(uint32(100+k), nil)
				}
				add(name+" request tags", r)
			}
			_, rv := newReq()
			for _, i := range sliceFields(rv.Type()) {
				for _, tagged := range []bool{false, true} {
					r, rv := newReq()
					fill(rv.Field(i), n, tagged)
					add(fmt.Sprintf("%s %s[%d] tagged=%v", name, rv.Type().Field(i).Name, n, tagged), r)
					et := rv.Field(i).Type().Elem()
					if et.Kind() != reflect.Struct {
						continue
					}
					for _, j := range sliceFields(et) {
						r, rv := newReq()
						fill(rv.Field(i), 1, false)
						fill(rv.Field(i).Index(0).Field(j), n, tagged)
						add(fmt.Sprintf("%s %s[1].%s[%d] tagged=%v", name, rv.Type().Field(i).Name, et.Field(j).Name, n, tagged), r)
					}
				}
			}
		}
	}
	return out
}

// Decoding never allocates more than RequestCost charges, for any API
// and version, in the shapes that amplify most.
func TestRequestCostBoundsDecoding(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	shapes := amplifying(5000)
	type ratio struct {
		name   string
		x      float64
		costed float64
	}
	var ratios []ratio
	for _, s := range shapes {
		h, err := peekHeader(s.frame)
		if err != nil {
			t.Fatal(err)
		}
		var req kmsg.Request
		got := allocated(func() {
			if req, _, err = decodeRequest(s.frame, h); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		})
		runtime.KeepAlive(req)
		cost := RequestCost(s.frame)
		if int64(got) > cost {
			t.Errorf("%s: decoding %d bytes allocated %d, more than the %d charged", s.name, len(s.frame), got, cost)
		}
		ratios = append(ratios, ratio{s.name, float64(got) / float64(len(s.frame)), float64(cost) / float64(len(s.frame))})
	}
	slices.SortFunc(ratios, func(a, b ratio) int { return int(b.x*10) - int(a.x*10) })
	for _, r := range ratios[:10] {
		t.Logf("%5.1fx decoded, %6.1fx charged: %s", r.x, r.costed, r.name)
	}
}

// consumerRequests are the requests a client of topics×parts partitions
// sends naming them all, at version v.
func consumerRequests(v int16, topics, parts int) []kmsg.Request {
	produce, fetch := kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest()
	commit, list, meta := kmsg.NewPtrOffsetCommitRequest(), kmsg.NewPtrListOffsetsRequest(), kmsg.NewPtrMetadataRequest()
	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	commit.Group = "g"
	for ti := range topics {
		name := fmt.Sprintf("topic-%05d", ti)
		pt, ft := kmsg.NewProduceRequestTopic(), kmsg.NewFetchRequestTopic()
		ct, lt, mt := kmsg.NewOffsetCommitRequestTopic(), kmsg.NewListOffsetsRequestTopic(), kmsg.NewMetadataRequestTopic()
		et := kmsg.NewOffsetForLeaderEpochRequestTopic()
		pt.Topic, ft.Topic, ct.Topic, lt.Topic, mt.Topic, et.Topic = name, name, name, name, &name, name
		for p := range int32(parts) {
			pp, fp := kmsg.NewProduceRequestTopicPartition(), kmsg.NewFetchRequestTopicPartition()
			cp, lp := kmsg.NewOffsetCommitRequestTopicPartition(), kmsg.NewListOffsetsRequestTopicPartition()
			pp.Partition, pp.Records = p, makeBatch(1, "value")
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 1000, 1<<20
			cp.Partition, cp.Offset = p, 1000
			lp.Partition, lp.Timestamp = p, -1
			ep := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			ep.Partition, ep.LeaderEpoch = p, 5
			et.Partitions = append(et.Partitions, ep)
			pt.Partitions, ft.Partitions = append(pt.Partitions, pp), append(ft.Partitions, fp)
			ct.Partitions, lt.Partitions = append(ct.Partitions, cp), append(lt.Partitions, lp)
		}
		produce.Topics, fetch.Topics = append(produce.Topics, pt), append(fetch.Topics, ft)
		commit.Topics, list.Topics, meta.Topics = append(commit.Topics, ct), append(list.Topics, lt), append(meta.Topics, mt)
		epochs.Topics = append(epochs.Topics, et)
	}
	out := []kmsg.Request{produce, fetch, commit, list, meta, epochs}
	for _, r := range out {
		r.SetVersion(v)
	}
	return out
}

// Every version of the scanned APIs scans (else it would cost
// decodeFactor times its frame), and what they cost: a Produce's records
// add nothing, and a consumer of 100,000 partitions fits the default
// budget's half for costs.
func TestScannedRequestCosts(t *testing.T) {
	for v := range int16(13) {
		for _, req := range consumerRequests(v, 3, 4) {
			a, _ := lookupAPI(req.Key())
			if v < a.min || v > a.max {
				continue
			}
			f := requestFrame(req)
			h, _ := peekHeader(f)
			if _, ok := scanCost(h, f); !ok {
				t.Errorf("%s v%d does not scan", kmsg.NameForKey(req.Key()), v)
			}
		}
	}
	big := produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, string(make([]byte, 1<<20)))})
	if f := requestFrame(big); RequestCost(f) > 8<<10 {
		t.Errorf("a Produce of one 1 MiB batch costs %d bytes besides its frame", RequestCost(f))
	}
	// A group's subscription and assignment bytes stay in the frame: a
	// member with a 4 MiB subscription must not be refused.
	for v := range int16(10) {
		join := kmsg.NewPtrJoinGroupRequest()
		join.SetVersion(v)
		join.Group, join.ProtocolType = "g", "consumer"
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 4<<20)}}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.SetVersion(min(v, 5))
		sync.Group = "g"
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: make([]byte, 4<<20)}}
		for _, req := range []kmsg.Request{join, sync} {
			if f := requestFrame(req); RequestCost(f) > 64<<10 {
				t.Errorf("%s v%d with 4 MiB of member bytes costs %d besides its frame", kmsg.NameForKey(req.Key()), req.GetVersion(), RequestCost(f))
			}
		}
	}
	for _, req := range consumerRequests(0, 1000, 100)[1:] {
		a, _ := lookupAPI(req.Key())
		req.SetVersion(a.max)
		f := requestFrame(req)
		cost := RequestCost(f)
		t.Logf("%s v%d of 100,000 partitions: frame %d bytes, cost %d (%.1fx)", kmsg.NameForKey(req.Key()), req.GetVersion(), len(f), cost, float64(cost)/float64(len(f)))
		if cost > DefaultQueuedMaxRequestBytes/2 || cost > 45<<20 {
			t.Errorf("it does not fit the default budget's half for costs (%d bytes), or costs more than the 45 MiB documented", DefaultQueuedMaxRequestBytes/2)
		}
	}
}
