package kafkabackend

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// ScramCredential reads a credential from the local metadata copy, so any
// node authenticates any user.
func (b *Backend) ScramCredential(user string, m scram.Mechanism) (scram.Credential, bool) {
	c, ok := b.deps.Meta.State().ScramCredential(user, metadata.ScramMechanism(m))
	if !ok {
		return scram.Credential{}, false
	}
	return scram.Credential{Salt: c.Salt, Iterations: int(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
}

// ScramUsers lists the stored credentials without their secrets; the
// node always manages credentials.
func (b *Backend) ScramUsers() ([]kafkaapi.ScramCredentialInfo, error) {
	creds := b.deps.Meta.State().ScramCredentials()
	out := make([]kafkaapi.ScramCredentialInfo, len(creds))
	for i, c := range creds {
		out[i] = kafkaapi.ScramCredentialInfo{User: c.User, Mechanism: scram.Mechanism(c.Mechanism), Iterations: c.Iterations}
	}
	return out, nil
}

// AlterScramCredentials derives StoredKey and ServerKey from each salted
// password (which is then dropped) and proposes the change; the metadata
// group checks it per user.
func (b *Backend) AlterScramCredentials(ctx context.Context, dels []kafkaapi.ScramDeletion, ups []kafkaapi.ScramUpsertion) (map[string]error, error) {
	if !b.deps.Meta.State().Initialized() {
		return nil, fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	cmd := metadata.AlterScramCredentials{}
	for _, d := range dels {
		cmd.Deletions = append(cmd.Deletions, metadata.ScramDeletion{User: d.User, Mechanism: metadata.ScramMechanism(d.Mechanism)})
	}
	for _, u := range ups {
		c := metadata.ScramCredential{User: u.User, Mechanism: metadata.ScramMechanism(u.Mechanism), Iterations: u.Iterations, Salt: u.Salt}
		if u.Mechanism.Valid() && len(u.SaltedPassword) > 0 {
			c.StoredKey, c.ServerKey = scram.Keys(u.Mechanism, u.SaltedPassword)
		}
		cmd.Upsertions = append(cmd.Upsertions, c)
	}
	r, err := b.deps.Meta.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	out := make(map[string]error, len(r.Users))
	for _, u := range r.Users {
		if u.Code != 0 {
			out[u.User] = fmt.Errorf("%w: %s", kerr.ErrorForCode(u.Code), u.Message)
		}
	}
	return out, nil
}
