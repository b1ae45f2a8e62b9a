package kafkaapi

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// On an SSL listener (TLS without SASL) the TLS handshake is the whole
// authentication: a connection keeps working past AuthenticationTimeout,
// while one that never finishes the handshake is still closed by it.
func TestTLSConnectionOutlivesAuthenticationTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	srvTLS, cliTLS := tlsConfigs(t)
	h := startListener(t, Config{AuthenticationTimeout: timeout}, Listener{Name: "SSL", TLS: srvTLS})
	c := h.dialTLS(cliTLS)
	if r := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %d", r.ErrorCode)
	}
	time.Sleep(5 * timeout) // past the timeout, not a bound on speed
	if r := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions after the authentication timeout: %d", r.ErrorCode)
	}
	// A connection that sends nothing never finishes its handshake.
	h.dial().requireClosed()
}
