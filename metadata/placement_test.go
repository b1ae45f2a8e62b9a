package metadata

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// loadOf counts replicas and preferred leaderships in an assignment, on top
// of base.
func loadOf(base Load, a [][]int32) Load {
	l := Load{}
	for b, bl := range base {
		l[b] = bl
	}
	for _, replicas := range a {
		for i, b := range replicas {
			bl := l[b]
			bl.Replicas++
			if i == 0 {
				bl.Leaders++
			}
			l[b] = bl
		}
	}
	return l
}

// spread returns max-min of replicas and of leaderships over brokers.
func spread(l Load, brokers []int32) (replicas, leaders int) {
	minR, maxR, minL, maxL := int(^uint(0)>>1), 0, int(^uint(0)>>1), 0
	for _, b := range brokers {
		minR, maxR = min(minR, l[b].Replicas), max(maxR, l[b].Replicas)
		minL, maxL = min(minL, l[b].Leaders), max(maxL, l[b].Leaders)
	}
	return maxR - minR, maxL - minL
}

// checkShape fails unless a has partitions lists of rf distinct brokers,
// all from brokers.
func checkShape(t *testing.T, a [][]int32, brokers []int32, partitions int32, rf int16) {
	t.Helper()
	if len(a) != int(partitions) {
		t.Fatalf("%d partitions, want %d", len(a), partitions)
	}
	for p, replicas := range a {
		if len(replicas) != int(rf) {
			t.Fatalf("partition %d: %v, want %d replicas", p, replicas, rf)
		}
		for i, b := range replicas {
			if !slices.Contains(brokers, b) || slices.Contains(replicas[:i], b) {
				t.Fatalf("partition %d: %v has an unknown or repeated broker", p, replicas)
			}
		}
	}
}

func TestPlaceSixPartitionsRF3(t *testing.T) {
	brokers := []int32{1, 2, 3}
	a, err := Place(brokers, nil, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, a, brokers, 6, 3)
	l := loadOf(nil, a)
	for _, b := range brokers {
		if l[b] != (BrokerLoad{Replicas: 6, Leaders: 2}) {
			t.Fatalf("broker %d: %+v, want 6 replicas and 2 leaderships (assignment %v)", b, l[b], a)
		}
	}
	// Followers rotate with the leader, so a failed broker's followers differ.
	followers := map[[2]int32]bool{}
	for _, r := range a {
		followers[[2]int32{r[1], r[2]}] = true
	}
	if len(followers) != 3 {
		t.Fatalf("follower orders %v, want one per leader", a)
	}
}

func TestPlaceThousandPartitionsIsEven(t *testing.T) {
	brokers := []int32{1, 2, 3}
	for rf := int16(1); rf <= 3; rf++ {
		a, err := Place(brokers, nil, 1000, rf)
		if err != nil {
			t.Fatal(err)
		}
		checkShape(t, a, brokers, 1000, rf)
		if r, l := spread(loadOf(nil, a), brokers); r > 1 || l > 1 {
			t.Fatalf("rf %d: replica spread %d, leader spread %d, want <= 1 (%v)", rf, r, l, loadOf(nil, a))
		}
	}
}

// On an empty cluster, every shape is balanced to within one.
func TestPlaceSweepIsEven(t *testing.T) {
	for n := 1; n <= 7; n++ {
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(10 * (i + 1))
		}
		for rf := int16(1); int(rf) <= n; rf++ {
			for p := int32(1); p <= 40; p++ {
				a, err := Place(brokers, nil, p, rf)
				if err != nil {
					t.Fatal(err)
				}
				checkShape(t, a, brokers, p, rf)
				if r, l := spread(loadOf(nil, a), brokers); r > 1 || l > 1 {
					t.Fatalf("%d brokers, %d partitions, rf %d: spreads %d/%d: %v", n, p, rf, r, l, a)
				}
			}
		}
	}
}

func TestPlaceEvensAnUnbalancedCluster(t *testing.T) {
	brokers := []int32{1, 2, 3}
	existing := Load{1: {Replicas: 4, Leaders: 4}}
	a, err := Place(brokers, existing, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := loadOf(existing, a)
	for _, b := range brokers {
		if l[b] != (BrokerLoad{Replicas: 4, Leaders: 4}) {
			t.Fatalf("after placing 8 on top of %v: %v, want 4/4 each", existing, l)
		}
	}

	// With rf 2 the loaded brokers must still be used. Broker 3 (empty) can
	// hold at most one replica of each of the 6 new partitions, so the best
	// reachable is replicas 8/7/6 (spread 2, down from 6) with leaderships
	// 4/4/4.
	existing = Load{1: {Replicas: 6, Leaders: 3}, 2: {Replicas: 3, Leaders: 3}}
	a, err = Place(brokers, existing, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, a, brokers, 6, 2)
	l = loadOf(existing, a)
	if r, ld := spread(l, brokers); r > 2 || ld != 0 || l[3].Replicas != 6 {
		t.Fatalf("spreads after: replicas %d, leaders %d; load %v", r, ld, l)
	}
}

func TestPlaceIsDeterministic(t *testing.T) {
	existing := Load{2: {Replicas: 3, Leaders: 1}, 5: {Replicas: 1}}
	want, err := Place([]int32{1, 2, 3, 4, 5}, existing, 17, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, brokers := range [][]int32{{1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}, {3, 1, 5, 2, 4, 3, 1}} {
		for range 3 {
			got, err := Place(brokers, existing, 17, 3)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Place(%v) = %v, %v; want %v", brokers, got, err, want)
			}
		}
	}
	if existing[2] != (BrokerLoad{Replicas: 3, Leaders: 1}) || len(existing) != 2 {
		t.Fatalf("Place modified existing: %v", existing)
	}
}

func TestPlaceErrors(t *testing.T) {
	tests := []struct {
		brokers    []int32
		partitions int32
		rf         int16
		want       error
	}{
		{[]int32{1, 2, 3}, 1, 4, ErrInvalidReplicationFactor},
		{[]int32{1, 1, 1}, 1, 2, ErrInvalidReplicationFactor}, // one distinct broker
		{nil, 1, 1, ErrInvalidReplicationFactor},
		{[]int32{1}, 1, 0, ErrInvalidReplicationFactor},
		{[]int32{1}, 1, -1, ErrInvalidReplicationFactor},
		{[]int32{1}, 0, 1, ErrInvalidPartitions},
		{[]int32{1}, -3, 1, ErrInvalidPartitions},
		{[]int32{1}, MaxPartitions + 1, 1, ErrInvalidPartitions},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/p%d/rf%d", tc.brokers, tc.partitions, tc.rf), func(t *testing.T) {
			a, err := Place(tc.brokers, nil, tc.partitions, tc.rf)
			if !errors.Is(err, tc.want) || a != nil {
				t.Fatalf("Place = %v, %v; want %v", a, err, tc.want)
			}
		})
	}
	_, err := Place([]int32{1, 2}, nil, 1, 3)
	var rfe *ReplicationFactorError
	if !errors.As(err, &rfe) || rfe.ReplicationFactor != 3 || rfe.Brokers != 2 {
		t.Fatalf("err = %#v, want ReplicationFactorError{3, 2}", err)
	}
}

// Place's output is what CreateTopic accepts, and the state's Load feeds the
// next placement.
func TestPlaceFeedsCreateTopic(t *testing.T) {
	s := cluster3(t)
	for i, rf := range []int16{1, 2, 3, 2} {
		a, err := Place(s.BrokerIDs(), s.Load(), 5, rf)
		if err != nil {
			t.Fatal(err)
		}
		s = must(t, s, CreateTopic{Name: fmt.Sprintf("t%d", i), Partitions: 5, ReplicationFactor: rf, Assignment: a})
	}
	// 20 partitions, 40 replicas over 3 brokers.
	if r, l := spread(s.Load(), s.BrokerIDs()); r > 1 || l > 1 {
		t.Fatalf("load after four topics: %v", s.Load())
	}
}
