package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedSize bounds what Decompress produces from one batch, so
// that a small hostile batch cannot make a reader allocate without limit.
const MaxDecompressedSize = 256 << 20

// ErrDecompressedTooLarge means a compressed records section expands past
// MaxDecompressedSize.
var ErrDecompressedTooLarge = fmt.Errorf("%w: records expand past %d bytes", ErrInvalidBatch, MaxDecompressedSize)

// CodecError is a failure to compress or decompress a records section, or
// a codec number outside none, gzip, snappy, lz4 and zstd. A decompression
// failure also matches ErrInvalidBatch.
type CodecError struct {
	Codec  int
	Decode bool  // true when decompressing
	Err    error // nil for an unknown codec
}

func (e *CodecError) Error() string {
	op := "compress"
	if e.Decode {
		op = "decompress"
	}
	if e.Err == nil {
		return fmt.Sprintf("record: %s: unknown compression codec %d", op, e.Codec)
	}
	return fmt.Sprintf("record: %s %s: %v", op, CodecName(e.Codec), e.Err)
}

// Unwrap gives the codec's own error and, for decoding, ErrInvalidBatch.
func (e *CodecError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Decode || e.Err == nil {
		errs = append(errs, ErrInvalidBatch)
	}
	return errs
}

// CodecName is the Kafka name of a codec: "none", "gzip", "snappy", "lz4"
// or "zstd".
func CodecName(codec int) string {
	switch codec {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", codec)
}

// Encoders and decoders are expensive to create and hold large buffers;
// each pool keeps idle ones for reuse. zstd ones run with concurrency 1 so
// that they start no goroutines.
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return w
	}}
	gzipReaders sync.Pool // *gzip.Reader; a new one needs a valid stream
	// 64 KiB blocks, as Kafka's producer writes them: the library's default
	// of 4 MiB took a 4 MiB buffer for every batch, however small.
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(err) // the option is constant
		}
		return w
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdEncs   = sync.Pool{New: func() any {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithWindowSize(64<<10))
		if err != nil {
			panic(err) // the options are constant
		}
		return e
	}}
	zstdDecs = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(MaxDecompressedSize))
		if err != nil {
			panic(err) // the options are constant
		}
		return d
	}}
)

// appendWriter is an io.Writer that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// ReadFrom reads r to its end straight into w's spare capacity, so that
// io.Copy into w allocates no buffer of its own.
func (w *appendWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if len(w.b) == cap(w.b) {
			w.b = slices.Grow(w.b, max(512, cap(w.b)))
		}
		n, err := r.Read(w.b[len(w.b):cap(w.b)])
		w.b = w.b[:len(w.b)+n]
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Compress appends src compressed with codec to dst. Snappy is written as
// one raw snappy block, the form the Kafka brokers and franz-go write and
// every Kafka client reads; lz4 as the standard lz4 frame.
func Compress(dst []byte, codec int, src []byte) ([]byte, error) {
	switch codec {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		out := &appendWriter{b: dst}
		w.Reset(out)
		if _, err := w.Write(src); err != nil {
			return dst, &CodecError{Codec: codec, Err: err}
		}
		if err := w.Close(); err != nil {
			return dst, &CodecError{Codec: codec, Err: err}
		}
		return out.b, nil
	case CompressionSnappy:
		return appendSnappy(dst, src), nil
	case CompressionLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		out := &appendWriter{b: dst}
		w.Reset(out)
		if _, err := w.Write(src); err != nil {
			return dst, &CodecError{Codec: codec, Err: err}
		}
		if err := w.Close(); err != nil {
			return dst, &CodecError{Codec: codec, Err: err}
		}
		return out.b, nil
	case CompressionZstd:
		e := zstdEncs.Get().(*zstd.Encoder)
		defer zstdEncs.Put(e)
		return e.EncodeAll(src, dst), nil
	}
	return dst, &CodecError{Codec: codec}
}

// Decompress appends the decompressed form of src to dst. It reads snappy
// both as a raw block and in the xerial framing that the Java producer
// writes.
func Decompress(dst []byte, codec int, src []byte) ([]byte, error) {
	out, err := decompress(dst, codec, src)
	if err != nil {
		if errors.Is(err, ErrDecompressedTooLarge) {
			return dst, err
		}
		return dst, &CodecError{Codec: codec, Decode: true, Err: err}
	}
	return out, nil
}

func decompress(dst []byte, codec int, src []byte) ([]byte, error) {
	switch codec {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		var r *gzip.Reader
		if v := gzipReaders.Get(); v != nil {
			r = v.(*gzip.Reader)
			if err := r.Reset(bytes.NewReader(src)); err != nil {
				return dst, err
			}
		} else {
			var err error
			if r, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
				return dst, err
			}
		}
		defer gzipReaders.Put(r)
		return readAllLimited(dst, r)
	case CompressionSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return xerialDecode(dst, src)
		}
		return snappyBlock(dst, src)
	case CompressionLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(r)
		r.Reset(bytes.NewReader(src))
		return readAllLimited(dst, r)
	case CompressionZstd:
		d := zstdDecs.Get().(*zstd.Decoder)
		defer zstdDecs.Put(d)
		out, err := d.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return dst, ErrDecompressedTooLarge
		}
		return out, err
	}
	return dst, fmt.Errorf("unknown codec %d", codec)
}

// readAllLimited appends everything r yields to dst, up to the limit.
func readAllLimited(dst []byte, r io.Reader) ([]byte, error) {
	start := len(dst)
	out := &appendWriter{b: dst}
	n, err := io.Copy(out, io.LimitReader(r, MaxDecompressedSize+1))
	if err != nil {
		return dst, err
	}
	if n > MaxDecompressedSize {
		return dst[:start], ErrDecompressedTooLarge
	}
	return out.b, nil
}

func snappyBlock(dst, src []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	if n > MaxDecompressedSize {
		return dst, ErrDecompressedTooLarge
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	got, err := s2.Decode(dst[start:], src)
	if err != nil {
		return dst[:start], err
	}
	if len(got) != n {
		return dst[:start], errors.New("snappy: decoded length mismatch")
	}
	return dst, nil
}

// xerialMagic starts the snappy framing of the Java xerial library: the
// magic, then a big endian version and minimum compatible version, then
// blocks of a big endian int32 length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

func xerialDecode(dst, src []byte) ([]byte, error) {
	if len(src) < xerialHeaderSize {
		return dst, errors.New("snappy: short xerial header")
	}
	start := len(dst)
	src = src[xerialHeaderSize:]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst[:start], errors.New("snappy: short xerial block length")
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst[:start], errors.New("snappy: xerial block past end of input")
		}
		var err error
		if dst, err = snappyBlock(dst, src[:n]); err != nil {
			return dst[:start], err
		}
		if len(dst)-start > MaxDecompressedSize {
			return dst[:start], ErrDecompressedTooLarge
		}
		src = src[n:]
	}
	return dst, nil
}

// AppendXerial appends src snappy-compressed in the xerial framing, the
// way the Java producer writes snappy batches, in blocks of blockSize
// input bytes (the Java library uses 32 KiB). Decompress reads it back.
func AppendXerial(dst, src []byte, blockSize int) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
	for len(src) > 0 {
		n := min(blockSize, len(src))
		lenAt := len(dst)
		dst = appendSnappy(append(dst, 0, 0, 0, 0), src[:n])
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
		src = src[n:]
	}
	return dst
}

// appendSnappy appends src as one raw snappy block.
func appendSnappy(dst, src []byte) []byte {
	need := s2.MaxEncodedLen(len(src))
	if need < 0 {
		panic("record: snappy input too large")
	}
	dst = growCap(dst, need)
	enc := s2.EncodeSnappy(dst[len(dst):len(dst)+need], src)
	return dst[:len(dst)+len(enc)]
}

// growCap makes sure dst has room for n more bytes without reallocating.
func growCap(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	grown := make([]byte, len(dst), len(dst)+n+len(dst)/4)
	copy(grown, dst)
	return grown
}
