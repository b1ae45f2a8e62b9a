package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// listenerProbeTimeout bounds a probe of what a listener expects.
const listenerProbeTimeout = 3 * time.Second

// probeListener finds out whether the listener at addr speaks TLS and
// whether it wants SASL authentication, and returns a
// *ListenerMismatchError if that is not what the command uses (usesTLS:
// --tls-ca, usesSASL: --sasl-mechanism); nil if it matches or cannot tell.
// A listener is taken for plaintext only once it has answered a plaintext
// request: a broker that is down or restarting tells nothing.
func probeListener(ctx context.Context, addr string, usesTLS, usesSASL bool) error {
	ctx, cancel := context.WithTimeout(ctx, listenerProbeTimeout)
	defer cancel()
	speaksTLS := speaksTLS(ctx, addr)
	sasl, known := wantsSASL(ctx, addr, speaksTLS)
	if !known {
		return nil
	}
	e := &ListenerMismatchError{Addr: addr, NeedsTLS: speaksTLS && !usesTLS, NoTLS: !speaksTLS && usesTLS,
		NeedsSASL: sasl && !usesSASL}
	if !e.NeedsTLS && !e.NoTLS && !e.NeedsSASL {
		return nil
	}
	return e
}

// speaksTLS reports whether a TLS handshake with addr succeeds; the
// certificate is not checked: this only asks which protocol answers.
func speaksTLS(ctx context.Context, addr string) bool {
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // #nosec G402 -- a probe: it sends no credentials
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// wantsSASL sends ApiVersions and then Metadata, which a SASL listener
// answers only after authentication: it closes the connection instead.
// known is false when ApiVersions gets no answer (not Kafka over this
// protocol, or not now) or the answers say neither.
func wantsSASL(ctx context.Context, addr string, overTLS bool) (sasl, known bool) {
	var c net.Conn
	var err error
	if overTLS {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // #nosec G402 -- a probe: it sends no credentials
		c, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return false, false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("minikafka-cli"))
	versions := kmsg.NewPtrApiVersionsRequest() // version 0
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	meta.Topics = []kmsg.MetadataRequestTopic{} // none
	r := bufio.NewReader(c)
	// One at a time: a SASL listener may close before it answers the first.
	if _, err := c.Write(f.AppendRequest(nil, versions, 1)); err != nil || readResponse(r) != nil {
		return false, false // ApiVersions unanswered: not Kafka, or not now
	}
	if _, err = c.Write(f.AppendRequest(nil, meta, 2)); err == nil {
		err = readResponse(r)
	}
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
	return closed, err == nil || closed
}

// readResponse reads one response frame and drops it.
func readResponse(r *bufio.Reader) error {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return err
	}
	_, err := r.Discard(int(binary.BigEndian.Uint32(size[:])))
	return err
}
