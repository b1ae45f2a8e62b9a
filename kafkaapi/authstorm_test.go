package kafkaapi

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Environment of the storm measurement (TestSASLStormCPU): how long it
// runs, and, in the attacker's process, the address it attacks and
// whether it waits for answers.
const (
	stormEnv        = "MINIKAFKA_SASL_STORM"
	stormAttackEnv  = "MINIKAFKA_SASL_STORM_ATTACK"
	stormWaitEnv    = "MINIKAFKA_SASL_STORM_WAIT"
	stormWorkersEnv = "MINIKAFKA_SASL_STORM_WORKERS"
)

// TestSASLStormCPU measures what a wrong-password storm from one IP costs
// the server: a child process (this test binary) runs 64 goroutines that log in with PLAIN and a wrong password from 127.0.0.2
// as fast as they can, while legitimate clients log in from 127.0.0.1
// with PLAIN and SCRAM-SHA-512 ten times a second. It reports the
// server's CPU (getrusage of this process, which runs the server and the
// legitimate clients) as a share of one core. It asserts that every
// legitimate login succeeded and that the storm cost at most the
// failures allowed, not that the CPU stayed under a bound.
//
//	MINIKAFKA_SASL_STORM=10s go test -run TestSASLStormCPU -v ./kafkaapi/
//
// MINIKAFKA_SASL_STORM_WAIT=0 makes the attacker send its requests and
// close without waiting for the answers; MINIKAFKA_SASL_STORM_WORKERS sets
// its goroutines (default 64; 0 measures the legitimate clients alone).
func TestSASLStormCPU(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(stormEnv))
	if err != nil {
		t.Skipf("set %s to a duration to measure", stormEnv)
	}
	h := startListener(t, Config{}, Listener{SASLMechanisms: allMechanisms})

	attacker := exec.Command(os.Args[0], "-test.run=^TestSASLStormAttacker$", "-test.v")
	attacker.Env = append(os.Environ(), stormAttackEnv+"="+h.addr, stormEnv+"="+d.String())
	out, err := attacker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	if err := attacker.Start(); err != nil {
		t.Fatal(err)
	}
	var ok, failed int
	for time.Since(start) < d {
		for _, login := range []func() int16{
			func() int16 { code, _ := plainLogin(h, "127.0.0.1", "alice", "alice-secret"); return code },
			func() int16 { return scramLogin(h, "127.0.0.1", "alice", "alice-secret") },
		} {
			if login() == 0 {
				ok++
			} else {
				failed++
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	attempts := stormResult(t, out)
	if err := attacker.Wait(); err != nil {
		t.Fatalf("attacker: %v", err)
	}
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	st := h.srv.AuthStats()
	sys := time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
	t.Logf("storm of %v: %d wrong-password attempts (%.0f/s); server CPU %v (%v in the kernel) = %.1f%% of a core; legitimate logins %d ok, %d failed; %+v",
		wall.Round(time.Millisecond), attempts, float64(attempts)/wall.Seconds(), cpu.Round(time.Millisecond), sys.Round(time.Millisecond),
		100*cpu.Seconds()/wall.Seconds(), ok, failed, st)
	if failed > 0 || ok == 0 {
		t.Errorf("legitimate logins: %d ok, %d failed", ok, failed)
	}
	// The first legitimate PLAIN login derives; the attacker's derive only
	// while its allowance lasts, which refills over the window.
	allowed := 1 + DefaultMaxFailedAuthenticationsPerIP +
		int(math.Ceil(wall.Seconds()/DefaultFailedAuthenticationsWindow.Seconds()*DefaultMaxFailedAuthenticationsPerIP))
	if st.Derivations > uint64(allowed) {
		t.Errorf("%d key derivations, want at most %d", st.Derivations, allowed)
	}
}

// stormResult reads the attacker's count of attempts from its output.
func stormResult(t *testing.T, out interface{ Read([]byte) (int, error) }) int {
	t.Helper()
	sc := bufio.NewScanner(out)
	n := -1
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "storm attempts: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	if n < 0 {
		t.Fatal("the attacker reported no count")
	}
	return n
}

// TestSASLStormAttacker is TestSASLStormCPU's attacking process.
func TestSASLStormAttacker(t *testing.T) {
	addr := os.Getenv(stormAttackEnv)
	d, err := time.ParseDuration(os.Getenv(stormEnv))
	if addr == "" || err != nil {
		t.Skip("run by TestSASLStormCPU")
	}
	wait := os.Getenv(stormWaitEnv) != "0"
	workers := 64
	if w, err := strconv.Atoi(os.Getenv(stormWorkersEnv)); err == nil {
		workers = w
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("storm"))
	// AppendRequest writes the size at the front of what it appends to.
	frames := append(f.AppendRequest(nil, saslHandshake(MechanismPlain), 1),
		f.AppendRequest(nil, saslAuthenticate(1, []byte("\x00alice\x00guess")), 2)...)
	deadline := time.Now().Add(d)
	var attempts atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: time.Second}
			buf := make([]byte, 4096)
			for time.Now().Before(deadline) {
				nc, err := dialer.Dial("tcp", addr)
				if err != nil {
					continue
				}
				if _, err := nc.Write(frames); err == nil {
					attempts.Add(1)
				}
				if wait {
					nc.SetReadDeadline(deadline.Add(time.Second))
					for err == nil {
						_, err = nc.Read(buf) // until the server closes
					}
				}
				nc.Close()
			}
		})
	}
	wg.Wait()
	fmt.Printf("storm attempts: %d\n", attempts.Load())
}
