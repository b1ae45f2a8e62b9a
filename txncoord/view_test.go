package txncoord

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestViewAppliesRecordsInOrder(t *testing.T) {
	v := NewView()
	ongoing := Metadata{ProducerID: 7, ProducerEpoch: 2, TimeoutMillis: 60000, State: Ongoing,
		Partitions: []TopicPartition{{"b", 1}, {"a", 0}, {"b", 0}}, LastUpdate: 100, Start: 90}
	apply(t, v, MetadataRecord("t1", Metadata{ProducerID: 7, TimeoutMillis: 60000, State: Empty, LastUpdate: 80, Start: -1}))
	apply(t, v, MetadataRecord("t1", ongoing))
	apply(t, v, MetadataRecord("t2", Metadata{ProducerID: 8, State: CompleteAbort, LastUpdate: 5, Start: -1}))
	got, ok := v.Txn("t1")
	want := ongoing
	want.Partitions = []TopicPartition{{"a", 0}, {"b", 0}, {"b", 1}} // sorted
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("t1 = %+v, %v; want %+v", got, ok, want)
	}
	if ids := v.IDs(); !reflect.DeepEqual(ids, []string{"t1", "t2"}) {
		t.Fatalf("ids %v", ids)
	}
	got.Partitions[0].Topic = "changed" // a copy
	if again, _ := v.Txn("t1"); again.Partitions[0].Topic != "a" {
		t.Fatal("Txn returned shared partitions")
	}
	apply(t, v, Record{Key: MetadataRecord("t2", Metadata{}).Key}) // tombstone
	if _, ok := v.Txn("t2"); ok {
		t.Fatal("tombstone did not delete t2")
	}
	v.Reset()
	if len(v.IDs()) != 0 {
		t.Fatal("Reset kept ids")
	}
}

func TestViewRefusesBadRecordsUnchanged(t *testing.T) {
	v := NewView()
	apply(t, v, MetadataRecord("t", Metadata{ProducerID: 1, State: Ongoing, Partitions: []TopicPartition{{"a", 0}}}))
	before, _ := v.Txn("t")
	badState := MetadataRecord("t", Metadata{ProducerID: 1, State: 6})
	badKey := kmsg.TxnMetadataKey{Version: 3, TransactionalID: "t"}
	for name, r := range map[string]Record{
		"short value":   {Key: badState.Key, Value: []byte{0, 0, 1}},
		"dead state":    badState,
		"key version 3": {Key: badKey.AppendTo(nil), Value: badState.Value},
		"short key":     {Key: []byte{0}, Value: badState.Value},
	} {
		if err := v.Apply(r.Key, r.Value); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: err %v, want ErrInvalidRecord", name, err)
		}
	}
	if after, _ := v.Txn("t"); !reflect.DeepEqual(before, after) {
		t.Fatalf("bad records changed the view: %+v -> %+v", before, after)
	}
}

// TestRecordsAreKafkas checks the value against kmsg's decoding of
// Kafka's TransactionLogValue, so Kafka's tools read what we write.
func TestRecordsAreKafkas(t *testing.T) {
	r := MetadataRecord("tx", Metadata{ProducerID: 3, ProducerEpoch: 4, TimeoutMillis: 5, State: PrepareCommit,
		Partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}, LastUpdate: 6, Start: 7})
	var k kmsg.TxnMetadataKey
	var v kmsg.TxnMetadataValue
	if err := k.ReadFrom(r.Key); err != nil || k.TransactionalID != "tx" || k.Version != 0 {
		t.Fatalf("key %+v, %v", k, err)
	}
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	if v.State.String() != "PrepareCommit" || len(v.Topics) != 2 || len(v.Topics[0].Partitions) != 2 ||
		v.ProducerID != 3 || v.ProducerEpoch != 4 || v.LastUpdateTimestamp != 6 || v.StartTimestamp != 7 {
		t.Fatalf("value %+v", v)
	}
}

func apply(t *testing.T, v *View, r Record) {
	t.Helper()
	if err := v.Apply(r.Key, r.Value); err != nil {
		t.Fatal(err)
	}
}
