package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// namings is how many times the Fetch names its partition: more than the
// 65,536 cases of a reflect.Select.
const namings = 70_000

// setUp creates the topic, one partition per broker, and returns the
// partition each broker leads (by address; a broker that leads none is
// missing).
func setUp(ctx context.Context, o options) (map[string]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rf := int16(min(3, len(o.brokers)))
	res, err := adm.CreateTopic(ctx, int32(len(o.brokers)), rf, nil, o.topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		return nil, fmt.Errorf("create %s: %w", o.topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, o.topic)
		if err != nil {
			return nil, err
		}
		addrs := map[int32]string{}
		for _, b := range md.Brokers {
			addrs[b.NodeID] = net.JoinHostPort(b.Host, fmt.Sprint(b.Port))
		}
		leaders := map[string]int32{}
		led := 0
		for _, p := range md.Topics[o.topic].Partitions {
			if addr, ok := addrs[p.Leader]; ok && p.Err == nil {
				led++
				leaders[addr] = p.Partition
			}
		}
		if led == len(md.Topics[o.topic].Partitions) && led > 0 {
			return leaders, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fetchEveryBroker sends each broker a Fetch v4 naming a partition it
// leads 70,000 times at the log end, and checks it answers and still
// serves.
func fetchEveryBroker(ctx context.Context, o options, leaders map[string]int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, o.topic)
	if err != nil {
		return err
	}
	for _, addr := range o.brokers {
		p, ok := leaders[addr]
		note := fmt.Sprintf("leads %s/%d", o.topic, p)
		if !ok {
			note = "leads none of the topic: expect NOT_LEADER"
		}
		end, _ := ends.Lookup(o.topic, p)
		start := time.Now()
		resp, err := fetchMany(ctx, addr, o.topic, p, end.Offset)
		if err != nil {
			return fmt.Errorf("broker %s (%s): %w", addr, note, err)
		}
		entries, code := 0, int16(0)
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				entries++
				code = max(code, rp.ErrorCode)
			}
		}
		serving := "still serving"
		if err := apiVersions(ctx, addr); err != nil {
			serving = "NOT SERVING: " + err.Error()
		}
		fmt.Printf("fetch: broker %s (%s): answered in %v with %d partition entries, error %d; %s\n",
			addr, note, time.Since(start).Round(time.Millisecond), entries, code, serving)
	}
	return nil
}

// fetchMany sends the Fetch v4 on a connection of its own.
func fetchMany(ctx context.Context, addr, topic string, p int32, offset int64) (*kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 4
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
	rt.Partitions = slices.Repeat([]kmsg.FetchRequestTopicPartition{rp}, namings)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrFetchResponse()
	return resp, roundTrip(ctx, addr, req, resp)
}

func apiVersions(ctx context.Context, addr string) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return roundTrip(ctx, addr, req, kmsg.NewPtrApiVersionsResponse())
}

// roundTrip sends req, of a non-flexible version, on a new connection and
// reads resp.
func roundTrip(ctx context.Context, addr string, req kmsg.Request, resp kmsg.Response) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("loadcheck")).AppendRequest(nil, req, 1)); err != nil {
		return err
	}
	body, err := readFrame(nc)
	if err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body[4:]) // after the correlation id
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("response frame of %d bytes", len(body))
	}
	return body, nil
}
