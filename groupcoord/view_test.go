package groupcoord

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The records are byte for byte what Kafka writes to __consumer_offsets
// (GroupCoordinatorRecordHelpers with key versions 1 and 2, value versions
// 3), written out by hand from the schemas in Kafka's
// group-coordinator/src/main/resources/common/message.
func TestRecordEncodingGolden(t *testing.T) {
	inst := "i1"
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"offset key", AppendOffsetKey(nil, "g", "t", 3),
			"0001" + "0001" + "67" + "0001" + "74" + "00000003"},
		{"offset value", AppendOffsetValue(nil, Offset{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: 1000}),
			"0003" + "000000000000002a" + "00000007" + "0001" + "6d" + "00000000000003e8"},
		{"group key", AppendGroupKey(nil, "g"), "0002" + "0001" + "67"},
		{"empty group value", AppendGroupValue(nil, &GroupMetadata{ProtocolType: "consumer", Generation: 2, StateTimestamp: 5}),
			"0003" + "0008" + hex.EncodeToString([]byte("consumer")) + "00000002" + "ffff" + "ffff" +
				"0000000000000005" + "00000000"},
		{"group value", AppendGroupValue(nil, &GroupMetadata{ProtocolType: "c", Generation: 1, Protocol: "r", Leader: "m",
			StateTimestamp: -1, Members: []Member{{ID: "m", InstanceID: &inst, ClientID: "k", ClientHost: "/h",
				RebalanceTimeout: 60000, SessionTimeout: 45000, Subscription: []byte{1}, Assignment: []byte{2, 3}}}}),
			"0003" + "0001" + "63" + "00000001" + "0001" + "72" + "0001" + "6d" + "ffffffffffffffff" + "00000001" +
				"0001" + "6d" + "0002" + "6931" + "0001" + "6b" + "0002" + "2f68" + "0000ea60" + "0000afc8" +
				"00000001" + "01" + "00000002" + "0203"},
	} {
		if got := hex.EncodeToString(tc.got); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// dump renders a view as text, for comparisons.
func dump(v *View) string {
	var b strings.Builder
	for _, g := range v.Groups() {
		fmt.Fprintf(&b, "group %q", g)
		if md, ok := v.Group(g); ok {
			fmt.Fprintf(&b, " type=%q gen=%d protocol=%q leader=%q ts=%d", md.ProtocolType, md.Generation, md.Protocol, md.Leader, md.StateTimestamp)
			for _, m := range md.Members {
				fmt.Fprintf(&b, " [%s inst=%s client=%s host=%s rt=%d st=%d sub=%x asg=%x]", m.ID, deref(m.InstanceID),
					m.ClientID, m.ClientHost, m.RebalanceTimeout, m.SessionTimeout, m.Subscription, m.Assignment)
			}
		}
		for _, o := range v.Offsets(g) {
			fmt.Fprintf(&b, " %s/%d=%d@%d(%q,%d)", o.Topic, o.Partition, o.Offset.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func mustApply(t *testing.T, v *View, recs ...Record) {
	t.Helper()
	for _, r := range recs {
		if err := v.Apply(r.Key, r.Value); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
}

// A script of records and the view after it: commits overwrite, tombstones
// delete, and a group with neither metadata nor offsets disappears.
func TestViewApply(t *testing.T) {
	md := &GroupMetadata{ProtocolType: "consumer", Generation: 3, Protocol: "range", Leader: "a", StateTimestamp: 9,
		Members: []Member{{ID: "a", ClientID: "c", ClientHost: "/1", RebalanceTimeout: 1, SessionTimeout: 2,
			Subscription: []byte("s"), Assignment: []byte("x")}}}
	steps := []struct {
		rec  Record
		want string
	}{
		{OffsetRecord("g", "t", 1, Offset{Offset: 5, LeaderEpoch: 2, Metadata: "m", CommitTimestamp: 100}),
			`group "g" t/1=5@2("m",100)`},
		{OffsetRecord("g", "t", 0, Offset{Offset: 3, LeaderEpoch: -1}),
			`group "g" t/0=3@-1("",0) t/1=5@2("m",100)`},
		{OffsetRecord("g", "t", 1, Offset{Offset: 6, LeaderEpoch: 2, CommitTimestamp: 101}),
			`group "g" t/0=3@-1("",0) t/1=6@2("",101)`},
		{GroupRecord("g", md),
			`group "g" type="consumer" gen=3 protocol="range" leader="a" ts=9 [a inst= client=c host=/1 rt=1 st=2 sub=73 asg=78] t/0=3@-1("",0) t/1=6@2("",101)`},
		{OffsetRecord("a", "u", 0, Offset{Offset: 1}),
			`group "a" u/0=1@0("",0)` + "\n" + `group "g" type="consumer" gen=3 protocol="range" leader="a" ts=9 [a inst= client=c host=/1 rt=1 st=2 sub=73 asg=78] t/0=3@-1("",0) t/1=6@2("",101)`},
		{OffsetTombstone("a", "u", 0),
			`group "g" type="consumer" gen=3 protocol="range" leader="a" ts=9 [a inst= client=c host=/1 rt=1 st=2 sub=73 asg=78] t/0=3@-1("",0) t/1=6@2("",101)`},
		{GroupTombstone("g"), `group "g" t/0=3@-1("",0) t/1=6@2("",101)`},
		{OffsetTombstone("g", "t", 0), `group "g" t/1=6@2("",101)`},
		{OffsetTombstone("g", "t", 9), `group "g" t/1=6@2("",101)`},
		{OffsetTombstone("g", "t", 1), ``},
		{GroupTombstone("never"), ``},
		{GroupRecord("e", &GroupMetadata{ProtocolType: "consumer", Generation: 1, StateTimestamp: -1}),
			`group "e" type="consumer" gen=1 protocol="" leader="" ts=-1`},
	}
	v := NewView()
	for i, s := range steps {
		mustApply(t, v, s.rec)
		want := s.want
		if want != "" {
			want += "\n"
		}
		if got := dump(v); got != want {
			t.Fatalf("step %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Records Kafka wrote at older value versions apply too: an offset value
// before v3 has no leader epoch (-1), a group value before v3 no instance
// ids, before v1 no rebalance timeouts (-1).
func TestViewAppliesOlderVersions(t *testing.T) {
	v := NewView()
	for ver := int16(0); ver <= 4; ver++ {
		val := kmsg.NewOffsetCommitValue()
		val.Version, val.Offset, val.LeaderEpoch, val.Metadata, val.CommitTimestamp = ver, int64(ver)+10, 5, "x", 77
		key := kmsg.OffsetCommitKey{Version: ver % 2, Group: "g", Topic: "t", Partition: int32(ver)}
		mustApply(t, v, Record{key.AppendTo(nil), val.AppendTo(nil)})
		gv := kmsg.NewGroupMetadataValue()
		gv.Version, gv.ProtocolType, gv.Generation = ver, "consumer", int32(ver)
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.InstanceID, m.RebalanceTimeoutMillis, m.SessionTimeoutMillis = "m", kmsg.StringPtr("i"), 30, 10
		gv.Members = []kmsg.GroupMetadataValueMember{m}
		mustApply(t, v, Record{AppendGroupKey(nil, fmt.Sprintf("g%d", ver)), gv.AppendTo(nil)})
	}
	want := `group "g" t/0=10@-1("x",77) t/1=11@-1("x",77) t/2=12@-1("x",77) t/3=13@5("x",77) t/4=14@5("x",77)
group "g0" type="consumer" gen=0 protocol="" leader="" ts=-1 [m inst= client= host= rt=-1 st=10 sub= asg=]
group "g1" type="consumer" gen=1 protocol="" leader="" ts=-1 [m inst= client= host= rt=30 st=10 sub= asg=]
group "g2" type="consumer" gen=2 protocol="" leader="" ts=-1 [m inst= client= host= rt=30 st=10 sub= asg=]
group "g3" type="consumer" gen=3 protocol="" leader="" ts=-1 [m inst=i client= host= rt=30 st=10 sub= asg=]
group "g4" type="consumer" gen=4 protocol="" leader="" ts=-1 [m inst=i client= host= rt=30 st=10 sub= asg=]
`
	if got := dump(v); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// Records the view cannot or must not apply leave it unchanged, with an
// error of the right kind.
func TestViewRejectsBadRecords(t *testing.T) {
	v := NewView()
	mustApply(t, v, OffsetRecord("g", "t", 0, Offset{Offset: 1}))
	before := dump(v)
	good := OffsetRecord("g", "t", 0, Offset{Offset: 2})
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       error
	}{
		{"empty key", nil, nil, ErrInvalidRecord},
		{"short key", []byte{0}, good.Value, ErrInvalidRecord},
		{"truncated offset key", good.Key[:len(good.Key)-1], good.Value, ErrInvalidRecord},
		{"truncated offset value", good.Key, good.Value[:5], ErrInvalidRecord},
		{"offset value version 9", good.Key, append([]byte{0, 9}, good.Value[2:]...), ErrInvalidRecord},
		{"truncated group value", AppendGroupKey(nil, "g"), []byte{0, 3, 0}, ErrInvalidRecord},
		{"truncated KIP-848 consumer group value", []byte{0, 3, 0, 1, 'g'}, []byte{0, 0}, ErrInvalidRecord},
		{"KIP-848 member key without its member", []byte{0, 5, 0, 1, 'g'}, []byte{0, 0}, ErrInvalidRecord},
		{"truncated share group value", []byte{0, 11, 0, 1, 'g'}, []byte{0, 0}, ErrInvalidRecord},
		{"share member key without its member", []byte{0, 10, 0, 1, 'g'}, []byte{0, 0}, ErrInvalidRecord},
		{"share partition metadata record", []byte{0, 15, 0, 1, 'g'}, []byte{0, 0}, ErrUnknownRecord},
		{"streams group record", []byte{0, 17, 0, 1, 'g'}, []byte{0, 0}, ErrUnknownRecord},
		{"negative key version", []byte{0xff, 0xff}, nil, ErrInvalidRecord},
	} {
		err := v.Apply(tc.key, tc.value)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if got := dump(v); got != before {
			t.Errorf("%s changed the view:\n%s", tc.name, got)
		}
	}
}

// A snapshot restores a view equal to the one replaying the log built,
// and a snapshot of the restored view is the same bytes.
func TestViewSnapshotRoundTrip(t *testing.T) {
	v := NewView()
	inst := "static-1"
	mustApply(t, v,
		OffsetRecord("b", "t", 2, Offset{Offset: 9, LeaderEpoch: 1, Metadata: "meta", CommitTimestamp: 5}),
		GroupRecord("b", &GroupMetadata{ProtocolType: "consumer", Generation: 4, Protocol: "range", Leader: "m1",
			StateTimestamp: 3, Members: []Member{{ID: "m1", InstanceID: &inst, ClientID: "c", ClientHost: "/h",
				RebalanceTimeout: 10, SessionTimeout: 6000, Subscription: []byte("sub"), Assignment: []byte{}}}}),
		OffsetRecord("a", "x", 0, Offset{Offset: 1, LeaderEpoch: -1}),
		GroupRecord("e", &GroupMetadata{ProtocolType: "consumer", Generation: 7, StateTimestamp: -1}),
	)
	snap := v.AppendSnapshot(nil)
	r := NewView()
	mustApply(t, r, OffsetRecord("stale", "t", 0, Offset{})) // replaced by Restore
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if dump(r) != dump(v) || !r.Equal(v) {
		t.Fatalf("restored\n%s\nwant\n%s", dump(r), dump(v))
	}
	if again := r.AppendSnapshot(nil); !slices.Equal(again, snap) {
		t.Fatal("snapshot of the restored view differs")
	}
	empty := NewView()
	if err := empty.Restore(NewView().AppendSnapshot(nil)); err != nil || len(empty.Groups()) != 0 {
		t.Fatalf("empty snapshot: %v %v", err, empty.Groups())
	}
	for _, bad := range [][]byte{nil, {2}, snap[:len(snap)-1], append(slices.Clone(snap), 3, 0, 1, 2)} {
		if err := r.Restore(bad); !errors.Is(err, ErrInvalidSnapshot) {
			t.Fatalf("Restore(%x...): %v", bad[:min(len(bad), 4)], err)
		}
		if !r.Equal(v) {
			t.Fatal("a failed Restore changed the view")
		}
	}
}

// ApplyBatch applies the records of a batch AppendBatch built, in order,
// skipping records of other kinds of groups.
func TestViewApplyBatch(t *testing.T) {
	recs := []Record{
		OffsetRecord("g", "t", 0, Offset{Offset: 1}),
		{Key: []byte{0, 17, 0, 0}, Value: []byte{1}}, // another kind of group (streams): skipped
		OffsetRecord("g", "t", 0, Offset{Offset: 2}),
		GroupTombstone("g"),
	}
	batch, err := AppendBatch(nil, recs, 1234)
	if err != nil {
		t.Fatal(err)
	}
	v := NewView()
	if err := v.ApplyBatch(batch); err != nil {
		t.Fatal(err)
	}
	if got := dump(v); got != "group \"g\" t/0=2@0(\"\",0)\n" {
		t.Fatalf("got %s", got)
	}
	if err := v.ApplyBatch(batch[:20]); err == nil {
		t.Fatal("a truncated batch applied")
	}
	if _, err := AppendBatch(nil, nil, 0); err == nil {
		t.Fatal("an empty batch was built")
	}
}

// Readers run while the state machine applies (go test -race checks the
// locking), and what they return is theirs.
func TestViewConcurrentReads(t *testing.T) {
	v := NewView()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, g := range v.Groups() {
					v.Offsets(g)
					if md, ok := v.Group(g); ok && len(md.Members) > 0 {
						md.Members[0].ID = "changed by a reader"
					}
				}
				v.Offset("g", "t", 0)
				v.AppendSnapshot(nil)
			}
		})
	}
	for i := range 500 {
		mustApply(t, v, OffsetRecord("g", "t", int32(i%7), Offset{Offset: int64(i)}),
			GroupRecord("g", &GroupMetadata{Generation: int32(i), Members: []Member{{ID: "m"}}}))
	}
	close(stop)
	wg.Wait()
	if md, _ := v.Group("g"); md.Members[0].ID != "m" || md.Generation != 499 {
		t.Fatalf("group %+v", md)
	}
}
