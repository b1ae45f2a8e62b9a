package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups of a group that is not classic answers as Kafka 4.x: from
// v6 GROUP_ID_NOT_FOUND with the coordinator's message; below v6 a Dead
// group without an error, and then (no error) with its authorized
// operations when asked. A classic group is the same at every version.
func TestDescribeGroupsNonClassicByVersion(t *testing.T) {
	_, c := withGroups(t, fakeGroups{node: 1, coord: &fakeCoordinator{}})
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{"modern", "classic"}
		req.IncludeAuthorizedOperations = v >= 3
		r := c.roundTrip(req).(*kmsg.DescribeGroupsResponse)
		if len(r.Groups) != 2 {
			t.Fatalf("v%d: %d groups", v, len(r.Groups))
		}
		m, cl := r.Groups[0], r.Groups[1]
		if m.Group != "modern" || m.State != "Dead" || len(m.Members) != 0 {
			t.Fatalf("v%d modern: %+v", v, m)
		}
		switch {
		case v >= 6 && (m.ErrorCode != kerr.GroupIDNotFound.Code || m.ErrorMessage == nil || *m.ErrorMessage != "Group modern is not a classic group."):
			t.Fatalf("v6 modern: code %d message %v, want GROUP_ID_NOT_FOUND and the message", m.ErrorCode, m.ErrorMessage)
		case v >= 6 && m.AuthorizedOperations != noAuthorizedOperations:
			t.Fatalf("v6 modern with an error carries operations %#x", m.AuthorizedOperations)
		case v < 6 && m.ErrorCode != 0:
			t.Fatalf("v%d modern: code %d, want none (Dead only)", v, m.ErrorCode)
		case v >= 3 && v < 6 && m.AuthorizedOperations != 0x148: // READ, DELETE, DESCRIBE
			t.Fatalf("v%d modern: operations %#x, want 0x148", v, m.AuthorizedOperations)
		}
		if cl.ErrorCode != 0 || cl.State != "Stable" {
			t.Fatalf("v%d classic: %+v", v, cl)
		}
	}
}
