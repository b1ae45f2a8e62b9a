package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// Features is an optional capability of a Backend, found by type
// assertion: the cluster's feature levels (KIP-584), which ApiVersions
// reports and UpdateFeatures changes. A backend without it reports no
// features and answers UpdateFeatures INVALID_REQUEST.
type Features interface {
	// FeatureLevels returns the features the node supports, sorted by
	// name, the cluster's finalized level of each, and the epoch of that
	// view (the metadata log index it was read at). It reads local state
	// and must not block.
	FeatureLevels() (supported []SupportedFeature, finalized []FeatureLevel, epoch int64)
	// SetFeatureLevels finalizes features at new levels through the
	// cluster's replicated metadata, all or none, or with validateOnly
	// only reports whether it could. The server has checked downgrades.
	// Expected errors: kerr.InvalidUpdateVersion, kerr.NotController,
	// kerr.RequestTimedOut.
	SetFeatureLevels(ctx context.Context, levels []FeatureLevel, validateOnly bool) error
}

// SupportedFeature is a feature and the levels the node can run it at.
type SupportedFeature struct {
	Name     string
	Min, Max int16
}

// FeatureLevel is a feature's finalized level.
type FeatureLevel struct {
	Name  string
	Level int16
}

// addFeatures fills ApiVersions' feature fields as Kafka does: every
// supported feature with its range, and the finalized ones above level 0
// (a level of 0 is a feature switched off, which Kafka does not list),
// each with min and max at the level.
func (s *Server) addFeatures(resp *kmsg.ApiVersionsResponse) {
	f, ok := s.backend.(Features)
	if !ok {
		return
	}
	supported, finalized, epoch := f.FeatureLevels()
	for _, sf := range supported {
		k := kmsg.NewApiVersionsResponseSupportedFeature()
		k.Name, k.MinVersion, k.MaxVersion = sf.Name, sf.Min, sf.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, k)
	}
	for _, fl := range finalized {
		if fl.Level <= 0 {
			continue
		}
		k := kmsg.NewApiVersionsResponseFinalizedFeature()
		k.Name, k.MinVersionLevel, k.MaxVersionLevel = fl.Name, fl.Level, fl.Level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, k)
	}
	resp.FinalizedFeaturesEpoch = epoch
}

// startUpdateFeatures answers UpdateFeatures 0-2 as a Kafka 4.0 cluster
// does: ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED), every
// update checked, and all of them finalized or none. The first failure is
// the response's error, and then no feature is listed; on success
// versions 0-1 list each feature without an error.
func (s *Server) startUpdateFeatures(req *kmsg.UpdateFeaturesRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		err := s.updateFeatures(ctx, req)
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
		if err == nil && req.Version <= 1 {
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				r.Feature, r.ErrorCode, r.ErrorMessage = u.Feature, resp.ErrorCode, resp.ErrorMessage
				resp.Results = append(resp.Results, r)
			}
		}
		return resp, nil
	}
}

// Upgrade types of UpdateFeatures v1+.
const (
	upgradeOnly     = 1
	safeDowngrade   = 2
	unsafeDowngrade = 3
)

func (s *Server) updateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) error {
	if !s.authorizeCluster(ctx, acl.OpAlter) {
		return kerr.ClusterAuthorizationFailed
	}
	f, ok := s.backend.(Features)
	if !ok {
		return fmt.Errorf("%w: this node keeps no feature levels", kerr.InvalidRequest)
	}
	_, finalized, _ := f.FeatureLevels()
	current := make(map[string]int16, len(finalized))
	for _, fl := range finalized {
		current[fl.Name] = fl.Level
	}
	levels := make([]FeatureLevel, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		level := max(u.MaxVersionLevel, 0) // below 1 removes the feature: level 0
		downgrade := u.AllowDowngrade
		if req.Version >= 1 {
			switch u.UpgradeType {
			case upgradeOnly:
				downgrade = false
			case safeDowngrade, unsafeDowngrade:
				downgrade = true
			default:
				return fmt.Errorf("%w: invalid update version %d for feature %s: the controller does not support the given upgrade type",
					kerr.InvalidUpdateVersion, level, u.Feature)
			}
		}
		if cur, known := current[u.Feature]; known && level < cur && !downgrade {
			return fmt.Errorf("%w: invalid update version %d for feature %s: can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade",
				kerr.InvalidUpdateVersion, level, u.Feature)
		}
		levels = append(levels, FeatureLevel{Name: u.Feature, Level: level})
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if err := f.SetFeatureLevels(ctx, levels, req.Version >= 1 && req.ValidateOnly); err != nil {
		return fmt.Errorf("the update failed for all features since the following feature had an error: %w", err)
	}
	return nil
}
