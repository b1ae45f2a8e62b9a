package reqfuzz

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RefTopic is the reference topic. No generated request names it, so
// nothing a round sends may change it.
const RefTopic = "reqfuzz-reference"

// Name pools: what a client would plausibly send, so that requests reach
// past name lookups. The fuzz topics fz-a..c exist (twice as likely),
// fz-d and fz-e are auto-created; the internal topics are there to be
// abused.
var (
	topicNames = []string{"fz-a", "fz-b", "fz-c", "fz-a", "fz-b", "fz-c", "fz-d", "fz-e",
		"__consumer_offsets", "__transaction_state", "__cluster_metadata"}
	groupNames   = []string{"fg-a", "fg-b", "fg-c", ""}
	txnNames     = []string{"ft-a", "ft-b", "ft-c"}
	memberNames  = []string{"", "m-1", "consumer-fz-1-0b7c", "instance-1"}
	protocols    = []string{"consumer", "range", "roundrobin", "cooperative-sticky", "", "connect"}
	principals   = []string{"User:ANONYMOUS", "User:*", "User:fz", "Group:fz", "fz", ""}
	hosts        = []string{"*", "127.0.0.1", "::1", ""}
	mechanisms   = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"}
	states       = []string{"Empty", "Stable", "PreparingRebalance", "Dead", "Ongoing", "PrepareCommit", "CompleteAbort"}
	resourceName = []string{"", "1", "2", "3", "-1", "fz-a", "fz-b", "2147483648"}
	// configNames are topic configs and their broker synonyms (the
	// reference topic sets its own values of those that could touch it).
	// producer.id.expiration.ms is left out: the duplicate check needs
	// its producer remembered.
	configNames = []string{"cleanup.policy", "compression.type", "retention.ms", "retention.bytes",
		"max.message.bytes", "min.insync.replicas", "segment.bytes", "segment.ms",
		"message.timestamp.type", "message.timestamp.before.max.ms", "write.caching", "flush.ms",
		"log.retention.ms", "log.retention.bytes", "message.max.bytes", "log.cleanup.policy",
		"log.segment.bytes", "log.message.timestamp.type", "unclean.leader.election.enable",
		"min.cleanable.dirty.ratio", "compression.zstd.level", "no.such.config", ""}
	namePool     = append(append([]string{}, configNames...), topicNames...)
	configValues = []string{"", "-1", "0", "1", "-2", "9223372036854775807", "9223372036854775808",
		"2147483648", "delete", "compact", "compact,delete", "gzip", "zstd", "LogAppendTime",
		"true", "false", "NaN", "1e309", "0.5", "abc"}
)

// str is a value for a string field called name.
func (f *filler) str(name string) string {
	if f.hostile() {
		return f.hostileString()
	}
	n := strings.ToLower(name)
	has := func(s string) bool { return strings.Contains(n, s) }
	switch {
	case has("topic"):
		return pick(f, topicNames...)
	case has("transaction"):
		return pick(f, txnNames...)
	case has("group") && !has("instance"):
		return pick(f, groupNames...)
	case has("member") || has("instance"):
		return pick(f, memberNames...)
	case has("protocol"):
		return pick(f, protocols...)
	case has("principal"):
		return pick(f, principals...)
	case has("host"):
		return pick(f, hosts...)
	case has("mechanism"):
		return pick(f, mechanisms...)
	case has("state") || has("filter"):
		return pick(f, states...)
	case has("resource"):
		return pick(f, resourceName...)
	case has("value"):
		return pick(f, configValues...)
	case has("name") || has("key"):
		return pick(f, namePool...)
	}
	return f.alnum(1 + f.rng.IntN(12))
}

// hostileString is a string no handler should trust: empty, longer than
// any limit (past an int16 length prefix too), not UTF-8, with control
// characters, path-like, numeric-looking, or a valid but unknown name.
func (f *filler) hostileString() string {
	switch f.rng.IntN(9) {
	case 0:
		return ""
	case 1:
		n := pick(f, 249, 250, 256, 1000, 32767, 32768, 70000)
		n = max(min(n, f.bytes), 0)
		f.bytes -= n
		return strings.Repeat(pick(f, "a", ".", "é"), n)
	case 2:
		return string(f.randBytes(1 + f.rng.IntN(40)))
	case 3:
		return "fz\x00" + f.alnum(3) + "\n\r\t\x7f"
	case 4:
		return pick(f, ".", "..", "../../etc/passwd", "/", "a/b", "fz a", "*")
	case 5:
		return pick(f, "-1", "9223372036854775808", "1e309", "NaN", "0x10", "+1")
	case 6:
		return pick(f, "トピック", "\u202etopic", "\U0001F600", "\xff\xfe")
	default:
		return "fz-" + f.alnum(1+f.rng.IntN(8))
	}
}

const alnumChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

// alnum is a random valid topic-like name of n characters.
func (f *filler) alnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnumChars[f.rng.IntN(len(alnumChars))]
	}
	return string(b)
}

// randBytes is n random bytes, within the byte budget.
func (f *filler) randBytes(n int) []byte {
	n = max(min(n, f.bytes), 0)
	f.bytes -= n
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(f.rng.Uint32())
	}
	return b
}

// byteField is a value for a []byte field called name: record batches,
// group protocol metadata and assignments, SASL tokens, or raw bytes.
func (f *filler) byteField(name string) []byte {
	switch {
	case name == "Records":
		return f.records()
	case name == "Metadata" && !f.hostile():
		var m kmsg.ConsumerMemberMetadata
		m.Default()
		f.fillStruct(reflectOf(&m), false)
		return m.AppendTo(nil)
	case strings.Contains(name, "Assignment") && !f.hostile():
		var a kmsg.ConsumerMemberAssignment
		a.Default()
		f.fillStruct(reflectOf(&a), false)
		return a.AppendTo(nil)
	case name == "SASLAuthBytes" && !f.hostile():
		return []byte(pick(f, "\x00fz\x00pw", "fz\x00fz\x00pw", "n,,n=fz,r=abcdef", "c=biws,r=x,p=eA==", "\x00\x00"))
	}
	if !f.hostile() {
		return f.randBytes(f.rng.IntN(64))
	}
	switch f.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		return f.randBytes(1 << 20)
	}
	return f.randBytes(f.rng.IntN(4096))
}
