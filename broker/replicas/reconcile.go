package replicas

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// logPrecision is what durations in logs are rounded to.
const logPrecision = time.Millisecond

// reconcileLoop opens a replica for every partition the metadata assigns
// to this node. A change that leaves the layout alone (a leader report:
// thousands after a fail-over, each once a pass over every replica) is
// skipped once a pass completed for the current layout. It is owned by the
// Set (Start, Close).
func (s *Set[E]) reconcileLoop() {
	defer s.wg.Done()
	var done uint64 // the layout index the last complete pass saw; 0: none
	for {
		watch := s.deps.Meta.Watch() // before State, so no change is missed
		if state := s.deps.Meta.State(); done == 0 || state.LayoutIndex() != done {
			done = 0
			if s.reconcile(state) {
				done = state.LayoutIndex()
			}
		}
		if s.ctx.Err() != nil {
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-watch:
		case <-s.reconcileKick: // a removal freed a directory
		case <-time.After(s.cfg.Tuning.ReconcileRetry): // retry failed opens
		}
	}
}

// reconcile opens the replicas of state's partitions that this node should
// hold and does not, several at once (opening is mostly waiting for the
// disk: bbolt and bootstrap fsyncs), then releases the new groups'
// campaigns as one batch. It reports whether it completed: every replica
// opened, and moves followed with the metadata caught up.
func (s *Set[E]) reconcile(state *metadata.Snapshot) bool {
	s.removeDeleted(state)
	complete := s.followMoves(state)
	resolved := map[string]topicconfig.Config{} // once per topic, not per partition
	for _, r := range s.All() {                 // configs may have changed
		if s.ctx.Err() != nil {
			return false // the node is closing its replicas
		}
		c, ok := resolved[r.info.Topic]
		if !ok {
			c = s.deps.TopicConfig(r.info.Topic)
			resolved[r.info.Topic] = c
		}
		r.setConfig(c)
	}
	var todo []Info
	for _, p := range state.PartitionsOn(s.cfg.NodeID) {
		if _, ok := s.Get(p.Topic, p.Partition); ok {
			continue
		}
		id, _ := state.TopicID(p.Topic)
		part, _ := state.Partition(p.Topic, p.Partition)
		move, moving := state.Reassignment(p.Topic, p.Partition)
		todo = append(todo, Info{Topic: p.Topic, TopicID: id.String(), Partition: p.Partition,
			Replicas: part.Replicas,
			Join:     moving && slices.Contains(move.Adding(), s.cfg.NodeID)})
	}
	opened := make([]*multiraft.Group, len(todo))
	began := time.Now()
	var eg errgroup.Group
	eg.SetLimit(s.cfg.Tuning.OpenParallelism)
	for i, info := range todo {
		eg.Go(func() error {
			if s.ctx.Err() != nil {
				return nil
			}
			r, err := s.open(info)
			if err != nil {
				s.logger.Error("could not start replica", "topic", info.Topic, "partition", info.Partition, "err", err)
			} else if r != nil {
				opened[i] = r.rep.Group()
			}
			return nil
		})
	}
	_ = eg.Wait()
	n := len(opened) - count(opened, nil)
	complete = complete && n == len(opened)
	if n == 0 || s.ctx.Err() != nil {
		return complete && s.ctx.Err() == nil
	}
	s.logger.Info("opened replicas", "count", n, "took", time.Since(began).Round(logPrecision))
	released := time.Now()
	if n := s.deps.Host.ReleaseCampaigns(s.ctx, opened); n > 0 {
		s.logger.Info("released the campaigns of preferred replicas", "count", n, "took", time.Since(released).Round(logPrecision))
	}
	return complete
}

// count returns how many elements of s equal v.
func count[T comparable](s []T, v T) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// removeDeleted removes the replicas of deleted topics (removeWhere); a
// new topic of the same name opens its replica in the same directory
// only after. A replica is removed only when the metadata names its topic
// id as deleted, never merely because the id is unknown (a node's
// metadata may be behind its disk).
func (s *Set[E]) removeDeleted(state *metadata.Snapshot) {
	s.removeWhere("the topic was deleted", func(r *Replica[E]) bool {
		return !r.id.IsZero() && state.TopicDeleted(r.id)
	})
}

// removal is a replica queued for removal, and why.
type removal[E any] struct {
	r   *Replica[E]
	why string
}

// removeWhere forgets the replicas for which gone holds and queues them
// for removerLoop, which closes them and removes their data; until then
// their directories stay taken (beingRemoved). It does not wait: deleting
// a topic of 10,000 partitions takes a node about a minute, and the
// reconcile pass that calls it opens other topics' replicas meanwhile.
func (s *Set[E]) removeWhere(why string, gone func(*Replica[E]) bool) {
	s.mu.Lock()
	for key, r := range s.reps {
		if gone(r) {
			delete(s.reps, key)
			s.removing[DirName(r.info.Topic, r.info.Partition)] = r.id
			s.removals = append(s.removals, removal[E]{r: r, why: why})
		}
	}
	s.mu.Unlock()
	kick(s.removeKick)
}

// beingRemoved reports whether the directory of topic/p still holds a
// replica queued for removal or being removed.
func (s *Set[E]) beingRemoved(topic string, p int32) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.removing[DirName(topic, p)]
	return ok
}

// removerLoop removes the queued replicas one at a time, as Kafka deletes
// logs in the background: deleting a 10,000-partition topic on make
// scale's three nodes took 70 s so, and 34-43 s with 32 or 4 at once; but
// then a producer to another topic waited up to 0.4-0.7 s for an
// acknowledgement behind the removals' fsyncs (64 ms one at a time) and
// got a tenth of them or fewer. It leaves the replicas still queued when
// the Set closes, for Close. It is owned by the Set (Start, Close).
func (s *Set[E]) removerLoop() {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		s.mu.Lock()
		var next removal[E]
		if len(s.removals) > 0 {
			next = s.removals[0]
			s.removals[0] = removal[E]{} // keep no closed replica alive
			s.removals = s.removals[1:]
		}
		s.mu.Unlock()
		if next.r == nil {
			select {
			case <-s.removeKick:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		r := next.r
		s.remove(r, next.why)
		s.mu.Lock()
		delete(s.removing, DirName(r.info.Topic, r.info.Partition))
		s.mu.Unlock()
		kick(s.reconcileKick)
	}
}

// kick notifies ch (capacity 1) without blocking.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// remove closes r and removes its data, saying why in the log.
func (s *Set[E]) remove(r *Replica[E], why string) {
	<-r.ready
	if err := r.rep.Discard(); err != nil {
		r.logger.Warn("closing a replica to remove", "why", why, "err", err)
	}
	dir := s.dir(r.info.Topic, r.info.Partition)
	if err := removeInfo(s.fs(), dir); err != nil {
		r.logger.Error("removing a replica", "why", why, "dir", dir, "err", err)
		return
	}
	if err := s.deps.Host.RemoveState(groupName(r.info), dir); err != nil {
		r.logger.Error("removing a replica", "why", why, "dir", dir, "err", err)
		return
	}
	r.logger.Info("removed the replica", "why", why, "topic_id", r.info.TopicID)
}

// HeldTopicIDs are the topic ids of the replicas this node runs or is
// removing and of those its partitions directory holds: what the
// controller's report of removed replicas
// (controller.Controller.ReportRemovedReplicas) leaves out. It is asked
// every MetaDutyInterval while a deleted topic is unreported, so it reads
// the replica.json only of directories that are neither: reading them all
// was half a node's CPU while it removed the replicas of a 10,000-partition
// topic.
func (s *Set[E]) HeldTopicIDs() (map[metadata.TopicID]bool, error) {
	held := make(map[metadata.TopicID]bool)
	known := make(map[string]bool)
	s.mu.RLock()
	for _, r := range s.reps {
		held[r.id] = true
		known[DirName(r.info.Topic, r.info.Partition)] = true
	}
	for name, id := range s.removing {
		held[id] = true
		known[name] = true
	}
	s.mu.RUnlock()
	entries, err := s.fs().ReadDir(s.cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return held, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || known[e.Name()] {
			continue
		}
		b, err := vfs.ReadFile(s.fs(), filepath.Join(s.cfg.Dir, e.Name(), "replica.json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // never opened (OpenFromDisk skips it), or being removed
		}
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		var info Info
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, fmt.Errorf("broker: %s/replica.json: %w", e.Name(), err)
		}
		if id, err := metadata.ParseTopicID(info.TopicID); err == nil {
			held[id] = true
		}
	}
	return held, nil
}
