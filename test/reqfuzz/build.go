package reqfuzz

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API is one API a node serves, with its advertised versions.
type API struct {
	Key      int16
	Min, Max int16
}

// request is one request as sent, with what the fuzzer knows of it.
type request struct {
	key, version int16
	corr         int32
	b            []byte // size prefix, header, body
	desc         string // API, version, hostility, mutations
	mutated      bool   // bytes changed after encoding
	malformed    bool   // kmsg's encoding does not decode (a string past an int16 length)
	inRange      bool   // a served key at an advertised version
	acks0        bool   // an unmutated acks=0 Produce: no answer is due
	last         bool   // its size prefix lies: nothing may follow it on its TCP connection
	overCost     bool   // clean, but costs the node more than it admits (kafkaapi.RequestCost): it closes the connection
}

// clean reports whether the request is well-formed, at a version the
// node advertises: the node must answer it.
func (r *request) clean() bool { return r.inRange && !r.mutated && !r.malformed }

// decodeFrame reads the request of frame b (from a formatter with a
// client id) at its header's key and version, if kmsg knows the key.
func decodeFrame(b []byte) (kmsg.Request, error) {
	if len(b) < headerLen+2 {
		return nil, fmt.Errorf("a frame of %d bytes", len(b))
	}
	key, version := int16(binary.BigEndian.Uint16(b[4:])), int16(binary.BigEndian.Uint16(b[6:]))
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("key %d is unknown to kmsg", key)
	}
	req.SetVersion(version)
	rest := b[headerLen:]
	if n := int(int16(binary.BigEndian.Uint16(rest))); n > 0 {
		rest = rest[min(len(rest), 2+n):]
	} else {
		rest = rest[2:]
	}
	if req.IsFlexible() {
		if len(rest) == 0 {
			return nil, fmt.Errorf("no header tags")
		}
		rest = rest[1:] // the formatter writes no header tags
	}
	return req, req.ReadFrom(rest)
}

// served reports whether the node serves key at version, and the API.
func served(apis []API, key, version int16) (API, bool) {
	i := slices.IndexFunc(apis, func(a API) bool { return a.Key == key })
	if i < 0 {
		return API{}, false
	}
	return apis[i], version >= apis[i].Min && version <= apis[i].Max
}

// unservedKeys are keys kmsg knows that the node does not advertise,
// plus keys nobody knows.
func unservedKeys(apis []API) []int16 {
	keys := []int16{-1, 200, 1000, math.MaxInt16, math.MinInt16}
	for k := int16(0); k < 100; k++ {
		if kmsg.RequestForKey(k) != nil && !slices.ContainsFunc(apis, func(a API) bool { return a.Key == k }) {
			keys = append(keys, k)
		}
	}
	return keys
}

// chooseVersion is an advertised version seven times in eight, else one
// just outside the range or an extreme.
func chooseVersion(rng *rand.Rand, a API) int16 {
	if rng.IntN(8) != 0 {
		return a.Min + int16(rng.IntN(int(a.Max-a.Min)+1))
	}
	switch rng.IntN(4) {
	case 0, 1:
		return a.Max + 1 + int16(rng.IntN(3))
	case 2:
		return a.Min - 1 - int16(rng.IntN(3))
	default:
		return []int16{-1, math.MaxInt16, math.MinInt16, 100}[rng.IntN(4)]
	}
}

// buildFrame makes the request with correlation id corr: an API the node
// serves (or, once in 40, one it does not), a version, fields filled by
// reflection, an encoding by kmsg, and sometimes a raw mutation.
func buildFrame(rng *rand.Rand, apis []API, unserved []int16, corr int32) *request {
	a := apis[rng.IntN(len(apis))]
	key := a.Key
	if rng.IntN(40) == 0 {
		key = unserved[rng.IntN(len(unserved))]
	}
	version := chooseVersion(rng, a)
	body := kmsg.RequestForKey(key)
	if body == nil { // a key kmsg does not know: another API's body
		body = kmsg.RequestForKey(a.Key)
	}
	body.SetVersion(version)
	p := hostilities[rng.IntN(len(hostilities))]
	f := newFiller(rng, p, body.IsFlexible())
	f.fillStruct(reflectOf(body), true)

	fr := &request{key: key, version: version, corr: corr}
	_, fr.inRange = served(apis, key, version)
	fr.b = kmsg.NewRequestFormatter(clientIDOpt(f)...).AppendRequest(nil, body, corr)
	binary.BigEndian.PutUint16(fr.b[4:], uint16(key))
	// kmsg leaves the size prefix of ControlledShutdown v0 at zero.
	binary.BigEndian.PutUint32(fr.b, uint32(len(fr.b)-4))
	fr.desc = fmt.Sprintf("%s(key %d) v%d hostility %g", kmsg.NameForKey(key), key, version, p)
	if _, err := decodeFrame(fr.b); fr.inRange && err != nil {
		fr.malformed = true
		fr.desc += " (kmsg's encoding does not decode)"
	}
	if p, ok := body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		fr.acks0 = true
	}
	if rng.IntN(5) == 0 {
		mutate(rng, fr)
	}
	return fr
}

// clientIDOpt is the request header's client id: usually a plain one,
// sometimes null or hostile.
func clientIDOpt(f *filler) []kmsg.RequestFormatterOpt {
	switch f.rng.IntN(10) {
	case 0:
		return nil
	case 1:
		return []kmsg.RequestFormatterOpt{kmsg.FormatterClientID(f.hostileString())}
	}
	return []kmsg.RequestFormatterOpt{kmsg.FormatterClientID("reqfuzz")}
}

// roundFrames is what connection conn sends in round round of a run with
// seed: the same on every run.
func roundFrames(seed uint64, round, conn, n int, apis []API) []*request {
	rng := rand.New(rand.NewPCG(seed, uint64(round)<<20|uint64(conn)))
	unserved := unservedKeys(apis)
	frames := make([]*request, 0, n)
	for i := range n {
		frames = append(frames, buildFrame(rng, apis, unserved, int32(i+1)))
	}
	return frames
}
