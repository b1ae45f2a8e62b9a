package knob

import (
	"errors"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	var d, d2 time.Duration = 0, 3 * time.Second
	var n int
	err := Check([]Duration{{"a", &d, time.Second, time.Millisecond}, {"b", &d2, time.Second, 0}},
		[]Int{{"n", &n, 8, 1, 10}})
	if err != nil || d != time.Second || d2 != 3*time.Second || n != 8 {
		t.Fatalf("defaults: %v %v %v %v", d, d2, n, err)
	}
	d = -time.Second
	var e *Error
	if err := Check([]Duration{{"a", &d, time.Second, 0}}, nil); !errors.As(err, &e) || e.Name != "a" {
		t.Fatalf("negative duration: %v", err)
	}
	n = 11
	if err := Check(nil, []Int{{"n", &n, 8, 1, 10}}); !errors.As(err, &e) || e.Name != "n" {
		t.Fatalf("int over its max: %v", err)
	}
}
