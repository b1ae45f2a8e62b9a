package metadata

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Delegation tokens (Kafka's KIP-48): a user creates a token, hands its id
// and HMAC to workers, which log in with SCRAM as the token (id as user
// name, HMAC as password, extension tokenauth=true) and act as its owner.
// The cluster stores what Kafka's metadata log does, the token's
// information, plus the SCRAM credentials derived from its HMAC: never the
// HMAC nor the secret it comes from, which every node has in its
// configuration. Times are stamped by the proposer (its clock, like
// Kafka's controller's) and compared in Apply with the NowMs the command
// carries, so Apply takes no clock.

// Command types of delegation tokens. 24 to 26 leave room for the types
// other branches add after 16.
const (
	TypeCreateDelegationToken  CommandType = 24
	TypeUpdateDelegationToken  CommandType = 25
	TypeExpireDelegationTokens CommandType = 26
)

// Bounds on what clients can make the cluster store.
const (
	// MaxDelegationTokens bounds the tokens the cluster stores.
	MaxDelegationTokens = 10000
	// MaxDelegationTokensPerOwner bounds one owner's tokens.
	MaxDelegationTokensPerOwner = 1000
	// MaxDelegationTokenRenewers bounds a token's renewers.
	MaxDelegationTokenRenewers = 64
	// MaxPrincipalLen bounds a token id and a principal.
	MaxPrincipalLen = MaxScramUserLen
)

// DelegationToken is one token's stored state.
type DelegationToken struct {
	TokenID   string
	Owner     string   // the principal the token acts as, "Type:Name"
	Requester string   // the principal that created it (KIP-373)
	Renewers  []string // principals that may renew and expire it, besides owner and requester
	IssueMs   int64
	MaxMs     int64 // the token can never be renewed past this
	ExpiryMs  int64 // the token is expired once the clock is past this
	// Credentials are the SCRAM credentials of the token's HMAC, one per
	// mechanism in mechanism order, each with User = TokenID.
	Credentials []ScramCredential
}

// OwnerName is the name part of the owner principal: the user a
// token-authenticated connection acts as.
func (t DelegationToken) OwnerName() string {
	_, name, _ := strings.Cut(t.Owner, ":")
	return name
}

// MayRenew reports whether principal may renew and expire the token: its
// owner or one of its renewers (Kafka's controller, allowedToRenew; the
// requester is not one unless named).
func (t DelegationToken) MayRenew(principal string) bool {
	return t.Owner == principal || slices.Contains(t.Renewers, principal)
}

// Expired reports whether the token is expired at nowMs, as Kafka decides.
func (t DelegationToken) Expired(nowMs int64) bool { return t.MaxMs < nowMs || t.ExpiryMs < nowMs }

func (t DelegationToken) clone() DelegationToken {
	t.Renewers = slices.Clone(t.Renewers)
	cs := make([]ScramCredential, len(t.Credentials))
	for i, c := range t.Credentials {
		cs[i] = c.clone()
	}
	t.Credentials = cs
	return t
}

func (t DelegationToken) equal(o DelegationToken) bool {
	return t.TokenID == o.TokenID && t.Owner == o.Owner && t.Requester == o.Requester &&
		slices.Equal(t.Renewers, o.Renewers) && t.IssueMs == o.IssueMs && t.MaxMs == o.MaxMs &&
		t.ExpiryMs == o.ExpiryMs && slices.EqualFunc(t.Credentials, o.Credentials, ScramCredential.equal)
}

// check validates a token's fields.
func (t DelegationToken) check() error {
	bad := func(reason string) error {
		return &DelegationTokenError{TokenID: t.TokenID, Reason: reason, Err: ErrInvalidDelegationToken}
	}
	switch {
	case t.TokenID == "" || len(t.TokenID) > MaxPrincipalLen:
		return bad("token id length")
	case !validPrincipal(t.Owner) || !validPrincipal(t.Requester):
		return bad("owner or requester is not Type:Name")
	case len(t.Renewers) > MaxDelegationTokenRenewers:
		return &DelegationTokenError{TokenID: t.TokenID, Reason: fmt.Sprintf("%d renewers, at most %d", len(t.Renewers), MaxDelegationTokenRenewers), Err: ErrTooManyDelegationTokenRenewers}
	case t.IssueMs < 0 || t.MaxMs < t.IssueMs || t.ExpiryMs < t.IssueMs || t.ExpiryMs > t.MaxMs:
		return bad("timestamps out of order")
	case len(t.Credentials) == 0 || len(t.Credentials) > 2:
		return bad("credentials")
	}
	for _, r := range t.Renewers {
		if !validPrincipal(r) {
			return bad("renewer is not Type:Name")
		}
	}
	for i, c := range t.Credentials {
		if c.User != t.TokenID || (i > 0 && c.Mechanism <= t.Credentials[i-1].Mechanism) {
			return bad("credentials not the token's, one per mechanism in order")
		}
		if err := c.check(); err != nil {
			return bad(err.Error())
		}
	}
	return nil
}

func validPrincipal(p string) bool {
	typ, name, ok := strings.Cut(p, ":")
	return ok && typ != "" && name != "" && len(p) <= MaxPrincipalLen
}

// CreateDelegationToken stores a new token. Apply refuses a token whose id
// is taken, invalid fields (ErrInvalidDelegationToken), more than
// MaxDelegationTokenRenewers renewers, and a token past MaxDelegationTokens
// in the cluster or MaxDelegationTokensPerOwner of its owner
// (ErrTooManyDelegationTokens).
//
// Result: DelegationTokenResult.
type CreateDelegationToken struct {
	Token DelegationToken
}

// UpdateDelegationToken renews (Expire false) or expires (Expire true) the
// token, as Principal asks at NowMs (the proposer's clock), checked in
// Kafka's controller's order: ErrDelegationTokenNotFound,
// ErrDelegationTokenExpired, ErrDelegationTokenOwnerMismatch (Principal is
// neither its owner nor a renewer). Then an Expire with a negative
// PeriodMs removes the token at once; otherwise the expiry becomes
// min(MaxMs, NowMs+PeriodMs), PeriodMs being, for a renewal, what the
// proposer resolved from the request and delegation.token.expiry.time.ms.
//
// Result: DelegationTokenResult, with the new expiry (PeriodMs for a
// removed token).
type UpdateDelegationToken struct {
	TokenID   string
	Principal string
	Expire    bool
	NowMs     int64
	PeriodMs  int64
}

// ExpireDelegationTokens removes every token expired at NowMs: the
// metadata leader's periodic check (delegation.token.expiry.check.interval.ms)
// proposes it with its clock. Only the leader proposes it.
//
// Result: ExpireDelegationTokensResult.
type ExpireDelegationTokens struct {
	NowMs int64
}

// DelegationTokenResult answers CreateDelegationToken and
// UpdateDelegationToken with the token's expiry.
type DelegationTokenResult struct {
	ExpiryMs int64
}

// ExpireDelegationTokensResult lists the removed tokens' ids, sorted.
type ExpireDelegationTokensResult struct {
	Removed []string
}

// Type implements Command.
func (CreateDelegationToken) Type() CommandType { return TypeCreateDelegationToken }

// Type implements Command.
func (UpdateDelegationToken) Type() CommandType { return TypeUpdateDelegationToken }

// Type implements Command.
func (ExpireDelegationTokens) Type() CommandType { return TypeExpireDelegationTokens }

func (s *Snapshot) createDelegationToken(c CreateDelegationToken) (DelegationTokenResult, error) {
	t := c.Token
	if err := t.check(); err != nil {
		return DelegationTokenResult{}, err
	}
	if _, taken := s.tokens[t.TokenID]; taken {
		return DelegationTokenResult{}, &DelegationTokenError{TokenID: t.TokenID, Reason: "id taken", Err: ErrInvalidDelegationToken}
	}
	if len(s.tokens) >= MaxDelegationTokens {
		return DelegationTokenResult{}, &DelegationTokenError{TokenID: t.TokenID, Reason: fmt.Sprintf("the cluster holds %d tokens", len(s.tokens)), Err: ErrTooManyDelegationTokens}
	}
	owned := 0
	for _, o := range s.tokens {
		if o.Owner == t.Owner {
			owned++
		}
	}
	if owned >= MaxDelegationTokensPerOwner {
		return DelegationTokenResult{}, &DelegationTokenError{TokenID: t.TokenID, Reason: fmt.Sprintf("%s owns %d tokens", t.Owner, owned), Err: ErrTooManyDelegationTokens}
	}
	s.tokens = cloneMap(s.tokens)
	s.tokens[t.TokenID] = t.clone()
	return DelegationTokenResult{ExpiryMs: t.ExpiryMs}, nil
}

func (s *Snapshot) updateDelegationToken(c UpdateDelegationToken) (DelegationTokenResult, error) {
	t, ok := s.tokens[c.TokenID]
	fail := func(err error) (DelegationTokenResult, error) {
		return DelegationTokenResult{}, &DelegationTokenError{TokenID: c.TokenID, Err: err}
	}
	switch {
	case !ok:
		return fail(ErrDelegationTokenNotFound)
	case t.Expired(c.NowMs):
		return fail(ErrDelegationTokenExpired)
	case !t.MayRenew(c.Principal):
		return fail(ErrDelegationTokenOwnerMismatch)
	case c.Expire && c.PeriodMs < 0:
		s.tokens = cloneMap(s.tokens)
		delete(s.tokens, c.TokenID)
		if len(s.tokens) == 0 {
			s.tokens = nil
		}
		return DelegationTokenResult{ExpiryMs: c.PeriodMs}, nil
	case c.PeriodMs < 0:
		return fail(ErrInvalidDelegationToken)
	}
	expiry := t.MaxMs
	if c.NowMs <= t.MaxMs-c.PeriodMs { // NowMs+PeriodMs without overflow
		expiry = c.NowMs + c.PeriodMs
	}
	// A proposer whose clock is behind the issuer's never sets an expiry
	// before the issue.
	expiry = max(expiry, t.IssueMs)
	t = t.clone()
	t.ExpiryMs = expiry
	s.tokens = cloneMap(s.tokens)
	s.tokens[c.TokenID] = t
	return DelegationTokenResult{ExpiryMs: expiry}, nil
}

func (s *Snapshot) expireDelegationTokens(c ExpireDelegationTokens) (ExpireDelegationTokensResult, error) {
	var res ExpireDelegationTokensResult
	for _, id := range sortedKeys(s.tokens) {
		if s.tokens[id].Expired(c.NowMs) {
			res.Removed = append(res.Removed, id)
		}
	}
	if len(res.Removed) == 0 {
		return res, nil
	}
	s.tokens = cloneMap(s.tokens)
	for _, id := range res.Removed {
		delete(s.tokens, id)
	}
	if len(s.tokens) == 0 {
		s.tokens = nil
	}
	return res, nil
}

// DelegationToken returns a copy of a stored token.
func (s *Snapshot) DelegationToken(id string) (DelegationToken, bool) {
	t, ok := s.tokens[id]
	if !ok {
		return DelegationToken{}, false
	}
	return t.clone(), true
}

// DelegationTokens returns copies of every stored token, sorted by id.
func (s *Snapshot) DelegationTokens() []DelegationToken {
	out := make([]DelegationToken, 0, len(s.tokens))
	for _, id := range sortedKeys(s.tokens) {
		out = append(out, s.tokens[id].clone())
	}
	return out
}

// DelegationTokenIDs returns the stored tokens' ids, sorted.
func (s *Snapshot) DelegationTokenIDs() []string { return sortedKeys(s.tokens) }

// HasExpiredDelegationTokens reports whether some token is expired at
// nowMs, which the leader's check then removes.
func (s *Snapshot) HasExpiredDelegationTokens(nowMs int64) bool {
	for _, t := range s.tokens {
		if t.Expired(nowMs) {
			return true
		}
	}
	return false
}

// checkTokens verifies the stored tokens.
func (s *Snapshot) checkTokens() error {
	if len(s.tokens) > MaxDelegationTokens {
		return fmt.Errorf("%d delegation tokens, more than %d", len(s.tokens), MaxDelegationTokens)
	}
	for _, id := range sortedKeys(s.tokens) {
		t := s.tokens[id]
		if t.TokenID != id {
			return fmt.Errorf("delegation token %q stored as %q", t.TokenID, id)
		}
		if err := t.check(); err != nil {
			return err
		}
	}
	return nil
}

// Delegation token errors, with the Kafka code each maps to in brackets.
var (
	// ErrDelegationTokenNotFound: no token has that id (or HMAC).
	// [DELEGATION_TOKEN_NOT_FOUND]
	ErrDelegationTokenNotFound = errors.New("metadata: delegation token not found")
	// ErrDelegationTokenExpired: the token is past its expiry or maximum.
	// [DELEGATION_TOKEN_EXPIRED]
	ErrDelegationTokenExpired = errors.New("metadata: delegation token expired")
	// ErrDelegationTokenOwnerMismatch: the principal is not the token's
	// owner, requester or renewer. [DELEGATION_TOKEN_OWNER_MISMATCH]
	ErrDelegationTokenOwnerMismatch = errors.New("metadata: delegation token owner mismatch")
	// ErrInvalidDelegationToken: bad fields. [INVALID_REQUEST]
	ErrInvalidDelegationToken = errors.New("metadata: invalid delegation token")
	// ErrTooManyDelegationTokens: past MaxDelegationTokens or
	// MaxDelegationTokensPerOwner. [POLICY_VIOLATION]
	ErrTooManyDelegationTokens = errors.New("metadata: too many delegation tokens")
	// ErrTooManyDelegationTokenRenewers: past MaxDelegationTokenRenewers.
	// [POLICY_VIOLATION]
	ErrTooManyDelegationTokenRenewers = errors.New("metadata: too many delegation token renewers")
)

// DelegationTokenError is a rejected token command; it wraps one of the
// sentinels above.
type DelegationTokenError struct {
	TokenID string
	Reason  string // for people; may be empty
	Err     error
}

func (e *DelegationTokenError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%v: token %q: %s", e.Err, e.TokenID, e.Reason)
	}
	return fmt.Sprintf("%v: token %q", e.Err, e.TokenID)
}
func (e *DelegationTokenError) Unwrap() error { return e.Err }
