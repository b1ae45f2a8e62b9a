package reqfuzz

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// filler fills kmsg structs, by reflection, with values drawn from rng.
// Each value is hostile with the request's probability p, else one a
// client could plausibly send (or kmsg's default), so that most requests
// get past a handler's first checks with a few hostile values in them,
// and some are hostile throughout. The same rng state gives the same
// values: fields are visited in declaration order.
type filler struct {
	rng  *rand.Rand
	p    float64 // probability that a value is hostile
	flex bool    // the request is flexible: unknown tagged fields are written
	// elems is how many slice elements the request may still get, and
	// bytes how many string and byte-slice bytes: a huge request is
	// possible, an unbounded one is not.
	elems, bytes int
}

// hostilities are the requests' probabilities of a hostile value.
var hostilities = []float64{0.02, 0.1, 0.3, 1}

// newFiller returns a filler whose values are hostile with probability p.
func newFiller(rng *rand.Rand, p float64, flex bool) *filler {
	return &filler{rng: rng, p: p, flex: flex, elems: 150_000, bytes: 4 << 20}
}

// hostile decides whether the next value is hostile.
func (f *filler) hostile() bool { return f.rng.Float64() < f.p }

// chance is true once in n.
func (f *filler) chance(n int) bool { return f.rng.IntN(n) == 0 }

// pick returns one of xs.
func pick[T any](f *filler, xs ...T) T { return xs[f.rng.IntN(len(xs))] }

var tagsType = reflect.TypeFor[kmsg.Tags]()

// defaulter is a kmsg struct with its protocol defaults.
type defaulter interface{ Default() }

// fillStruct fills every exported field of the struct v. The top-level
// Version of a request is left alone: SetVersion owns it.
func (f *filler) fillStruct(v reflect.Value, top bool) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || top && sf.Name == "Version" {
			continue
		}
		f.fill(v.Field(i), sf.Name)
	}
}

// fill sets v, a field called name or an element of one.
func (f *filler) fill(v reflect.Value, name string) {
	// Half of the plausible scalars keep kmsg's defaults.
	keep := f.p < 1 && f.chance(2)
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			f.tags(v)
			return
		}
		f.fillStruct(v, false)
	case reflect.Pointer:
		if f.hostile() || f.chance(8) {
			v.SetZero()
			return
		}
		p := newElem(v.Type().Elem())
		f.fill(p.Elem(), name)
		v.Set(p)
	case reflect.Slice:
		f.fillSlice(v, name)
	case reflect.Array:
		f.fillArray(v)
	case reflect.String: // kmsg's defaults are empty: names come from the pools
		v.SetString(f.str(name))
	case reflect.Bool:
		if !keep {
			v.SetBool(f.chance(2))
		}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		if !keep {
			v.SetInt(f.integer(v.Type().Bits(), name))
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !keep {
			v.SetUint(uint64(f.integer(v.Type().Bits(), name)) & (math.MaxUint64 >> (64 - v.Type().Bits())))
		}
	case reflect.Float64, reflect.Float32:
		if !keep {
			v.SetFloat(pick(f, 0, 0.5, 1))
			if f.hostile() {
				v.SetFloat(pick(f, -1, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64))
			}
		}
	}
}

// newElem allocates a value of type t with kmsg's defaults, if it has any.
func newElem(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if d, ok := p.Interface().(defaulter); ok {
		d.Default()
	}
	return p
}

// fillSlice fills a slice: a byte slice by its field's meaning, any other
// with a length from sliceLen, its elements filled one by one or, to get
// duplicated entries, all copies of one.
func (f *filler) fillSlice(v reflect.Value, name string) {
	if v.Type().Elem().Kind() == reflect.Uint8 {
		before := f.bytes
		b := f.byteField(name)
		// Encoded record batches and bombs are charged too, so that a
		// duplicated element stays within the budget.
		f.bytes -= max(0, len(b)-(before-f.bytes))
		v.SetBytes(b)
		return
	}
	n := f.sliceLen()
	if n == 0 {
		if f.chance(2) {
			v.SetZero() // null where the field is nullable
		} else {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
		return
	}
	dup := n > 1 && (n > 100 || f.chance(3))
	if dup {
		f.fillDuplicates(v, name, n)
		return
	}
	s := reflect.MakeSlice(v.Type(), n, n)
	for i := range n {
		e := s.Index(i)
		e.Set(newElem(v.Type().Elem()).Elem())
		f.fill(e, name)
	}
	v.Set(s)
}

// fillDuplicates fills v with up to n copies of one element. The copies
// are charged to the budget as if each were filled: the request's size
// stays bounded.
func (f *filler) fillDuplicates(v reflect.Value, name string, n int) {
	elems, bytes := f.elems, f.bytes
	e := newElem(v.Type().Elem()).Elem()
	// Half the time the element is plausible: the count is the hostile
	// part, and handlers then go through every copy.
	p := f.p
	if n >= 256 && f.chance(2) {
		f.p = 0
	}
	f.fill(e, name)
	f.p = p
	costE, costB := elems-f.elems+1, bytes-f.bytes+1
	n = max(1, min(n, 1+f.elems/costE, 1+f.bytes/costB))
	f.elems -= (n - 1) * costE
	f.bytes -= (n - 1) * costB
	s := reflect.MakeSlice(v.Type(), n, n)
	for i := range n {
		s.Index(i).Set(e)
	}
	v.Set(s)
}

// sliceLen is an array's length: plausibly 0 to 4; a hostile one is
// empty, tens, or huge (around the 2^15 and 2^16 bounds, where a
// duplicated element repeats), within the request's budget.
func (f *filler) sliceLen() int {
	var n int
	switch r := f.rng.IntN(10); {
	case !f.hostile():
		n = []int{0, 1, 1, 1, 1, 1, 2, 2, 3, 4}[r]
	case r < 3:
		n = 0
	case r < 6:
		n = 5 + f.rng.IntN(60)
	default:
		n = pick(f, 256, 1000, 32768, 65536, 70_000, 100_000+f.rng.IntN(50_000))
	}
	n = max(min(n, f.elems), 0)
	f.elems -= n
	return n
}

// fillArray fills a fixed array (a UUID): zero, random or all ones.
func (f *filler) fillArray(v reflect.Value) {
	mode := 0
	if f.hostile() {
		mode = f.rng.IntN(3)
	}
	for i := range v.Len() {
		e := v.Index(i)
		if e.Kind() != reflect.Uint8 {
			continue
		}
		switch mode {
		case 0:
			e.SetUint(0)
		case 1:
			e.SetUint(uint64(f.rng.IntN(256)))
		case 2:
			e.SetUint(0xff)
		}
	}
}

// tags adds unknown tagged fields, sometimes with the keys of known ones.
func (f *filler) tags(v reflect.Value) {
	if !f.flex || !f.hostile() || !f.chance(4) || !v.CanAddr() {
		return
	}
	t := v.Addr().Interface().(*kmsg.Tags)
	for range 1 + f.rng.IntN(3) {
		key := pick(f, 0, 1, 2, 3, 100, f.rng.Uint32(), math.MaxUint32)
		t.Set(key, f.randBytes(f.rng.IntN(64)))
	}
}

// integer is a value for an integer field of the given bits called name.
func (f *filler) integer(bits int, name string) int64 {
	if !f.hostile() {
		return plausibleInt(f, strings.ToLower(name))
	}
	lo, hi := int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits)
	switch f.rng.IntN(10) {
	case 0:
		return lo
	case 1:
		return hi
	case 2:
		return pick(f, lo+1, hi-1)
	case 3:
		return pick[int64](f, -1, -2, 0, 1)
	case 4:
		return f.rng.Int64() >> (64 - bits)
	case 5:
		return int64(1) << f.rng.IntN(bits-1)
	case 6:
		return -f.rng.Int64N(1000)
	default:
		return f.rng.Int64N(1 << min(bits-1, 20))
	}
}

// plausibleInt is a value a client could mean for a field called name
// (lower case): small partitions, sane waits and sizes, -1 sentinels.
func plausibleInt(f *filler, name string) int64 {
	has := func(s string) bool { return strings.Contains(name, s) }
	switch {
	case has("replicationfactor"):
		return pick[int64](f, -1, 1, 3)
	case has("numpartitions") || has("count"):
		return pick[int64](f, -1, 1, 2, 3)
	case has("partition"):
		return pick[int64](f, 0, 0, 1, 1, 2, -1)
	case has("acks"):
		return pick[int64](f, -1, 0, 1)
	case has("timeout") || has("wait") || has("millis") || has("ms"):
		return pick[int64](f, 0, 10, 100, 1000, 3000)
	case has("epoch") || has("generation"):
		return pick[int64](f, -1, 0, 1)
	case has("producerid"):
		return pick[int64](f, -1, 0, 1, 1000)
	case has("offset"):
		return pick[int64](f, -1, -2, 0, 1, 10)
	case has("bytes"):
		return pick[int64](f, 0, 1, 1<<20, 50<<20)
	case has("sequence"):
		return pick[int64](f, -1, 0, 1)
	}
	return pick[int64](f, 0, 1, 2, 3, -1)
}
