package reqfuzz

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Shape describes a request frame compactly for a report: its API and
// version, then its fields, with long strings cut and each array shown as
// its length and its first element.
func Shape(b []byte) string {
	req, err := decodeFrame(b)
	if req == nil {
		return err.Error()
	}
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
	if err != nil {
		return name + ": does not decode: " + err.Error()
	}
	var sb strings.Builder
	sb.WriteString(name + " ")
	shape(&sb, reflectOf(req), 0)
	return sb.String()
}

// shape writes v's fields.
func shape(sb *strings.Builder, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			sb.WriteString("nil")
			return
		}
		shape(sb, v.Elem(), depth)
	case reflect.Struct:
		if v.Type() == tagsType {
			fmt.Fprintf(sb, "%d tags", v.Addr().Interface().(*kmsg.Tags).Len())
			return
		}
		sb.WriteString("{")
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && !(depth == 0 && f.Name == "Version") {
				fmt.Fprintf(sb, "%s:", f.Name)
				shape(sb, v.Field(i), depth+1)
				sb.WriteString(" ")
			}
		}
		sb.WriteString("}")
	case reflect.Slice:
		shapeSlice(sb, v, depth)
	case reflect.String:
		if s := v.String(); len(s) > 24 {
			fmt.Fprintf(sb, "%q...(%d bytes)", s[:24], len(s))
		} else {
			fmt.Fprintf(sb, "%q", s)
		}
	default:
		fmt.Fprintf(sb, "%v", v.Interface())
	}
}

func shapeSlice(sb *strings.Builder, v reflect.Value, depth int) {
	switch {
	case v.IsNil():
		sb.WriteString("null")
	case v.Type().Elem().Kind() == reflect.Uint8:
		fmt.Fprintf(sb, "%d bytes", v.Len())
	case v.Len() == 0:
		sb.WriteString("[]")
	default:
		fmt.Fprintf(sb, "[%d x ", v.Len())
		shape(sb, v.Index(0), depth+1)
		sb.WriteString("]")
	}
}
