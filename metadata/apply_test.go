package metadata

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestInitCluster(t *testing.T) {
	inited := must(t, &Snapshot{}, InitCluster{ClusterID: "c1"})
	tests := []struct {
		name    string
		state   *Snapshot
		cmd     Command
		want    InitClusterResult
		wantErr error
	}{
		{"first", &Snapshot{}, InitCluster{ClusterID: "c1"}, InitClusterResult{ClusterID: "c1", Changed: true}, nil},
		{"pointer form", &Snapshot{}, &InitCluster{ClusterID: "c1"}, InitClusterResult{ClusterID: "c1", Changed: true}, nil},
		{"repeat is a no-op", inited, InitCluster{ClusterID: "c1"}, InitClusterResult{ClusterID: "c1"}, nil},
		{"empty id", &Snapshot{}, InitCluster{}, InitClusterResult{}, ErrInvalidClusterID},
		{"other id", inited, InitCluster{ClusterID: "c2"}, InitClusterResult{}, ErrClusterIDMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, res, err := step(t, tc.state, tc.cmd)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if res != tc.want {
				t.Fatalf("result = %#v, want %#v", res, tc.want)
			}
			if next.ClusterID() != "c1" || !next.Initialized() || next.NextProducerID() != FirstProducerID {
				t.Fatalf("state: cluster %q initialized %v next pid %d", next.ClusterID(), next.Initialized(), next.NextProducerID())
			}
		})
	}

	_, _, err := step(t, inited, InitCluster{ClusterID: "c2"})
	var mm *ClusterIDMismatchError
	if !errors.As(err, &mm) || mm.Have != "c1" || mm.Proposed != "c2" {
		t.Fatalf("err = %#v, want ClusterIDMismatchError{c1, c2}", err)
	}
}

func TestCommandsNeedInitCluster(t *testing.T) {
	for _, cmd := range []Command{
		broker(1),
		CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}},
		SetPartitionLeader{Topic: "t", Leader: 1, Epoch: 1},
		AllocateProducerID{},
		AllocateProducerID{TransactionalID: ptr("tx")},
	} {
		if _, _, err := step(t, &Snapshot{}, cmd); !errors.Is(err, ErrClusterNotInitialized) {
			t.Errorf("%T before InitCluster: err = %v, want ErrClusterNotInitialized", cmd, err)
		}
	}
}

func TestApplyNilCommand(t *testing.T) {
	for _, cmd := range []Command{nil, (*CreateTopic)(nil)} {
		if _, _, err := step(t, cluster3(t), cmd); !errors.Is(err, ErrMalformedCommand) {
			t.Errorf("Apply(%#v): err = %v, want ErrMalformedCommand", cmd, err)
		}
	}
}

func TestRegisterBroker(t *testing.T) {
	base := must(t, &Snapshot{}, InitCluster{ClusterID: "c1"}, broker(1))
	tests := []struct {
		name        string
		cmd         RegisterBroker
		wantChanged bool
		wantErr     error
	}{
		{"new broker", RegisterBroker{ID: 2, KafkaAddr: "b2:9092", RaftAddr: "b2:9093"}, true, nil},
		{"id zero", RegisterBroker{ID: 0, KafkaAddr: "b0:9092", RaftAddr: "b0:9093"}, true, nil},
		{"ipv6", RegisterBroker{ID: 2, KafkaAddr: "[::1]:9092", RaftAddr: "[::1]:9093"}, true, nil},
		{"same registration", broker(1), false, nil},
		{"new address", RegisterBroker{ID: 1, KafkaAddr: "10.0.0.1:9092", RaftAddr: "10.0.0.1:9093"}, true, nil},
		{"negative id", RegisterBroker{ID: -1, KafkaAddr: "b:1", RaftAddr: "b:2"}, false, ErrInvalidBroker},
		{"kafka addr without port", RegisterBroker{ID: 2, KafkaAddr: "b2", RaftAddr: "b2:9093"}, false, ErrInvalidBroker},
		{"kafka addr without host", RegisterBroker{ID: 2, KafkaAddr: ":9092", RaftAddr: "b2:9093"}, false, ErrInvalidBroker},
		{"kafka port zero", RegisterBroker{ID: 2, KafkaAddr: "b2:0", RaftAddr: "b2:9093"}, false, ErrInvalidBroker},
		{"kafka port too big", RegisterBroker{ID: 2, KafkaAddr: "b2:65536", RaftAddr: "b2:9093"}, false, ErrInvalidBroker},
		{"kafka port not a number", RegisterBroker{ID: 2, KafkaAddr: "b2:http", RaftAddr: "b2:9093"}, false, ErrInvalidBroker},
		{"empty raft addr", RegisterBroker{ID: 2, KafkaAddr: "b2:9092"}, false, ErrInvalidBroker},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, res, err := step(t, base, tc.cmd)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				var be *InvalidBrokerError
				if !errors.As(err, &be) || be.ID != tc.cmd.ID {
					t.Fatalf("err = %#v, want *InvalidBrokerError for id %d", err, tc.cmd.ID)
				}
				return
			}
			want := Broker(tc.cmd)
			if r := res.(RegisterBrokerResult); r.Broker != want || r.Changed != tc.wantChanged {
				t.Fatalf("result = %+v, want broker %+v changed %v", r, want, tc.wantChanged)
			}
			if got, ok := next.Broker(tc.cmd.ID); !ok || got != want {
				t.Fatalf("Broker(%d) = %+v, %v; want %+v", tc.cmd.ID, got, ok, want)
			}
		})
	}
}

func TestCreateTopic(t *testing.T) {
	base := must(t, cluster3(t), CreateTopic{Name: "taken", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	ok := CreateTopic{Name: "events", Partitions: 2, ReplicationFactor: 3,
		Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}, Configs: map[string]string{"segment.bytes": "1048576"}}
	with := func(f func(*CreateTopic)) CreateTopic {
		c := ok
		c.Assignment = [][]int32{{1, 2, 3}, {2, 3, 1}}
		f(&c)
		return c
	}
	tests := []struct {
		name    string
		cmd     CreateTopic
		wantErr []error // every one must match
	}{
		{"valid", ok, nil},
		{"all legal characters", with(func(c *CreateTopic) { c.Name = "a-Z_0.9" }), nil},
		{"249 characters", with(func(c *CreateTopic) { c.Name = strings.Repeat("x", 249) }), nil},
		{"empty name", with(func(c *CreateTopic) { c.Name = "" }), []error{ErrInvalidTopic}},
		{"dot", with(func(c *CreateTopic) { c.Name = "." }), []error{ErrInvalidTopic}},
		{"dot dot", with(func(c *CreateTopic) { c.Name = ".." }), []error{ErrInvalidTopic}},
		{"250 characters", with(func(c *CreateTopic) { c.Name = strings.Repeat("x", 250) }), []error{ErrInvalidTopic}},
		{"slash", with(func(c *CreateTopic) { c.Name = "a/b" }), []error{ErrInvalidTopic}},
		{"non-ascii", with(func(c *CreateTopic) { c.Name = "café" }), []error{ErrInvalidTopic}},
		{"name taken", with(func(c *CreateTopic) { c.Name = "taken" }), []error{ErrTopicExists}},
		{"zero partitions", with(func(c *CreateTopic) { c.Partitions = 0; c.Assignment = nil }), []error{ErrInvalidPartitions}},
		{"negative partitions", with(func(c *CreateTopic) { c.Partitions = -1 }), []error{ErrInvalidPartitions}},
		{"too many partitions", with(func(c *CreateTopic) { c.Partitions = MaxPartitions + 1 }), []error{ErrInvalidPartitions}},
		{"zero replication factor", with(func(c *CreateTopic) { c.ReplicationFactor = 0 }), []error{ErrInvalidReplicationFactor}},
		{"rf above brokers", with(func(c *CreateTopic) { c.ReplicationFactor = 4 }), []error{ErrInvalidReplicationFactor}},
		{"too few partitions assigned", with(func(c *CreateTopic) { c.Assignment = c.Assignment[:1] }),
			[]error{ErrInvalidReplicaAssignment, ErrPartitionCount}},
		{"too many partitions assigned", with(func(c *CreateTopic) { c.Assignment = append(c.Assignment, []int32{3, 1, 2}) }),
			[]error{ErrInvalidReplicaAssignment, ErrPartitionCount}},
		{"short replica list", with(func(c *CreateTopic) { c.Assignment[1] = []int32{2, 3} }),
			[]error{ErrInvalidReplicaAssignment, ErrReplicaCount}},
		{"long replica list", with(func(c *CreateTopic) { c.ReplicationFactor = 2 }),
			[]error{ErrInvalidReplicaAssignment, ErrReplicaCount}},
		{"unknown broker", with(func(c *CreateTopic) { c.Assignment[1] = []int32{2, 9, 1} }),
			[]error{ErrInvalidReplicaAssignment, ErrUnknownBroker}},
		{"duplicate replica", with(func(c *CreateTopic) { c.Assignment[1] = []int32{2, 3, 2} }),
			[]error{ErrInvalidReplicaAssignment, ErrDuplicateReplica}},
		{"empty config key", with(func(c *CreateTopic) { c.Configs = map[string]string{"": "x"} }), []error{ErrInvalidConfig}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, res, err := step(t, base, tc.cmd)
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			}
			if len(tc.wantErr) > 0 {
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			got := res.(CreateTopicResult).Topic
			stored, ok := next.Topic(tc.cmd.Name)
			if !ok || !stored.equal(&got) {
				t.Fatalf("stored topic %+v, result %+v", stored, got)
			}
			if got.ID.IsZero() || got.ID == base.topics["taken"].ID {
				t.Fatalf("topic id %v", got.ID)
			}
			if byID, ok := next.TopicByID(got.ID); !ok || byID.Name != tc.cmd.Name {
				t.Fatalf("TopicByID(%v) = %q, %v", got.ID, byID.Name, ok)
			}
			for i, p := range got.Partitions {
				if p.Leader != NoLeader || p.LeaderEpoch != NoLeaderEpoch || !equalInts(p.Replicas, tc.cmd.Assignment[i]) {
					t.Fatalf("partition %d = %+v, want replicas %v and no leader", i, p, tc.cmd.Assignment[i])
				}
			}
			if got.Configs["segment.bytes"] != "1048576" {
				t.Fatalf("configs = %v", got.Configs)
			}
		})
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCreateTopicErrorDetails(t *testing.T) {
	s := cluster3(t)
	_, _, err := step(t, s, CreateTopic{Name: "t", Partitions: 2, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {3, 7}}})
	var ae *AssignmentError
	if !errors.As(err, &ae) || ae.Partition != 1 || ae.Broker != 7 || ae.Err != ErrUnknownBroker {
		t.Fatalf("err = %#v, want AssignmentError{1, 7, ErrUnknownBroker}", err)
	}
	_, _, err = step(t, s, CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 5, Assignment: [][]int32{{1}}})
	var rf *ReplicationFactorError
	if !errors.As(err, &rf) || rf.ReplicationFactor != 5 || rf.Brokers != 3 {
		t.Fatalf("err = %#v, want ReplicationFactorError{5, 3}", err)
	}
	_, _, err = step(t, s, CreateTopic{Name: "a b", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	var it *InvalidTopicError
	if !errors.As(err, &it) || it.Name != "a b" {
		t.Fatalf("err = %#v, want InvalidTopicError for %q", err, "a b")
	}
	s = must(t, s, CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	_, _, err = step(t, s, CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	var te *TopicExistsError
	if !errors.As(err, &te) || te.Name != "t" {
		t.Fatalf("err = %#v, want TopicExistsError{t}", err)
	}
}

// The stored topic must not share memory with the command or with what
// readers get back.
func TestCreateTopicDoesNotAlias(t *testing.T) {
	cmd := CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}}, Configs: map[string]string{"retention.ms": "1000"}}
	s := must(t, cluster3(t), cmd)
	cmd.Assignment[0][0] = 3
	cmd.Configs["retention.ms"] = "2000"
	got, _ := s.Topic("t")
	got.Partitions[0].Replicas[1] = 3
	got.Configs["retention.ms"] = "3000"
	p, _ := s.Partition("t", 0)
	p.Replicas[0] = 9
	again, _ := s.Topic("t")
	if !equalInts(again.Partitions[0].Replicas, []int32{1, 2}) || again.Configs["retention.ms"] != "1000" {
		t.Fatalf("stored topic changed through an alias: %+v", again)
	}
}

func TestTopicIDs(t *testing.T) {
	a := deriveTopicID("c1", 10, "t", 0)
	if a != deriveTopicID("c1", 10, "t", 0) {
		t.Fatal("same inputs, different ids")
	}
	for _, other := range []TopicID{
		deriveTopicID("c2", 10, "t", 0), deriveTopicID("c1", 11, "t", 0),
		deriveTopicID("c1", 10, "u", 0), deriveTopicID("c1", 10, "t", 1),
	} {
		if other == a {
			t.Fatalf("different inputs gave the same id %v", a)
		}
	}
	if a[6]>>4 != 8 || a[8]>>6 != 2 {
		t.Fatalf("id %x lacks version 8 / variant bits", a)
	}
	// Kafka's reserved and unusable ids.
	for _, id := range []TopicID{{}, {15: 1}, {0: 0xf8}} {
		if usableTopicID(id) {
			t.Errorf("usableTopicID(%v) = true", id)
		}
	}
	if !usableTopicID(TopicID{0: 0x10, 6: 0x80, 8: 0x80}) {
		t.Error("ordinary id judged unusable")
	}
	// A collision with an existing topic moves on to the next attempt.
	s := cluster3(t)
	s.topicIDs = map[TopicID]string{deriveTopicID("c1", 7, "t", 0): "other"}
	if got, want := s.newTopicID(7, "t"), deriveTopicID("c1", 7, "t", 1); got != want {
		t.Fatalf("newTopicID after collision = %v, want %v", got, want)
	}
	if got := (TopicID{0: 0xfb, 1: 0xff}).String(); got != "-_8AAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("String() = %q, want Kafka's URL-safe base64", got)
	}
}

func TestSetPartitionLeader(t *testing.T) {
	base := must(t, cluster3(t),
		CreateTopic{Name: "t", Partitions: 2, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {2, 3}}},
		SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 5})
	tests := []struct {
		name       string
		cmd        SetPartitionLeader
		want       SetPartitionLeaderResult
		wantErr    []error
		wantStored Partition // partition cmd.Partition afterwards, when no error
	}{
		{"first report", SetPartitionLeader{Topic: "t", Partition: 1, Leader: 3, Epoch: 2},
			SetPartitionLeaderResult{Leader: 3, LeaderEpoch: 2, Applied: true}, nil,
			Partition{Replicas: []int32{2, 3}, Leader: 3, LeaderEpoch: 2}},
		{"first report at epoch 0", SetPartitionLeader{Topic: "t", Partition: 1, Leader: 2, Epoch: 0},
			SetPartitionLeaderResult{Leader: 2, LeaderEpoch: 0, Applied: true}, nil,
			Partition{Replicas: []int32{2, 3}, Leader: 2, LeaderEpoch: 0}},
		{"newer epoch", SetPartitionLeader{Topic: "t", Partition: 0, Leader: 2, Epoch: 6},
			SetPartitionLeaderResult{Leader: 2, LeaderEpoch: 6, Applied: true}, nil,
			Partition{Replicas: []int32{1, 2}, Leader: 2, LeaderEpoch: 6}},
		{"newer epoch same leader", SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 9},
			SetPartitionLeaderResult{Leader: 1, LeaderEpoch: 9, Applied: true}, nil,
			Partition{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 9}},
		{"stale epoch ignored", SetPartitionLeader{Topic: "t", Partition: 0, Leader: 2, Epoch: 4},
			SetPartitionLeaderResult{Leader: 1, LeaderEpoch: 5}, nil,
			Partition{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 5}},
		{"repeat ignored", SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 5},
			SetPartitionLeaderResult{Leader: 1, LeaderEpoch: 5}, nil,
			Partition{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 5}},
		{"unknown topic", SetPartitionLeader{Topic: "u", Leader: 1, Epoch: 1}, SetPartitionLeaderResult{},
			[]error{ErrUnknownTopicOrPartition}, Partition{}},
		{"negative partition", SetPartitionLeader{Topic: "t", Partition: -1, Leader: 1, Epoch: 1}, SetPartitionLeaderResult{},
			[]error{ErrUnknownTopicOrPartition}, Partition{}},
		{"partition past the end", SetPartitionLeader{Topic: "t", Partition: 2, Leader: 1, Epoch: 1}, SetPartitionLeaderResult{},
			[]error{ErrUnknownTopicOrPartition}, Partition{}},
		{"negative epoch", SetPartitionLeader{Topic: "t", Partition: 1, Leader: 2, Epoch: -1}, SetPartitionLeaderResult{},
			[]error{ErrInvalidLeader, ErrNegativeLeaderEpoch}, Partition{}},
		{"leader not a replica", SetPartitionLeader{Topic: "t", Partition: 0, Leader: 3, Epoch: 7}, SetPartitionLeaderResult{},
			[]error{ErrInvalidLeader, ErrNotReplica}, Partition{}},
		{"no-leader value is not a report", SetPartitionLeader{Topic: "t", Partition: 0, Leader: NoLeader, Epoch: 7}, SetPartitionLeaderResult{},
			[]error{ErrInvalidLeader, ErrNotReplica}, Partition{}},
		{"two leaders in one epoch", SetPartitionLeader{Topic: "t", Partition: 0, Leader: 2, Epoch: 5}, SetPartitionLeaderResult{},
			[]error{ErrInvalidLeader, ErrLeaderEpochConflict}, Partition{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, res, err := step(t, base, tc.cmd)
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			}
			if len(tc.wantErr) > 0 {
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if res != tc.want {
				t.Fatalf("result = %+v, want %+v", res, tc.want)
			}
			got, _ := next.Partition(tc.cmd.Topic, tc.cmd.Partition)
			if got.Leader != tc.wantStored.Leader || got.LeaderEpoch != tc.wantStored.LeaderEpoch || !equalInts(got.Replicas, tc.wantStored.Replicas) {
				t.Fatalf("stored %+v, want %+v", got, tc.wantStored)
			}
			// The other partition is untouched.
			other := 1 - tc.cmd.Partition
			if a, b := base.topics["t"].Partitions[other], next.topics["t"].Partitions[other]; a.Leader != b.Leader || a.LeaderEpoch != b.LeaderEpoch {
				t.Fatalf("partition %d changed from %+v to %+v", other, a, b)
			}
		})
	}

	_, _, err := step(t, base, SetPartitionLeader{Topic: "t", Partition: 7, Leader: 1, Epoch: 1})
	var ut *UnknownTopicError
	if !errors.As(err, &ut) || ut.Topic != "t" || ut.Partition != 7 {
		t.Fatalf("err = %#v, want UnknownTopicError{t, 7}", err)
	}
	_, _, err = step(t, base, SetPartitionLeader{Topic: "t", Partition: 0, Leader: 3, Epoch: 7})
	var le *LeaderReportError
	if !errors.As(err, &le) || le.Topic != "t" || le.Partition != 0 || le.Leader != 3 || le.Epoch != 7 {
		t.Fatalf("err = %#v, want LeaderReportError for t/0 leader 3 epoch 7", err)
	}
}

func TestSnapshotAccessors(t *testing.T) {
	s := must(t, cluster3(t),
		CreateTopic{Name: "b", Partitions: 2, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {2, 3}}},
		CreateTopic{Name: "a", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{3}}})
	if got := s.TopicNames(); strings.Join(got, ",") != "a,b" {
		t.Fatalf("TopicNames = %v", got)
	}
	if got := s.Topics(); len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("Topics = %+v", got)
	}
	if got := s.BrokerIDs(); !equalInts(got, []int32{1, 2, 3}) {
		t.Fatalf("BrokerIDs = %v", got)
	}
	if got := s.Brokers(); len(got) != 3 || got[0].ID != 1 || got[2].ID != 3 {
		t.Fatalf("Brokers = %+v", got)
	}
	want := map[int32][]TopicPartition{
		1: {{"b", 0}},
		2: {{"b", 0}, {"b", 1}},
		3: {{"a", 0}, {"b", 1}},
		4: nil,
	}
	for b, w := range want {
		got := s.PartitionsOn(b)
		if len(got) != len(w) {
			t.Fatalf("PartitionsOn(%d) = %v, want %v", b, got, w)
		}
		for i := range w {
			if got[i] != w[i] {
				t.Fatalf("PartitionsOn(%d) = %v, want %v", b, got, w)
			}
		}
	}
	wantLoad := Load{1: {Replicas: 1, Leaders: 1}, 2: {Replicas: 2, Leaders: 1}, 3: {Replicas: 2, Leaders: 1}}
	got := s.Load()
	if len(got) != len(wantLoad) {
		t.Fatalf("Load = %v, want %v", got, wantLoad)
	}
	for b, l := range wantLoad {
		if got[b] != l {
			t.Fatalf("Load = %v, want %v", got, wantLoad)
		}
	}
	if _, ok := s.Partition("b", 2); ok {
		t.Fatal("Partition(b, 2) found")
	}
	if _, ok := s.Topic("zz"); ok {
		t.Fatal("Topic(zz) found")
	}
	if _, ok := s.TopicByID(TopicID{1}); ok {
		t.Fatal("TopicByID of an unknown id found")
	}
}

// CreatePartitions appends partitions with their replicas and no leader,
// keeping the old ones; every bad request is refused whole.
func TestCreatePartitions(t *testing.T) {
	base := must(t, cluster3(t), CreateTopic{Name: "events", Partitions: 2, ReplicationFactor: 2,
		Assignment: [][]int32{{1, 2}, {2, 3}}},
		SetPartitionLeader{Topic: "events", Partition: 0, Leader: 1, Epoch: 3})
	next, res, err := step(t, base, CreatePartitions{Topic: "events", Count: 4, Assignment: [][]int32{{3, 1}, {1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.(CreatePartitionsResult).Topic
	if len(got.Partitions) != 4 || got.Partitions[0].Leader != 1 || !slices.Equal(got.Partitions[2].Replicas, []int32{3, 1}) ||
		got.Partitions[3].Leader != NoLeader {
		t.Fatalf("grown topic: %+v", got)
	}
	if p, ok := next.Partition("events", 3); !ok || !slices.Equal(p.Replicas, []int32{1, 2}) {
		t.Fatalf("partition 3 in the state: %+v %v", p, ok)
	}
	for _, tc := range []struct {
		name string
		cmd  CreatePartitions
		want []error
	}{
		{"unknown topic", CreatePartitions{Topic: "nope", Count: 3, Assignment: [][]int32{{1, 2}}}, []error{ErrUnknownTopicOrPartition}},
		{"no growth", CreatePartitions{Topic: "events", Count: 2}, []error{ErrInvalidPartitions}},
		{"shrink", CreatePartitions{Topic: "events", Count: 1}, []error{ErrInvalidPartitions}},
		{"too many", CreatePartitions{Topic: "events", Count: MaxPartitions + 1}, []error{ErrInvalidPartitions}},
		{"assignment short", CreatePartitions{Topic: "events", Count: 4, Assignment: [][]int32{{1, 2}}},
			[]error{ErrInvalidReplicaAssignment, ErrPartitionCount}},
		{"wrong replication factor", CreatePartitions{Topic: "events", Count: 3, Assignment: [][]int32{{1, 2, 3}}},
			[]error{ErrInvalidReplicaAssignment, ErrReplicaCount}},
		{"unknown broker", CreatePartitions{Topic: "events", Count: 3, Assignment: [][]int32{{1, 9}}},
			[]error{ErrInvalidReplicaAssignment, ErrUnknownBroker}},
		{"duplicate replica", CreatePartitions{Topic: "events", Count: 3, Assignment: [][]int32{{2, 2}}},
			[]error{ErrInvalidReplicaAssignment, ErrDuplicateReplica}},
	} {
		_, _, err := step(t, base, tc.cmd)
		for _, w := range tc.want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v, want %v", tc.name, err, w)
			}
		}
	}
}

// DeleteTopic removes the topic, remembers its id as deleted and frees the
// name; an unknown or internal topic is refused.
func TestDeleteTopic(t *testing.T) {
	base := must(t, cluster3(t), CreateTopic{Name: "events", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}},
		CreateTopic{Name: ConsumerOffsetsTopic, Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	old, _ := base.Topic("events")
	next, res, err := step(t, base, DeleteTopic{Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if res.(DeleteTopicResult).ID != old.ID || !next.TopicDeleted(old.ID) || base.TopicDeleted(old.ID) {
		t.Fatalf("result %+v; deleted after %v, before %v", res, next.TopicDeleted(old.ID), base.TopicDeleted(old.ID))
	}
	if _, ok := next.Topic("events"); ok {
		t.Fatal("deleted topic still there")
	}
	if _, ok := next.TopicByID(old.ID); ok {
		t.Fatal("deleted topic still found by id")
	}
	again := must(t, next, CreateTopic{Name: "events", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{2}}})
	if nt, _ := again.Topic("events"); nt.ID == old.ID || again.TopicDeleted(nt.ID) {
		t.Fatalf("recreated topic has id %v (old %v)", nt.ID, old.ID)
	}
	for _, tc := range []struct {
		name string
		want error
	}{{"events", ErrUnknownTopicOrPartition}, {ConsumerOffsetsTopic, ErrInvalidTopic}} {
		if _, _, err := step(t, next, DeleteTopic{Name: tc.name}); !errors.Is(err, tc.want) {
			t.Errorf("delete %s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// The cluster partition limit stamped on CreateTopic and CreatePartitions
// is checked against the state at the entry's position: two proposals
// built from the same state, each within the limit alone, are ordered by
// the log, and the second is refused. Internal topics and entries without
// a limit (written before it was stamped) pass.
func TestPartitionLimitAtApply(t *testing.T) {
	onBroker1 := func(n int32) [][]int32 {
		a := make([][]int32, n)
		for i := range a {
			a[i] = []int32{1}
		}
		return a
	}
	topic := func(name string, n int32, limit int32) CreateTopic {
		return CreateTopic{Name: name, Partitions: n, ReplicationFactor: 1, Assignment: onBroker1(n), MaxClusterPartitions: limit}
	}
	base := must(t, cluster3(t), topic("old", 5, 0))
	first := must(t, base, topic("a", 10, 20))
	_, _, err := step(t, first, topic("b", 10, 20))
	var le *PartitionLimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrPartitionLimit) || le.Total != 25 || le.Limit != 20 || le.Topic != "b" {
		t.Fatalf("second create past the limit: %v", err)
	}
	must(t, first, topic("c", 5, 20), topic(ConsumerOffsetsTopic, 50, 20), topic("unlimited", 100, 0))

	grow := CreatePartitions{Topic: "a", Count: 16, Assignment: onBroker1(6), MaxClusterPartitions: 20}
	if _, _, err := step(t, first, grow); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("growth past the limit: %v", err)
	}
	grow.Count, grow.Assignment = 15, onBroker1(5)
	if n := must(t, first, grow).PartitionCount(); n != 20 {
		t.Fatalf("%d partitions after growing to the limit, want 20", n)
	}
	must(t, first, CreatePartitions{Topic: "a", Count: 30, Assignment: onBroker1(20)})
}

func TestNodeReplicaLimitAtApply(t *testing.T) {
	spread := func(n int32, brokers ...int32) [][]int32 {
		a := make([][]int32, n)
		for i := range a {
			a[i] = []int32{brokers[i%len(brokers)]}
		}
		return a
	}
	topic := func(name string, a [][]int32, limit int32) CreateTopic {
		return CreateTopic{Name: name, Partitions: int32(len(a)), ReplicationFactor: 1, Assignment: a, MaxNodeReplicas: limit}
	}
	// Broker 1 holds 6 replicas, broker 2 holds 2.
	base := must(t, cluster3(t), topic("old", spread(8, 1, 1, 1, 2), 0))
	_, _, err := step(t, base, topic("b", spread(6, 1, 2, 3), 7))
	var ne *NodeReplicaLimitError
	if !errors.As(err, &ne) || !errors.Is(err, ErrPartitionLimit) || ne.Broker != 1 || ne.Total != 8 || ne.Limit != 7 {
		t.Fatalf("a create that puts 8 replicas on broker 1 with a limit of 7: %v", err)
	}
	// Spread over brokers 2 and 3 it fits; an internal topic is never refused.
	must(t, base, topic("c", spread(6, 2, 3), 7), topic(ConsumerOffsetsTopic, spread(50, 1), 7))
	grow := CreatePartitions{Topic: "old", Count: 10, Assignment: spread(2, 1), MaxNodeReplicas: 7}
	if _, _, err := step(t, base, grow); !errors.As(err, &ne) || ne.Broker != 1 {
		t.Fatalf("growth past broker 1's limit: %v", err)
	}
	grow.Assignment = spread(2, 3)
	if n := must(t, base, grow).ReplicasPerBroker()[3]; n != 2 {
		t.Fatalf("broker 3 holds %d replicas after the growth, want 2", n)
	}
}

// LayoutIndex moves with what a node's replicas follow (topics, replicas,
// configs), not with leader reports, producer ids, credentials or ACLs, and
// a decoded snapshot reports its own index.
func TestLayoutIndex(t *testing.T) {
	s := must(t, cluster3(t), CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}}})
	created := s.LayoutIndex()
	if created != s.AppliedIndex() {
		t.Fatalf("layout index %d after CreateTopic at %d", created, s.AppliedIndex())
	}
	s = must(t, s, SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 1}, AllocateProducerID{})
	if s.LayoutIndex() != created {
		t.Fatalf("layout index %d moved from %d with a leader report and a producer id", s.LayoutIndex(), created)
	}
	s = must(t, s, AlterConfigs{Resource: ConfigTopic, Topic: "t", Configs: map[string]string{"retention.ms": "1000"}})
	if s.LayoutIndex() != s.AppliedIndex() {
		t.Fatalf("layout index %d after AlterConfigs at %d", s.LayoutIndex(), s.AppliedIndex())
	}
	s = must(t, s, SetPartitionLeader{Topic: "t", Partition: 0, Leader: 2, Epoch: 2})
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if d.LayoutIndex() != s.AppliedIndex() {
		t.Fatalf("decoded layout index %d, want its applied index %d", d.LayoutIndex(), s.AppliedIndex())
	}
}
