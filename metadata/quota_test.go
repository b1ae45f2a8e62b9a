package metadata

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func userEntity(u string) QuotaEntity   { return QuotaEntity{User: NamedQuota(u)} }
func clientEntity(c string) QuotaEntity { return QuotaEntity{ClientID: NamedQuota(c)} }

func setQuota(e QuotaEntity, key string, v float64) AlterClientQuotas {
	return AlterClientQuotas{Alterations: []QuotaAlteration{{Entity: e, Ops: []QuotaOp{{Key: key, Value: v}}}}}
}

func TestAlterClientQuotasApply(t *testing.T) {
	s := must(t, cluster3(t),
		setQuota(clientEntity("app"), QuotaProducerByteRate, 1024),
		AlterClientQuotas{Alterations: []QuotaAlteration{
			{Entity: userEntity("alice"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: 12.5}, {Key: QuotaConsumerByteRate, Value: 2048}}},
			{Entity: clientEntity("app"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 4096}}},
		}},
	)
	want := []ClientQuotaEntry{
		{Entity: clientEntity("app"), Values: []QuotaValue{{QuotaProducerByteRate, 4096}}},
		{Entity: userEntity("alice"), Values: []QuotaValue{{QuotaConsumerByteRate, 2048}, {QuotaRequestPercentage, 12.5}}},
	}
	if got := s.ClientQuotas(); !reflect.DeepEqual(got, want) {
		t.Fatalf("quotas %+v, want %+v", got, want)
	}
	if s.LayoutIndex() == s.AppliedIndex() {
		t.Error("a quota change moved the layout index")
	}
	// Removing keys: an unset key is a no-op, and the last key forgets
	// the entity.
	s = must(t, s, AlterClientQuotas{Alterations: []QuotaAlteration{
		{Entity: clientEntity("app"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}, {Key: "nonsense", Remove: true}}},
		{Entity: userEntity("alice"), Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Remove: true}}},
	}})
	want = []ClientQuotaEntry{{Entity: userEntity("alice"), Values: []QuotaValue{{QuotaRequestPercentage, 12.5}}}}
	if got := s.ClientQuotas(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after removes %+v, want %+v", got, want)
	}
}

func TestAlterClientQuotasRejects(t *testing.T) {
	base := cluster3(t)
	long := string(make([]byte, MaxQuotaNameLen+1))
	tests := map[string]QuotaAlteration{
		"empty entity":          {Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		"empty user name":       {Entity: userEntity(""), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		"long name":             {Entity: clientEntity(long), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		"default with a name":   {Entity: QuotaEntity{User: QuotaName{Kind: QuotaDefault, Name: "x"}}},
		"unknown kind":          {Entity: QuotaEntity{User: QuotaName{Kind: 3, Name: "x"}}},
		"unknown key":           {Entity: userEntity("a"), Ops: []QuotaOp{{Key: "connection_creation_rate", Value: 1}}},
		"zero":                  {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: 0}}},
		"negative":              {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaControllerMutationRate, Value: -1}}},
		"NaN":                   {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: math.NaN()}}},
		"infinite":              {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: math.Inf(1)}}},
		"fractional byte rate":  {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 10.5}}},
		"byte rate past a long": {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 1e19}}},
		"too many ops":          {Entity: userEntity("a"), Ops: make([]QuotaOp, MaxQuotaOps+1)},
		"duplicate key": {Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: 1},
			{Key: QuotaRequestPercentage, Remove: true}}},
	}
	for name, a := range tests {
		t.Run(name, func(t *testing.T) {
			if err := CheckQuotaAlteration(a); !errors.Is(err, ErrInvalidQuota) {
				t.Fatalf("CheckQuotaAlteration = %v, want ErrInvalidQuota", err)
			}
			// Apply rejects it whole, even beside a valid alteration.
			ok := QuotaAlteration{Entity: clientEntity("fine"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}}
			next, _, err := base.Apply(base.AppliedIndex()+1, AlterClientQuotas{Alterations: []QuotaAlteration{ok, a}})
			if !errors.Is(err, ErrInvalidQuota) || len(next.ClientQuotas()) != 0 {
				t.Fatalf("Apply = %v with %v", err, next.ClientQuotas())
			}
		})
	}
	// A byte rate a hair off a whole number is whole, as in Kafka.
	if err := CheckQuotaAlteration(QuotaAlteration{Entity: userEntity("a"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 100 + 1e-9}}}); err != nil {
		t.Fatal(err)
	}
	dup := setQuota(userEntity("a"), QuotaRequestPercentage, 1)
	dup.Alterations = append(dup.Alterations, dup.Alterations[0])
	if _, _, err := base.Apply(base.AppliedIndex()+1, dup); !errors.Is(err, ErrInvalidQuota) {
		t.Fatalf("duplicate entity: %v", err)
	}
	many := AlterClientQuotas{Alterations: make([]QuotaAlteration, MaxQuotaAlterations+1)}
	if _, _, err := base.Apply(base.AppliedIndex()+1, many); !errors.Is(err, ErrTooManyQuotas) {
		t.Fatalf("too many alterations: %v", err)
	}
}

func TestClientQuotaEntityLimit(t *testing.T) {
	s := cluster3(t)
	for i := 0; i < MaxQuotaEntities; i += MaxQuotaAlterations {
		var c AlterClientQuotas
		for j := range MaxQuotaAlterations {
			c.Alterations = append(c.Alterations, QuotaAlteration{Entity: clientEntity(string(rune('a'+j%26)) + string(rune(0x4e00+i+j))),
				Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}})
		}
		s = must(t, s, c)
	}
	if _, _, err := s.Apply(s.AppliedIndex()+1, setQuota(userEntity("one-more"), QuotaRequestPercentage, 1)); !errors.Is(err, ErrTooManyQuotas) {
		t.Fatalf("entity %d: %v", MaxQuotaEntities+1, err)
	}
	// Changing an existing entity is still allowed.
	s = must(t, s, setQuota(clientEntity(s.ClientQuotas()[0].Entity.ClientID.Name), QuotaProducerByteRate, 2))
}

// TestClientQuotaPrecedence sets one key at every level of Kafka's
// precedence and removes them from the most specific on: each removal
// must uncover exactly the next level.
func TestClientQuotaPrecedence(t *testing.T) {
	u, c, d, none := NamedQuota("alice"), NamedQuota("app"), DefaultQuota(), QuotaName{}
	levels := []struct {
		path   string
		entity QuotaEntity
	}{
		{"/users/alice/clients/app", QuotaEntity{u, c}},
		{"/users/alice/clients/<default>", QuotaEntity{u, d}},
		{"/users/alice", QuotaEntity{u, none}},
		{"/users/<default>/clients/app", QuotaEntity{d, c}},
		{"/users/<default>/clients/<default>", QuotaEntity{d, d}},
		{"/users/<default>", QuotaEntity{d, none}},
		{"/clients/app", QuotaEntity{none, c}},
		{"/clients/<default>", QuotaEntity{none, d}},
	}
	s := cluster3(t)
	for i, l := range levels {
		s = must(t, s, setQuota(l.entity, QuotaProducerByteRate, float64(100*(i+1))))
	}
	// Other users and client ids never see alice's or app's entries.
	if v, ok := s.ClientQuota("bob", "other", QuotaProducerByteRate); !ok || v != 500 {
		t.Fatalf("bob/other = %v %v, want the default user's default client (500)", v, ok)
	}
	if v, ok := s.ClientQuota("", "app", QuotaProducerByteRate); !ok || v != 400 {
		t.Fatalf("no user/app = %v %v, want /users/<default>/clients/app (400)", v, ok)
	}
	for i, l := range levels {
		if v, ok := s.ClientQuota("alice", "app", QuotaProducerByteRate); !ok || v != float64(100*(i+1)) {
			t.Fatalf("with %s the most specific left: %v %v, want %d", l.path, v, ok, 100*(i+1))
		}
		if _, ok := s.ClientQuota("alice", "app", QuotaConsumerByteRate); ok {
			t.Fatal("an unset key resolved")
		}
		s = must(t, s, AlterClientQuotas{Alterations: []QuotaAlteration{{Entity: l.entity, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}}}}})
	}
	if _, ok := s.ClientQuota("alice", "app", QuotaProducerByteRate); ok {
		t.Fatal("a quota resolved after every level was removed")
	}
	// Keys resolve independently: a specific entry of one key does not
	// hide a general entry of another.
	s = must(t, s, setQuota(QuotaEntity{u, c}, QuotaProducerByteRate, 1), setQuota(QuotaEntity{none, d}, QuotaConsumerByteRate, 2))
	if v, ok := s.ClientQuota("alice", "app", QuotaConsumerByteRate); !ok || v != 2 {
		t.Fatalf("consumer_byte_rate = %v %v, want 2 from /clients/<default>", v, ok)
	}
}

func TestClientQuotasCodecAndSnapshot(t *testing.T) {
	cmds := []Command{
		setQuota(QuotaEntity{User: DefaultQuota(), ClientID: NamedQuota("app")}, QuotaProducerByteRate, 1024),
		AlterClientQuotas{Alterations: []QuotaAlteration{
			{Entity: userEntity("bob"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: 0.25}, {Key: QuotaControllerMutationRate, Value: 3}}},
			{Entity: QuotaEntity{ClientID: DefaultQuota()}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 1 << 40}}},
			{Entity: userEntity("alice"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}}},
		}},
	}
	for _, c := range cmds {
		b := mustEncode(t, c)
		if d, err := Decode(b); err != nil || !reflect.DeepEqual(d, c) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", c, d, err)
		}
	}
	base := richState(t)
	s := must(t, base, cmds...)
	if s.Equal(base) {
		t.Fatal("Equal missed the quotas")
	}
	b, _ := s.MarshalBinary()
	got, err := DecodeSnapshot(b)
	if err != nil || !got.Equal(s) {
		t.Fatalf("round trip: %v", err)
	}
	if v, ok := got.ClientQuota("carol", "x", QuotaConsumerByteRate); !ok || v != 1<<40 {
		t.Fatalf("restored /clients/<default> = %v %v", v, ok)
	}
	b2, _ := got.MarshalBinary()
	if string(b2) != string(b) {
		t.Fatal("the encoding is not canonical")
	}

	// A version 10 snapshot (no quotas section) still loads, without
	// quotas.
	old, _ := base.MarshalBinary()
	v10 := append([]byte{}, old[:len(old)-4]...) // drop the empty quotas array
	v10[len(snapshotMagic)] = 10
	if got, err := DecodeSnapshot(v10); err != nil || !got.Equal(base) || len(got.ClientQuotas()) != 0 {
		t.Fatalf("version 10: %v", err)
	}

	// Quota sections that Apply could not have written are refused.
	bad := map[string]func(*Snapshot){
		"zero value":      func(s *Snapshot) { s.quotas[userEntity("bob")] = map[string]float64{QuotaRequestPercentage: 0} },
		"unknown key":     func(s *Snapshot) { s.quotas[userEntity("bob")] = map[string]float64{"nope": 1} },
		"no values":       func(s *Snapshot) { s.quotas[userEntity("bob")] = map[string]float64{} },
		"empty entity":    func(s *Snapshot) { s.quotas[QuotaEntity{}] = map[string]float64{QuotaRequestPercentage: 1} },
		"fractional rate": func(s *Snapshot) { s.quotas[userEntity("bob")] = map[string]float64{QuotaProducerByteRate: 1.5} },
	}
	for name, corrupt := range bad {
		c := s.shallow()
		c.quotas = cloneMap(s.quotas)
		corrupt(c)
		b, _ := c.MarshalBinary()
		if _, err := DecodeSnapshot(b); !errors.Is(err, ErrMalformedSnapshot) {
			t.Errorf("%s: DecodeSnapshot = %v, want ErrMalformedSnapshot", name, err)
		}
	}
}

// TestClientQuotaScope: the scope names the parts of the entity that set
// the quota, so that its clients share a rate in those parts.
func TestClientQuotaScope(t *testing.T) {
	def, alice, app := DefaultQuota(), NamedQuota("alice"), NamedQuota("app")
	s := cluster3(t)
	s = must(t, s, setQuota(QuotaEntity{User: alice}, QuotaProducerByteRate, 100))
	s = must(t, s, setQuota(QuotaEntity{User: def, ClientID: def}, QuotaConsumerByteRate, 100))
	s = must(t, s, setQuota(QuotaEntity{ClientID: app}, QuotaRequestPercentage, 100))
	for _, c := range []struct {
		key              string
		byUser, byClient bool
	}{
		{QuotaProducerByteRate, true, false},
		{QuotaConsumerByteRate, true, true},
		{QuotaRequestPercentage, false, true},
	} {
		v, byUser, byClient, ok := s.ClientQuotaScope("alice", "app", c.key)
		if !ok || v != 100 || byUser != c.byUser || byClient != c.byClient {
			t.Errorf("%s: %v user=%v client=%v ok=%v, want user=%v client=%v", c.key, v, byUser, byClient, ok, c.byUser, c.byClient)
		}
	}
	if _, _, _, ok := s.ClientQuotaScope("alice", "app", QuotaControllerMutationRate); ok {
		t.Error("a key no entity sets resolved")
	}
}
