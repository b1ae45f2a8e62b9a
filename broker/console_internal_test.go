package broker

import (
	"errors"
	"testing"

	"github.com/minikafka/minikafka-go/internal/testcert"
)

// The console reads through a SASL listener when there is one (its
// visitors then log in), else a plaintext or TLS one, never one that
// requires client certificates; it dials a listener bound to every
// interface on loopback, and a TLS one at its advertised host, trusting
// the listener's certificate.
func TestConsoleListenerChoice(t *testing.T) {
	t.Parallel()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := ListenerConfig{Name: "PLAINTEXT", SecurityProtocol: ProtocolPlaintext, Addr: "0.0.0.0:9092", AdvertisedAddr: "host1:9092"}
	sslReq := ListenerConfig{Name: "MTLS", SecurityProtocol: ProtocolSSL, Addr: "127.0.0.1:9093", ClientAuth: ClientAuthRequired,
		TLSCertFile: files.Cert, TLSKeyFile: files.Key, TLSCAFile: files.CA}
	saslSSL := ListenerConfig{Name: "SASL_SSL", SecurityProtocol: ProtocolSASLSSL, Addr: "0.0.0.0:9094", AdvertisedAddr: "localhost:19094",
		TLSCertFile: files.Cert, TLSKeyFile: files.Key, SASLMechanisms: []string{"SCRAM-SHA-512"}}
	saslPlain := ListenerConfig{Name: "SASL_PLAINTEXT", SecurityProtocol: ProtocolSASLPlaintext, Addr: "127.0.0.1:9095"}
	pick := func(ls ...ListenerConfig) (addr string, sasl, tls bool, err error) {
		n := &Node{cfg: Config{Listeners: ls}}
		k, err := n.consoleKafka()
		return k.Addr, k.SASL, k.TLS != nil, err
	}
	for _, tc := range []struct {
		name      string
		ls        []ListenerConfig
		addr      string
		sasl, tls bool
	}{
		{"plaintext on every interface", []ListenerConfig{plain}, "127.0.0.1:9092", false, false},
		{"SASL over plaintext", []ListenerConfig{plain, saslSSL, saslPlain}, "127.0.0.1:9095", true, false},
		{"SASL_SSL at its advertised host and bound port", []ListenerConfig{plain, sslReq, saslSSL}, "localhost:9094", true, true},
	} {
		addr, sasl, tls, err := pick(tc.ls...)
		if err != nil || addr != tc.addr || sasl != tc.sasl || tls != tc.tls {
			t.Errorf("%s: %s sasl=%v tls=%v (err %v), want %s sasl=%v tls=%v", tc.name, addr, sasl, tls, err, tc.addr, tc.sasl, tc.tls)
		}
	}
	if _, _, _, err := pick(sslReq); !errors.Is(err, errNoConsoleListener) {
		t.Errorf("only a listener requiring certificates: %v, want errNoConsoleListener", err)
	}
}
