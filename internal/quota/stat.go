package quota

// sample is one time window of a sampledStat (Kafka's SampledStat.Sample).
// Times are in milliseconds of the Manager's clock.
type sample struct {
	start, last int64   // when the window started; the last record in it
	value       float64 // sum of the values recorded in it
	count       int64   // records in it
}

func (s *sample) reset(now int64) { *s = sample{start: now, last: now} }

// sampledStat is Kafka's SampledStat: the sum of recorded values over up to
// n+1 windows of w milliseconds (the extra one overlaps the oldest edge of
// the monitored span). It is not safe for concurrent use; the Manager's
// mutex guards it.
type sampledStat struct {
	samples []sample // grows to n+1, then is reused round-robin
	current int      // index of the window being filled
}

func (s *sampledStat) cur(now int64) *sample {
	if len(s.samples) == 0 {
		s.samples = append(s.samples, sample{start: now, last: now})
	}
	return &s.samples[s.current]
}

// record adds v at now, moving to the next window when the current one is
// w old.
func (s *sampledStat) record(c windowConfig, v float64, now int64) {
	cur := s.cur(now)
	if now-cur.start >= c.window {
		s.current = (s.current + 1) % (c.samples + 1)
		if s.current >= len(s.samples) {
			s.samples = append(s.samples, sample{start: now, last: now})
		} else {
			s.samples[s.current].reset(now)
		}
		cur = &s.samples[s.current]
	}
	cur.value += v
	cur.count++
	cur.last = now
}

// purge resets the windows with no record in the last samples*window ms.
func (s *sampledStat) purge(c windowConfig, now int64) {
	expire := int64(c.samples) * c.window
	for i := range s.samples {
		if now-s.samples[i].last >= expire {
			s.samples[i].reset(now)
		}
	}
}

// sum is the total and count of the live windows at now.
func (s *sampledStat) sum(c windowConfig, now int64) (float64, int64) {
	s.purge(c, now)
	var v float64
	var n int64
	for _, sm := range s.samples {
		v += sm.value
		n += sm.count
	}
	return v, n
}

// windowSize is Kafka's Rate.windowSize: the time since the oldest live
// window started, but never less than samples-1 whole windows (so a rate
// measured soon after the first record is not inflated), and at least
// 1 ms.
func (s *sampledStat) windowSize(c windowConfig, now int64) int64 {
	s.purge(c, now)
	oldest := now
	for _, sm := range s.samples {
		oldest = min(oldest, sm.start)
	}
	elapsed := now - oldest
	if full, minFull := elapsed/c.window, int64(c.samples-1); full < minFull {
		elapsed += (minFull - full) * c.window
	}
	return max(elapsed, 1)
}

// rate is the per-second rate of the recorded values at now (Kafka's
// Rate over a SampledStat).
func (s *sampledStat) rate(c windowConfig, now int64) float64 {
	v, _ := s.sum(c, now)
	return v / (float64(s.windowSize(c, now)) / 1000)
}

// avg is the mean recorded value of the live windows (Kafka's Avg); 0
// without records.
func (s *sampledStat) avg(c windowConfig, now int64) float64 {
	v, n := s.sum(c, now)
	if n == 0 {
		return 0
	}
	return v / float64(n)
}

// windowConfig is a Manager's quota.window.num and quota.window.size in ms.
type windowConfig struct {
	samples int
	window  int64
}

// tokenBucket is Kafka's TokenBucket (KIP-599): tokens refill at the quota
// per second up to a burst of samples*window seconds' worth; recording
// takes tokens and may drive them below zero.
type tokenBucket struct {
	tokens  float64
	last    int64 // ms of the last refill
	started bool  // false: the bucket is full at its first use
}

func (b *tokenBucket) refill(c windowConfig, quota float64, now int64) {
	burst := float64(c.samples) * float64(c.window) / 1000 * quota
	if !b.started {
		b.tokens, b.last, b.started = burst, now, true
		return
	}
	b.tokens = min(burst, b.tokens+quota*float64(now-b.last)/1000)
	b.last = now
}

// measure refills and returns the tokens left.
func (b *tokenBucket) measure(c windowConfig, quota float64, now int64) float64 {
	b.refill(c, quota, now)
	return b.tokens
}

// record refills, then takes v tokens.
func (b *tokenBucket) record(c windowConfig, quota, v float64, now int64) {
	b.refill(c, quota, now)
	burst := float64(c.samples) * float64(c.window) / 1000 * quota
	b.tokens = min(burst, b.tokens-v)
}
