package metadata

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Producer ids are not guessable: once the cluster has a producer-id key
// (SetProducerIDKey, which the metadata leader proposes once, drawn from
// crypto/rand), the n-th producer id is ProducerIDKeyedBase + P(n), where P
// is a keyed permutation of [0, 2^62): a 4-round Feistel network whose
// round function is HMAC-SHA256 under the key. Ids stay unique (P is a
// bijection and the counter only grows) and Apply stays deterministic (the
// key is in the log and the snapshot), but without the key the next id
// cannot be told from earlier ones, so a client cannot fence another's
// producer with a guessed id. Ids handed out before the key was set are
// the counter itself, below ProducerIDKeyedBase, so the two never collide.

// ProducerIDKeySize is the size of a producer-id key.
const ProducerIDKeySize = 32

// ProducerIDKeyedBase is the lowest keyed producer id.
const ProducerIDKeyedBase int64 = 1 << 62

const (
	feistelHalfBits = 31
	feistelHalfMask = 1<<feistelHalfBits - 1
	feistelRounds   = 4
)

// TypeSetProducerIDKey is SetProducerIDKey's command type.
const TypeSetProducerIDKey CommandType = 14

// SetProducerIDKey sets the cluster's producer-id key, once: a later one
// with another key fails with ErrProducerIDKeySet, the same key is a
// no-op. The metadata leader proposes it; peers may not.
//
// Result: none.
type SetProducerIDKey struct {
	Key []byte // ProducerIDKeySize bytes
}

// ErrProducerIDKeySet is returned for a SetProducerIDKey when the
// cluster already has another key.
var ErrProducerIDKeySet = errors.New("metadata: the producer-id key is already set")

// ErrInvalidProducerIDKey is returned for a key of the wrong size.
var ErrInvalidProducerIDKey = fmt.Errorf("metadata: a producer-id key must be %d bytes", ProducerIDKeySize)

func (SetProducerIDKey) Type() CommandType { return TypeSetProducerIDKey }

func (c SetProducerIDKey) appendBody(b []byte) []byte { return appendString(b, string(c.Key)) }

// HasProducerIDKey reports whether producer ids are keyed.
func (s *Snapshot) HasProducerIDKey() bool { return len(s.producerIDKey) == ProducerIDKeySize }

func (s *Snapshot) setProducerIDKey(c SetProducerIDKey) (any, error) {
	switch {
	case len(c.Key) != ProducerIDKeySize:
		return nil, ErrInvalidProducerIDKey
	case s.HasProducerIDKey() && !bytes.Equal(s.producerIDKey, c.Key):
		return nil, ErrProducerIDKeySet
	}
	s.producerIDKey = bytes.Clone(c.Key)
	return nil, nil
}

// producerIDAt is the producer id of counter value n (n >= FirstProducerID).
func (s *Snapshot) producerIDAt(n int64) int64 {
	if !s.HasProducerIDKey() {
		return n
	}
	return ProducerIDKeyedBase + int64(feistel(s.producerIDKey, uint64(n-FirstProducerID), false))
}

// issued reports whether id is one that the counter has handed out.
func (s *Snapshot) issued(id int64) bool {
	if id < ProducerIDKeyedBase {
		return id >= FirstProducerID && id < s.nextProducerID
	}
	if !s.HasProducerIDKey() {
		return false
	}
	n := int64(feistel(s.producerIDKey, uint64(id-ProducerIDKeyedBase), true)) + FirstProducerID
	return n < s.nextProducerID
}

// feistel permutes (or, with inverse, un-permutes) x in [0, 2^62).
func feistel(key []byte, x uint64, inverse bool) uint64 {
	l, r := uint32(x>>feistelHalfBits)&feistelHalfMask, uint32(x)&feistelHalfMask
	for i := range feistelRounds {
		if inverse {
			round := byte(feistelRounds - 1 - i)
			l, r = r^roundFunc(key, round, l), l
		} else {
			l, r = r, l^roundFunc(key, byte(i), r)
		}
	}
	return uint64(l)<<feistelHalfBits | uint64(r)
}

func roundFunc(key []byte, round byte, half uint32) uint32 {
	m := hmac.New(sha256.New, key)
	var in [5]byte
	in[0] = round
	binary.BigEndian.PutUint32(in[1:], half)
	m.Write(in[:])
	return binary.BigEndian.Uint32(m.Sum(nil)) & feistelHalfMask
}
