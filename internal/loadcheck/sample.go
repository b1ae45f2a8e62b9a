package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// sampler reads each node's memory from /proc and /metrics.
type sampler struct {
	pids   []int // 0: unknown
	admins []string
	http   *http.Client
}

// nodeMax is the highest of each reading over a phase (-1: unread).
type nodeMax struct {
	rss, hwm, metricsRSS, queued, queuedMax, waiting float64
}

func (n nodeMax) String() string {
	mib := func(b float64) string {
		if b < 0 {
			return "?"
		}
		return fmt.Sprintf("%.0f MiB", b/(1<<20))
	}
	waiting := "?"
	if n.waiting >= 0 {
		waiting = fmt.Sprint(n.waiting)
	}
	return fmt.Sprintf("VmRSS max %s, VmHWM %s, process_resident_memory_bytes max %s, queued request bytes max %s of %s, readers waiting max %s",
		mib(n.rss), mib(n.hwm), mib(n.metricsRSS), mib(n.queued), mib(n.queuedMax), waiting)
}

func newSampler(o options) *sampler {
	s := &sampler{admins: o.admins, http: &http.Client{Timeout: 2 * time.Second}}
	for i := range o.brokers {
		pid := 0
		if i < len(o.pidFiles) {
			if b, err := os.ReadFile(o.pidFiles[i]); err == nil {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
		}
		s.pids = append(s.pids, pid)
	}
	return s
}

// run samples every 250ms until ctx is done and returns the highs.
func (s *sampler) run(ctx context.Context) []nodeMax {
	out := make([]nodeMax, len(s.pids))
	for i := range out {
		out[i] = nodeMax{-1, -1, -1, -1, -1, -1}
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		for i := range out {
			s.sample(i, &out[i])
		}
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
	}
}

func (s *sampler) sample(i int, m *nodeMax) {
	raise := func(dst *float64, from map[string]float64, key string) {
		if v, ok := from[key]; ok {
			*dst = max(*dst, v)
		}
	}
	if s.pids[i] > 0 {
		status := procStatus(s.pids[i])
		raise(&m.rss, status, "VmRSS")
		raise(&m.hwm, status, "VmHWM")
	}
	if i >= len(s.admins) {
		return
	}
	v := s.metrics(s.admins[i])
	raise(&m.metricsRSS, v, "process_resident_memory_bytes")
	raise(&m.queued, v, "minikafka_kafka_queued_request_bytes")
	raise(&m.queuedMax, v, "minikafka_kafka_queued_request_bytes_max")
	raise(&m.waiting, v, "minikafka_kafka_queued_request_waiting")
}

// procStatus reads the kB fields of /proc/PID/status, in bytes.
func procStatus(pid int) map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseFloat(f[0], 64)
			out[k] = n * 1024
		}
	}
	return out
}

// metrics reads the unlabelled samples of a node's /metrics.
func (s *sampler) metrics(admin string) map[string]float64 {
	out := map[string]float64{}
	resp, err := s.http.Get("http://" + admin + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out
}
