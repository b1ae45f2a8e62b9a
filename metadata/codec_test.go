package metadata

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/minikafka/minikafka-go/acl"
)

// sampleCommands covers every type and the optional parts of each.
func sampleCommands() []Command {
	return []Command{
		InitCluster{ClusterID: "c1"},
		InitCluster{},
		RegisterBroker{ID: 3, KafkaAddr: "10.0.0.3:9092", RaftAddr: "10.0.0.3:9093"},
		RegisterBroker{ID: -1},
		CreateTopic{Name: "events", Partitions: 2, ReplicationFactor: 3, Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}},
		CreateTopic{Name: "cfg", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{7}},
			Configs: map[string]string{"segment.bytes": "1024", "cleanup.policy": "delete", "z": ""}},
		CreateTopic{},
		SetPartitionLeader{Topic: "events", Partition: 1, Leader: 2, Epoch: 7},
		SetPartitionLeader{Topic: "x", Partition: -1, Leader: -1, Epoch: -1},
		AllocateProducerID{},
		AllocateProducerID{TransactionalID: ptr("")},
		AllocateProducerID{TransactionalID: ptr("app-1")},
		CreatePartitions{Topic: "events", Count: 4, Assignment: [][]int32{{3, 1, 2}, {1, 2, 3}}},
		CreatePartitions{},
		DeleteTopic{Name: "events"},
		DeleteTopic{},
		AlterConfigs{Resource: ConfigTopic, Topic: "events", Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"}},
		AlterConfigs{Resource: ConfigClusterDefaults, Configs: map[string]string{"log.retention.ms": "-1"}},
		AlterConfigs{},
		RegisterBroker{ID: 4, KafkaAddr: "h:1", RaftAddr: "h:2", Listeners: "PLAINTEXT://h:1,SASL_SSL://h:3"},
		AlterScramCredentials{Deletions: []ScramDeletion{{"bob", ScramSHA256}},
			Upsertions: []ScramCredential{cred("alice", ScramSHA512)}, IfAbsent: true},
		AlterScramCredentials{},
		CreateACLs{Bindings: []acl.Binding{sampleBinding("alice"), {}}},
		CreateACLs{},
		DeleteACLs{Filters: []acl.Filter{{ResourceType: acl.ResourceTopic, Name: ptr("t"), Pattern: acl.PatternMatch,
			Principal: ptr("User:a"), Host: ptr("*"), Operation: acl.OpRead, Permission: acl.PermissionDeny}, {}}},
		DeleteACLs{},
		AlterReassignment{Topic: "events", Partition: 1, Target: []int32{4, 2, 3}},
		AlterReassignment{Topic: "events", Partition: 1},
		AlterReassignment{Target: []int32{}},
		CompleteReassignment{Topic: "events", Partition: 1, Target: []int32{4, 2, 3}},
		CompleteReassignment{},
		CreateTopic{Name: "capped", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}, MaxClusterPartitions: 20},
		CreatePartitions{Topic: "capped", Count: 2, Assignment: [][]int32{{2}}, MaxClusterPartitions: 1},
		CreateTopic{Name: "node-capped", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}, MaxNodeReplicas: 9},
		SetProducerIDKey{Key: []byte("k")},
		ReplicasRemoved{Broker: 2, Topics: []TopicID{{1}, {2, 3}}},
		ReplicasRemoved{},
		SetPartitionLeaders{Reports: []SetPartitionLeader{{Topic: "a", Partition: 1, Leader: 2, Epoch: 3}, {Topic: "b"}}},
		SetPartitionLeaders{},
		CreateDelegationToken{Token: token("t1", "User:alice", "User:bob")},
		CreateDelegationToken{},
		UpdateDelegationToken{TokenID: "t1", Principal: "User:bob", Expire: true, NowMs: 5, PeriodMs: -1},
		UpdateDelegationToken{},
		ExpireDelegationTokens{NowMs: 7},
		AlterClientQuotas{Alterations: []QuotaAlteration{{Entity: QuotaEntity{User: NamedQuota("u"), ClientID: DefaultQuota()},
			Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}, {Key: QuotaRequestPercentage, Remove: true}}}}},
		AlterClientQuotas{},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, cmd := range sampleCommands() {
		b, err := Encode(cmd)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", cmd, err)
		}
		if CommandType(b[0]) != cmd.Type() {
			t.Fatalf("Encode(%#v) starts with type %d", cmd, b[0])
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%#v)): %v", cmd, err)
		}
		if !reflect.DeepEqual(got, cmd) {
			t.Fatalf("round trip: got %#v, want %#v", got, cmd)
		}
		again, _ := Encode(got)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %#v changed the bytes", cmd)
		}
	}
}

func TestEncodePointerEqualsValue(t *testing.T) {
	v, _ := Encode(SetPartitionLeader{Topic: "t", Leader: 1, Epoch: 2})
	p, err := Encode(&SetPartitionLeader{Topic: "t", Leader: 1, Epoch: 2})
	if err != nil || !bytes.Equal(v, p) {
		t.Fatalf("pointer encoding %x, %v; value encoding %x", p, err, v)
	}
	for _, cmd := range []Command{nil, (*InitCluster)(nil), (*AllocateProducerID)(nil)} {
		if _, err := Encode(cmd); !errors.Is(err, ErrMalformedCommand) {
			t.Errorf("Encode(%#v): err = %v, want ErrMalformedCommand", cmd, err)
		}
	}
}

// Config maps encode in key order whatever the insertion order.
func TestEncodeConfigsCanonical(t *testing.T) {
	a := map[string]string{}
	b := map[string]string{}
	keys := []string{"k9", "k1", "k5", "k3", "k7", "k2", "k8", "k4", "k6"}
	for i, k := range keys {
		a[k] = k
		b[keys[len(keys)-1-i]] = keys[len(keys)-1-i]
	}
	ea, _ := Encode(CreateTopic{Name: "t", Configs: a})
	for range 20 {
		eb, _ := Encode(CreateTopic{Name: "t", Configs: b})
		if !bytes.Equal(ea, eb) {
			t.Fatal("equal config maps encoded differently")
		}
	}
}

// The wire format is read forever: pin it byte for byte.
func TestEncodeGolden(t *testing.T) {
	tests := []struct {
		cmd  Command
		want string
	}{
		{InitCluster{ClusterID: "c1"}, "0101" + "00000002" + "6331"},
		{RegisterBroker{ID: 2, KafkaAddr: "a:1", RaftAddr: "b:2"}, "0201" + "00000002" + "00000003" + "613a31" + "00000003" + "623a32"},
		{CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}}, Configs: map[string]string{"k": "v"}},
			"0302" + "00000001" + "74" + "00000001" + "0002" + "00000001" + "00000002" + "00000001" + "00000002" +
				"00000001" + "00000001" + "6b" + "00000001" + "76"},
		{CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}, MaxClusterPartitions: 20},
			"0303" + "00000001" + "74" + "00000001" + "0001" + "00000001" + "00000001" + "00000001" + "00000000" + "00000014" + "00000000"},
		{CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}, MaxNodeReplicas: 5},
			"0303" + "00000001" + "74" + "00000001" + "0001" + "00000001" + "00000001" + "00000001" + "00000000" + "00000000" + "00000005"},
		{CreatePartitions{Topic: "t", Count: 2, Assignment: [][]int32{{1}}},
			"0601" + "00000001" + "74" + "00000002" + "00000001" + "00000001" + "00000001"},
		{CreatePartitions{Topic: "t", Count: 2, Assignment: [][]int32{{1}}, MaxClusterPartitions: 20, MaxNodeReplicas: 7},
			"0602" + "00000001" + "74" + "00000002" + "00000001" + "00000001" + "00000001" + "00000014" + "00000007"},
		{DeleteTopic{Name: "t"}, "0702" + "00000001" + "74"},
		{ReplicasRemoved{Broker: 2, Topics: []TopicID{{15: 1}}}, "0f01" + "00000002" + "00000001" + "00000000000000000000000000000001"},
		{SetPartitionLeader{Topic: "t", Partition: 1, Leader: 2, Epoch: 3}, "0401" + "00000001" + "74" + "00000001" + "00000002" + "00000003"},
		{SetPartitionLeaders{Reports: []SetPartitionLeader{{Topic: "t", Partition: 1, Leader: 2, Epoch: 3}}},
			"1001" + "00000001" + "00000001" + "74" + "00000001" + "00000002" + "00000003"},
		{AllocateProducerID{}, "0501" + "00"},
		{AllocateProducerID{TransactionalID: ptr("x")}, "0501" + "01" + "00000001" + "78"},
		{AlterConfigs{Resource: ConfigTopic, Topic: "t", Configs: map[string]string{"k": "v"}},
			"0801" + "01" + "00000001" + "74" + "00000001" + "00000001" + "6b" + "00000001" + "76"},
		{AlterConfigs{Resource: ConfigClusterDefaults}, "0801" + "02" + "00000000" + "00000000"},
		{RegisterBroker{ID: 2, KafkaAddr: "a:1", RaftAddr: "b:2", Listeners: "P://a:1"},
			"0202" + "00000002" + "00000003" + "613a31" + "00000003" + "623a32" + "00000007" + "503a2f2f613a31"},
		{AlterScramCredentials{Deletions: []ScramDeletion{{"u", ScramSHA256}}, IfAbsent: true},
			"0901" + "00000001" + "00000001" + "75" + "01" + "00000000" + "01"},
		{CreateACLs{Bindings: []acl.Binding{{ResourceType: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral,
			Principal: "U", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}}},
			"0a01" + "00000001" + "02" + "00000001" + "74" + "03" + "00000001" + "55" + "00000001" + "2a" + "03" + "03"},
		{CreateDelegationToken{Token: DelegationToken{TokenID: "i", Owner: "U:o", Requester: "U:r", Renewers: []string{"U:n"},
			IssueMs: 1, MaxMs: 3, ExpiryMs: 2}},
			"1801" + "00000001" + "69" + "00000003" + "553a6f" + "00000003" + "553a72" + "00000001" + "00000003" + "553a6e" +
				"0000000000000001" + "0000000000000003" + "0000000000000002" + "00000000"},
		{UpdateDelegationToken{TokenID: "i", Principal: "U:o", Expire: true, NowMs: 4, PeriodMs: -1},
			"1901" + "00000001" + "69" + "00000003" + "553a6f" + "01" + "0000000000000004" + "ffffffffffffffff"},
		{ExpireDelegationTokens{NowMs: 9}, "1a01" + "0000000000000009"},
		{AlterClientQuotas{Alterations: []QuotaAlteration{{Entity: QuotaEntity{User: NamedQuota("u"), ClientID: DefaultQuota()},
			Ops: []QuotaOp{{Key: "k", Value: 1}}}}},
			"1b01" + "00000001" + "02" + "00000001" + "75" + "01" + "00000000" + "00000001" + "00000001" + "6b" + "00" + "3ff0000000000000"},
		{DeleteACLs{Filters: []acl.Filter{{ResourceType: acl.ResourceAny, Name: ptr("t"), Pattern: acl.PatternAny,
			Operation: acl.OpAny, Permission: acl.PermissionAny}}},
			"0b01" + "00000001" + "01" + "01" + "00000001" + "74" + "01" + "00" + "00" + "01" + "01"},
	}
	for _, tc := range tests {
		got, err := Encode(tc.cmd)
		if err != nil || hex.EncodeToString(got) != tc.want {
			t.Errorf("Encode(%#v) = %x, %v; want %s", tc.cmd, got, err, tc.want)
		}
	}
}

// A version 1 DeleteTopic, written before deletes were ordered, decodes
// and encodes back to its own bytes.
func TestDeleteTopicVersion1RoundTrip(t *testing.T) {
	v1, _ := hex.DecodeString("0701" + "00000001" + "74")
	cmd, err := Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Encode(cmd); !bytes.Equal(again, v1) {
		t.Fatalf("version 1 DeleteTopic re-encoded as %x", again)
	}
	if now, _ := Encode(DeleteTopic{Name: "t"}); now[1] != 2 {
		t.Fatalf("a new DeleteTopic is written as version %d, want 2", now[1])
	}
}

func TestDecodeErrors(t *testing.T) {
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformedCommand},
		{"type only", []byte{1}, ErrMalformedCommand},
		{"type zero", []byte{0, 1}, ErrUnknownCommand},
		{"type past the end", []byte{byte(TypeSetFeatureLevels) + 1, 1}, ErrUnknownCommand},
		{"version zero", []byte{1, 0, 0, 0, 0, 0}, ErrUnknownCommand},
		{"future version", []byte{1, 2, 0, 0, 0, 0}, ErrUnknownCommand},
		{"future create topic version", []byte{3, 4}, ErrUnknownCommand},
		{"future create partitions version", []byte{6, 3}, ErrUnknownCommand},
		{"future delete topic version", []byte{7, 3}, ErrUnknownCommand},
		{"removed ids out of order", mustHex("0f01" + "00000002" + "00000002" + "00000000000000000000000000000002" +
			"00000000000000000000000000000001"), ErrMalformedCommand},
		{"removed id repeated", mustHex("0f01" + "00000002" + "00000002" + "00000000000000000000000000000001" +
			"00000000000000000000000000000001"), ErrMalformedCommand},
		{"version 3 create topic without a limit", mustHex("0303" + "00000001" + "74" + "00000001" + "0001" + "00000000" +
			"00000000" + "00000000"), ErrMalformedCommand},
		{"version 2 create partitions with a negative limit", mustHex("0602" + "00000001" + "74" + "00000002" + "00000000" +
			"ffffffff"), ErrMalformedCommand},
		{"string longer than input", mustHex("0101" + "00000005" + "6331"), ErrMalformedCommand},
		{"huge string length", mustHex("0101" + "ffffffff"), ErrMalformedCommand},
		{"huge assignment", mustHex("0301" + "00000001" + "74" + "00000001" + "0001" + "7fffffff"), ErrMalformedCommand},
		{"trailing byte", mustHex("0101" + "00000002" + "6331" + "00"), ErrMalformedCommand},
		{"bool not 0 or 1", mustHex("0501" + "02"), ErrMalformedCommand},
		{"configs out of order", mustHex("0301" + "00000001" + "74" + "00000001" + "0001" + "00000000" +
			"00000002" + "00000001" + "62" + "00000000" + "00000001" + "61" + "00000000"), ErrMalformedCommand},
		{"duplicate config key", mustHex("0301" + "00000001" + "74" + "00000001" + "0001" + "00000000" +
			"00000002" + "00000001" + "61" + "00000000" + "00000001" + "61" + "00000000"), ErrMalformedCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := Decode(tc.in)
			if !errors.Is(err, tc.want) || cmd != nil {
				t.Fatalf("Decode(%x) = %#v, %v; want %v", tc.in, cmd, err, tc.want)
			}
		})
	}

	var ue *UnknownCommandError
	if _, err := Decode([]byte{9, 4}); !errors.As(err, &ue) || ue.Type != 9 || ue.Version != 4 {
		t.Fatalf("err = %#v, want UnknownCommandError{9, 4}", err)
	}
	var de *DecodeError
	if _, err := Decode(mustHex("0101" + "00000002" + "6331" + "00")); !errors.As(err, &de) || de.Offset != 8 {
		t.Fatalf("err = %#v, want DecodeError at offset 8", err)
	}
}

// Every strict prefix of a valid command is malformed, never a panic or a
// different command.
func TestDecodeTruncated(t *testing.T) {
	for _, cmd := range sampleCommands() {
		b, _ := Encode(cmd)
		for n := range len(b) {
			if got, err := Decode(b[:n]); !errors.Is(err, ErrMalformedCommand) {
				t.Fatalf("Decode(%x) (prefix %d of %#v) = %#v, %v", b[:n], n, cmd, got, err)
			}
		}
	}
}

// FuzzDecode: Decode never panics, fails only with its sentinels, and
// whatever it accepts re-encodes to the same bytes (the encoding is
// canonical, so no two byte strings mean the same command). The committed
// corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, cmd := range sampleCommands() {
		b, _ := Encode(cmd)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedCommand) && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("Decode(%x): unexpected error %v", b, err)
			}
			return
		}
		again, err := Encode(cmd)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("Decode(%x) = %#v, which encodes to %x, %v", b, cmd, again, err)
		}
		// Applying a decoded command must not panic either.
		s := cluster3(t)
		_, _, _ = s.Apply(s.AppliedIndex()+1, cmd)
	})
}
