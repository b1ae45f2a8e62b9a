package metadata

// Encodings of the delegation token commands (version 1 each) and of the
// snapshot's tokens (primitives in wire.go):
//
//	token: string id, string owner, string requester,
//	       array of string renewers, i64 issue, i64 max, i64 expiry,
//	       array of scram credentials (as in AlterScramCredentials)
//	CreateDelegationToken:  token
//	UpdateDelegationToken:  string id, string principal, bool expire,
//	                        i64 now, i64 period
//	ExpireDelegationTokens: i64 now

func appendToken(b []byte, t DelegationToken) []byte {
	b = appendString(b, t.TokenID)
	b = appendString(b, t.Owner)
	b = appendString(b, t.Requester)
	b = appendLen(b, len(t.Renewers))
	for _, r := range t.Renewers {
		b = appendString(b, r)
	}
	b = appendI64(b, t.IssueMs)
	b = appendI64(b, t.MaxMs)
	b = appendI64(b, t.ExpiryMs)
	b = appendLen(b, len(t.Credentials))
	for _, c := range t.Credentials {
		b = appendCredential(b, c)
	}
	return b
}

func readToken(r *reader) DelegationToken {
	t := DelegationToken{TokenID: r.str("token id"), Owner: r.str("token owner"), Requester: r.str("token requester")}
	if n := r.length("token renewers", 4); n > 0 {
		t.Renewers = make([]string, n)
		for i := range t.Renewers {
			t.Renewers[i] = r.str("token renewer")
		}
	}
	t.IssueMs, t.MaxMs, t.ExpiryMs = r.i64("token issue"), r.i64("token max"), r.i64("token expiry")
	if n := r.length("token credentials", 21); n > 0 {
		t.Credentials = make([]ScramCredential, n)
		for i := range t.Credentials {
			t.Credentials[i] = readCredential(r)
		}
	}
	return t
}

func (c CreateDelegationToken) appendBody(b []byte) []byte { return appendToken(b, c.Token) }

func (c UpdateDelegationToken) appendBody(b []byte) []byte {
	b = appendString(b, c.TokenID)
	b = appendString(b, c.Principal)
	b = appendBool(b, c.Expire)
	b = appendI64(b, c.NowMs)
	return appendI64(b, c.PeriodMs)
}

func (c ExpireDelegationTokens) appendBody(b []byte) []byte { return appendI64(b, c.NowMs) }

// decodeTokenCommand decodes the token commands; ok is false for another
// type or version.
func decodeTokenCommand(typ CommandType, ver uint8, r *reader) (Command, bool) {
	if ver != 1 {
		return nil, false
	}
	switch typ {
	case TypeCreateDelegationToken:
		return CreateDelegationToken{Token: readToken(r)}, true
	case TypeUpdateDelegationToken:
		return UpdateDelegationToken{TokenID: r.str("token id"), Principal: r.str("principal"),
			Expire: r.boolean("expire"), NowMs: r.i64("now"), PeriodMs: r.i64("period")}, true
	case TypeExpireDelegationTokens:
		return ExpireDelegationTokens{NowMs: r.i64("now")}, true
	}
	return nil, false
}

// appendTokens appends the snapshot's tokens, sorted by id.
func (s *Snapshot) appendTokens(b []byte) []byte {
	b = appendLen(b, len(s.tokens))
	for _, id := range sortedKeys(s.tokens) {
		b = appendToken(b, s.tokens[id])
	}
	return b
}

// readTokens reads the snapshot's tokens, which must be sorted by id.
func readTokens(r *reader) map[string]DelegationToken {
	n := r.length("delegation tokens", 40)
	if n == 0 {
		return nil
	}
	m := make(map[string]DelegationToken, n)
	prev := ""
	for i := range n {
		t := readToken(r)
		if r.err != nil {
			break
		}
		if i > 0 && t.TokenID <= prev {
			r.fail("delegation token %q not after %q", t.TokenID, prev)
		}
		m[t.TokenID], prev = t, t.TokenID
	}
	return m
}
