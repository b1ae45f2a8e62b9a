package controller

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/metadata"
)

// The delegation token errors reach clients as Kafka's codes.
func TestTokenErrorCodes(t *testing.T) {
	for err, want := range map[error]*kerr.Error{
		metadata.ErrDelegationTokenNotFound:        kerr.DelegationTokenNotFound,
		metadata.ErrDelegationTokenExpired:         kerr.DelegationTokenExpired,
		metadata.ErrDelegationTokenOwnerMismatch:   kerr.DelegationTokenOwnerMismatch,
		metadata.ErrInvalidDelegationToken:         kerr.InvalidRequest,
		metadata.ErrTooManyDelegationTokens:        kerr.PolicyViolation,
		metadata.ErrTooManyDelegationTokenRenewers: kerr.PolicyViolation,
		kerr.DelegationTokenAuthDisabled:           kerr.DelegationTokenAuthDisabled,
	} {
		wrapped := fmt.Errorf("x: %w", &metadata.DelegationTokenError{TokenID: "t", Err: err})
		if got := ErrorCode(wrapped); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
}

// The client quota errors reach clients as Kafka's codes.
func TestQuotaErrorCodes(t *testing.T) {
	for err, want := range map[error]*kerr.Error{
		metadata.ErrInvalidQuota:  kerr.InvalidRequest,
		metadata.ErrTooManyQuotas: kerr.PolicyViolation,
	} {
		wrapped := fmt.Errorf("x: %w", &metadata.QuotaError{Reason: "r", Err: err})
		if got := ErrorCode(wrapped); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
}
