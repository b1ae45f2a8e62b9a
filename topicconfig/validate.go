package topicconfig

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// validator checks one value; the reason it returns completes
// "Invalid value v for configuration name: reason".
type validator func(value string) (reason string, ok bool)

func parseLong(v string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(v), 10, 64) }

// longAtLeast accepts a 64-bit integer at or above lo.
func longAtLeast(lo int64) validator {
	return func(v string) (string, bool) {
		n, err := parseLong(v)
		if err != nil {
			return "Not a number of type LONG", false
		}
		if n < lo {
			return fmt.Sprintf("Value must be at least %d", lo), false
		}
		return "", true
	}
}

// intBetween accepts a 32-bit integer in [lo, hi].
func intBetween(lo, hi int64) validator {
	return func(v string) (string, bool) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return "Not a number of type INT", false
		}
		if n < lo || n > hi {
			if hi == math.MaxInt32 {
				return fmt.Sprintf("Value must be at least %d", lo), false
			}
			return fmt.Sprintf("Value must be in [%d, %d]", lo, hi), false
		}
		return "", true
	}
}

func intAtLeast(lo int64) validator { return intBetween(lo, math.MaxInt32) }

// level accepts -1 (the codec's default) or a level in [lo, hi].
func level(lo, hi int64) validator {
	in := intBetween(lo, hi)
	return func(v string) (string, bool) {
		if strings.TrimSpace(v) == "-1" {
			return "", true
		}
		return in(v)
	}
}

func boolean(v string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false":
		return "", true
	}
	return "Expected value to be either true or false", false
}

// falseOnly accepts false: the node cannot do what true asks.
func falseOnly(why string) validator {
	return func(v string) (string, bool) {
		if r, ok := boolean(v); !ok {
			return r, false
		}
		if strings.EqualFold(strings.TrimSpace(v), "true") {
			return why, false
		}
		return "", true
	}
}

func ratio(v string) (string, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return "Not a number of type DOUBLE", false
	}
	if f < 0 || f > 1 {
		return "Value must be in [0, 1]", false
	}
	return "", true
}

// oneOf accepts exactly one of the given strings.
func oneOf(allowed ...string) validator {
	return func(v string) (string, bool) {
		if slices.Contains(allowed, v) {
			return "", true
		}
		return "String must be one of: " + strings.Join(allowed, ", "), false
	}
}

// listOf accepts a non-empty comma-separated list of the given items.
func listOf(allowed ...string) validator {
	return func(v string) (string, bool) {
		items := splitList(v)
		if len(items) == 0 {
			return "Empty list", false
		}
		for _, it := range items {
			if !slices.Contains(allowed, it) {
				return fmt.Sprintf("Invalid value %s in list; allowed: %s", it, strings.Join(allowed, ", ")), false
			}
		}
		return "", true
	}
}

// throttledReplicas accepts Kafka's throttled replica lists: empty, "*",
// or partition:broker pairs.
func throttledReplicas(v string) (string, bool) {
	if strings.TrimSpace(v) == "*" {
		return "", true
	}
	for _, it := range splitList(v) {
		p, b, ok := strings.Cut(it, ":")
		_, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		_, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || perr != nil || berr != nil {
			return "Must be the literal '*' or a list of replicas in the format [partitionId]:[brokerId],...", false
		}
	}
	return "", true
}

// splitList splits a comma-separated list, trimming items and dropping
// empty ones.
func splitList(v string) []string {
	var out []string
	for it := range strings.SplitSeq(v, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
