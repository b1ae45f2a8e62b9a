package client_test

import (
	"context"
	"log"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

func Example() {
	ctx := context.Background()
	p, err := client.NewProducer(client.Brokers("localhost:9092"), client.Linger(10*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)
	err = p.Produce(ctx, &client.Record{Topic: "events", Key: []byte("same"), Value: []byte("hello")},
		func(r *client.Record, err error) {
			if err != nil {
				log.Printf("not delivered: %v", err)
				return
			}
			log.Printf("delivered to %s[%d] at offset %d", r.Topic, r.Partition, r.Offset)
		})
	if err != nil {
		log.Printf("not buffered: %v", err)
	}

	c, err := client.NewConsumer(client.Brokers("localhost:9092"), client.ConsumeTopics("events"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	recs, err := c.Poll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		log.Printf("%s[%d]@%d: %s", r.Topic, r.Partition, r.Offset, r.Value)
	}
}
