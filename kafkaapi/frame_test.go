package kafkaapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/logging"
)

// A frame bigger than one read chunk arrives intact; one cut short is an
// error, not a short frame.
func TestReadFrameInChunks(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (2<<20+32)/16) // over two of internal/frame's read chunks
	raw := frameWith(int32(len(body)), body)
	got, err := readFrame(bytes.NewReader(raw), DefaultMaxRequestBytes)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("readFrame: %d bytes, %v", len(got), err)
	}
	if _, err := readFrame(bytes.NewReader(raw[:len(raw)-1]), DefaultMaxRequestBytes); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v, want ErrUnexpectedEOF", err)
	}
	var fse *FrameSizeError
	if _, err := readFrame(bytes.NewReader(raw), int32(len(body)-1)); !errors.As(err, &fse) || fse.Size != int32(len(body)) {
		t.Fatalf("over the limit: %v, want a FrameSizeError", err)
	}
}

// Every advertised API decodes a request at each of its versions and
// answers it with a response of the same version whose header matches.
func TestEveryAdvertisedVersionIsServed(t *testing.T) {
	fb := newFakeBackend("127.0.0.1", 9092)
	fb.addTopic("t", 1)
	srv, err := New(fb, Config{Logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing may wait: a fetch answers at once
	for _, a := range apis {
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(int16(a.key))
			req.SetVersion(v)
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				p.Acks = -1 // acks=0 answers nothing
			}
			frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 41)[4:]
			st, err := srv.startRequest(frame, requestInfo{received: time.Now()})
			if err != nil {
				t.Fatalf("%s v%d: %v", kmsg.NameForKey(int16(a.key)), v, err)
			}
			resp, err := st.reply(ctx)
			if err != nil || resp == nil {
				t.Fatalf("%s v%d: response %v, error %v", kmsg.NameForKey(int16(a.key)), v, resp, err)
			}
			if resp.Key() != int16(a.key) || resp.GetVersion() != v {
				t.Fatalf("%s v%d: answered key %d v%d", kmsg.NameForKey(int16(a.key)), v, resp.Key(), resp.GetVersion())
			}
			wire := appendResponse(nil, st.correlationID, st.headerV1, resp)[4:]
			if st.correlationID != 41 || !bytes.Equal(wire[:4], []byte{0, 0, 0, 41}) {
				t.Fatalf("%s v%d: correlation id lost", kmsg.NameForKey(int16(a.key)), v)
			}
			body := wire[4:]
			if resp.IsFlexible() && a.key != kmsg.ApiVersions {
				b := kbin.Reader{Src: body}
				kmsg.SkipTags(&b)
				body = b.Src
			}
			back := req.ResponseKind()
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: response does not decode: %v", kmsg.NameForKey(int16(a.key)), v, err)
			}
		}
		// One past the top is refused (ApiVersions aside: tested elsewhere).
		if a.key == kmsg.ApiVersions {
			continue
		}
		for _, v := range []int16{a.min - 1, a.max + 1} {
			req := kmsg.RequestForKey(int16(a.key))
			req.SetVersion(v)
			frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:]
			var ue *UnsupportedRequestError
			if _, err := srv.startRequest(frame, requestInfo{received: time.Now()}); !errors.As(err, &ue) || ue.Version != v {
				t.Fatalf("%s v%d: %v, want UnsupportedRequestError", kmsg.NameForKey(int16(a.key)), v, err)
			}
		}
	}
}
