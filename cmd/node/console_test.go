package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/broker"
)

// console_admin_key: empty (read-only) by default, taken from a flag or
// the environment, refused when shorter than 16 characters without
// echoing it.
func TestConsoleAdminKey(t *testing.T) {
	o, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil || o.ConsoleAdminKey != "" {
		t.Fatalf("default console_admin_key %q (err %v), want empty", o.ConsoleAdminKey, err)
	}
	const key = "0123456789abcdef-key"
	o, err = loadConfig([]string{"--console-admin-key", key}, env(), &bytes.Buffer{})
	if err != nil || o.ConsoleAdminKey != key {
		t.Fatalf("--console-admin-key: %q (err %v)", o.ConsoleAdminKey, err)
	}
	o, err = loadConfig(nil, env("MINIKAFKA_CONSOLE_ADMIN_KEY", key), &bytes.Buffer{})
	if err != nil || o.ConsoleAdminKey != key {
		t.Fatalf("MINIKAFKA_CONSOLE_ADMIN_KEY: %q (err %v)", o.ConsoleAdminKey, err)
	}
	_, err = loadConfig([]string{"--console-admin-key", "short-secret"}, env(), &bytes.Buffer{})
	var ce *broker.ConfigError
	if !errors.As(err, &ce) || ce.Key != "console_admin_key" || strings.Contains(err.Error(), "short-secret") {
		t.Fatalf("a 12-character key: err %v, want a ConfigError naming console_admin_key, not the key", err)
	}
}
