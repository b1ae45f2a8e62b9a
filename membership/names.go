package membership

import (
	"strconv"
	"strings"
)

// nodeNamePrefix starts every memberlist node name: broker id N is "node-N".
const nodeNamePrefix = "node-"

// NodeName is the memberlist node name of broker id: "node-<id>".
func NodeName(id int32) string { return nodeNamePrefix + strconv.FormatInt(int64(id), 10) }

// parseNodeName is the inverse of NodeName.
func parseNodeName(name string) (int32, bool) {
	rest, ok := strings.CutPrefix(name, nodeNamePrefix)
	if !ok {
		return 0, false
	}
	return parseID(rest)
}

func parseID(s string) (int32, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != s {
		return 0, false
	}
	return int32(v), true
}
