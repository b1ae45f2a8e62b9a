package client

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testcluster.GoleakOptions()...)
}

// fakeProducer starts a producer against the fake with quick retries.
func fakeProducer(t *testing.T, f *fake, opts ...Opt) *Producer {
	t.Helper()
	base := []Opt{Brokers(f.seed()), Dialer(f.dial), RetryBackoff(10*time.Millisecond, 80*time.Millisecond)}
	p, err := NewProducer(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Runs inside the synctest bubble; after a failed assertion the
		// bounded Close fails what is left instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

// closeAll closes the producer (which must have nothing left to deliver)
// and the fake.
func closeAll(t *testing.T, p *Producer, f *fake) {
	t.Helper()
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	f.close()
}

// result collects a promise's outcome.
type result struct {
	r   *Record
	err error
}

// collector returns a promise that appends to *out, in call order.
func collector(out *[]result) func(*Record, error) {
	return func(r *Record, err error) { *out = append(*out, result{r, err}) }
}
