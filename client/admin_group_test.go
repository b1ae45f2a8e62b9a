package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestAdminGroups lists, describes, resets and deletes a group on kfake:
// with members (describe shows them; reset and delete are refused), then
// empty.
func TestAdminGroups(t *testing.T) {
	kc := newGroupKfake(t, 4, "t")
	ctx := timeoutCtx(t)
	adm, err := NewAdmin(Brokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	a := startMember(t, groupOpts(kc, "g", "t", ClientID("a"), AutoCommit(false))...)
	b := startMember(t, groupOpts(kc, "g", "t", ClientID("b"), AutoCommit(false))...)
	checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
	produceEach(t, kc, "t", 4, 0, 5)
	checkFor(t, "20 records", func() bool { return a.count()+b.count() == 20 })
	if err := a.g.Commit(ctx, map[string]map[int32]int64{"t": {0: 2, 1: 5}}); err != nil {
		t.Fatal(err)
	}

	checkDescribed(t, adm)
	checkGroupOffsets(t, adm)

	var ne *GroupNotEmptyError
	if _, err := adm.ResetGroupOffsets(ctx, "g", AtStart()); !errors.As(err, &ne) || !errors.Is(err, ErrNonEmptyGroup) || ne.Members != 2 {
		t.Fatalf("reset of a group with members: %v", err)
	}
	if err := adm.DeleteGroup(ctx, "g"); !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("delete of a group with members: %v", err)
	}
	a.close(t)
	b.close(t)
	checkResets(t, kc, adm)

	if err := adm.DeleteGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DescribeGroup(ctx, "g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("describe of a deleted group: %v", err)
	}
	if err := adm.DeleteGroup(ctx, "g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("delete of a deleted group: %v", err)
	}

	// A group that exists but has committed nothing: name the topics.
	e := startMember(t, groupOpts(kc, "e", "t", AutoCommit(false))...)
	checkFor(t, "e's assignment", func() bool { return assignedCount(e.g) == 4 })
	e.close(t)
	if _, err := adm.ResetGroupOffsets(ctx, "e", AtStart()); !errors.Is(err, ErrNoOffsetsToReset) {
		t.Fatalf("reset of a group without offsets: %v", err)
	}
}

// checkDescribed lists and describes group g: members a and b, each with
// two partitions of t.
func checkDescribed(t *testing.T, adm *Admin) {
	ctx := timeoutCtx(t)
	ls, err := adm.ListGroups(ctx)
	if err != nil || len(ls) != 1 || ls[0].Group != "g" || ls[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v, %v", ls, err)
	}
	var d *GroupDetail
	checkFor(t, "a stable group", func() bool {
		d, err = adm.DescribeGroup(ctx, "g")
		return err == nil && d.State == "Stable"
	})
	if d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("DescribeGroup: %+v", d)
	}
	for i, m := range d.Members {
		want := map[string][]int32{"t": {int32(2 * i), int32(2*i + 1)}}
		if m.ClientID != []string{"a", "b"}[i] || fmt.Sprint(m.Assignment) != fmt.Sprint(want) || !slices.Equal(m.Topics, []string{"t"}) || m.ClientHost == "" {
			t.Fatalf("member %d: %+v, want client %s assigned %v", i, m, []string{"a", "b"}[i], want)
		}
	}

}

// checkGroupOffsets: t[0] and t[1] committed by a, t[2] and t[3] not.
func checkGroupOffsets(t *testing.T, adm *Admin) {
	offs, err := adm.GroupOffsets(timeoutCtx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range offs {
		got = append(got, fmt.Sprintf("%s[%d] %d/%d lag %d %s", o.Topic, o.Partition, o.Committed, o.LogEnd, o.Lag, o.ClientID))
	}
	want := []string{"t[0] 2/5 lag 3 a", "t[1] 5/5 lag 0 a", "t[2] -1/5 lag -1 b", "t[3] -1/5 lag -1 b"}
	if !slices.Equal(got, want) {
		t.Fatalf("GroupOffsets:\n%q\nwant\n%q", got, want)
	}
}

// checkResets resets the empty group g, and a group that does not exist.
func checkResets(t *testing.T, kc *kfake.Cluster, adm *Admin) {
	ctx := timeoutCtx(t)
	for _, tc := range []struct {
		to     Offset
		topics []string
		want   string
	}{
		{AtStart(), nil, "[{t 0 2 0} {t 1 5 0}]"},
		{AtEnd(), nil, "[{t 0 0 5} {t 1 0 5}]"},
		{At(3), []string{"t"}, "[{t 0 5 3} {t 1 5 3} {t 2 -1 3} {t 3 -1 3}]"},
		{At(100), nil, "[{t 0 3 5} {t 1 3 5} {t 2 3 5} {t 3 3 5}]"},
	} {
		rs, err := adm.ResetGroupOffsets(ctx, "g", tc.to, tc.topics...)
		if err != nil || fmt.Sprint(rs) != tc.want {
			t.Fatalf("reset to %v %v: %v, %v; want %s", tc.to, tc.topics, rs, err, tc.want)
		}
	}
	if c := committedOf(t, kc, "g"); c[tp{"t", 2}].offset != 5 {
		t.Fatalf("committed after the resets: %v", c)
	}
	// A group that does not exist yet starts at the reset offsets.
	if _, err := adm.ResetGroupOffsets(ctx, "new", AtStart()); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("reset of an unknown group without topics: %v", err)
	}
	if rs, err := adm.ResetGroupOffsets(ctx, "new", At(4), "t"); err != nil || len(rs) != 4 {
		t.Fatalf("reset of a new group: %v, %v", rs, err)
	}
}
