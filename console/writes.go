package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// adminKeyHeader carries the admin key on every write. A custom header
// cannot be sent by another site's page without a CORS preflight, which
// the console never allows.
const adminKeyHeader = "X-Console-Admin-Key"

// Errors of the write actions.
var (
	// ErrReadOnly: the node has no admin key, so the console writes
	// nothing.
	ErrReadOnly = errors.New("console: read-only (the node has no console_admin_key)")
	// ErrAdminKey: the request did not present the node's admin key.
	ErrAdminKey = errors.New("console: wrong or missing admin key")
	// ErrGroupActive: a group's offsets are reset only while it has no
	// members, which would overwrite them.
	ErrGroupActive = errors.New("console: the group has members; stop them first")
)

// write wraps a write action: it runs only with the node's admin key in
// adminKeyHeader and a JSON body, for the visitor's identity (whose ACLs
// still apply).
func (c *Console) write(fn apiFunc) http.Handler {
	inner := c.api(fn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case c.cfg.AdminKey == "":
			writeError(w, ErrReadOnly)
		case !c.keyOK(r.Header.Get(adminKeyHeader)):
			writeError(w, ErrAdminKey)
		case r.Header.Get("Content-Type") != "application/json":
			writeError(w, fmt.Errorf("%w: want a JSON body", ErrBadRequest))
		default:
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			inner.ServeHTTP(w, r)
		}
	})
}

// keyOK compares k with the admin key in constant time.
func (c *Console) keyOK(k string) bool {
	got, want := sha256.Sum256([]byte(k)), sha256.Sum256([]byte(c.cfg.AdminKey))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return nil
}

// unlock answers whether the key presented is the admin key.
func (c *Console) unlock(context.Context, *access, *http.Request) (any, error) {
	return map[string]bool{"ok": true}, nil
}

type createTopicReq struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`        // 0: the broker's default
	ReplicationFactor int16             `json:"replicationFactor"` // 0: the broker's default
	Configs           map[string]string `json:"configs"`
}

// createTopic creates a topic.
func (c *Console) createTopic(ctx context.Context, a *access, r *http.Request) (any, error) {
	var req createTopicReq
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Name == "" || req.Partitions < 0 || req.ReplicationFactor < 0 {
		return nil, fmt.Errorf("%w: a name, and counts not negative", ErrBadRequest)
	}
	configs := map[string]*string{}
	for k, v := range req.Configs {
		configs[k] = &v
	}
	parts, rf := cmp.Or(req.Partitions, -1), cmp.Or(req.ReplicationFactor, -1)
	res, err := a.adm.CreateTopic(ctx, parts, rf, configs, req.Name)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return nil, fmt.Errorf("create topic %q: %w", req.Name, err)
	}
	return map[string]any{"name": res.Topic, "partitions": res.NumPartitions, "replicationFactor": res.ReplicationFactor}, nil
}

// deleteTopic deletes a topic.
func (c *Console) deleteTopic(ctx context.Context, a *access, r *http.Request) (any, error) {
	name := r.PathValue("topic")
	res, err := a.adm.DeleteTopic(ctx, name)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return nil, fmt.Errorf("delete topic %q: %w", name, err)
	}
	return map[string]string{"deleted": name}, nil
}

type resetReq struct {
	Topic string `json:"topic"`
	To    string `json:"to"` // earliest or latest
}

type resetRow struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// resetGroup sets a group's committed offsets of one topic to the start
// or the end of each partition, while the group has no members.
func (c *Console) resetGroup(ctx context.Context, a *access, r *http.Request) (any, error) {
	group := r.PathValue("group")
	var req resetReq
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	list := a.adm.ListStartOffsets
	switch req.To {
	case "earliest":
	case "latest":
		list = a.adm.ListEndOffsets
	default:
		return nil, fmt.Errorf("%w: to=%q, want earliest or latest", ErrBadRequest, req.To)
	}
	if err := resettable(ctx, a, group); err != nil {
		return nil, err
	}
	listed, err := list(ctx, req.Topic)
	if err != nil {
		return nil, err
	}
	if err := listed.Error(); err != nil {
		return nil, err
	}
	offsets := kadm.Offsets{}
	out := []resetRow{}
	listed.Each(func(o kadm.ListedOffset) {
		offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		out = append(out, resetRow{Partition: o.Partition, Offset: o.Offset})
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %q: %w", req.Topic, ErrNotFound)
	}
	if err := a.adm.CommitAllOffsets(ctx, group, offsets); err != nil {
		return nil, fmt.Errorf("reset group %q: %w", group, err)
	}
	slices.SortFunc(out, func(x, y resetRow) int { return int(x.Partition - y.Partition) })
	return map[string]any{"group": group, "topic": req.Topic, "offsets": out}, nil
}

// resettable checks that a group has no member, which would overwrite the
// reset offsets: a classic group by DescribeGroups, a KIP-848 consumer
// group (which DescribeGroups does not describe) by ConsumerGroupDescribe.
// A share group commits no offsets and is refused; an unknown group may
// be given offsets, as OffsetCommit allows.
func resettable(ctx context.Context, a *access, group string) error {
	described, err := a.adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	if d, ok := described[group]; !ok || !errors.Is(d.Err, kerr.GroupIDNotFound) {
		if ok && (d.Err != nil || len(d.Members) > 0) {
			return cmp.Or(d.Err, fmt.Errorf("group %q is %s with %d members: %w", group, d.State, len(d.Members), ErrGroupActive))
		}
		return nil
	}
	cgs, err := a.adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return err
	}
	switch cg := cgs[group]; {
	case cg.Err == nil && len(cg.Members) > 0:
		return fmt.Errorf("group %q is %s with %d members: %w", group, cg.State, len(cg.Members), ErrGroupActive)
	case cg.Err == nil:
		return nil
	case !errors.Is(cg.Err, kerr.GroupIDNotFound):
		return cg.Err
	}
	sgs, err := a.adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return err
	}
	if sgs[group].Err == nil {
		return fmt.Errorf("%w: %q is a share group, which commits no offsets", ErrBadRequest, group)
	}
	return nil
}
