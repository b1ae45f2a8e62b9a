package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
)

// admin_addr: on at Redpanda's 127.0.0.1:9644 by default, one port per
// node in the shipped configs, off when empty, checked as host:port.
func TestAdminAddrKey(t *testing.T) {
	o, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil || o.AdminAddr != "127.0.0.1:9644" {
		t.Fatalf("default admin_addr %q (err %v), want 127.0.0.1:9644", o.AdminAddr, err)
	}
	for name, want := range map[string]string{"single": "127.0.0.1:9644", "node1": "127.0.0.1:9644",
		"node2": "127.0.0.1:9645", "node3": "127.0.0.1:9646"} {
		o, err := loadConfig([]string{"--config", "../../configs/" + name + ".yaml"}, env(), &bytes.Buffer{})
		if err != nil || o.AdminAddr != want {
			t.Errorf("%s.yaml: admin_addr %q (err %v), want %q", name, o.AdminAddr, err, want)
		}
	}
	o, err = loadConfig([]string{"--config", "../../configs/node2.yaml", "--admin-addr", ""}, env(), &bytes.Buffer{})
	if err != nil || o.AdminAddr != "" {
		t.Fatalf("--admin-addr '': %q (err %v), want off", o.AdminAddr, err)
	}
	_, err = loadConfig(nil, env("MINIKAFKA_ADMIN_ADDR", "localhost"), &bytes.Buffer{})
	var ce *broker.ConfigError
	if !errors.As(err, &ce) || ce.Key != "admin_addr" || !strings.Contains(err.Error(), "localhost") {
		t.Fatalf("admin_addr=localhost: err %v, want a ConfigError naming admin_addr", err)
	}
}

// The admin server serves a running node's endpoints over HTTP.
func TestAdminServerServesNode(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr, cfg.RaftAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	node, err := broker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown(context.Background())
	addr, stop, err := serveAdmin("127.0.0.1:0", node.AdminHandler(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := get("/livez"); code != http.StatusOK {
		t.Fatalf("/livez: %d %q", code, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/readyz")
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "\nminikafka_ready 1\n") {
		t.Fatalf("/metrics: %d, minikafka_ready 1 missing:\n%.500s", code, body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "<h1>MiniKafka node 1</h1>") {
		t.Fatalf("/: %d %.300q", code, body)
	}
	if code, _ := get("/nothing"); code != http.StatusNotFound {
		t.Fatalf("/nothing: %d, want 404", code)
	}
	if _, _, err := serveAdmin("bad", node.AdminHandler(), slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal(`serveAdmin("bad") succeeded`)
	}
}
