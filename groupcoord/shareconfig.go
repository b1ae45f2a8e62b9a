package groupcoord

import (
	"errors"
	"time"

	"github.com/minikafka/minikafka-go/internal/knob"
)

// Defaults of ShareConfig's zero fields, Kafka's own.
const (
	DefaultShareSessionTimeout    = 45 * time.Second // group.share.session.timeout.ms
	DefaultShareHeartbeatInterval = 5 * time.Second  // group.share.heartbeat.interval.ms
	DefaultShareMaxSize           = 200              // group.share.max.size
	// MaxShareMaxSize is the highest group.share.max.size Kafka accepts.
	MaxShareMaxSize = 1000
)

// ShareConfig tunes KIP-932 share groups; zero fields take Kafka's
// defaults.
type ShareConfig struct {
	// SessionTimeout is every member's session timeout
	// (group.share.session.timeout.ms): a member that does not heartbeat
	// for that long is removed by the coordinator leader.
	SessionTimeout time.Duration

	// HeartbeatInterval is the interval given to members
	// (group.share.heartbeat.interval.ms), below SessionTimeout.
	HeartbeatInterval time.Duration

	// MaxSize bounds the members of a share group (group.share.max.size,
	// at most 1000 as in Kafka); more get GROUP_MAX_SIZE_REACHED.
	MaxSize int
}

// WithDefaults validates c and fills in its defaults.
func (c ShareConfig) WithDefaults() (ShareConfig, error) {
	err := knob.Check([]knob.Duration{
		{Name: "SessionTimeout", V: &c.SessionTimeout, Def: DefaultShareSessionTimeout, Min: time.Millisecond},
		{Name: "HeartbeatInterval", V: &c.HeartbeatInterval, Def: DefaultShareHeartbeatInterval, Min: time.Millisecond},
	}, []knob.Int{
		{Name: "MaxSize", V: &c.MaxSize, Def: DefaultShareMaxSize, Min: 1, Max: MaxShareMaxSize},
	})
	if ke, ok := errors.AsType[*knob.Error](err); ok {
		return c, &ConfigError{Field: "Share." + ke.Name, Reason: ke.Msg}
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return c, &ConfigError{Field: "Share.HeartbeatInterval", Reason: "not below SessionTimeout"}
	}
	return c, nil
}
