package client

import (
	"errors"
	"fmt"
)

// shareConfig is the options only a ShareConsumer takes.
type shareConfig struct {
	group      string
	maxRecords int32
	onAcks     func(map[TopicPartition]error)
}

// defaultShareMaxRecords is Kafka's max.poll.records default, which its
// share consumer also sends as ShareFetch's MaxRecords.
const defaultShareMaxRecords = 500

// ShareGroup names the share group (KIP-932) a ShareConsumer joins
// (Kafka's group.id). Required by NewShareConsumer; no default. Share
// option.
func ShareGroup(name string) Opt {
	return mk("ShareGroup", shareOpt, func(c *config) { c.share.group = name })
}

// ShareMaxRecords bounds the records one ShareFetch acquires, and so what
// one Poll returns per broker (Kafka's max.poll.records). Default 500.
// Share option.
func ShareMaxRecords(n int32) Opt {
	return mk("ShareMaxRecords", shareOpt, func(c *config) { c.share.maxRecords = n })
}

// OnShareAcknowledged sets a function called with the outcome of
// acknowledgements sent along with a ShareFetch (after CommitAsync, or
// implicitly by Poll): nil for a partition whose acknowledgements the
// broker took, or why it did not (the records are then delivered again
// once their acquisition lock ends). It runs on the goroutine calling
// Poll (Kafka's AcknowledgementCommitCallback); it must not call Poll,
// CommitSync or Close. Default none. Share option.
func OnShareAcknowledged(fn func(map[TopicPartition]error)) Opt {
	return mk("OnShareAcknowledged", shareOpt, func(c *config) { c.share.onAcks = fn })
}

// validateShare checks the options of a share consumer. Where a share
// group starts reading and its isolation level are the group's configs
// (share.auto.offset.reset, share.isolation.level), not the client's.
func (c *config) validateShare() error {
	bad := func(name, format string, args ...any) error {
		return &ConfigError{Option: name, Err: fmt.Errorf(format, args...)}
	}
	if !c.explicit["ShareMaxRecords"] {
		c.share.maxRecords = defaultShareMaxRecords
	}
	switch {
	case c.share.group == "":
		return bad("ShareGroup", "a share consumer needs a group name")
	case len(c.consumeTopics) == 0:
		return bad("ConsumeTopics", "a share consumer needs at least one topic to subscribe to")
	case c.consumePartitions != nil:
		return bad("ConsumePartitions", "a share consumer's partitions come from the group")
	case c.explicit["ConsumeResetOffset"]:
		return bad("ConsumeResetOffset", "a share group starts where its share.auto.offset.reset config says")
	case c.explicit["IsolationLevel"]:
		return bad("IsolationLevel", "a share group reads as its share.isolation.level config says")
	case c.share.maxRecords <= 0:
		return bad("ShareMaxRecords", "must be positive, got %d", c.share.maxRecords)
	}
	return nil
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// AckKind is how a share consumer acknowledges a delivered record.
type AckKind int8

// The acknowledgement kinds of KIP-932 (the wire values).
const (
	// AckAccept: the record is processed; no member gets it again.
	AckAccept AckKind = 1
	// AckRelease: the record goes back to the group and is delivered
	// again (its delivery count grows), up to the group's
	// share.delivery.count.limit.
	AckRelease AckKind = 2
	// AckReject: the record cannot be processed; no member gets it again.
	AckReject AckKind = 3
)

// ackGap acknowledges an acquired offset that holds no record (a control
// record, or one compacted away).
const ackGap int8 = 0

func (k AckKind) String() string {
	switch k {
	case AckAccept:
		return "accept"
	case AckRelease:
		return "release"
	case AckReject:
		return "reject"
	}
	return fmt.Sprintf("ack(%d)", int8(k))
}

// ParseAckKind reads accept, release or reject.
func ParseAckKind(name string) (AckKind, error) {
	for _, k := range []AckKind{AckAccept, AckRelease, AckReject} {
		if k.String() == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("client: unknown acknowledgement %q (accept, release or reject): %w", name, ErrInvalidConfig)
}

// Errors of the share consumer.
var (
	// ErrNotDelivered fails Acknowledge of a record that the last Poll
	// did not return, or that is acknowledged already.
	ErrNotDelivered = errors.New("client: record not delivered by the last poll, or acknowledged already")

	// ErrUnacknowledged fails a Poll that follows one whose records the
	// caller acknowledged only in part: acknowledge each of them (or none,
	// to accept them all) first, as Kafka's explicit mode demands.
	ErrUnacknowledged = errors.New("client: records of the last poll are not acknowledged")

	// ErrShareSessionLost is the outcome of acknowledgements whose share
	// session ended before they were sent (the broker closed it or the
	// connection broke): the broker releases those records, and they are
	// delivered again.
	ErrShareSessionLost = errors.New("client: share session lost; the records will be delivered again")

	// ErrShareUnsupported is matched by a ShareUnsupportedError.
	ErrShareUnsupported = errors.New("client: the cluster does not serve share groups")
)

// ShareUnsupportedError says that the broker does not serve a share-group
// API the client needs. It matches ErrShareUnsupported and ErrUnsupported.
type ShareUnsupportedError struct {
	API string // ShareGroupHeartbeat, ShareFetch, ...
	Err error  // the version error
}

func (e *ShareUnsupportedError) Error() string {
	return fmt.Sprintf("the cluster does not serve share groups (%s)", e.API)
}

// Unwrap gives ErrShareUnsupported and the version error.
func (e *ShareUnsupportedError) Unwrap() []error { return []error{ErrShareUnsupported, e.Err} }

// shareUnsupported turns a version error for api into a
// ShareUnsupportedError, and leaves other errors alone.
func shareUnsupported(api string, err error) error {
	var ve *VersionError
	if errors.As(err, &ve) || errors.Is(err, ErrUnsupportedVersion) {
		return &ShareUnsupportedError{API: api, Err: err}
	}
	return err
}
