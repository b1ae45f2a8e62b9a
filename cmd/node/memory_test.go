package main

import (
	"errors"
	"io"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/minikafka/minikafka-go/broker"
)

func TestMemoryLimitDefaultsToAShareOfTheMachine(t *testing.T) {
	total := machineMemory()
	if total <= 0 {
		t.Skip("no /proc/meminfo here")
	}
	got := memoryLimit(0)
	if got <= 0 || got > total {
		t.Fatalf("default memory limit %d, want a positive share of the machine's %d bytes", got, total)
	}
	if c := cgroupMemory(); c > 0 && got > c {
		t.Fatalf("default memory limit %d exceeds the cgroup's %d", got, c)
	}
	if memoryLimit(1<<30) != 1<<30 {
		t.Fatal("a configured memory_limit is not used as is")
	}
}

func TestApplyMemoryLimitSetsTheRuntimeLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "") // so that LookupEnv finds it set: the environment wins
	if got := applyMemoryLimit(1 << 30); got != debug.SetMemoryLimit(-1) {
		t.Fatalf("with GOMEMLIMIT set, applyMemoryLimit reported %d, the runtime has %d", got, debug.SetMemoryLimit(-1))
	}
}

func TestApplyMemoryLimitWithoutGOMEMLIMIT(t *testing.T) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Skip("GOMEMLIMIT is set in this environment")
	}
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	if got := applyMemoryLimit(3 << 30); got != 3<<30 || debug.SetMemoryLimit(-1) != 3<<30 {
		t.Fatalf("applyMemoryLimit(3 GiB) = %d, runtime limit %d", got, debug.SetMemoryLimit(-1))
	}
	if old != math.MaxInt64 && old <= 0 {
		t.Fatalf("odd previous limit %d", old)
	}
}

func TestMemoryLimitKey(t *testing.T) {
	o, err := loadConfig([]string{"--memory-limit", "2147483648"}, env(), io.Discard)
	if err != nil || o.MemoryLimit != 2<<30 {
		t.Fatalf("--memory-limit 2147483648: %+v, %v", o.MemoryLimit, err)
	}
	_, err = loadConfig([]string{"--memory-limit", "-1"}, env(), io.Discard)
	var ce *broker.ConfigError
	if !errors.As(err, &ce) || ce.Key != "memory_limit" {
		t.Fatalf("--memory-limit -1: %v, want a config error naming memory_limit", err)
	}
}
