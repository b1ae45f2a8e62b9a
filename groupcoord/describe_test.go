package groupcoord

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DescribeGroups (v6 view) describes classic groups only, with Kafka 4.x's
// messages: an unknown group is "not found", and a consumer group is "not
// a classic group" even while it still has a classic member (mid online
// migration), which Kafka describes through ConsumerGroupDescribe only.
// Once the last KIP-848 member leaves, the group is classic again and
// DescribeGroups describes it.
func TestDescribeGroupNonClassic(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	wantDescribeErr := func(group, msg string) {
		t.Helper()
		d := h.describe(group)
		if d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" || d.ErrorMessage == nil || *d.ErrorMessage != msg ||
			len(d.Members) != 0 || d.ProtocolType != "" {
			t.Fatalf("describe %s: %s state %q message %v members %d, want GROUP_ID_NOT_FOUND, Dead, %q",
				group, errName(d.ErrorCode), d.State, d.ErrorMessage, len(d.Members), msg)
		}
	}
	wantDescribeErr("absent", "Group absent not found.")

	j := h.join(classicJoinT("m", ""))
	c := j.MemberID
	wantCode(t, "classic sync", h.sync(syncReq(5, "m", c, nil, j.Generation, map[string][]byte{c: assignmentT(0, 1, 2, 3)})).ErrorCode, nil)
	if d := h.describe("m"); d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.Protocol == "" {
		t.Fatalf("the classic group: %+v", d)
	}
	n := h.cgHeartbeat(hb("m", "n", 0, []string{"t"}, nil))
	wantCode(t, "a KIP-848 member joins the classic group", n.ErrorCode, nil)
	wantDescribeErr("m", "Group m is not a classic group.")
	if cg := h.c.DescribeConsumerGroup("m"); cg.ErrorCode != 0 || len(cg.Members) != 2 {
		t.Fatalf("ConsumerGroupDescribe of the migrating group: %s with %d members, want both", errName(cg.ErrorCode), len(cg.Members))
	}

	h.cgHeartbeat(hb("m", "n", n.MemberEpoch, nil, nil))
	wantCode(t, "the KIP-848 member leaves", h.cgHeartbeat(hb("m", "n", -1, nil, nil)).ErrorCode, nil)
	if d := h.describe("m"); d.ErrorCode != 0 || d.State == "Dead" || len(d.Members) != 1 || d.Members[0].MemberID != c {
		t.Fatalf("the downgraded group: %s state %s members %d", errName(d.ErrorCode), d.State, len(d.Members))
	}

	h.shareHB(shb("sg", "a", 0, "t"))
	wantDescribeErr("sg", "Group sg is not a classic group.")
}
