package kafkaapi

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// featureBackend adds feature levels to the fake backend.
type featureBackend struct {
	*fakeBackend
	mu     sync.Mutex // guards levels
	levels []FeatureLevel
}

func (b *featureBackend) FeatureLevels() ([]SupportedFeature, []FeatureLevel, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return []SupportedFeature{{"group.version", 0, 1}, {"transaction.version", 0, 2}}, slices.Clone(b.levels), 42
}

func (b *featureBackend) SetFeatureLevels(_ context.Context, levels []FeatureLevel, validateOnly bool) error {
	for _, l := range levels {
		if l.Level > 2 {
			return kerr.InvalidUpdateVersion
		}
	}
	if validateOnly {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range levels {
		i := slices.IndexFunc(b.levels, func(c FeatureLevel) bool { return c.Name == l.Name })
		b.levels[i].Level = l.Level
	}
	return nil
}

// TestFeatures: ApiVersions v3+ lists the supported features and the
// finalized ones above level 0; UpdateFeatures refuses a downgrade without
// the downgrade type, answers an error at the top only and a success of
// v0-1 per feature, and a level of 0 leaves the feature out of ApiVersions.
func TestFeatures(t *testing.T) {
	fb := &featureBackend{levels: []FeatureLevel{{"group.version", 1}, {"transaction.version", 2}}}
	h := startServerWith(t, Config{}, func(f *fakeBackend) Backend { fb.fakeBackend = f; return fb })
	c := h.dial()
	finalized := func() map[string]int16 {
		resp := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse)
		if len(resp.SupportedFeatures) != 2 || resp.FinalizedFeaturesEpoch != 42 {
			t.Fatalf("supported %+v epoch %d", resp.SupportedFeatures, resp.FinalizedFeaturesEpoch)
		}
		out := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			out[f.Name] = f.MaxVersionLevel
		}
		return out
	}
	if got := finalized(); got["transaction.version"] != 2 || got["group.version"] != 1 {
		t.Fatalf("finalized %v", got)
	}
	if v0 := c.roundTrip(apiVersionsRequest(2)).(*kmsg.ApiVersionsResponse); len(v0.SupportedFeatures) != 0 {
		t.Fatalf("v2 lists features")
	}
	update := func(version int16, level int16, upgradeType int8, allow bool) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = version
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType, u.AllowDowngrade = "transaction.version", level, upgradeType, allow
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		return c.roundTrip(req).(*kmsg.UpdateFeaturesResponse)
	}
	if r := update(1, 0, 1, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code || len(r.Results) != 0 {
		t.Fatalf("downgrade as an upgrade: %+v", r)
	}
	if r := update(0, 0, 0, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("v0 downgrade without AllowDowngrade: %+v", r)
	}
	if r := update(2, 3, 1, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code || len(r.Results) != 0 {
		t.Fatalf("v2 level 3: %+v", r)
	}
	if r := update(2, 0, 2, false); r.ErrorCode != 0 {
		t.Fatalf("safe downgrade: %+v", r)
	}
	if got := finalized(); len(got) != 1 || got["group.version"] != 1 {
		t.Fatalf("after the downgrade finalized %v, want transaction.version left out", got)
	}
	if r := update(0, 2, 0, false); r.ErrorCode != 0 || len(r.Results) != 1 || r.Results[0].ErrorCode != 0 {
		t.Fatalf("v0 upgrade: %+v", r)
	}
}
