package membership

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Meta: testMeta(1)}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if c.BindAddr != "0.0.0.0:7946" || c.ProbeInterval != DefaultProbeInterval || c.ProbeTimeout != DefaultProbeTimeout ||
		c.GossipInterval != DefaultGossipInterval || c.SuspicionMult != DefaultSuspicionMult ||
		c.TCPTimeout != DefaultTCPTimeout || c.BroadcastTimeout != DefaultBroadcastTimeout ||
		c.JoinBackoff != DefaultJoinBackoff || c.JoinMaxBackoff != DefaultJoinMaxBackoff ||
		c.DeadNodeReclaimTime != DefaultDeadNodeReclaimTime || c.Logger == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
	mc := c.memberlistConfig(nil, nil)
	if mc.Name != "node-1" || mc.BindAddr != "0.0.0.0" || mc.BindPort != 7946 || mc.AdvertiseAddr != "" ||
		mc.SuspicionMaxTimeoutMult != suspicionMaxTimeoutMult || mc.SuspicionMult != DefaultSuspicionMult {
		t.Errorf("memberlist config: name %q bind %s:%d adv %q", mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertiseAddr)
	}

	c.AdvertiseAddr = "10.1.2.3"
	c.BindAddr = ":7000"
	if c, err = c.normalize(); err != nil {
		t.Fatal(err)
	}
	mc = c.memberlistConfig(nil, nil)
	if mc.BindAddr != "0.0.0.0" || mc.BindPort != 7000 || mc.AdvertiseAddr != "10.1.2.3" || mc.AdvertisePort != 7000 {
		t.Errorf("advertise without port: bind %s:%d adv %s:%d", mc.BindAddr, mc.BindPort, mc.AdvertiseAddr, mc.AdvertisePort)
	}
}

func TestConfigRejects(t *testing.T) {
	base := Config{Meta: testMeta(1), BindAddr: "127.0.0.1:0"}
	cases := map[string]struct {
		mod  func(*Config)
		want error
	}{
		"bind host name":      {func(c *Config) { c.BindAddr = "localhost:7946" }, ErrInvalidConfig},
		"bind without port":   {func(c *Config) { c.BindAddr = "127.0.0.1" }, ErrInvalidConfig},
		"advertise host name": {func(c *Config) { c.AdvertiseAddr = "node1:7946" }, ErrInvalidConfig},
		"negative probe":      {func(c *Config) { c.ProbeInterval = -time.Second }, ErrInvalidConfig},
		"negative mult":       {func(c *Config) { c.SuspicionMult = -1 }, ErrInvalidConfig},
		"timeout >= interval": {func(c *Config) { c.ProbeInterval, c.ProbeTimeout = time.Second, time.Second }, ErrInvalidConfig},
		"bad meta":            {func(c *Config) { c.Meta.ID = 0 }, ErrInvalidMeta},
	}
	for name, tc := range cases {
		c := base
		tc.mod(&c)
		if _, err := New(c); !errors.Is(err, tc.want) {
			t.Errorf("%s: New err = %v, want %v", name, err, tc.want)
		}
	}
}

// memberlist panics on metadata over 512 bytes; New returns an error first.
func TestNewRejectsOversizedMeta(t *testing.T) {
	cfg := fastConfig(1)
	cfg.Meta.KafkaAddr = strings.Repeat("h", 600) + ":9092"
	m, err := New(cfg)
	var se *MetaSizeError
	if m != nil || !errors.Is(err, ErrMetaTooLarge) || !errors.As(err, &se) {
		t.Fatalf("New = %v, %v; want a *MetaSizeError", m, err)
	}
	if se.Size <= MetaMaxSize || se.Limit != MetaMaxSize {
		t.Errorf("MetaSizeError %+v", se)
	}
}
