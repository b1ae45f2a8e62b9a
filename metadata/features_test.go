package metadata

import (
	"errors"
	"slices"
	"testing"
)

func TestFeatureLevels(t *testing.T) {
	s := cluster3(t)
	want := []FeatureLevel{{FeatureGroupVersion, 1}, {FeatureMetadataVersion, 25}, {FeatureTransactionVersion, 2}}
	if got := s.FinalizedFeatures(); !slices.Equal(got, want) {
		t.Fatalf("defaults = %v, want %v", got, want)
	}
	s = must(t, s, SetFeatureLevels{Levels: []FeatureLevel{{FeatureTransactionVersion, 0}}})
	if l, _ := s.FinalizedFeature(FeatureTransactionVersion); l != 0 {
		t.Fatalf("transaction.version = %d after setting 0", l)
	}
	for _, bad := range [][]FeatureLevel{
		{{FeatureTransactionVersion, 3}},
		{{FeatureTransactionVersion, -1}},
		{{FeatureMetadataVersion, 24}},
		{{"no.such.feature", 1}},
		{{FeatureGroupVersion, 0}, {FeatureGroupVersion, 1}},
		{{FeatureGroupVersion, 0}, {FeatureTransactionVersion, 9}}, // all or none
	} {
		next, _, err := step(t, s, SetFeatureLevels{Levels: bad})
		if !errors.Is(err, ErrInvalidFeatureLevel) {
			t.Fatalf("SetFeatureLevels(%v) = %v, want ErrInvalidFeatureLevel", bad, err)
		}
		if !slices.Equal(next.FinalizedFeatures(), s.FinalizedFeatures()) {
			t.Fatalf("a rejected SetFeatureLevels(%v) changed the levels", bad)
		}
	}
	// The levels survive a snapshot and the command its encoding.
	b, _ := s.MarshalBinary()
	d, err := DecodeSnapshot(b)
	if err != nil || !d.Equal(s) {
		t.Fatalf("snapshot round trip: %v, equal %v", err, d.Equal(s))
	}
	enc, _ := Encode(SetFeatureLevels{Levels: []FeatureLevel{{FeatureGroupVersion, 0}}})
	cmd, err := Decode(enc)
	if err != nil || !slices.Equal(cmd.(SetFeatureLevels).Levels, []FeatureLevel{{FeatureGroupVersion, 0}}) {
		t.Fatalf("Decode(Encode) = %v, %v", cmd, err)
	}
}
