package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// credentials are a visitor's SASL login.
type credentials struct {
	User, Password, Mechanism string
}

// ErrBadCredentials: the listener refused the visitor's login.
var ErrBadCredentials = errors.New("console: wrong user name or password")

// ErrNotFound: the topic or group asked for does not exist, or the
// visitor may not see it.
var ErrNotFound = errors.New("console: not found")

// access is one Kafka identity: the clients the console reads the cluster
// with on behalf of a visitor, so that the broker's ACLs decide what the
// visitor sees. Its clients are safe for concurrent use.
type access struct {
	user string // "" when anonymous
	opts []kgo.Opt
	cl   *kgo.Client
	adm  *kadm.Client
}

// newAccess makes the clients of an identity; they dial only when used.
func newAccess(k Kafka, cr credentials) (*access, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Addr), kgo.ClientID("minikafka-console"),
		kgo.RetryTimeout(5 * time.Second), kgo.MetadataMinAge(500 * time.Millisecond)}
	if k.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(k.TLS.Clone()))
	}
	if k.SASL {
		m, err := mechanism(cr, k.Mechanisms)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("console: kafka client: %w", err)
	}
	return &access{user: cr.User, opts: opts, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// mechanism is the SASL mechanism of a login, if the listener offers it.
func mechanism(cr credentials, offered []string) (sasl.Mechanism, error) {
	ok := len(offered) == 0
	for _, m := range offered {
		ok = ok || m == cr.Mechanism
	}
	if !ok || cr.User == "" {
		return nil, fmt.Errorf("%w: mechanism %q not offered, or no user name", ErrBadRequest, cr.Mechanism)
	}
	switch cr.Mechanism {
	case "PLAIN":
		return plain.Auth{User: cr.User, Pass: cr.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: cr.User, Pass: cr.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: cr.User, Pass: cr.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("%w: unknown mechanism %q", ErrBadRequest, cr.Mechanism)
}

// check logs the identity in: a metadata request over a fresh connection.
func (a *access) check(ctx context.Context) error {
	_, err := a.adm.BrokerMetadata(ctx)
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) {
		return fmt.Errorf("%w (%w)", ErrBadCredentials, err)
	}
	return err
}

func (a *access) close() { a.cl.Close() }

// statusOf is the HTTP status an API error is answered with.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotLoggedIn), errors.Is(err, ErrBadCredentials):
		return http.StatusUnauthorized
	case errors.Is(err, ErrBadRequest), errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.InvalidPartitions),
		errors.Is(err, kerr.InvalidReplicationFactor), errors.Is(err, kerr.InvalidConfig), errors.Is(err, kerr.InvalidRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrReadOnly), errors.Is(err, ErrAdminKey):
		return http.StatusForbidden
	case errors.Is(err, ErrGroupActive), errors.Is(err, kerr.TopicAlreadyExists), errors.Is(err, kerr.NonEmptyGroup),
		errors.Is(err, kerr.UnknownMemberID):
		return http.StatusConflict
	case errors.Is(err, ErrNotFound), errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.GroupIDNotFound):
		return http.StatusNotFound
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		return http.StatusForbidden
	case errors.Is(err, ErrClosed), errors.Is(err, ErrBusy):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}
