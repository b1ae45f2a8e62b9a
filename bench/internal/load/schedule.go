package load

import (
	"math"
	"time"
)

// schedule is an open-loop arrival schedule: record i is due at
// begin + i/rate. A zero rate means unpaced.
type schedule struct {
	begin  time.Time
	period float64 // nanoseconds between records
}

func newSchedule(begin time.Time, rate float64) schedule {
	if rate <= 0 {
		return schedule{begin: begin}
	}
	return schedule{begin: begin, period: 1e9 / rate}
}

func (s schedule) paced() bool { return s.period > 0 }

// due is when record i should be sent.
func (s schedule) due(i uint64) time.Time {
	return s.begin.Add(time.Duration(math.Round(float64(i) * s.period)))
}
