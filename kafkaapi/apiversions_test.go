package kafkaapi

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wantAPIs is the advertised table, written out independently of apis.
var wantAPIs = []kmsg.ApiVersionsResponseApiKey{
	{ApiKey: 0, MinVersion: 3, MaxVersion: 13}, // Produce
	{ApiKey: 1, MinVersion: 4, MaxVersion: 18}, // Fetch
	{ApiKey: 2, MinVersion: 0, MaxVersion: 11}, // ListOffsets
	{ApiKey: 3, MinVersion: 0, MaxVersion: 13}, // Metadata
	{ApiKey: 8, MinVersion: 0, MaxVersion: 10}, // OffsetCommit
	{ApiKey: 9, MinVersion: 0, MaxVersion: 10}, // OffsetFetch
	{ApiKey: 10, MinVersion: 0, MaxVersion: 6}, // FindCoordinator
	{ApiKey: 11, MinVersion: 0, MaxVersion: 9}, // JoinGroup
	{ApiKey: 12, MinVersion: 0, MaxVersion: 4}, // Heartbeat
	{ApiKey: 13, MinVersion: 0, MaxVersion: 5}, // LeaveGroup
	{ApiKey: 14, MinVersion: 0, MaxVersion: 5}, // SyncGroup
	{ApiKey: 15, MinVersion: 0, MaxVersion: 6}, // DescribeGroups
	{ApiKey: 16, MinVersion: 0, MaxVersion: 5}, // ListGroups
	{ApiKey: 17, MinVersion: 0, MaxVersion: 1}, // SaslHandshake
	{ApiKey: 18, MinVersion: 0, MaxVersion: 4}, // ApiVersions
	{ApiKey: 19, MinVersion: 0, MaxVersion: 7}, // CreateTopics
	{ApiKey: 20, MinVersion: 0, MaxVersion: 6}, // DeleteTopics
	{ApiKey: 21, MinVersion: 0, MaxVersion: 2}, // DeleteRecords
	{ApiKey: 22, MinVersion: 0, MaxVersion: 5}, // InitProducerId
	{ApiKey: 23, MinVersion: 0, MaxVersion: 4}, // OffsetForLeaderEpoch
	{ApiKey: 24, MinVersion: 0, MaxVersion: 5}, // AddPartitionsToTxn
	{ApiKey: 25, MinVersion: 0, MaxVersion: 4}, // AddOffsetsToTxn
	{ApiKey: 26, MinVersion: 0, MaxVersion: 5}, // EndTxn
	{ApiKey: 27, MinVersion: 0, MaxVersion: 2}, // WriteTxnMarkers
	{ApiKey: 28, MinVersion: 0, MaxVersion: 5}, // TxnOffsetCommit
	{ApiKey: 29, MinVersion: 0, MaxVersion: 3}, // DescribeAcls
	{ApiKey: 30, MinVersion: 0, MaxVersion: 3}, // CreateAcls
	{ApiKey: 31, MinVersion: 0, MaxVersion: 3}, // DeleteAcls
	{ApiKey: 32, MinVersion: 0, MaxVersion: 4}, // DescribeConfigs
	{ApiKey: 33, MinVersion: 0, MaxVersion: 2}, // AlterConfigs
	{ApiKey: 35, MinVersion: 1, MaxVersion: 5}, // DescribeLogDirs
	{ApiKey: 36, MinVersion: 0, MaxVersion: 2}, // SaslAuthenticate
	{ApiKey: 37, MinVersion: 0, MaxVersion: 3}, // CreatePartitions
	{ApiKey: 38, MinVersion: 0, MaxVersion: 3}, // CreateDelegationToken
	{ApiKey: 39, MinVersion: 0, MaxVersion: 2}, // RenewDelegationToken
	{ApiKey: 40, MinVersion: 0, MaxVersion: 2}, // ExpireDelegationToken
	{ApiKey: 41, MinVersion: 0, MaxVersion: 3}, // DescribeDelegationToken
	{ApiKey: 42, MinVersion: 0, MaxVersion: 2}, // DeleteGroups
	{ApiKey: 43, MinVersion: 0, MaxVersion: 2}, // ElectLeaders
	{ApiKey: 44, MinVersion: 0, MaxVersion: 1}, // IncrementalAlterConfigs
	{ApiKey: 45, MinVersion: 0, MaxVersion: 1}, // AlterPartitionReassignments
	{ApiKey: 46, MinVersion: 0, MaxVersion: 0}, // ListPartitionReassignments
	{ApiKey: 47, MinVersion: 0, MaxVersion: 0}, // OffsetDelete
	{ApiKey: 48, MinVersion: 0, MaxVersion: 1}, // DescribeClientQuotas
	{ApiKey: 49, MinVersion: 0, MaxVersion: 1}, // AlterClientQuotas
	{ApiKey: 50, MinVersion: 0, MaxVersion: 0}, // DescribeUserScramCredentials
	{ApiKey: 51, MinVersion: 0, MaxVersion: 0}, // AlterUserScramCredentials
	{ApiKey: 55, MinVersion: 0, MaxVersion: 2}, // DescribeQuorum
	{ApiKey: 57, MinVersion: 0, MaxVersion: 2}, // UpdateFeatures
	{ApiKey: 60, MinVersion: 0, MaxVersion: 2}, // DescribeCluster
	{ApiKey: 61, MinVersion: 0, MaxVersion: 0}, // DescribeProducers
	{ApiKey: 65, MinVersion: 0, MaxVersion: 0}, // DescribeTransactions
	{ApiKey: 66, MinVersion: 0, MaxVersion: 2}, // ListTransactions
	{ApiKey: 68, MinVersion: 0, MaxVersion: 1}, // ConsumerGroupHeartbeat
	{ApiKey: 69, MinVersion: 0, MaxVersion: 1}, // ConsumerGroupDescribe
	{ApiKey: 74, MinVersion: 0, MaxVersion: 1}, // ListConfigResources
	{ApiKey: 75, MinVersion: 0, MaxVersion: 0}, // DescribeTopicPartitions
	{ApiKey: 76, MinVersion: 1, MaxVersion: 1}, // ShareGroupHeartbeat
	{ApiKey: 77, MinVersion: 1, MaxVersion: 1}, // ShareGroupDescribe
	{ApiKey: 78, MinVersion: 0, MaxVersion: 2}, // ShareFetch
	{ApiKey: 79, MinVersion: 0, MaxVersion: 2}, // ShareAcknowledge
	{ApiKey: 84, MinVersion: 0, MaxVersion: 0}, // ReadShareGroupState
	{ApiKey: 85, MinVersion: 0, MaxVersion: 1}, // WriteShareGroupState
	{ApiKey: 90, MinVersion: 0, MaxVersion: 1}, // DescribeShareGroupOffsets
	{ApiKey: 91, MinVersion: 0, MaxVersion: 0}, // AlterShareGroupOffsets
	{ApiKey: 92, MinVersion: 0, MaxVersion: 0}, // DeleteShareGroupOffsets
}

func sameKeys(got []kmsg.ApiVersionsResponseApiKey, want []kmsg.ApiVersionsResponseApiKey) bool {
	return slices.EqualFunc(got, want, func(a, b kmsg.ApiVersionsResponseApiKey) bool {
		return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
	})
}

// Versions 0 to 4 are answered with the table, in a response with header
// v0 even for the flexible v3 and v4 (client.read decodes ApiVersions that
// way).
func TestAPIVersionsV0ToV4(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	for v := int16(0); v <= 4; v++ {
		resp := c.roundTrip(apiVersionsRequest(v)).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		if !sameKeys(resp.ApiKeys, wantAPIs) {
			t.Fatalf("v%d: keys %+v, want %+v", v, resp.ApiKeys, wantAPIs)
		}
	}
}

// A version above 4 gets what Kafka sends (KIP-511): a v0 body with
// UNSUPPORTED_VERSION listing ApiVersions' own range, and the connection
// stays open for the retry.
func TestAPIVersionsV5GetsV0UnsupportedVersion(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	// A v5 request whose body we could not parse anyway: it is not read.
	body := binary.BigEndian.AppendUint16(nil, 18)
	body = binary.BigEndian.AppendUint16(body, 5)
	body = binary.BigEndian.AppendUint32(body, 77)
	body = append(body, 0xde, 0xad)
	c.write(frameWith(int32(len(body)), body))

	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if corr := c.read(resp); corr != 77 {
		t.Fatalf("correlation id %d, want 77", corr)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
	if !sameKeys(resp.ApiKeys, want) {
		t.Fatalf("keys %+v, want %+v", resp.ApiKeys, want)
	}
	// The client retries at v3 on the same connection.
	retry := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse)
	if retry.ErrorCode != 0 || !sameKeys(retry.ApiKeys, wantAPIs) {
		t.Fatalf("retry: error %d keys %+v", retry.ErrorCode, retry.ApiKeys)
	}
}
