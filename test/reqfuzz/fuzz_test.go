package reqfuzz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shortSeed is the short run's seed: make test sends the same requests
// every time, so it fails only when the node changed (make fuzz explores
// new seeds).
const shortSeed = 1

// TestReqFuzz is the short run of make test: one node process, the
// regression cases replayed, then about a minute of rounds (REQFUZZ_TIME)
// from shortSeed (REQFUZZ_SEED=<seed> replays another, REQFUZZ_SEED=new
// takes a new one), stopping at the first failed check.
func TestReqFuzz(t *testing.T) {
	d := envDuration(t, "REQFUZZ_TIME", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Minute)
	defer cancel()
	h := startHarness(ctx, t, 1, Config{
		Seed: seedFromEnv(t, shortSeed), Conns: 4, PerConn: 25, Linger: 2 * time.Second,
		RSSBound: rssBound(t), OutDir: outDir(), CrashEvery: 15,
	})
	replayRegressions(ctx, t, h)
	fuzz(ctx, t, h, d, false)
}

// TestReqFuzzLong is make fuzz: three node processes, FUZZ_TIME (default
// 30m) of rounds; a node that crashes is restarted after triage, one over
// the memory bound killed and restarted, and the run goes on, so that one
// run can find several defects.
func TestReqFuzzLong(t *testing.T) {
	if os.Getenv("REQFUZZ_LONG") == "" {
		t.Skip("the long run is make fuzz (REQFUZZ_LONG=1)")
	}
	d := envDuration(t, "FUZZ_TIME", 30*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Minute)
	defer cancel()
	// make fuzz runs without go test's timeout (FUZZ_TIME varies); this
	// is it: a hung run ends with every goroutine's stack.
	watchdog := time.AfterFunc(d+20*time.Minute, func() { panic(fmt.Sprintf("reqfuzz: the long run passed FUZZ_TIME (%s) by 20 minutes", d)) })
	defer watchdog.Stop()
	h := startHarness(ctx, t, 3, Config{
		Seed: seedFromEnv(t, 0), Conns: 6, PerConn: 30, Linger: 2 * time.Second,
		RSSBound: rssBound(t), OutDir: outDir(), CrashEvery: 20,
	})
	replayRegressions(ctx, t, h)
	fuzz(ctx, t, h, d, true)
}

// TestReqFuzzReplay replays the case file REQFUZZ_CASE (a failing
// round saved by a run, or a regression case) against REQFUZZ_NODES
// (default 1) new nodes, logging what each request got, the checks'
// verdict and the end of every node's log.
func TestReqFuzzReplay(t *testing.T) {
	file := os.Getenv("REQFUZZ_CASE")
	if file == "" {
		t.Skip("set REQFUZZ_CASE to a case file to replay")
	}
	b, err := os.ReadFile(file)
	must(t, err)
	c, err := ParseCase(b)
	must(t, err)
	nodes := 1
	if s := os.Getenv("REQFUZZ_NODES"); s != "" {
		nodes, err = strconv.Atoi(s)
		must(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := startHarness(ctx, t, nodes, Config{RSSBound: rssBound(t)})
	steps, err := Replay(ctx, h.runner.cfg.Targets, c, 5*time.Second)
	must(t, err)
	t.Logf("replayed %s:\n%s", file, stepsString(steps))
	if err := checkReplay(ctx, h.runner, steps); err != nil {
		t.Errorf("after the replay: %v", err)
	}
	t.Logf("peak RSS: %s", h.runner.Stats)
	for id := 1; id <= nodes; id++ {
		t.Logf("node %d log, last lines:\n%s", id, h.c.LogTail(id, 30))
	}
}

// replayRegressions replays every testdata/regress case, each followed
// by the checks of a round; a case that makes a node exit has it
// restarted, so that the others still run.
func replayRegressions(ctx context.Context, t *testing.T, h *harness) {
	files, err := filepath.Glob(filepath.Join("testdata", "regress", "*.case"))
	must(t, err)
	for _, file := range files {
		t.Run("regress/"+strings.TrimSuffix(filepath.Base(file), ".case"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			must(t, err)
			c, err := ParseCase(b)
			must(t, err)
			if c.Skip != "" {
				t.Skip(c.Skip)
			}
			steps, err := Replay(ctx, h.runner.cfg.Targets, c, 30*time.Second)
			must(t, err)
			if err := checkReplay(ctx, h.runner, steps); err != nil {
				t.Errorf("%s\nafter replaying %s:\n%s", err, file, stepsString(steps))
				must(t, h.runner.RestartExited(ctx))
			}
		})
	}
}

// fuzz runs rounds for d. A protocol violation is reported with its
// request and the run goes on; a failed check is reported with the
// round's requests (triaged to the one that crashes a node, when one
// exited) and ends the run unless keepGoing.
func fuzz(ctx context.Context, t *testing.T, h *harness, d time.Duration, keepGoing bool) {
	r := h.runner
	t.Logf("reqfuzz: seed %d (REQFUZZ_SEED=%d replays it), %s of rounds of %d connections x %d requests against %d node(s)",
		r.cfg.Seed, r.cfg.Seed, d, r.cfg.Conns, r.cfg.PerConn, len(r.cfg.Targets))
	findings := 0
	end := time.Now().Add(d)
	for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
		for _, v := range r.Round(ctx, n) {
			findings++
			t.Errorf("reqfuzz: seed %d round %d: %s: %s\nrequest: %s", r.cfg.Seed, n, v.Key(), v.detail, violationRequest(v))
		}
		err := r.Check(ctx)
		if every := r.cfg.CrashEvery; err == nil && every > 0 && (n+1)%every == 0 {
			err = r.CrashRestart(ctx, n/every)
		}
		if err == nil {
			continue
		}
		findings++
		if me := (*MemoryError)(nil); errors.As(err, &me) {
			saveHeap(t, r.cfg.OutDir, me.Node)
		}
		t.Errorf("%s", r.Failure(err))
		if culprit := triage(ctx, t, r, err); culprit != nil {
			t.Errorf("reqfuzz: triage found the request that does it alone:\n%s", culprit.Format())
		}
		if !keepGoing || !recoverNodes(ctx, t, r, err) {
			break
		}
	}
	t.Logf("reqfuzz summary:\n%s", r.Stats)
	saveExamples(t, r)
	verdict := "PASS"
	if t.Failed() {
		verdict = "FAIL"
	}
	t.Logf("reqfuzz: %s: seed %d, %d rounds, %d findings", verdict, r.cfg.Seed, r.Stats.Rounds(), findings)
}

// recoverNodes readies the nodes for more rounds after a failed check:
// a node over the memory bound is killed (its peak would stay over it),
// every node that exited is restarted, and the checks must pass again.
func recoverNodes(ctx context.Context, t *testing.T, r *Runner, checkErr error) bool {
	if me := (*MemoryError)(nil); errors.As(checkErr, &me) {
		if err := r.target(me.Node).Kill(); err != nil {
			t.Errorf("reqfuzz: kill node %d: %v", me.Node, err)
			return false
		}
	}
	if err := r.RestartExited(ctx); err != nil {
		t.Errorf("reqfuzz: %v", err)
		return false
	}
	if err := r.Check(ctx); err != nil {
		t.Errorf("reqfuzz: the nodes did not recover: %v", err)
		return false
	}
	return true
}

// triage looks for the request that did it when a node exited or
// logged a panic.
func triage(ctx context.Context, t *testing.T, r *Runner, checkErr error) *Case {
	var pe *PanicError
	if !errors.As(checkErr, &pe) && r.exitedWithin(ctx, 2*time.Second) == 0 {
		return nil
	}
	c, err := r.Triage(ctx)
	if err != nil {
		t.Errorf("reqfuzz: triage: %v", err)
	}
	return c
}

// violationRequest describes the request of a violation.
func violationRequest(v Violation) string {
	if v.fr == nil {
		return "(not known)"
	}
	return fmt.Sprintf("%s\n  %s\n  %s", v.fr.desc, Shape(v.fr.b), hexPrefix(v.fr.b, 512))
}

// saveExamples writes the summary's example requests as case files.
func saveExamples(t *testing.T, r *Runner) {
	dir := filepath.Join(r.cfg.OutDir, fmt.Sprintf("seed%d-examples", r.cfg.Seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("reqfuzz: examples: %v", err)
		return
	}
	for name, c := range r.Stats.Examples() {
		if err := os.WriteFile(filepath.Join(dir, name+".case"), c.Format(), 0o644); err != nil {
			t.Logf("reqfuzz: examples: %v", err)
			return
		}
	}
	t.Logf("reqfuzz: the summary's example requests, as case files: %s", dir)
}

// checkReplay checks after a replayed case: no answer over
// maxSaneAnswer, and the checks of a round.
func checkReplay(ctx context.Context, r *Runner, steps []Step) error {
	for _, st := range steps {
		if st.AnswerBytes > maxSaneAnswer {
			return fmt.Errorf("request %d to node %d got an answer of %d MiB, over %d MiB", st.Index, st.Node, st.AnswerBytes>>20, maxSaneAnswer>>20)
		}
		if st.DecodeErr != nil {
			return fmt.Errorf("request %d to node %d got an answer that does not decode: %w", st.Index, st.Node, st.DecodeErr)
		}
	}
	return r.Check(ctx)
}

func stepsString(steps []Step) string {
	var b strings.Builder
	for _, st := range steps {
		fmt.Fprintln(&b, st)
	}
	return b.String()
}
