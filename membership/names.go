package membership

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
)

// nodeNamePrefix starts every memberlist node name: broker id N is "node-N".
const nodeNamePrefix = "node-"

// NodeName is the memberlist node name of broker id: "node-<id>".
func NodeName(id int32) string { return nodeNamePrefix + strconv.FormatInt(int64(id), 10) }

// ServerID is the Raft server ID of broker id: its decimal form.
func ServerID(id int32) raft.ServerID { return raft.ServerID(strconv.FormatInt(int64(id), 10)) }

// ParseServerID is the inverse of ServerID. It accepts only the canonical
// decimal form of a positive int32 ("7", not "07" or "+7"); other input
// gives an error wrapping ErrInvalidID.
func ParseServerID(s raft.ServerID) (int32, error) {
	id, ok := parseID(string(s))
	if !ok {
		return 0, fmt.Errorf("%w: server id %q is not a positive int32", ErrInvalidID, string(s))
	}
	return id, nil
}

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
