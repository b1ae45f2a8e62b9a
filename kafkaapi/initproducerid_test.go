package kafkaapi

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func initProducerIDRequest(version int16, txnID *string) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = 60000
	return req
}

func TestInitProducerID(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	init := func(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
		return c.roundTrip(req).(*kmsg.InitProducerIDResponse)
	}
	a, b := init(initProducerIDRequest(0, nil)), init(initProducerIDRequest(4, nil))
	if a.ErrorCode != 0 || b.ErrorCode != 0 || a.ProducerID == b.ProducerID || a.ProducerEpoch != 0 {
		t.Fatalf("idempotent producers got %d/%d and %d/%d", a.ProducerID, a.ProducerEpoch, b.ProducerID, b.ProducerEpoch)
	}

	// The transactional id and timeout reach the backend; a second init
	// gets the same id with the next epoch.
	first := init(initProducerIDRequest(3, kmsg.StringPtr("tx")))
	second := init(initProducerIDRequest(3, kmsg.StringPtr("tx")))
	if first.ProducerID != second.ProducerID || second.ProducerEpoch != first.ProducerEpoch+1 {
		t.Fatalf("transactional: %d/%d then %d/%d", first.ProducerID, first.ProducerEpoch, second.ProducerID, second.ProducerEpoch)
	}
	h.fb.mu.Lock()
	got := h.fb.lastPIDReq
	h.fb.mu.Unlock()
	if got.TransactionalID == nil || *got.TransactionalID != "tx" || got.TransactionTimeout != time.Minute {
		t.Fatalf("backend saw %+v", got)
	}

	// v3+: the current identity is passed through for a bump (KIP-360).
	bump := initProducerIDRequest(4, nil)
	bump.ProducerID, bump.ProducerEpoch = a.ProducerID, 0
	init(bump)
	h.fb.mu.Lock()
	got = h.fb.lastPIDReq
	h.fb.mu.Unlock()
	if got.ProducerID != a.ProducerID || got.ProducerEpoch != 0 {
		t.Fatalf("backend saw %+v, want the current identity", got)
	}
}

func TestInitProducerIDErrors(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	half := initProducerIDRequest(4, nil)
	half.ProducerID = 7 // epoch stays -1
	for _, tc := range []struct {
		name string
		req  *kmsg.InitProducerIDRequest
		err  error
		want *kerr.Error
	}{
		{"empty transactional id", initProducerIDRequest(2, kmsg.StringPtr("")), nil, kerr.InvalidRequest},
		{"half an identity", half, nil, kerr.InvalidRequest},
		{"backend error", initProducerIDRequest(4, nil), kerr.CoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	} {
		h.fb.set(func(b *fakeBackend) { b.pidErr = tc.err })
		resp := c.roundTrip(tc.req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != tc.want.Code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Errorf("%s: error %d id %d epoch %d, want %s", tc.name, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, tc.want.Message)
		}
	}
}
