package kafkaapi

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// quotaBackend adds client quotas to the authorizing fake backend: a
// fixed list to describe, and the alterations it was given.
type quotaBackend struct {
	*authzBackend
	entries []QuotaEntry
	altered [][]QuotaAlteration // guarded by authzBackend.mu
}

func (b *quotaBackend) ClientQuotas() []QuotaEntry { return b.entries }

func (b *quotaBackend) AlterClientQuotas(_ context.Context, alts []QuotaAlteration, validateOnly bool) ([]error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.altered = append(b.altered, alts)
	errs := make([]error, len(alts))
	for i, a := range alts {
		if slices.ContainsFunc(a.Ops, func(o QuotaOp) bool { return o.Key == "bogus" }) {
			errs[i] = kerr.InvalidRequest
		}
	}
	return errs, nil
}

func startQuotaServer(t *testing.T, allowed func(acl.Request) bool, entries []QuotaEntry) (*harness, *quotaBackend) {
	var qb *quotaBackend
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		qb = &quotaBackend{authzBackend: &authzBackend{fakeBackend: fb, allowed: allowed}, entries: entries}
		return qb
	})
	return h, qb
}

func quotaEntry(parts ...string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i < len(parts); i += 2 {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type = parts[i]
		if parts[i+1] != "<default>" {
			e.Name = kmsg.StringPtr(parts[i+1])
		}
		out = append(out, e)
	}
	return out
}

func alterQuotasRequest(validateOnly bool, entities ...[]kmsg.AlterClientQuotasRequestEntryEntity) *kmsg.AlterClientQuotasRequest {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version, req.ValidateOnly = 1, validateOnly
	for _, ent := range entities {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = ent
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1024
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
	}
	return req
}

// Without ALTER_CONFIGS on the cluster every entry is refused and nothing
// reaches the backend; without DESCRIBE_CONFIGS the describe is refused.
func TestClientQuotasACLs(t *testing.T) {
	h, qb := startQuotaServer(t, func(acl.Request) bool { return false }, []QuotaEntry{{Entity: QuotaEntity{User: QuotaName{Kind: QuotaDefault}}}})
	c := h.dial()
	resp := c.roundTrip(alterQuotasRequest(false, quotaEntry("user", "alice"), quotaEntry("client-id", "x"))).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 2 || resp.Entries[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code ||
		resp.Entries[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code || *resp.Entries[0].Entity[0].Name != "alice" {
		t.Fatalf("alter denied: %+v", resp.Entries)
	}
	d := c.roundTrip(kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse)
	if d.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(d.Entries) != 0 {
		t.Fatalf("describe denied: %+v", d)
	}
	qb.mu.Lock()
	defer qb.mu.Unlock()
	if len(qb.altered) != 0 {
		t.Fatalf("a denied alter reached the backend: %+v", qb.altered)
	}
	ops := []acl.Operation{}
	for _, r := range qb.asked {
		if r.Resource != acl.ResourceCluster {
			t.Fatalf("asked %+v", r)
		}
		ops = append(ops, r.Operation)
	}
	if !slices.Contains(ops, acl.OpAlterConfigs) || !slices.Contains(ops, acl.OpDescribeConfigs) {
		t.Fatalf("asked for %v", ops)
	}
}

// Each entry's entity is checked as Kafka's controller checks it; the
// valid ones reach the backend, whose per-entry errors come back in place.
func TestAlterClientQuotasEntities(t *testing.T) {
	h, qb := startQuotaServer(t, func(acl.Request) bool { return true }, nil)
	c := h.dial()
	bogus := alterQuotasRequest(false, quotaEntry("client-id", "b"))
	bogus.Entries[0].Ops[0].Key = "bogus"
	req := alterQuotasRequest(true,
		quotaEntry("user", "alice", "client-id", "<default>"), // valid
		nil,                                  // empty entity
		quotaEntry("group", "g"),             // unknown type
		quotaEntry("ip", "127.0.0.1"),        // not kept
		quotaEntry("user", "a", "user", "b"), // type twice
		quotaEntry("client-id", ""),          // empty name
		quotaEntry("client-id", "<default>", "user", "alice"), // the first entity again
	)
	req.Entries = append(req.Entries, bogus.Entries[0])
	resp := c.roundTrip(req).(*kmsg.AlterClientQuotasResponse)
	want := []int16{0, 42, 42, 42, 42, 42, 42, 42}
	var got []int16
	for _, e := range resp.Entries {
		got = append(got, e.ErrorCode)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	qb.mu.Lock()
	defer qb.mu.Unlock()
	wantAlt := []QuotaAlteration{
		{Entity: QuotaEntity{User: QuotaName{QuotaNamed, "alice"}, ClientID: QuotaName{Kind: QuotaDefault}}, Ops: []QuotaOp{{Key: "producer_byte_rate", Value: 1024}}},
		{Entity: QuotaEntity{ClientID: QuotaName{QuotaNamed, "b"}}, Ops: []QuotaOp{{Key: "bogus", Value: 1024}}},
	}
	if len(qb.altered) != 1 || !slices.EqualFunc(qb.altered[0], wantAlt, func(a, b QuotaAlteration) bool {
		return a.Entity == b.Entity && slices.Equal(a.Ops, b.Ops)
	}) {
		t.Fatalf("backend got %+v", qb.altered)
	}
}

// DescribeClientQuotas filters the stored entities as Kafka does.
func TestDescribeClientQuotasFilter(t *testing.T) {
	named := func(n string) QuotaName { return QuotaName{QuotaNamed, n} }
	def, none := QuotaName{Kind: QuotaDefault}, QuotaName{}
	stored := []QuotaEntry{
		{Entity: QuotaEntity{none, named("app")}, Values: []QuotaValue{{"producer_byte_rate", 1}}},
		{Entity: QuotaEntity{none, def}, Values: []QuotaValue{{"producer_byte_rate", 2}}},
		{Entity: QuotaEntity{def, none}, Values: []QuotaValue{{"request_percentage", 3}}},
		{Entity: QuotaEntity{named("alice"), none}, Values: []QuotaValue{{"consumer_byte_rate", 4}}},
		{Entity: QuotaEntity{named("alice"), named("app")}, Values: []QuotaValue{{"consumer_byte_rate", 5}}},
	}
	h, _ := startQuotaServer(t, func(acl.Request) bool { return true }, stored)
	c := h.dial()
	comp := func(typ string, match kmsg.QuotasMatchType, name string) kmsg.DescribeClientQuotasRequestComponent {
		x := kmsg.NewDescribeClientQuotasRequestComponent()
		x.EntityType, x.MatchType = typ, match
		if name != "" {
			x.Match = kmsg.StringPtr(name)
		}
		return x
	}
	exact, dflt, anyName := kmsg.QuotasMatchTypeExact, kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny
	tests := []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []float64 // the values of the matched entries, in order
	}{
		{"everything", false, nil, []float64{1, 2, 3, 4, 5}},
		{"strict with no component", true, nil, nil},
		{"client-id app", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", exact, "app")}, []float64{1, 5}},
		{"client-id app strict", true, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", exact, "app")}, []float64{1}},
		{"default client-id", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", dflt, "")}, []float64{2}},
		{"any user", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", anyName, "")}, []float64{3, 4, 5}},
		{"any user strict", true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", anyName, "")}, []float64{3, 4}},
		{"alice and any client", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", exact, "alice"), comp("client-id", anyName, "")}, []float64{5}},
		{"ip", false, []kmsg.DescribeClientQuotasRequestComponent{comp("ip", anyName, "")}, nil},
	}
	for _, tc := range tests {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version, req.Strict, req.Components = 1, tc.strict, tc.comps
		resp := c.roundTrip(req).(*kmsg.DescribeClientQuotasResponse)
		var got []float64
		for _, e := range resp.Entries {
			got = append(got, e.Values[0].Value)
		}
		if resp.ErrorCode != 0 || !slices.Equal(got, tc.want) {
			t.Errorf("%s: code %d values %v, want %v", tc.name, resp.ErrorCode, got, tc.want)
		}
	}
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	resp := c.roundTrip(req).(*kmsg.DescribeClientQuotasResponse)
	last := resp.Entries[4].Entity
	if len(last) != 2 || last[0].Type != "user" || *last[0].Name != "alice" || last[1].Type != "client-id" || *last[1].Name != "app" {
		t.Fatalf("entity %+v", last)
	}
	if def := resp.Entries[1].Entity; len(def) != 1 || def[0].Type != "client-id" || def[0].Name != nil {
		t.Fatalf("default entity %+v", def)
	}
}
