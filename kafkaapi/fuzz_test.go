package kafkaapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/logging"
)

// FuzzServeFrame feeds arbitrary frames (the bytes after the size prefix)
// to the decoder and dispatcher, answers them and encodes the answers. It
// must never panic, a rejected frame must be a protocol error, and only a
// failed acks=0 Produce may ask to close the connection.
func FuzzServeFrame(f *testing.F) {
	for _, frame := range seedFrames() {
		f.Add(frame)
	}
	f.Fuzz(serveOneFrame)
}

// serveOneFrame is one fuzz iteration.
func serveOneFrame(t *testing.T, frame []byte) {
	fb := newFakeBackend("127.0.0.1", 9092)
	fb.addTopic("t", 2)[1].append(makeBatch(1, "x"))
	fb.autoCreate = true
	srv, err := New(fb, Config{Logger: logging.Discard(), RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, err := srv.startRequest(frame, requestInfo{received: time.Now()})
	if err != nil {
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("rejected with %v, not a protocol error", err)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing may wait: fetches and produces answer at once
	resp, err := st.reply(ctx)
	if err != nil {
		if !errors.Is(err, errAcksZeroFailed) {
			t.Fatalf("responder failed: %v", err)
		}
		return
	}
	if resp != nil {
		appendResponse(nil, st.correlationID, st.headerV1, resp)
	}
}

// seedFrames is one well-formed request per API, plus a few broken ones.
func seedFrames() [][]byte {
	var frames [][]byte
	add := func(req kmsg.Request) {
		frames = append(frames, kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)[4:])
	}
	add(apiVersionsRequest(3))
	add(apiVersionsRequest(0))
	add(metadataRequest(12, true, "t", "new-topic", "bad name"))
	add(metadataRequest(1, false))
	add(produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, "a", "b"), 1: makeBatch(2, "c")}))
	add(produceRequest(3, 0, "t", map[int32][]byte{0: makeBatch(1, "a")}))
	add(fetchRequest(12, "t", time.Second, 1, 0, 0))
	add(fetchRequest(4, "t", time.Second, 1, 1, 5))
	add(listOffsetsRequest(7, "t", -1, -2, -1, -3, 0))
	add(createTopicsRequest(7, false, topicAsk{"c", 1, 1}, topicAsk{"..", -1, -1}))
	add(initProducerIDRequest(4, kmsg.StringPtr("tx")))
	frames = append(frames,
		[]byte{0, 18, 0, 9, 0, 0, 0, 1, 0xde, 0xad},         // ApiVersions v9
		[]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff}, // truncated Produce v9
		[]byte{0x7f, 0xff, 0, 0, 0, 0, 0, 1},                // unknown key
	)
	return frames
}
