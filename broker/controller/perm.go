package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/minikafka/minikafka-go/metadata"
)

// ErrPeerNotPermitted is why the metadata leader refuses a command that a
// peer forwarded: the command is not one peers send, or it speaks for
// another node than the one the peer's certificate names.
var ErrPeerNotPermitted = errors.New("broker: a peer may not send this metadata command")

// peerMayPropose decides whether a peer may forward cmd to the metadata
// leader. peer is the node its Raft-port certificate names, or 0 without
// mutual TLS, when only the kind of command can be checked.
//
// A node forwards what its clients ask of the cluster (topics, configs,
// SCRAM credentials, ACLs, reassignments, producer ids, feature levels,
// delegation tokens, client quotas), which it
// authenticated and authorised itself; InitCluster, which bootstrapping
// nodes all propose; and reports about itself: its registration,
// partitions it leads, the end of a move of a partition it leads
// (which names it among the move's target), and the removal of its
// replicas of deleted topics. A command that
// speaks for another node is refused: a node may not re-point another's
// address or claim another's leadership. Commands only the metadata leader
// proposes itself (SetProducerIDKey, ExpireDelegationTokens) are refused
// too.
func peerMayPropose(peer int32, cmd metadata.Command) error {
	switch c := cmd.(type) {
	case metadata.InitCluster, metadata.AllocateProducerID, metadata.CreateTopic, metadata.CreatePartitions,
		metadata.DeleteTopic, metadata.AlterConfigs, metadata.AlterScramCredentials,
		metadata.CreateACLs, metadata.DeleteACLs, metadata.AlterReassignment, metadata.SetFeatureLevels,
		metadata.CreateDelegationToken, metadata.UpdateDelegationToken, metadata.AlterClientQuotas:
		return nil
	case metadata.RegisterBroker:
		if peer != 0 && c.ID != peer {
			return fmt.Errorf("%w: node %d registering broker %d", ErrPeerNotPermitted, peer, c.ID)
		}
		return nil
	case metadata.CompleteReassignment:
		if peer != 0 && !slices.Contains(c.Target, peer) {
			return fmt.Errorf("%w: node %d completing the move of %s/%d to %v", ErrPeerNotPermitted, peer, c.Topic, c.Partition, c.Target)
		}
		return nil
	case metadata.ReplicasRemoved:
		if peer != 0 && c.Broker != peer {
			return fmt.Errorf("%w: node %d reporting the replicas of node %d removed", ErrPeerNotPermitted, peer, c.Broker)
		}
		return nil
	case metadata.SetPartitionLeader:
		return mayReportLeader(peer, c)
	case metadata.SetPartitionLeaders:
		for _, r := range c.Reports {
			if err := mayReportLeader(peer, r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %T", ErrPeerNotPermitted, cmd)
}

// mayReportLeader refuses a peer's report of another node's leadership.
func mayReportLeader(peer int32, c metadata.SetPartitionLeader) error {
	if peer != 0 && c.Leader != peer {
		return fmt.Errorf("%w: node %d reporting node %d as leader of %s/%d", ErrPeerNotPermitted, peer, c.Leader, c.Topic, c.Partition)
	}
	return nil
}
