package client

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/scram"
)

// UserCredential is one stored SCRAM credential of a user, without its
// secrets.
type UserCredential struct {
	User       string
	Mechanism  string // SASLScramSHA256 or SASLScramSHA512
	Iterations int32
}

// UpsertUser creates or replaces user's SCRAM credential for mechanism
// (SASLScramSHA256 or SASLScramSHA512) with iterations rounds (0: 4096),
// as Kafka's AlterUserScramCredentials: the password is salted and hashed
// here, and only the salt and salted password are sent. Errors are
// *KafkaError: UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL
// (iterations outside 4096..16384).
func (a *Admin) UpsertUser(ctx context.Context, user, password, mechanism string, iterations int) error {
	m, ok := scram.ParseMechanism(mechanism)
	if !ok {
		return &ConfigError{Option: "mechanism", Err: fmt.Errorf("%q: want %s or %s", mechanism, SASLScramSHA256, SASLScramSHA512)}
	}
	if iterations == 0 {
		iterations = scram.DefaultIterations
	}
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = user, int8(m), int32(iterations), scram.NewSalt()
	// Out of range, the broker refuses it (UNACCEPTABLE_CREDENTIAL):
	// spare the key derivation.
	if iterations >= scram.MinIterations && iterations <= scram.MaxIterations {
		var err error
		if u.SaltedPassword, err = scram.SaltedPassword(m, password, u.Salt, iterations); err != nil {
			return err
		}
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, u)
	return a.alterUsers(ctx, req)
}

// DeleteUser deletes user's SCRAM credential for mechanism. A credential
// that does not exist gives a *KafkaError RESOURCE_NOT_FOUND.
func (a *Admin) DeleteUser(ctx context.Context, user, mechanism string) error {
	m, ok := scram.ParseMechanism(mechanism)
	if !ok {
		return &ConfigError{Option: "mechanism", Err: fmt.Errorf("%q: want %s or %s", mechanism, SASLScramSHA256, SASLScramSHA512)}
	}
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, int8(m)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = append(req.Deletions, d)
	return a.alterUsers(ctx, req)
}

func (a *Admin) alterUsers(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) error {
	return a.askAny(ctx, req, func(resp kmsg.Response) error {
		rs := resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results
		if len(rs) != 1 {
			return fmt.Errorf("client: AlterUserScramCredentials answered %d users", len(rs))
		}
		return kafkaErr(rs[0].ErrorCode, rs[0].ErrorMessage)
	})
}

// ListUsers returns every stored SCRAM credential, by user then mechanism.
func (a *Admin) ListUsers(ctx context.Context) ([]UserCredential, error) {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	var out []UserCredential
	err := a.askAny(ctx, req, func(resp kmsg.Response) error {
		r := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		out = out[:0]
		for _, u := range r.Results {
			if err := kafkaErr(u.ErrorCode, u.ErrorMessage); err != nil {
				return err
			}
			for _, c := range u.CredentialInfos {
				out = append(out, UserCredential{User: u.User, Mechanism: scram.Mechanism(c.Mechanism).String(), Iterations: c.Iterations})
			}
		}
		return nil
	})
	return out, err
}
