package client_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The admin's quota methods: set some keys, list all or by entity, a
// refused value changes nothing, delete keys until the entity is gone.
func TestAdminQuotas(t *testing.T) {
	c := testcluster.Start(t, 1)
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	app := client.QuotaEntity{ClientID: "app"}
	aliceAny := client.QuotaEntity{User: "alice", DefaultClientID: true}
	if err := adm.SetQuotas(ctx, app, map[string]float64{client.QuotaProducerByteRate: 102400, client.QuotaConsumerByteRate: 2048}); err != nil {
		t.Fatal(err)
	}
	if err := adm.SetQuotas(ctx, aliceAny, map[string]float64{client.QuotaRequestPercentage: 25}); err != nil {
		t.Fatal(err)
	}
	err = adm.SetQuotas(ctx, app, map[string]float64{client.QuotaProducerByteRate: 1.5})
	var ke *client.KafkaError
	if !errors.As(err, &ke) || ke.Code != kerr.InvalidRequest.Code {
		t.Fatalf("fractional byte rate: %v, want INVALID_REQUEST", err)
	}
	if err := adm.SetQuotas(ctx, client.QuotaEntity{}, map[string]float64{client.QuotaProducerByteRate: 1}); !errors.Is(err, client.ErrInvalidConfig) {
		t.Fatalf("no entity: %v", err)
	}

	all, err := adm.ListQuotas(ctx, client.QuotaEntity{})
	want := []client.ClientQuota{
		{Entity: app, Values: map[string]float64{client.QuotaProducerByteRate: 102400, client.QuotaConsumerByteRate: 2048}},
		{Entity: aliceAny, Values: map[string]float64{client.QuotaRequestPercentage: 25}},
	}
	if err != nil || !reflect.DeepEqual(all, want) {
		t.Fatalf("list: %+v, %v", all, err)
	}
	if got, err := adm.ListQuotas(ctx, client.QuotaEntity{User: "alice"}); err != nil || !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("list alice: %+v, %v", got, err)
	}
	if aliceAny.String() != "user=alice,client-id=<default>" {
		t.Fatalf("String %q", aliceAny.String())
	}

	if err := adm.DeleteQuotas(ctx, app, client.QuotaProducerByteRate, client.QuotaConsumerByteRate); err != nil {
		t.Fatal(err)
	}
	if got, err := adm.ListQuotas(ctx, client.QuotaEntity{}); err != nil || !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("after delete: %+v, %v", got, err)
	}
}
