package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientVersions is the range of versions the client speaks per API key.
// The upper bounds stop before versions whose meaning we do not implement
// (Produce 13 and Fetch 13 name topics by id).
var clientVersions = map[int16][2]int16{
	0:  {3, 12}, // Produce: v3 brought v2 record batches
	1:  {4, 12}, // Fetch
	2:  {1, 8},  // ListOffsets
	3:  {1, 12}, // Metadata
	8:  {2, 9},  // OffsetCommit: v2+ carry generation and member id; v9 the KIP-848 member epoch
	9:  {1, 8},  // OffsetFetch: v9 adds KIP-848 member epochs
	10: {1, 4},  // FindCoordinator
	11: {1, 9},  // JoinGroup: v1 brought the rebalance timeout
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 5},  // DescribeGroups
	16: {0, 5},  // ListGroups: v5 adds group types
	17: {1, 1},  // SaslHandshake: v0's unframed tokens are not spoken
	18: {0, 3},  // ApiVersions
	19: {2, 7},  // CreateTopics
	20: {1, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 4},  // InitProducerID
	24: {0, 3},  // AddPartitionsToTxn: v4 is the broker-to-broker form
	25: {0, 3},  // AddOffsetsToTxn
	26: {0, 3},  // EndTxn
	28: {0, 3},  // TxnOffsetCommit: v3 carries generation and member id
	29: {1, 3},  // DescribeAcls: v1 brought pattern types
	30: {1, 3},  // CreateAcls
	31: {1, 3},  // DeleteAcls
	32: {1, 4},  // DescribeConfigs: v1 brought config sources
	36: {0, 2},  // SaslAuthenticate
	37: {0, 3},  // CreatePartitions
	42: {0, 2},  // DeleteGroups
	44: {0, 1},  // IncrementalAlterConfigs
	45: {0, 0},  // AlterPartitionReassignments: v1 lets a move change the replication factor
	46: {0, 0},  // ListPartitionReassignments
	48: {0, 1},  // DescribeClientQuotas
	49: {0, 1},  // AlterClientQuotas
	50: {0, 0},  // DescribeUserScramCredentials
	51: {0, 0},  // AlterUserScramCredentials
	60: {0, 1},  // DescribeCluster
	66: {0, 0},  // ListTransactions
	68: {0, 1},  // ConsumerGroupHeartbeat (KIP-848): v1 has the member make its own id
	69: {0, 1},  // ConsumerGroupDescribe
	76: {1, 1},  // ShareGroupHeartbeat (KIP-932): v0 was Kafka 4.0's early access
	77: {1, 1},  // ShareGroupDescribe
	78: {1, 1},  // ShareFetch: v2 adds lock renewal, which we do not send
	79: {1, 1},  // ShareAcknowledge
	90: {0, 1},  // DescribeShareGroupOffsets: v1 adds lag
	91: {0, 0},  // AlterShareGroupOffsets
}

// pickVersion is the highest version both sides speak. Called with c.mu.
func (c *conn) pickVersion(key int16) (int16, error) {
	ours, ok := clientVersions[key]
	if !ok {
		return 0, &VersionError{Key: key, BrokerMax: -1}
	}
	theirs, ok := c.vers[key]
	if !ok {
		return 0, &VersionError{Key: key, BrokerMax: -1, ClientRange: ours}
	}
	v := min(ours[1], theirs[1])
	if v < max(ours[0], theirs[0]) {
		return 0, &VersionError{Key: key, BrokerMax: theirs[1], ClientRange: ours}
	}
	return v, nil
}

// handshake learns the broker's API versions with ApiVersions, falling
// back to the version the broker names (KIP-511) or to v0.
func (c *conn) handshake(nc net.Conn) (map[int16][2]int16, error) {
	nc.SetDeadline(time.Now().Add(c.cfg.requestTimeout))
	defer nc.SetDeadline(time.Time{})
	version := clientVersions[18][1]
	for range 3 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(version)
		req.ClientSoftwareName = "minikafka-go"
		req.ClientSoftwareVersion = "0.1.0"
		if _, err := nc.Write(c.fmt.AppendRequest(nil, req, 0)); err != nil {
			return nil, err
		}
		body, err := readFrame(nc)
		if err != nil {
			return nil, err
		}
		if len(body) < 6 {
			return nil, errors.New("short ApiVersions response")
		}
		body = body[4:] // correlation id; ApiVersions responses have no header tags
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		if binary.BigEndian.Uint16(body) == uint16(ErrUnsupportedVersion.Code) {
			// The broker answers an unknown version with a v0 body.
			resp.SetVersion(0)
			if err := resp.ReadFrom(body); err != nil {
				return nil, fmt.Errorf("ApiVersions: %w", err)
			}
			next := int16(0)
			for _, k := range resp.ApiKeys {
				if k.ApiKey == 18 {
					next = k.MaxVersion
				}
			}
			if next >= version || next < 0 {
				next = 0
			}
			if version == 0 {
				return nil, &KafkaError{Code: ErrUnsupportedVersion.Code, Message: "ApiVersions v0"}
			}
			version = next
			continue
		}
		if err := resp.ReadFrom(body); err != nil {
			return nil, fmt.Errorf("ApiVersions: %w", err)
		}
		if err := kafkaErr(resp.ErrorCode, nil); err != nil {
			return nil, err
		}
		vers := make(map[int16][2]int16, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			vers[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return vers, nil
	}
	return nil, errors.New("ApiVersions: no version agreed")
}
