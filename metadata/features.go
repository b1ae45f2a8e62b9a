package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Cluster features (KIP-584): named levels the whole cluster runs at, which
// ApiVersions reports as finalized and clients read to pick behaviours
// (franz-go uses transactions v2 only at transaction.version 2). A cluster
// starts at each feature's default level, Kafka 4.0's bootstrap levels;
// SetFeatureLevels changes them through the log, so every node reports the
// same levels at the same index and a restart keeps them.

// TypeSetFeatureLevels is SetFeatureLevels' command type.
const TypeSetFeatureLevels CommandType = 17

// The features a node supports.
const (
	FeatureGroupVersion       = "group.version"
	FeatureMetadataVersion    = "metadata.version"
	FeatureTransactionVersion = "transaction.version"
)

// Feature is a feature a node supports: the levels it can run at and the
// level a new cluster starts at.
type Feature struct {
	Name              string
	Min, Max, Default int16
	// Fixed features cannot be changed by SetFeatureLevels (this node
	// knows only one metadata.version to run at).
	Fixed bool
}

// SupportedFeatures are the features of this build, sorted by name, as a
// Kafka 4.0 broker supports them: metadata.version 7 (3.3-IV3) to 25
// (4.0-IV3), transaction.version 0 to 2, group.version 0 to 1.
var SupportedFeatures = []Feature{
	{Name: FeatureGroupVersion, Min: 0, Max: 1, Default: 1},
	{Name: FeatureMetadataVersion, Min: 7, Max: 25, Default: 25, Fixed: true},
	{Name: FeatureTransactionVersion, Min: 0, Max: 2, Default: 2},
}

// SupportedFeature returns the supported feature of that name.
func SupportedFeature(name string) (Feature, bool) {
	i := slices.IndexFunc(SupportedFeatures, func(f Feature) bool { return f.Name == name })
	if i < 0 {
		return Feature{}, false
	}
	return SupportedFeatures[i], true
}

// FeatureLevel is one feature's finalized level.
type FeatureLevel struct {
	Name  string
	Level int16
}

// MaxFeatureUpdates bounds the levels of one SetFeatureLevels.
const MaxFeatureUpdates = 64

// SetFeatureLevels finalizes features at new levels, all or none: a level
// outside the feature's supported range, an unknown or fixed feature (at a
// level other than its own) or a name given twice rejects the command with
// a *FeatureLevelError. Whether a lower level is allowed (a downgrade) is
// the proposer's check, against the state it proposes on.
//
// Result: none.
type SetFeatureLevels struct {
	Levels []FeatureLevel
}

// ErrInvalidFeatureLevel rejects a SetFeatureLevels. [INVALID_UPDATE_VERSION]
var ErrInvalidFeatureLevel = errors.New("metadata: invalid feature level")

// FeatureLevelError says why a feature cannot take a level; it wraps
// ErrInvalidFeatureLevel.
type FeatureLevelError struct {
	Name   string
	Level  int16
	Reason string
}

func (e *FeatureLevelError) Error() string {
	return fmt.Sprintf("invalid update version %d for feature %s: %s", e.Level, e.Name, e.Reason)
}

func (e *FeatureLevelError) Unwrap() error { return ErrInvalidFeatureLevel }

// Type implements Command.
func (SetFeatureLevels) Type() CommandType { return TypeSetFeatureLevels }

func (c SetFeatureLevels) appendBody(b []byte) []byte {
	b = appendLen(b, len(c.Levels))
	for _, l := range c.Levels {
		b = appendString(b, l.Name)
		b = appendI16(b, l.Level)
	}
	return b
}

func decodeSetFeatureLevels(r *reader) SetFeatureLevels {
	n := r.length("feature levels", 4) // an empty name (its length) and an int16
	var c SetFeatureLevels
	for range n {
		c.Levels = append(c.Levels, FeatureLevel{Name: r.str("feature"), Level: r.i16("level")})
	}
	return c
}

// CheckFeatureLevel reports whether a feature may be finalized at level
// (nil), or a *FeatureLevelError saying why not.
func CheckFeatureLevel(name string, level int16) error {
	f, ok := SupportedFeature(name)
	switch {
	case !ok:
		return &FeatureLevelError{Name: name, Level: level, Reason: "the controller does not support the given feature"}
	case level < 0:
		return &FeatureLevelError{Name: name, Level: level, Reason: "a feature version cannot be less than 0"}
	case f.Fixed && level != f.Default:
		return &FeatureLevelError{Name: name, Level: level, Reason: fmt.Sprintf("this cluster only runs at level %d", f.Default)}
	case level < f.Min || level > f.Max:
		return &FeatureLevelError{Name: name, Level: level,
			Reason: fmt.Sprintf("the controller only supports versions %d-%d", f.Min, f.Max)}
	}
	return nil
}

func (s *Snapshot) setFeatureLevels(c SetFeatureLevels) (any, error) {
	if len(c.Levels) > MaxFeatureUpdates {
		return nil, &FeatureLevelError{Reason: "too many feature updates in one command"}
	}
	seen := make(map[string]bool, len(c.Levels))
	for _, l := range c.Levels {
		if seen[l.Name] {
			return nil, &FeatureLevelError{Name: l.Name, Level: l.Level, Reason: "the feature is named twice"}
		}
		seen[l.Name] = true
		if err := CheckFeatureLevel(l.Name, l.Level); err != nil {
			return nil, err
		}
	}
	features := cloneMap(s.features)
	for _, l := range c.Levels {
		features[l.Name] = l.Level
	}
	s.features = features
	return nil, nil
}

// FinalizedFeature is a feature's finalized level: the level
// SetFeatureLevels last gave it, else its default; false for a feature
// this build does not support.
func (s *Snapshot) FinalizedFeature(name string) (int16, bool) {
	if l, ok := s.features[name]; ok {
		return l, true
	}
	f, ok := SupportedFeature(name)
	return f.Default, ok
}

// FinalizedFeatures returns every supported feature's finalized level,
// sorted by name.
func (s *Snapshot) FinalizedFeatures() []FeatureLevel {
	out := make([]FeatureLevel, 0, len(SupportedFeatures))
	for _, f := range SupportedFeatures {
		l, _ := s.FinalizedFeature(f.Name)
		out = append(out, FeatureLevel{Name: f.Name, Level: l})
	}
	return out
}

// appendFeatures encodes the levels set by SetFeatureLevels, by name
// (snapshot version 9 on).
func appendFeatures(b []byte, features map[string]int16) []byte {
	b = appendLen(b, len(features))
	for _, name := range sortedKeys(features) {
		b = appendString(b, name)
		b = appendI16(b, features[name])
	}
	return b
}

func readFeatures(r *reader) map[string]int16 {
	n := r.length("features", 4)
	if n == 0 {
		return nil
	}
	out := make(map[string]int16, n)
	prev := ""
	for i := range n {
		name, level := r.str("feature"), r.i16("feature level")
		if r.err == nil && i > 0 && name <= prev {
			r.fail("feature %q not after %q", name, prev)
		}
		out[name], prev = level, name
	}
	return out
}

func featuresEqual(a, b map[string]int16) bool { return maps.Equal(a, b) }
