package kafkaapi

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/scram"
)

// DelegationToken is a stored delegation token as
// DescribeDelegationToken answers it. Principals are "Type:Name".
type DelegationToken struct {
	TokenID   string
	Owner     string
	Requester string
	Renewers  []string
	IssueMs   int64
	MaxMs     int64
	ExpiryMs  int64
	HMAC      []byte
}

// TokenCredential is what a SCRAM login with tokenauth=true is checked
// against: the SCRAM credential of the token's HMAC, and whom it makes the
// connection.
type TokenCredential struct {
	Credential scram.Credential
	Owner      string // the owner principal, "Type:Name"
	ExpiryMs   int64
}

// startTokenAPI starts the delegation token APIs; nil for another request.
func (s *Server) startTokenAPI(req kmsg.Request, received time.Time) responder {
	switch req := req.(type) {
	case *kmsg.CreateDelegationTokenRequest:
		return s.startCreateDelegationToken(req, received)
	case *kmsg.RenewDelegationTokenRequest:
		return s.startRenewDelegationToken(req, received)
	case *kmsg.ExpireDelegationTokenRequest:
		return s.startExpireDelegationToken(req, received)
	case *kmsg.DescribeDelegationTokenRequest:
		return s.startDescribeDelegationToken(req, received)
	}
	return nil
}

// tokenErrorTimestamp is Kafka's timestamp in a failed Renew or Expire.
const tokenErrorTimestamp = -1

// tokenRequestsAllowed is Kafka's allowTokenRequests: not on a connection
// authenticated by a token, not on PLAINTEXT, not on SSL without a client
// certificate.
func tokenRequestsAllowed(ctx context.Context) bool {
	sess, _ := ctx.Value(sessionKey{}).(*session)
	switch {
	case sess == nil:
		return false
	case sess.auth != nil:
		return sess.auth.authenticated() && !sess.auth.tokenAuth
	}
	return sess.certPrincipal != ""
}

// splitPrincipal splits "Type:Name"; a principal without a type is a User.
func splitPrincipal(p string) (typ, name string) {
	typ, name, ok := strings.Cut(p, ":")
	if !ok {
		return "User", p
	}
	return typ, name
}

// startCreateDelegationToken answers CreateDelegationToken in
// KafkaApis.handleCreateTokenRequest's order: REQUEST_NOT_ALLOWED, then
// (for a token owned by another principal, v3) CREATE_TOKENS on that
// USER, then renewers that are not users (INVALID_PRINCIPAL_TYPE), then
// what the backend answers (DELEGATION_TOKEN_AUTH_DISABLED without a
// token secret).
func (s *Server) startCreateDelegationToken(req *kmsg.CreateDelegationTokenRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		requester, _ := clientOf(ctx)
		owner := requester
		if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
			typ := "User"
			if req.OwnerPrincipalType != nil {
				typ = *req.OwnerPrincipalType
			}
			owner = typ + ":" + *req.OwnerPrincipalName
		}
		resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
		resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(requester)
		renewers := make([]string, 0, len(req.Renewers))
		userRenewers := true
		for _, r := range req.Renewers {
			userRenewers = userRenewers && r.PrincipalType == "User"
			renewers = append(renewers, r.PrincipalType+":"+r.PrincipalName)
		}
		var err error
		switch {
		case !tokenRequestsAllowed(ctx):
			err = kerr.DelegationTokenRequestNotAllowed
		case owner != requester && !s.authorize(ctx, acl.OpCreateTokens, acl.ResourceUser, owner):
			err = kerr.DelegationTokenAuthorizationFailed
		case !userRenewers:
			err = kerr.InvalidPrincipalType
		}
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		bctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		t, err := s.backend.CreateDelegationToken(bctx, owner, requester, renewers, req.MaxLifetimeMillis)
		cancel()
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
		resp.TokenID, resp.HMAC = t.TokenID, t.HMAC
		return resp, nil
	}
}

// startRenewDelegationToken answers RenewDelegationToken:
// REQUEST_NOT_ALLOWED, else the backend's answer (AUTH_DISABLED,
// NOT_FOUND, EXPIRED, OWNER_MISMATCH, or the new expiry).
func (s *Server) startRenewDelegationToken(req *kmsg.RenewDelegationTokenRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
		resp.ExpiryTimestamp, resp.ErrorCode = s.alterToken(ctx, req.HMAC, req.RenewTimeMillis, false)
		return resp, nil
	}
}

// startExpireDelegationToken answers ExpireDelegationToken as
// startRenewDelegationToken does; a negative period expires the token at
// once.
func (s *Server) startExpireDelegationToken(req *kmsg.ExpireDelegationTokenRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
		resp.ExpiryTimestamp, resp.ErrorCode = s.alterToken(ctx, req.HMAC, req.ExpiryPeriodMillis, true)
		return resp, nil
	}
}

// alterToken renews or expires the token of hmac for ctx's client.
func (s *Server) alterToken(ctx context.Context, hmac []byte, periodMs int64, expire bool) (int64, int16) {
	if !tokenRequestsAllowed(ctx) {
		return tokenErrorTimestamp, kerr.DelegationTokenRequestNotAllowed.Code
	}
	principal, _ := clientOf(ctx)
	bctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var expiry int64
	var err error
	if expire {
		expiry, err = s.backend.ExpireDelegationToken(bctx, principal, hmac, periodMs)
	} else {
		expiry, err = s.backend.RenewDelegationToken(bctx, principal, hmac, periodMs)
	}
	if err != nil {
		return tokenErrorTimestamp, ErrorCode(err)
	}
	return expiry, 0
}

// startDescribeDelegationToken answers DescribeDelegationToken as
// KafkaApis.handleDescribeTokensRequest: REQUEST_NOT_ALLOWED, then
// AUTH_DISABLED, then the tokens the owners filter asks for (null: all)
// that the client owns, requested or renews, or may DESCRIBE as a
// DELEGATION_TOKEN, or whose owner it may DESCRIBE_TOKENS as a USER.
func (s *Server) startDescribeDelegationToken(req *kmsg.DescribeDelegationTokenRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
		if !tokenRequestsAllowed(ctx) {
			resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
			return resp, nil
		}
		tokens, err := s.backend.DescribeDelegationTokens()
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		requester, _ := clientOf(ctx)
		for _, t := range tokens {
			if !s.tokenVisible(ctx, req, requester, t) {
				continue
			}
			d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
			d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
			d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
			d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
			d.TokenID, d.HMAC = t.TokenID, t.HMAC
			for _, r := range t.Renewers {
				rr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
				rr.PrincipalType, rr.PrincipalName = splitPrincipal(r)
				d.Renewers = append(d.Renewers, rr)
			}
			resp.TokenDetails = append(resp.TokenDetails, d)
		}
		return resp, nil
	}
}

// tokenVisible is Kafka's DelegationTokenManager.filterToken.
func (s *Server) tokenVisible(ctx context.Context, req *kmsg.DescribeDelegationTokenRequest, requester string, t DelegationToken) bool {
	ownerOrRenewer := func(p string) bool {
		if t.Owner == p || t.Requester == p {
			return true
		}
		for _, r := range t.Renewers {
			if r == p {
				return true
			}
		}
		return false
	}
	if req.Owners != nil {
		asked := false
		for _, o := range req.Owners {
			asked = asked || ownerOrRenewer(o.PrincipalType+":"+o.PrincipalName)
		}
		if !asked {
			return false
		}
	}
	return ownerOrRenewer(requester) || s.authorize(ctx, acl.OpDescribe, acl.ResourceDelegationToken, t.TokenID) ||
		s.authorize(ctx, acl.OpDescribeTokens, acl.ResourceUser, t.Owner)
}
