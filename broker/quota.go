package broker

import (
	"time"

	"github.com/minikafka/minikafka-go/internal/quota"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
)

// metaQuotas reads client quotas from the node's current metadata state
// (the controller's State), so that an AlterClientQuotas applies as soon
// as the node has applied it.
type metaQuotas func() *metadata.Snapshot

func (state metaQuotas) ClientQuota(user, clientID, key string) (float64, bool) {
	return state().ClientQuota(user, clientID, key)
}

func (state metaQuotas) ClientQuotaScope(user, clientID, key string) (float64, bool, bool, bool) {
	return state().ClientQuotaScope(user, clientID, key)
}

// newQuotas is the node's client quota manager over the configured
// window, reading Config.ClientQuotas or else the metadata state, with its
// metrics registered.
func (n *Node) newQuotas() *quota.Manager {
	var src quota.Source = metaQuotas(n.meta.State)
	if n.cfg.ClientQuotas != nil {
		src = n.cfg.ClientQuotas
	}
	qm := quota.New(src, quota.Config{Samples: n.cfg.QuotaWindowNum,
		Window: time.Duration(n.cfg.QuotaWindowSizeSeconds) * time.Second})
	n.quotas = qm
	n.metrics.RegisterQuotas(func() []metrics.QuotaEntity { return quotaEntities(qm.Stats()) })
	return qm
}

// quotaEntities converts the manager's stats for the metrics registry.
func quotaEntities(stats []quota.EntityStats) []metrics.QuotaEntity {
	out := make([]metrics.QuotaEntity, len(stats))
	for i, s := range stats {
		e := metrics.QuotaEntity{
			User: s.User, ClientID: s.ClientID,
			ProduceByteRate: s.ProduceByteRate, FetchByteRate: s.FetchByteRate,
			RequestPercent: s.RequestPercent, MutationRate: s.MutationRate,
			ThrottleSeconds: make(map[string]float64, len(s.ThrottleMs)),
		}
		for _, k := range quota.Kinds() {
			e.ThrottleSeconds[k.String()] = s.ThrottleMs[k] / 1000
		}
		out[i] = e
	}
	return out
}
