package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/minikafka/minikafka-go/internal/scram"
	"github.com/minikafka/minikafka-go/metadata"
)

// duties bootstraps the metadata group when it is new, and on the leader
// keeps the group and the broker registry in line with the live members.
// It is owned by the Controller (c.wg).
func (c *Controller) duties() {
	defer c.wg.Done()
	tick := time.NewTicker(c.cfg.Tuning.DutyInterval)
	defer tick.Stop()
	for {
		var settle <-chan time.Time // the bootstrap's choice of voters settles
		if wait, err := c.step(); err != nil && c.ctx.Err() == nil {
			c.logger.Debug("metadata duties", "err", err)
		} else if wait > 0 {
			settle = time.After(wait)
		}
		select {
		case <-c.ctx.Done(): // the node stops
			return
		case <-tick.C: // heal's clock, and retries of a failed step
		case <-c.deps.MemberEvents: // a node came, went or changed its addresses
		case <-settle:
		}
	}
}

// step does the duties once; before the group exists it returns how long
// to wait before bootstrapping it.
func (c *Controller) step() (time.Duration, error) {
	g := c.group
	if !g.Configured() {
		return c.maybeBootstrap()
	}
	return 0, c.leaderDuties()
}

// leaderDuties keeps the group and the broker registry in line with the
// live members, on the leader.
func (c *Controller) leaderDuties() error {
	g := c.group
	if !g.IsLeader() {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Tuning.Proposal)
	defer cancel()
	state := c.fsm.State()
	if !state.Initialized() {
		if _, err := c.Propose(ctx, metadata.InitCluster{ClusterID: newClusterID()}); err != nil {
			return err
		}
		state = c.fsm.State()
	}
	if !state.HasProducerIDKey() {
		if err := c.proposeProducerIDKey(ctx); err != nil {
			return err
		}
		state = c.fsm.State()
	}
	if err := c.registerMembers(ctx, state); err != nil {
		return err
	}
	if err := c.heal(ctx, state); err != nil {
		return err
	}
	return c.seedSASLUsers(ctx, state)
}

// registerMembers registers the live members' addresses (or their
// changes) and adds the members the metadata group lacks as non-voters.
func (c *Controller) registerMembers(ctx context.Context, state *metadata.Snapshot) error {
	g := c.group
	for _, m := range c.deps.Members.Members() {
		b, ok := state.Broker(m.ID)
		if !ok || b.KafkaAddr != m.KafkaAddr || b.RaftAddr != m.RaftAddr || !sameListeners(b.Listeners, m.Listeners) {
			cmd := metadata.RegisterBroker{ID: m.ID, KafkaAddr: m.KafkaAddr, RaftAddr: m.RaftAddr, Listeners: m.Listeners}
			if _, err := c.Propose(ctx, cmd); err != nil {
				return fmt.Errorf("register broker %d: %w", m.ID, err)
			}
		}
		in, err := g.Has(m.ID)
		if err != nil {
			return err
		}
		if !in {
			c.logger.Info("adding node to the metadata group as a non-voter", "id", m.ID)
			if err := g.AddNonvoter(ctx, m.ID, m.RaftAddr); err != nil {
				return fmt.Errorf("add non-voter %d: %w", m.ID, err)
			}
		}
	}
	return nil
}

// sameListeners compares a registration's listeners with gossiped ones,
// which may be in another order.
func sameListeners(registered, gossiped string) bool {
	if registered == gossiped {
		return true
	}
	ls, err := metadata.ParseListeners(gossiped)
	return err == nil && metadata.FormatListeners(ls) == registered
}

// seedSASLUsers creates the configured SASL users' credentials that the
// cluster lacks (IfAbsent: one created meanwhile, or since changed, is
// kept).
func (c *Controller) seedSASLUsers(ctx context.Context, state *metadata.Snapshot) error {
	var ups []metadata.ScramCredential
	for _, u := range c.cfg.SASLUsers {
		for _, name := range u.Mechanisms {
			m, _ := scram.ParseMechanism(name)
			if _, ok := state.ScramCredential(u.Name, metadata.ScramMechanism(m)); ok {
				continue
			}
			cred, err := scram.NewCredential(m, u.Password, u.Iterations)
			if err != nil {
				return err
			}
			ups = append(ups, metadata.ScramCredential{User: u.Name, Mechanism: metadata.ScramMechanism(m),
				Iterations: int32(cred.Iterations), Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey})
		}
	}
	if len(ups) == 0 {
		return nil
	}
	if _, err := c.Propose(ctx, metadata.AlterScramCredentials{Upsertions: ups, IfAbsent: true}); err != nil {
		return fmt.Errorf("seed sasl_users: %w", err)
	}
	c.logger.Info("created the configured SASL users the cluster lacked", "credentials", len(ups))
	return nil
}

// maybeBootstrap creates the metadata group once bootstrap_expect nodes are
// seen, with the lowest bootstrap_expect node ids as voters, if this node
// is one of them and the choice has stood for bootstrapSettle (it returns
// how long is left). Every voter computes the same list once all have seen
// the same members.
func (c *Controller) maybeBootstrap() (time.Duration, error) {
	voters, wait, ok := c.boot.choose(c.deps.Members.Members(), c.cfg.BootstrapExpect, time.Now())
	if !ok {
		return 0, nil
	}
	if _, self := voters[c.cfg.NodeID]; !self {
		return 0, nil // a later node: the leader adds it as a non-voter
	}
	if wait > 0 {
		return wait, nil
	}
	c.logger.Info("bootstrapping the metadata group", "voters", voters)
	return 0, c.group.Bootstrap(voters)
}

func newClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
