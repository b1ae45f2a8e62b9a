package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// commandVersion is the encoding version each command type is written in.
// A type's version grows when its fields change; Decode keeps reading every
// older version.
var commandVersion = map[CommandType]uint8{
	TypeInitCluster:        1,
	TypeRegisterBroker:     2, // 1: no listeners
	TypeCreateTopic:        3, // 1: configs not interpreted; 2: no partition limit
	TypeSetPartitionLeader: 1,
	TypeAllocateProducerID: 1,
	TypeCreatePartitions:   2, // 1: no partition limit
	TypeDeleteTopic:        2, // 1: written before deletes were ordered
	TypeAlterConfigs:       1,

	TypeAlterScramCredentials:  1,
	TypeCreateACLs:             1,
	TypeDeleteACLs:             1,
	TypeAlterReassignment:      1,
	TypeCompleteReassignment:   1,
	TypeSetProducerIDKey:       1,
	TypeReplicasRemoved:        1,
	TypeSetPartitionLeaders:    1,
	TypeSetFeatureLevels:       1,
	TypeCreateDelegationToken:  1,
	TypeUpdateDelegationToken:  1,
	TypeExpireDelegationTokens: 1,
	TypeAlterClientQuotas:      1,
}

// Encode returns the log entry for cmd: one byte of CommandType, one byte of
// encoding version, then the fields (see wire.go for the primitives). The
// encoding is canonical: Decode(Encode(c)) equals c, and equal commands
// encode to equal bytes (config keys are written sorted).
func Encode(cmd Command) ([]byte, error) {
	cmd, err := deref(cmd)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64)
	b = append(b, byte(cmd.Type()), encodingVersion(cmd))
	return cmd.appendBody(b), nil
}

// encodingVersion is the version cmd is written in: the current one, or
// the older one that holds everything cmd has, which older builds read and
// to which a decoded older entry encodes back.
func encodingVersion(cmd Command) uint8 {
	switch c := cmd.(type) {
	case CreateTopic:
		switch {
		case c.legacyConfigs:
			return 1
		case c.MaxClusterPartitions == 0 && c.MaxNodeReplicas == 0:
			return 2
		}
	case CreatePartitions:
		if c.MaxClusterPartitions == 0 && c.MaxNodeReplicas == 0 {
			return 1
		}
	case RegisterBroker:
		if c.Listeners == "" {
			return 1
		}
	case DeleteTopic:
		if c.legacy {
			return 1
		}
	}
	return commandVersion[cmd.Type()]
}

// Decode parses an entry written by Encode. Errors wrap ErrMalformedCommand
// (*DecodeError) or ErrUnknownCommand (*UnknownCommandError). It never
// allocates much more than len(b).
func Decode(b []byte) (Command, error) {
	r := newReader(b, ErrMalformedCommand)
	typ := CommandType(r.u8("command type"))
	ver := r.u8("command version")
	if r.err != nil {
		return nil, r.err
	}
	var cmd Command
	var err error
	if c, ok := decodeTokenCommand(typ, ver, r); ok {
		cmd = c
	} else {
		cmd, err = decodeOther(typ, ver, r)
	}
	if err != nil {
		return nil, err
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// decodeOther decodes every command but the delegation token ones.
func decodeOther(typ CommandType, ver uint8, r *reader) (cmd Command, err error) {
	switch {
	case typ == TypeInitCluster && ver == 1:
		cmd = InitCluster{ClusterID: r.str("cluster id")}
	case typ == TypeRegisterBroker && (ver == 1 || ver == 2):
		c := RegisterBroker{ID: r.i32("broker id"), KafkaAddr: r.str("kafka address"), RaftAddr: r.str("raft address")}
		if ver == 2 {
			if c.Listeners = r.str("listeners"); r.err == nil && c.Listeners == "" {
				r.fail("empty listeners in a version 2 registration")
			}
		}
		cmd = c
	case typ == TypeSetProducerIDKey && ver == 1:
		cmd = SetProducerIDKey{Key: []byte(r.str("producer-id key"))}
	case typ == TypeAlterScramCredentials && ver == 1:
		cmd = decodeAlterScram(r)
	case typ == TypeCreateACLs && ver == 1:
		cmd = decodeCreateACLs(r)
	case typ == TypeDeleteACLs && ver == 1:
		cmd = decodeDeleteACLs(r)
	case typ == TypeAlterReassignment && ver == 1:
		cmd = decodeAlterReassignment(r)
	case typ == TypeCompleteReassignment && ver == 1:
		cmd = CompleteReassignment{Topic: r.str("topic"), Partition: r.i32("partition"), Target: readInt32s(r, "target")}
	case typ == TypeCreateTopic && ver >= 1 && ver <= 3:
		c := decodeCreateTopic(r)
		c.legacyConfigs = ver == 1
		if ver == 3 {
			c.MaxClusterPartitions, c.MaxNodeReplicas = readPartitionLimits(r)
		}
		cmd = c
	case typ == TypeSetPartitionLeader && ver == 1:
		cmd = SetPartitionLeader{Topic: r.str("topic"), Partition: r.i32("partition"), Leader: r.i32("leader"), Epoch: r.i32("epoch")}
	case typ == TypeCreatePartitions && (ver == 1 || ver == 2):
		c := CreatePartitions{Topic: r.str("topic"), Count: r.i32("partition count"), Assignment: readAssignment(r)}
		if ver == 2 {
			c.MaxClusterPartitions, c.MaxNodeReplicas = readPartitionLimits(r)
		}
		cmd = c
	case typ == TypeDeleteTopic && (ver == 1 || ver == 2):
		cmd = DeleteTopic{Name: r.str("topic"), legacy: ver == 1}
	case typ == TypeReplicasRemoved && ver == 1:
		cmd = decodeReplicasRemoved(r)
	case typ == TypeSetPartitionLeaders && ver == 1:
		cmd = decodeSetPartitionLeaders(r)
	case typ == TypeSetFeatureLevels && ver == 1:
		cmd = decodeSetFeatureLevels(r)
	case typ == TypeAlterClientQuotas && ver == 1:
		cmd = decodeAlterClientQuotas(r)
	case typ == TypeAlterConfigs && ver == 1:
		cmd = AlterConfigs{Resource: ConfigResource(r.u8("config resource")), Topic: r.str("topic"), Configs: readConfigs(r)}
	case typ == TypeAllocateProducerID && ver == 1:
		var c AllocateProducerID
		if r.boolean("transactional id present") {
			s := r.str("transactional id")
			c.TransactionalID = &s
		}
		cmd = c
	default:
		return nil, &UnknownCommandError{Type: typ, Version: ver}
	}
	return cmd, nil
}

// deref turns a pointer to a command into the value, so both forms work.
func deref(cmd Command) (Command, error) {
	switch c := cmd.(type) {
	case *InitCluster:
		if c != nil {
			return *c, nil
		}
	case *RegisterBroker:
		if c != nil {
			return *c, nil
		}
	case *CreateTopic:
		if c != nil {
			return *c, nil
		}
	case *SetPartitionLeader:
		if c != nil {
			return *c, nil
		}
	case *AllocateProducerID:
		if c != nil {
			return *c, nil
		}
	case *CreatePartitions:
		if c != nil {
			return *c, nil
		}
	case *DeleteTopic:
		if c != nil {
			return *c, nil
		}
	case *AlterConfigs:
		if c != nil {
			return *c, nil
		}
	case *AlterScramCredentials:
		if c != nil {
			return *c, nil
		}
	case *CreateACLs:
		if c != nil {
			return *c, nil
		}
	case *DeleteACLs:
		if c != nil {
			return *c, nil
		}
	case *AlterReassignment:
		if c != nil {
			return *c, nil
		}
	case *CompleteReassignment:
		if c != nil {
			return *c, nil
		}
	case *SetProducerIDKey:
		if c != nil {
			return *c, nil
		}
	case *ReplicasRemoved:
		if c != nil {
			return *c, nil
		}
	case *SetPartitionLeaders:
		if c != nil {
			return *c, nil
		}
	case *SetFeatureLevels:
		if c != nil {
			return *c, nil
		}
	case nil:
	default:
		return derefToken(cmd)
	}
	return nil, fmt.Errorf("%w: nil command", ErrMalformedCommand)
}

// derefToken is deref for the delegation token and client quota commands.
func derefToken(cmd Command) (Command, error) {
	switch c := cmd.(type) {
	case *CreateDelegationToken:
		if c == nil {
			return nil, fmt.Errorf("%w: nil command", ErrMalformedCommand)
		}
		return *c, nil
	case *UpdateDelegationToken:
		if c == nil {
			return nil, fmt.Errorf("%w: nil command", ErrMalformedCommand)
		}
		return *c, nil
	case *ExpireDelegationTokens:
		if c == nil {
			return nil, fmt.Errorf("%w: nil command", ErrMalformedCommand)
		}
		return *c, nil
	case *AlterClientQuotas:
		if c == nil {
			return nil, fmt.Errorf("%w: nil command", ErrMalformedCommand)
		}
		return *c, nil
	}
	return cmd, nil
}

func (c InitCluster) appendBody(b []byte) []byte { return appendString(b, c.ClusterID) }

func (c RegisterBroker) appendBody(b []byte) []byte {
	b = appendI32(b, c.ID)
	b = appendString(b, c.KafkaAddr)
	b = appendString(b, c.RaftAddr)
	if c.Listeners != "" {
		b = appendString(b, c.Listeners)
	}
	return b
}

func (c CreateTopic) appendBody(b []byte) []byte {
	b = appendString(b, c.Name)
	b = appendI32(b, c.Partitions)
	b = appendI16(b, c.ReplicationFactor)
	b = appendAssignment(b, c.Assignment)
	b = appendConfigs(b, c.Configs)
	return appendPartitionLimits(b, c.MaxClusterPartitions, c.MaxNodeReplicas)
}

func (c CreatePartitions) appendBody(b []byte) []byte {
	b = appendString(b, c.Topic)
	b = appendI32(b, c.Count)
	b = appendAssignment(b, c.Assignment)
	return appendPartitionLimits(b, c.MaxClusterPartitions, c.MaxNodeReplicas)
}

// appendPartitionLimits appends the partition limits of a CreateTopic or
// CreatePartitions, which the versions that carry them hold only when one
// is set.
func appendPartitionLimits(b []byte, cluster, node int32) []byte {
	if cluster == 0 && node == 0 {
		return b
	}
	return appendI32(appendI32(b, cluster), node)
}

// readPartitionLimits reads what appendPartitionLimits wrote: neither
// negative, one of them positive.
func readPartitionLimits(r *reader) (cluster, node int32) {
	cluster, node = r.i32("max cluster partitions"), r.i32("max node replicas")
	if r.err == nil && (cluster < 0 || node < 0 || cluster == 0 && node == 0) {
		r.fail("partition limits %d and %d, want neither negative and one positive", cluster, node)
	}
	return cluster, node
}

func (c DeleteTopic) appendBody(b []byte) []byte { return appendString(b, c.Name) }

func (c AlterConfigs) appendBody(b []byte) []byte {
	b = appendU8(b, uint8(c.Resource))
	b = appendString(b, c.Topic)
	return appendConfigs(b, c.Configs)
}

func decodeCreateTopic(r *reader) CreateTopic {
	c := CreateTopic{
		Name:              r.str("topic name"),
		Partitions:        r.i32("partitions"),
		ReplicationFactor: r.i16("replication factor"),
	}
	c.Assignment = readAssignment(r)
	c.Configs = readConfigs(r)
	return c
}

// readAssignment reads what appendAssignment wrote; nil when empty.
func readAssignment(r *reader) [][]int32 {
	n := r.length("assignment", 4)
	if n == 0 {
		return nil
	}
	a := make([][]int32, n)
	for i := range a {
		a[i] = readInt32s(r, "replicas")
	}
	return a
}

func (c SetPartitionLeader) appendBody(b []byte) []byte {
	b = appendString(b, c.Topic)
	b = appendI32(b, c.Partition)
	b = appendI32(b, c.Leader)
	return appendI32(b, c.Epoch)
}

func (c AllocateProducerID) appendBody(b []byte) []byte {
	b = appendBool(b, c.TransactionalID != nil)
	if c.TransactionalID != nil {
		b = appendString(b, *c.TransactionalID)
	}
	return b
}

func appendInt32s(b []byte, v []int32) []byte {
	b = appendLen(b, len(v))
	for _, x := range v {
		b = appendI32(b, x)
	}
	return b
}

// readInt32s returns nil for an empty list, as appendInt32s cannot tell nil
// from empty.
func readInt32s(r *reader, what string) []int32 {
	n := r.length(what, 4)
	if n == 0 {
		return nil
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = r.i32(what)
	}
	return v
}

func appendAssignment(b []byte, a [][]int32) []byte {
	b = appendLen(b, len(a))
	for _, replicas := range a {
		b = appendInt32s(b, replicas)
	}
	return b
}

// appendConfigs writes the entries sorted by key, the one canonical order.
func appendConfigs(b []byte, m map[string]string) []byte {
	b = appendLen(b, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendString(b, k)
		b = appendString(b, m[k])
	}
	return b
}

// readConfigs requires strictly increasing keys: that rejects duplicates and
// any second encoding of the same map. Empty gives nil.
func readConfigs(r *reader) map[string]string {
	n := r.length("configs", 8)
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := range n {
		k := r.str("config key")
		v := r.str("config value")
		if r.err != nil {
			return nil
		}
		if i > 0 && k <= prev {
			r.fail("config key %q not after %q", k, prev)
			return nil
		}
		m[k], prev = v, k
	}
	return m
}
