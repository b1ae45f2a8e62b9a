package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errCounts counts the errors a group or share member saw, by operation
// and class (a Kafka error's name, "timeout", or the first 80 bytes of
// the message). Its owner guards it.
type errCounts map[string]int

func (c errCounts) note(op string, err error) {
	var ke *kerr.Error
	class := err.Error()
	switch {
	case errors.As(err, &ke):
		class = ke.Message
	case errors.Is(err, context.DeadlineExceeded):
		class = "timeout"
	case len(class) > 80:
		class = class[:80] + "..."
	}
	c[op+":"+class]++
}

// sorted is the counts as sorted "op:class=count" strings.
func (c errCounts) sorted() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		out = append(out, fmt.Sprintf("%s=%d", k, c[k]))
	}
	return out
}
