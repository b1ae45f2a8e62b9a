package client

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// newAdmin creates an admin client of kc that the test closes.
func newAdmin(t *testing.T, kc *kfake.Cluster) *Admin {
	t.Helper()
	adm, err := NewAdmin(Brokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return adm
}

func TestAdminShareGroupListAndOffsets(t *testing.T) {
	kc := newShareKfake(t, 1, 2, "sg", "t")
	produceEach(t, kc, "t", 2, 0, 5)
	adm := newAdmin(t, kc)
	s := newShare(t, shareOpts(kc, "sg", "t")...)
	recs := pollN(t, s, 10)
	for _, r := range recs {
		if r.Partition == 1 {
			if err := s.Acknowledge(r, AckRelease); err != nil {
				t.Fatal(err)
			}
		} else if err := s.Acknowledge(r, AckAccept); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CommitSync(timeoutCtx(t)); err != nil {
		t.Fatal(err)
	}
	gs, err := adm.ListGroups(timeoutCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].Group != "sg" || gs[0].Type != "share" {
		t.Fatalf("ListGroups = %+v; want share group sg", gs)
	}
	offs, err := adm.ShareGroupOffsets(timeoutCtx(t), "sg")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 2 || offs[0].StartOffset != 5 || offs[0].Lag != 0 || offs[1].StartOffset != 0 || offs[1].Lag != 5 {
		t.Fatalf("ShareGroupOffsets = %+v; want t[0] at 5 lag 0, t[1] at 0 lag 5", offs)
	}
	// Reset refuses a group with members.
	_, err = adm.ResetShareGroupOffsets(timeoutCtx(t), "sg", AtEnd(), "t")
	var ne *GroupNotEmptyError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("reset of a group with members: %v", err)
	}
	if err := s.Close(timeoutCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := adm.ResetShareGroupOffsets(timeoutCtx(t), "sg", AtEnd(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Old != 0 || got[1].New != 5 {
		t.Fatalf("reset = %+v; want t[1] 0 -> 5", got)
	}
	offs, err = adm.ShareGroupOffsets(timeoutCtx(t), "sg")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 2 || offs[1].StartOffset != 5 {
		t.Fatalf("after reset ShareGroupOffsets = %+v", offs)
	}
	// A new member gets nothing: everything is before the start.
	pollNone(t, newShare(t, shareOpts(kc, "sg", "t")...))
}

func TestAdminDescribeShareGroupMissing(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	adm := newAdmin(t, kc)
	if _, err := adm.DescribeShareGroup(timeoutCtx(t), "nope"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("describe of a missing share group: %v", err)
	}
}
