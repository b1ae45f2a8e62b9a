package kafkaapi

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiRow is one row of docs/protocol-apis.md: "| key | name | served |".
var apiRow = regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| (no|\d+-\d+) \|`)

// The table of API keys in docs/protocol-apis.md lists every key kmsg
// knows, once, in order, under kmsg's name, and its served versions are
// exactly those ApiVersions advertises.
func TestProtocolAPIsTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol-apis.md")
	if err != nil {
		t.Fatal(err)
	}
	advertised := map[int16]string{}
	for _, k := range supportedAPIKeys() {
		advertised[k.ApiKey] = fmt.Sprintf("%d-%d", k.MinVersion, k.MaxVersion)
	}
	rows := apiRow.FindAllStringSubmatch(string(doc), -1)
	next := int16(0)
	for _, r := range rows {
		key, _ := strconv.Atoi(r[1])
		for ; next < int16(key); next++ {
			if kmsg.RequestForKey(next) != nil {
				t.Errorf("key %d (%s) is not in the table", next, kmsg.NameForKey(next))
			}
		}
		if int16(key) != next {
			t.Fatalf("key %d listed out of order or twice", key)
		}
		next++
		if name := kmsg.NameForKey(int16(key)); kmsg.RequestForKey(int16(key)) == nil || name != r[2] {
			t.Errorf("key %d is %q in the table, %q in kmsg", key, r[2], name)
		}
		want, served := advertised[int16(key)]
		switch {
		case served && r[3] != want:
			t.Errorf("%s: the table says %s, ApiVersions advertises %s", r[2], r[3], want)
		case !served && r[3] != "no":
			t.Errorf("%s: the table says %s, ApiVersions does not advertise it", r[2], r[3])
		}
		delete(advertised, int16(key))
	}
	for k := next; k < next+64; k++ {
		if kmsg.RequestForKey(k) != nil {
			t.Errorf("key %d (%s) is not in the table", k, kmsg.NameForKey(k))
		}
	}
	for k, v := range advertised {
		t.Errorf("key %d (versions %s) is advertised but not in the table", k, v)
	}
}
