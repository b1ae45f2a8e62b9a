package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/scram"
)

// ScramCredentialInfo describes a stored credential without its secrets.
type ScramCredentialInfo struct {
	User       string
	Mechanism  scram.Mechanism
	Iterations int32
}

// ScramDeletion removes a user's credential for one mechanism.
type ScramDeletion struct {
	User      string
	Mechanism scram.Mechanism
}

// ScramUpsertion sets a user's credential for one mechanism from what the
// client computed: the salt and the salted password, never the password.
type ScramUpsertion struct {
	User           string
	Mechanism      scram.Mechanism
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// scramServed is nil when the backend manages SCRAM credentials, else
// what its ScramUsers answers (kerr.UnsupportedVersion), which both SCRAM
// APIs answer.
func (s *Server) scramServed() error {
	_, err := s.backend.ScramUsers()
	return err
}

// startDescribeUserScram answers DescribeUserScramCredentials as Kafka:
// null or no users lists every user with a credential; a named user
// without one is RESOURCE_NOT_FOUND, a user named twice
// DUPLICATE_RESOURCE.
func (s *Server) startDescribeUserScram(req *kmsg.DescribeUserSCRAMCredentialsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		users, err := s.backend.ScramUsers()
		if err == nil && !s.authorizeCluster(ctx, acl.OpDescribe) {
			err = errClusterAuth
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
		var order []string
		for _, c := range users {
			if _, ok := byUser[c.User]; !ok {
				order = append(order, c.User)
			}
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = int8(c.Mechanism), c.Iterations
			byUser[c.User] = append(byUser[c.User], ci)
		}
		result := func(user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User, r.CredentialInfos = user, byUser[user]
			return r
		}
		if len(req.Users) == 0 {
			for _, u := range order {
				resp.Results = append(resp.Results, result(u))
			}
			return resp, nil
		}
		count := map[string]int{}
		for _, u := range req.Users {
			count[u.Name]++
		}
		seen := map[string]bool{}
		for _, u := range req.Users {
			if seen[u.Name] {
				continue
			}
			seen[u.Name] = true
			r := result(u.Name)
			switch {
			case count[u.Name] > 1:
				r.CredentialInfos = nil
				r.ErrorCode = kerr.DuplicateResource.Code
				r.ErrorMessage = boundedMessage("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
			case len(r.CredentialInfos) == 0:
				r.ErrorCode = kerr.ResourceNotFound.Code
				r.ErrorMessage = boundedMessage("Attempt to describe a user credential that does not exist: " + u.Name)
			}
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
}

// startAlterUserScram answers AlterUserScramCredentials with one result per
// user named in the request.
func (s *Server) startAlterUserScram(req *kmsg.AlterUserSCRAMCredentialsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		var users []string
		seen := map[string]bool{}
		note := func(u string) {
			if !seen[u] {
				seen[u] = true
				users = append(users, u)
			}
		}
		dels := make([]ScramDeletion, 0, len(req.Deletions))
		for _, d := range req.Deletions {
			note(d.Name)
			dels = append(dels, ScramDeletion{User: d.Name, Mechanism: scram.Mechanism(d.Mechanism)})
		}
		ups := make([]ScramUpsertion, 0, len(req.Upsertions))
		for _, u := range req.Upsertions {
			note(u.Name)
			ups = append(ups, ScramUpsertion{User: u.Name, Mechanism: scram.Mechanism(u.Mechanism), Iterations: u.Iterations,
				Salt: u.Salt, SaltedPassword: u.SaltedPassword})
		}
		var errs map[string]error
		err := s.scramServed()
		if err == nil && !s.authorizeCluster(ctx, acl.OpAlter) {
			err = errClusterAuth
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			errs, err = s.backend.AlterScramCredentials(ctx, dels, ups)
			cancel()
		}
		for _, u := range users {
			r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			r.User = u
			e := err
			if e == nil {
				e = errs[u]
			}
			r.ErrorCode, r.ErrorMessage = ErrorCode(e), errorMessage(e)
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
}
