package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStuckShutdownDumpsStacks: a shutdown that does not finish is logged
// with the goroutines' stacks, and still ends with its result.
func TestStuckShutdownDumpsStacks(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	done := make(chan error, 1)
	time.AfterFunc(300*time.Millisecond, func() { done <- errors.New("closing the store: boom") })
	if rc := awaitShutdown(done, make(chan os.Signal), 50*time.Millisecond, logger, &out); rc != 0 {
		t.Fatalf("exit status %d after the shutdown finished, want 0", rc)
	}
	log := out.String()
	for _, want := range []string{shutdownStuckMsg, "goroutine profile:", "TestStuckShutdownDumpsStacks", "shutdown finished with errors"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestSecondSignalExits: a second signal ends the wait at once, status 1.
func TestSecondSignalExits(t *testing.T) {
	var out bytes.Buffer
	sigs := make(chan os.Signal, 1)
	sigs <- os.Interrupt
	if rc := awaitShutdown(make(chan error), sigs, time.Hour, slog.New(slog.NewTextHandler(&out, nil)), &out); rc != 1 {
		t.Fatalf("exit status %d after a second signal, want 1", rc)
	}
	if strings.Contains(out.String(), shutdownStuckMsg) {
		t.Fatalf("stacks dumped without a stuck shutdown:\n%s", out.String())
	}
}
