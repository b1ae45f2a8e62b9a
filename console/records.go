package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxShownBytes is how much of one key, value or header value is shown.
const maxShownBytes = 16 << 10

// field is a key, value or header value as shown: text when it is valid
// UTF-8 without control characters, JSON pretty-printed when it parses,
// hex otherwise. Bytes is its full length; Truncated says the shown form
// covers only the first maxShownBytes.
type field struct {
	Kind      string `json:"kind"` // text, json, hex, null
	Text      string `json:"text"`
	Bytes     int    `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
}

type headerRow struct {
	Key   string `json:"key"`
	Value field  `json:"value"`
}

type recordRow struct {
	Offset    int64       `json:"offset"`
	Timestamp int64       `json:"timestamp"` // Unix milliseconds
	Key       field       `json:"key"`
	Value     field       `json:"value"`
	Headers   []headerRow `json:"headers"`
}

type recordsResp struct {
	Topic     string      `json:"topic"`
	Partition int32       `json:"partition"`
	From      int64       `json:"from"` // the offset the browse started at
	Start     int64       `json:"start"`
	End       int64       `json:"end"`
	Records   []recordRow `json:"records"`
	// Next is the offset after the last record shown; Capped says the
	// browse stopped at the record or byte cap before the end.
	Next   int64 `json:"next"`
	Capped bool  `json:"capped"`
}

// browseReq is a browse: from Offset, or from the first record at or
// after Time (Unix milliseconds) when Time >= 0.
type browseReq struct {
	Topic     string
	Partition int32
	Offset    int64
	Time      int64
	Limit     int
}

func parseBrowse(r *http.Request, maxRecords int) (browseReq, error) {
	q := r.URL.Query()
	b := browseReq{Topic: q.Get("topic"), Time: -1, Limit: min(50, maxRecords)}
	num := func(name string, bits int, set func(int64)) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: %s=%q", ErrBadRequest, name, v)
		}
		set(n)
		return nil
	}
	if b.Topic == "" {
		return b, fmt.Errorf("%w: topic missing", ErrBadRequest)
	}
	for _, err := range []error{
		num("partition", 32, func(n int64) { b.Partition = int32(n) }),
		num("offset", 64, func(n int64) { b.Offset = n }),
		num("time", 64, func(n int64) { b.Time = n }),
		num("limit", 32, func(n int64) { b.Limit = min(max(int(n), 1), maxRecords) }),
	} {
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// records browses a partition: at most the limit asked (capped at
// MaxRecords) and MaxBrowseBytes of record bytes, within the request
// timeout.
func (c *Console) records(ctx context.Context, a *access, r *http.Request) (any, error) {
	b, err := parseBrowse(r, c.cfg.MaxRecords)
	if err != nil {
		return nil, err
	}
	select {
	case c.browses <- struct{}{}:
		defer func() { <-c.browses }()
	default:
		return nil, ErrBusy
	}
	out := recordsResp{Topic: b.Topic, Partition: b.Partition, Records: []recordRow{}}
	if out.Start, out.End, err = bounds(ctx, a, b.Topic, b.Partition); err != nil {
		return nil, err
	}
	out.From = max(b.Offset, out.Start)
	if b.Time >= 0 {
		if out.From, err = offsetAfter(ctx, a, b); err != nil {
			return nil, err
		}
	}
	out.Next = out.From
	if out.From >= out.End {
		return out, nil
	}
	cl, err := kgo.NewClient(append(a.opts[:len(a.opts):len(a.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{b.Topic: {b.Partition: kgo.NewOffset().At(out.From)}}),
		kgo.FetchMaxBytes(int32(c.cfg.MaxBrowseBytes)), kgo.FetchMaxPartitionBytes(int32(c.cfg.MaxBrowseBytes)),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("console: browse client: %w", err)
	}
	defer cl.Close()
	if err := c.poll(ctx, cl, &out, b.Limit); err != nil {
		return nil, err
	}
	return out, nil
}

// How long a browse waits for more records before it takes the rest of
// the partition to hold none it can show (transaction markers up to the
// end): longer for the first, which may need new connections.
const (
	browseFirstIdle = 5 * time.Second
	browseIdle      = 2 * time.Second
)

// poll reads records into out until the partition's end, the limit or
// the byte cap; out.Capped tells whether a cap stopped it.
func (c *Console) poll(ctx context.Context, cl *kgo.Client, out *recordsResp, limit int) error {
	size := 0
	capped := func() bool { return len(out.Records) >= limit || size >= c.cfg.MaxBrowseBytes }
	for out.Next < out.End && !capped() {
		idle := browseIdle
		if len(out.Records) == 0 {
			idle = browseFirstIdle
		}
		pctx, cancel := context.WithTimeout(ctx, idle)
		fs := cl.PollRecords(pctx, limit-len(out.Records))
		cancel()
		if err := ctx.Err(); err != nil {
			if len(out.Records) > 0 {
				break // show what arrived in time
			}
			return err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			if errors.Is(errs[0].Err, context.DeadlineExceeded) {
				break // nothing more to show before the end
			}
			return errs[0].Err
		}
		for _, rec := range fs.Records() {
			if capped() {
				break
			}
			size += len(rec.Key) + len(rec.Value)
			out.Records = append(out.Records, row(rec))
			out.Next = rec.Offset + 1
		}
	}
	out.Capped = out.Next < out.End && capped()
	return nil
}

// bounds are a partition's start and end offsets.
func bounds(ctx context.Context, a *access, topic string, p int32) (start, end int64, err error) {
	starts, err := a.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	ends, err := a.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	s, okS := starts.Lookup(topic, p)
	e, okE := ends.Lookup(topic, p)
	switch {
	case !okS || !okE:
		return 0, 0, fmt.Errorf("%s-%d: %w", topic, p, ErrNotFound)
	case s.Err != nil:
		return 0, 0, s.Err
	case e.Err != nil:
		return 0, 0, e.Err
	}
	return s.Offset, e.Offset, nil
}

// offsetAfter is the offset of the first record at or after b.Time, or
// the end when there is none.
func offsetAfter(ctx context.Context, a *access, b browseReq) (int64, error) {
	offs, err := a.adm.ListOffsetsAfterMilli(ctx, b.Time, b.Topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(b.Topic, b.Partition)
	if !ok {
		return 0, fmt.Errorf("%s-%d: %w", b.Topic, b.Partition, ErrNotFound)
	}
	return o.Offset, o.Err
}

func row(rec *kgo.Record) recordRow {
	rr := recordRow{Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), Key: show(rec.Key), Value: show(rec.Value),
		Headers: []headerRow{}}
	for _, h := range rec.Headers {
		rr.Headers = append(rr.Headers, headerRow{Key: h.Key, Value: show(h.Value)})
	}
	return rr
}

// show renders bytes as a field: null for nil, JSON pretty-printed when
// the bytes are a JSON object or array, text when printable UTF-8, hex
// otherwise.
func show(b []byte) field {
	if b == nil {
		return field{Kind: "null"}
	}
	f := field{Bytes: len(b)}
	if len(b) > maxShownBytes {
		b, f.Truncated = b[:maxShownBytes], true
	}
	trimmed := bytes.TrimSpace(b)
	if !f.Truncated && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		var buf bytes.Buffer
		if json.Indent(&buf, trimmed, "", "  ") == nil {
			f.Kind, f.Text = "json", buf.String()
			return f
		}
	}
	if printable(b, f.Truncated) {
		f.Kind, f.Text = "text", string(b)
		return f
	}
	f.Kind, f.Text = "hex", hex.EncodeToString(b)
	return f
}

// printable reports whether b is UTF-8 text without control characters
// other than tab and line breaks; cut allows a rune cut at the end.
func printable(b []byte, cut bool) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return cut && len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
		b = b[n:]
	}
	return true
}
