package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// fake is an in-process Kafka broker set for unit tests, reached through
// net.Pipe (so it runs inside a testing/synctest bubble). It speaks the
// wire protocol with kmsg and validates idempotent batches the way
// docs/contract.md B1/B2 describe our broker: per partition and producer id the
// epoch and the last 5 batches; an exact retry gets its original offset;
// a new epoch starts at sequence 0; anything else out of order is refused.
type fake struct {
	t *testing.T

	mu       sync.Mutex // guards everything below
	nodes    []int32
	topics   map[string][]*fakePart
	txnIDs   map[string]producerID // transactional id -> current identity
	nextPID  int64
	gate     chan struct{} // non-nil: produce requests wait until it is closed
	received int           // produce requests read off the wire
	maxQueue int           // most produce requests read but not yet answered, per connection
	attempts []attempt     // every produce partition, in handling order
	// onProduce may answer a partition with a fault instead of handling it.
	onProduce func(a attempt) fault
	// txnLog lists the transaction requests that succeeded ("add t[p]",
	// "commit", "abort"); onTxn may answer one with an error code instead.
	txnLog []string
	onTxn  func(req kmsg.Request) int16
	conns  []net.Conn
	closed bool
	// apiVersionsMax, if set, is the highest ApiVersions version the fake
	// understands; apiVersionsSeen records every version asked.
	apiVersionsMax  int16
	apiVersionsSeen []int16
	// isolated, if set, is a node cut off from the others: its Metadata
	// lists only itself and no leader but itself.
	isolated int32
	wg       sync.WaitGroup
}

// attempt is one partition of one produce request, as the fake saw it.
type attempt struct {
	node      int32
	topic     string
	partition int32
	pid       int64
	epoch     int16
	seq       int32
	count     int32
	txn       bool // the transactional attribute
	values    []string
	code      int16 // the answer
	base      int64 // the base offset answered, -1 on error
}

// fault is an injected answer.
type fault struct {
	code       int16 // answer with this code without appending
	dropBefore bool  // close the connection without handling
	dropAfter  bool  // append, then close the connection without answering
	// codeAfter appends, then answers with this code anyway (a timeout
	// after the write, say).
	codeAfter int16
	// moveLeader moves the partition to another node after this request.
	moveLeader bool
	// stall stops answering on the connection (after appending, with
	// stallAfter), until the client gives up and closes it.
	stall, stallAfter bool
}

type fakePart struct {
	leader, epoch int32
	batches       [][]byte // stored batches, base offsets set
	next          int64
	producers     map[int64]*fakeProducerState
}

type fakeProducerState struct {
	epoch  int16
	window []fakeEntry // last 5 batches, oldest first
}

type fakeEntry struct {
	first, last int32
	base        int64
}

func newFake(t *testing.T, nodes int, topics map[string]int) *fake {
	f := &fake{t: t, topics: map[string][]*fakePart{}, txnIDs: map[string]producerID{}, nextPID: 1000}
	for i := 1; i <= nodes; i++ {
		f.nodes = append(f.nodes, int32(i))
	}
	for name, n := range topics {
		f.createTopic(name, n)
	}
	t.Cleanup(f.close)
	return f
}

func (f *fake) createTopic(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p := 0; p < n; p++ {
		f.topics[name] = append(f.topics[name], &fakePart{
			leader: f.nodes[p%len(f.nodes)], producers: map[int64]*fakeProducerState{},
		})
	}
}

// seed is the address of node 1.
func (f *fake) seed() string { return "fake:9001" }

// dial connects to the node named by the address's port (9000+id).
func (f *fake) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n, _ := strconv.Atoi(port)
	node := int32(n - 9000)
	f.mu.Lock()
	known := !f.closed && false
	for _, id := range f.nodes {
		known = known || (id == node && !f.closed)
	}
	if !known {
		f.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
	}
	client, server := net.Pipe()
	f.conns = append(f.conns, server)
	f.wg.Add(1)
	f.mu.Unlock()
	go f.serve(node, server)
	return client, nil
}

// close ends every connection and waits for the fake's goroutines.
func (f *fake) close() {
	f.mu.Lock()
	f.closed = true
	for _, c := range f.conns {
		c.Close()
	}
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// hold makes produce requests wait until release.
func (f *fake) hold() {
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
}

func (f *fake) release() {
	f.mu.Lock()
	close(f.gate)
	f.gate = nil
	f.mu.Unlock()
}

func (f *fake) moveLeader(topic string, partition, node int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.topics[topic][partition]
	p.leader = node
	p.epoch++
}

func (f *fake) snapshotAttempts() []attempt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]attempt(nil), f.attempts...)
}

func (f *fake) producesReceived() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.received
}

// logValues returns the values stored in a partition, in offset order,
// checking that offsets are contiguous from 0.
func (f *fake) logValues(topic string, partition int32) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	next := int64(0)
	for _, b := range f.topics[topic][partition].batches {
		recs, err := record.AppendRecords(nil, b)
		if err != nil {
			f.t.Fatalf("stored batch: %v", err)
		}
		for _, r := range recs {
			if r.Offset != next {
				f.t.Fatalf("%s[%d]: offset %d where %d was expected", topic, partition, r.Offset, next)
			}
			next++
			out = append(out, string(r.Value))
		}
	}
	return out
}

func (f *fake) batchCount(topic string, partition int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.topics[topic][partition].batches)
}

type fakeReq struct {
	corr int32
	req  kmsg.Request
}

// serve reads requests on one connection into a queue (so that a client
// can have many in flight) and answers them in order.
func (f *fake) serve(node int32, c net.Conn) {
	defer f.wg.Done()
	reqs := make(chan fakeReq, 64)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(reqs)
		for {
			r, err := readRequest(c)
			if err != nil {
				return
			}
			if r.req.Key() == 0 {
				f.mu.Lock()
				f.received++
				f.maxQueue = max(f.maxQueue, len(reqs)+1)
				f.mu.Unlock()
			}
			reqs <- r
		}
	}()
	defer c.Close()
	for r := range reqs {
		if r.req.Key() == 0 {
			f.mu.Lock()
			gate := f.gate
			f.mu.Unlock()
			if gate != nil {
				<-gate
			}
		}
		resp, drop := f.handle(node, r.req)
		if drop == dropConn {
			c.Close()
			for range reqs { // let the reader finish
			}
			return
		}
		if drop == stallConn {
			for range reqs { // answer nothing more; the client times out and closes
			}
			return
		}
		if resp == nil {
			continue // acks=0
		}
		if err := writeResponse(c, r.corr, resp); err != nil {
			c.Close()
			for range reqs {
			}
			return
		}
	}
}

func readRequest(r io.Reader) (fakeReq, error) {
	body, err := readFrame(r)
	if err != nil {
		return fakeReq{}, err
	}
	if len(body) < 10 {
		return fakeReq{}, errors.New("short request")
	}
	key := int16(binary.BigEndian.Uint16(body))
	version := int16(binary.BigEndian.Uint16(body[2:]))
	corr := int32(binary.BigEndian.Uint32(body[4:]))
	idLen := int16(binary.BigEndian.Uint16(body[8:]))
	body = body[10:]
	if idLen > 0 {
		body = body[idLen:]
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return fakeReq{}, fmt.Errorf("unknown key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return fakeReq{}, err
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return fakeReq{}, err
	}
	return fakeReq{corr: corr, req: req}, nil
}

func writeResponse(w io.Writer, corr int32, resp kmsg.Response) error {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if resp.IsFlexible() && resp.Key() != 18 {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := w.Write(b)
	return err
}

// What the connection does after a request.
const (
	keepConn  = iota
	dropConn  // close it without answering
	stallConn // stop answering
)

// handle answers one request and says what to do with the connection.
func (f *fake) handle(node int32, req kmsg.Request) (kmsg.Response, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		f.apiVersionsSeen = append(f.apiVersionsSeen, r.Version)
		if f.apiVersionsMax > 0 && r.Version > f.apiVersionsMax {
			// KIP-511: a v0 body with UNSUPPORTED_VERSION and our range.
			resp.SetVersion(0)
			resp.ErrorCode = ErrUnsupportedVersion.Code
			v := kmsg.NewApiVersionsResponseApiKey()
			v.ApiKey, v.MaxVersion = 18, f.apiVersionsMax
			resp.ApiKeys = append(resp.ApiKeys, v)
			return resp, keepConn
		}
		for _, k := range []int16{0, 3, 10, 18, 22, 24, 26} {
			v := kmsg.NewApiVersionsResponseApiKey()
			v.ApiKey, v.MinVersion, v.MaxVersion = k, 0, kmsg.RequestForKey(k).MaxVersion()
			resp.ApiKeys = append(resp.ApiKeys, v)
		}
		return resp, keepConn
	case *kmsg.MetadataRequest:
		return f.metadata(node, r), keepConn
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		if r.TransactionalID != nil {
			id, ok := f.txnIDs[*r.TransactionalID]
			if ok {
				id.epoch++
			} else {
				id = producerID{id: f.nextPID, epoch: 0}
				f.nextPID++
			}
			f.txnIDs[*r.TransactionalID] = id
			resp.ProducerID, resp.ProducerEpoch = id.id, id.epoch
		} else {
			resp.ProducerID, resp.ProducerEpoch = f.nextPID, 0
			f.nextPID++
		}
		return resp, keepConn
	case *kmsg.FindCoordinatorRequest:
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.NodeID, resp.Host, resp.Port = f.nodes[0], "fake", 9000+f.nodes[0]
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port = r.CoordinatorKey, f.nodes[0], "fake", 9000+f.nodes[0]
		if len(r.CoordinatorKeys) > 0 {
			c.Key = r.CoordinatorKeys[0]
		}
		resp.Coordinators = append(resp.Coordinators, c)
		return resp, keepConn
	case *kmsg.ProduceRequest:
		return f.produce(node, r)
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.EndTxnRequest:
		return f.txnRequest(req), keepConn
	}
	f.t.Errorf("fake: unexpected request %s", kmsg.NameForKey(req.Key()))
	return nil, dropConn
}

// txnRequest answers AddPartitionsToTxn and EndTxn: PRODUCER_FENCED for
// an epoch older than the transactional id's, else onTxn's code, and logs
// what succeeded. Called with f.mu.
func (f *fake) txnRequest(req kmsg.Request) kmsg.Response {
	code := func(txnID string, epoch int16) int16 {
		if id, ok := f.txnIDs[txnID]; ok && epoch < id.epoch {
			return ErrProducerFencedCode.Code
		}
		if f.onTxn != nil {
			return f.onTxn(req)
		}
		return 0
	}
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		c := code(r.TransactionalID, r.ProducerEpoch)
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, c
				rt.Partitions = append(rt.Partitions, rp)
				if c == 0 {
					f.txnLog = append(f.txnLog, fmt.Sprintf("add %s[%d]", t.Topic, p))
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.EndTxnRequest:
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code(r.TransactionalID, r.ProducerEpoch)
		if resp.ErrorCode == 0 {
			f.txnLog = append(f.txnLog, map[bool]string{true: "commit", false: "abort"}[r.Commit])
		}
		return resp
	}
	return nil
}

func (f *fake) snapshotTxnLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.txnLog)
}

func (f *fake) metadata(node int32, r *kmsg.MetadataRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	cutOff := node == f.isolated
	for _, id := range f.nodes {
		if cutOff && id != node {
			continue // an isolated broker lists only itself
		}
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = id, "fake", 9000+id
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ControllerID = f.nodes[0]
	var names []string
	if r.Topics == nil {
		for name := range f.topics {
			names = append(names, name)
		}
	}
	for _, t := range r.Topics {
		names = append(names, *t.Topic)
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		parts, ok := f.topics[name]
		if !ok {
			rt.ErrorCode = ErrUnknownTopicOrPartition.Code
		}
		for i, p := range parts {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.LeaderEpoch = int32(i), p.leader, p.epoch
			if cutOff && p.leader != node {
				rp.Leader, rp.ErrorCode = -1, ErrLeaderNotAvailable.Code
			}
			rp.Replicas, rp.ISR = []int32{p.leader}, []int32{p.leader}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// produce handles a produce request. Called with f.mu.
func (f *fake) produce(node int32, r *kmsg.ProduceRequest) (kmsg.Response, int) {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	drop := keepConn
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			a := attempt{node: node, topic: rt.Topic, partition: rp.Partition, base: -1}
			h, err := record.CheckProduce(rp.Records)
			if err == nil {
				a.pid, a.epoch, a.seq, a.count = h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.NumRecords
				a.txn = h.IsTransactional()
				recs, _ := record.AppendRecords(nil, rp.Records)
				for _, rec := range recs {
					a.values = append(a.values, string(rec.Value))
				}
			}
			var ft fault
			if f.onProduce != nil && err == nil {
				ft = f.onProduce(a)
			}
			switch {
			case ft.dropBefore || ft.stall:
				drop = max(drop, dropConn)
				if ft.stall {
					drop = stallConn
				}
				a.code = -100
			case err != nil:
				a.code = ErrCorruptMessage.Code
			case ft.code != 0:
				a.code = ft.code
			default:
				a.code, a.base = f.appendBatch(node, rt.Topic, rp.Partition, h, rp.Records)
				if ft.dropAfter {
					drop = max(drop, dropConn)
				}
				if ft.stallAfter {
					drop = stallConn
				}
				if ft.codeAfter != 0 && a.code == 0 {
					a.code, a.base = ft.codeAfter, -1
				}
			}
			if ft.moveLeader {
				if parts := f.topics[rt.Topic]; int(rp.Partition) < len(parts) {
					fp := parts[rp.Partition]
					for _, n := range f.nodes {
						if n != fp.leader {
							fp.leader = n
							break
						}
					}
					fp.epoch++
				}
			}
			f.attempts = append(f.attempts, a)
			sp.ErrorCode, sp.BaseOffset = a.code, a.base
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if drop != keepConn {
		return nil, drop
	}
	if r.Acks == 0 {
		return nil, keepConn
	}
	return resp, keepConn
}

// appendBatch validates and appends. Called with f.mu.
func (f *fake) appendBatch(node int32, topic string, partition int32, h record.Header, b []byte) (int16, int64) {
	parts, ok := f.topics[topic]
	if !ok || int(partition) >= len(parts) {
		return ErrUnknownTopicOrPartition.Code, -1
	}
	p := parts[partition]
	if p.leader != node {
		return ErrNotLeaderOrFollower.Code, -1
	}
	var pr *fakeProducerState
	if h.Idempotent() {
		for name, id := range f.txnIDs {
			_ = name
			if id.id == h.ProducerID && h.ProducerEpoch < id.epoch {
				return ErrInvalidProducerEpoch.Code, -1
			}
		}
		pr = p.producers[h.ProducerID]
		last := h.LastSequence()
		switch {
		case pr == nil:
			if h.BaseSequence != 0 {
				return ErrOutOfOrderSequence.Code, -1
			}
			pr = &fakeProducerState{epoch: h.ProducerEpoch}
			p.producers[h.ProducerID] = pr
		case h.ProducerEpoch < pr.epoch:
			return ErrInvalidProducerEpoch.Code, -1
		case h.ProducerEpoch > pr.epoch:
			if h.BaseSequence != 0 {
				return ErrOutOfOrderSequence.Code, -1
			}
			pr.epoch, pr.window = h.ProducerEpoch, nil
		default:
			for _, e := range pr.window {
				if e.first == h.BaseSequence && e.last == last {
					return 0, e.base // exact retry: original offset, nothing appended
				}
			}
			if len(pr.window) > 0 && h.BaseSequence != record.NextSequence(pr.window[len(pr.window)-1].last) {
				return ErrOutOfOrderSequence.Code, -1
			}
			if len(pr.window) == 0 && h.BaseSequence != 0 {
				return ErrOutOfOrderSequence.Code, -1
			}
		}
	}
	stored := append([]byte(nil), b...)
	base := p.next
	record.SetBaseOffset(stored, base)
	record.SetLeaderEpoch(stored, p.epoch)
	p.batches = append(p.batches, stored)
	p.next += int64(h.NumRecords)
	if pr != nil {
		pr.window = append(pr.window, fakeEntry{first: h.BaseSequence, last: h.LastSequence(), base: base})
		if len(pr.window) > 5 {
			pr.window = pr.window[1:]
		}
	}
	return 0, base
}

// values is a helper: the values of records as strings.
func values(rs []*Record) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.Value)
	}
	return b.String()
}
