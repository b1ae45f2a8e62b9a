package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka-go/client"
)

// formatHelp documents the --format syntax.
const formatHelp = `--format is printed once per record, followed by a newline:
  %v value    %k key    %p partition    %o offset
  %t topic    %T timestamp (Unix milliseconds)    %% a percent sign
  \n newline  \t tab    \\ a backslash
A missing key prints as nothing.`

// recordFormat is a parsed --format: literal text and fields in order.
type recordFormat struct {
	parts []formatPart
}

// formatPart is literal text (field 0) or one field (field = the
// directive's letter).
type formatPart struct {
	lit   string
	field byte
}

// parseFormat parses a --format template; an unknown directive or escape
// is an error naming it.
func parseFormat(s string) (recordFormat, error) {
	var f recordFormat
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			f.parts = append(f.parts, formatPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' && c != '\\' {
			lit.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return recordFormat{}, fmt.Errorf("--format %q ends with a lone %c", s, c)
		}
		i++
		d := s[i]
		switch {
		case c == '%' && d == '%':
			lit.WriteByte('%')
		case c == '%' && strings.IndexByte("vkpotT", d) >= 0:
			flush()
			f.parts = append(f.parts, formatPart{field: d})
		case c == '\\' && d == 'n':
			lit.WriteByte('\n')
		case c == '\\' && d == 't':
			lit.WriteByte('\t')
		case c == '\\' && d == '\\':
			lit.WriteByte('\\')
		default:
			return recordFormat{}, fmt.Errorf("--format %q: unknown %c%c (known: %%v %%k %%p %%o %%t %%T %%%% \\n \\t \\\\)", s, c, d)
		}
	}
	flush()
	return f, nil
}

// appendRecord appends r as the format says, and a newline.
func (f recordFormat) appendRecord(b []byte, r *client.Record) []byte {
	for _, p := range f.parts {
		switch p.field {
		case 0:
			b = append(b, p.lit...)
		case 'v':
			b = append(b, r.Value...)
		case 'k':
			b = append(b, r.Key...)
		case 'p':
			b = strconv.AppendInt(b, int64(r.Partition), 10)
		case 'o':
			b = strconv.AppendInt(b, r.Offset, 10)
		case 't':
			b = append(b, r.Topic...)
		case 'T':
			b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
		}
	}
	return append(b, '\n')
}
