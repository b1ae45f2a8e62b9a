package membership

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/memberlist"
)

// MetaMaxSize is the most metadata bytes memberlist carries per node; more
// makes memberlist panic, so New and UpdateMeta refuse it first.
const MetaMaxSize = memberlist.MetaMaxSize

// NodeMeta is what every node gossips about itself. Keep it small: the whole
// encoding must fit in MetaMaxSize bytes. Partition maps and topic state live
// in the metadata Raft group, never here.
type NodeMeta struct {
	ID        int32  // Kafka broker id, > 0; also the Raft server ID in decimal
	KafkaAddr string // advertised host:port for Kafka clients
	RaftAddr  string // advertised host:port of the Raft/internal RPC port
	// Listeners are the advertised Kafka listeners in Kafka's
	// advertised.listeners form (NAME://host:port,...); "" when the node
	// has only KafkaAddr. Sent from encoding version 2 on.
	Listeners string
	// DiskFull says that the node's data disk is below its reserve: it
	// refuses growth, and so do the leaders of partitions it replicates
	// (storage_min_free_bytes). A flag bit, which older readers ignore.
	DiskFull bool
	// CleansDirtyPart says that the node's build applies the clean
	// commands that map only a log's dirty part (fsm.EncodeClean's longer
	// form); a node of an older build does not set it and refuses them, so
	// a leader then proposes the form every build applies. A flag bit.
	CleansDirtyPart bool
}

// Validate reports whether m can be advertised: a positive ID, both
// addresses host:port with a port in 1..65535, and an encoding of at most
// MetaMaxSize bytes. Errors wrap ErrInvalidMeta or ErrMetaTooLarge.
func (m NodeMeta) Validate() error {
	_, err := encodeMeta(wireMeta{NodeMeta: m})
	return err
}

// Encoding of the metadata, version 1:
//
//	[0]    version (1)
//	[1]    flags: bit 0 = leaving (set by Leave before the leave broadcast),
//	       bit 1 = disk full (NodeMeta.DiskFull),
//	       bit 2 = cleans a dirty part (NodeMeta.CleansDirtyPart)
//	[2:6]  ID, int32 big-endian
//	       uvarint length + KafkaAddr bytes
//	       uvarint length + RaftAddr bytes
//	       uvarint length + Listeners bytes (version 2, written only when
//	       Listeners is set)
//
// Later versions only append fields after these and raise the version byte;
// a reader decodes the fields it knows and ignores the rest, so mixed-version
// clusters keep working. Version 1 itself has no trailing bytes, and version 0
// is never valid. Unknown flag bits are ignored.
const (
	metaVersion1    = 1
	metaVersion2    = 2
	flagLeaving     = 1 << 0
	flagDiskFull    = 1 << 1
	flagCleansDirty = 1 << 2
	metaFixedLen    = 6
)

// wireMeta is NodeMeta plus the internal leave-intent flag, which lets the
// other nodes tell a graceful leave from a failure (memberlist reports both
// as NotifyLeave).
type wireMeta struct {
	NodeMeta
	leaving bool
}

// encodeMeta validates w and returns its version-1 encoding.
func encodeMeta(w wireMeta) ([]byte, error) {
	if err := validateFields(w.NodeMeta); err != nil {
		return nil, err
	}
	b := make([]byte, metaFixedLen, metaFixedLen+2*binary.MaxVarintLen16+len(w.KafkaAddr)+len(w.RaftAddr))
	b[0] = metaVersion1
	if w.Listeners != "" {
		b[0] = metaVersion2
	}
	if w.leaving {
		b[1] |= flagLeaving
	}
	if w.DiskFull {
		b[1] |= flagDiskFull
	}
	if w.CleansDirtyPart {
		b[1] |= flagCleansDirty
	}
	binary.BigEndian.PutUint32(b[2:6], uint32(w.ID))
	b = binary.AppendUvarint(b, uint64(len(w.KafkaAddr)))
	b = append(b, w.KafkaAddr...)
	b = binary.AppendUvarint(b, uint64(len(w.RaftAddr)))
	b = append(b, w.RaftAddr...)
	if w.Listeners != "" {
		b = binary.AppendUvarint(b, uint64(len(w.Listeners)))
		b = append(b, w.Listeners...)
	}
	if len(b) > MetaMaxSize {
		return nil, &MetaSizeError{Size: len(b), Limit: MetaMaxSize}
	}
	return b, nil
}

// decodeMeta parses metadata gossiped by another node. Errors wrap
// ErrInvalidMeta.
func decodeMeta(b []byte) (wireMeta, error) {
	var w wireMeta
	if len(b) < metaFixedLen {
		return w, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrInvalidMeta, len(b), metaFixedLen)
	}
	if len(b) > MetaMaxSize {
		return w, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrInvalidMeta, len(b), MetaMaxSize)
	}
	version := b[0]
	if version == 0 {
		return w, fmt.Errorf("%w: version 0", ErrInvalidMeta)
	}
	w.leaving = b[1]&flagLeaving != 0
	w.DiskFull = b[1]&flagDiskFull != 0
	w.CleansDirtyPart = b[1]&flagCleansDirty != 0
	w.ID = int32(binary.BigEndian.Uint32(b[2:6]))
	rest := b[metaFixedLen:]
	var err error
	if w.KafkaAddr, rest, err = readString(rest, "kafka address"); err != nil {
		return wireMeta{}, err
	}
	if w.RaftAddr, rest, err = readString(rest, "raft address"); err != nil {
		return wireMeta{}, err
	}
	if version >= metaVersion2 {
		if w.Listeners, rest, err = readString(rest, "listeners"); err != nil {
			return wireMeta{}, err
		}
	}
	if (version == metaVersion1 || version == metaVersion2) && len(rest) != 0 {
		return wireMeta{}, fmt.Errorf("%w: %d trailing bytes in version %d", ErrInvalidMeta, len(rest), version)
	}
	if err := validateFields(w.NodeMeta); err != nil {
		return wireMeta{}, err
	}
	return w, nil
}

func readString(b []byte, what string) (string, []byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return "", nil, fmt.Errorf("%w: bad length of %s", ErrInvalidMeta, what)
	}
	b = b[used:]
	if n > uint64(len(b)) {
		return "", nil, fmt.Errorf("%w: %s length %d exceeds the %d bytes left", ErrInvalidMeta, what, n, len(b))
	}
	return string(b[:n]), b[n:], nil
}

// validateFields checks everything but the encoded size.
func validateFields(m NodeMeta) error {
	if m.ID <= 0 {
		return fmt.Errorf("%w: id %d, want > 0", ErrInvalidMeta, m.ID)
	}
	if err := checkHostPort(m.KafkaAddr); err != nil {
		return fmt.Errorf("%w: kafka address: %v", ErrInvalidMeta, err)
	}
	if err := checkHostPort(m.RaftAddr); err != nil {
		return fmt.Errorf("%w: raft address: %v", ErrInvalidMeta, err)
	}
	return nil
}

// checkHostPort accepts "host:port" with a non-empty host and a port in
// 1..65535.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return fmt.Errorf("%q: port must be 1..65535", addr)
	}
	return nil
}
