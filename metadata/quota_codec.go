package metadata

import "math"

// Encodings of AlterClientQuotas (version 1) and of the snapshot's quotas
// (primitives in wire.go; a float64 is its IEEE 754 bits as a u64):
//
//	entity: u8 user kind, string user name, u8 client-id kind, string client-id name
//	AlterClientQuotas: array of alterations:
//	                   entity, array of ops: string key, bool remove, f64 value
//	snapshot quotas:   array of entities, by CompareQuotaEntities:
//	                   entity, array of values, by key: string key, f64 value

func appendQuotaEntity(b []byte, e QuotaEntity) []byte {
	b = appendU8(b, uint8(e.User.Kind))
	b = appendString(b, e.User.Name)
	b = appendU8(b, uint8(e.ClientID.Kind))
	return appendString(b, e.ClientID.Name)
}

func readQuotaEntity(r *reader) QuotaEntity {
	var e QuotaEntity
	e.User = QuotaName{Kind: QuotaNameKind(r.u8("quota user kind")), Name: r.str("quota user")}
	e.ClientID = QuotaName{Kind: QuotaNameKind(r.u8("quota client-id kind")), Name: r.str("quota client-id")}
	return e
}

func appendF64(b []byte, v float64) []byte { return appendU64(b, math.Float64bits(v)) }

func (c AlterClientQuotas) appendBody(b []byte) []byte {
	b = appendLen(b, len(c.Alterations))
	for _, a := range c.Alterations {
		b = appendQuotaEntity(b, a.Entity)
		b = appendLen(b, len(a.Ops))
		for _, op := range a.Ops {
			b = appendString(b, op.Key)
			b = appendBool(b, op.Remove)
			b = appendF64(b, op.Value)
		}
	}
	return b
}

// minQuotaEntityLen is an entity's smallest encoding: two kinds and two
// empty names.
const minQuotaEntityLen = 10

func decodeAlterClientQuotas(r *reader) AlterClientQuotas {
	var c AlterClientQuotas
	n := r.length("quota alterations", minQuotaEntityLen+4)
	for range n {
		a := QuotaAlteration{Entity: readQuotaEntity(r)}
		m := r.length("quota ops", 13) // an empty key, a bool, a float
		for range m {
			op := QuotaOp{Key: r.str("quota key"), Remove: r.boolean("quota remove")}
			op.Value = math.Float64frombits(r.u64("quota value"))
			a.Ops = append(a.Ops, op)
		}
		if r.err != nil {
			break
		}
		c.Alterations = append(c.Alterations, a)
	}
	return c
}

// appendQuotas appends the snapshot's quotas (version 11 on).
func (s *Snapshot) appendQuotas(b []byte) []byte {
	b = appendLen(b, len(s.quotas))
	for _, q := range s.ClientQuotas() {
		b = appendQuotaEntity(b, q.Entity)
		b = appendLen(b, len(q.Values))
		for _, v := range q.Values {
			b = appendString(b, v.Key)
			b = appendF64(b, v.Value)
		}
	}
	return b
}

// readQuotas reads the snapshot's quotas: entities sorted, each valid and
// with at least one valid value, keys sorted.
func readQuotas(r *reader) map[QuotaEntity]map[string]float64 {
	n := r.length("client quotas", minQuotaEntityLen+4)
	if n == 0 {
		return nil
	}
	out := make(map[QuotaEntity]map[string]float64, n)
	var prev QuotaEntity
	for i := range n {
		e := readQuotaEntity(r)
		m := r.length("quota values", 12) // an empty key and a float
		if r.err != nil {
			break
		}
		if err := CheckQuotaAlteration(QuotaAlteration{Entity: e}); err != nil {
			r.fail("%v", err)
		} else if i > 0 && CompareQuotaEntities(e, prev) <= 0 {
			r.fail("client quota %v not after %v", e, prev)
		} else if m == 0 {
			r.fail("client quota %v without values", e)
		}
		values := make(map[string]float64, m)
		prevKey := ""
		for j := range m {
			k, v := r.str("quota key"), math.Float64frombits(r.u64("quota value"))
			if r.err != nil {
				break
			}
			if reason := checkQuotaValue(k, v); reason != "" {
				r.fail("client quota %v: %s", e, reason)
			} else if j > 0 && k <= prevKey {
				r.fail("client quota %v: key %q not after %q", e, k, prevKey)
			}
			values[k], prevKey = v, k
		}
		out[e], prev = values, e
	}
	return out
}
