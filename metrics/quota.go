package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// QuotaEntity is what a node measures of one client quota entity (a user
// and client id; internal/quota's EntityStats).
type QuotaEntity struct {
	User, ClientID  string
	ProduceByteRate float64 // bytes per second
	FetchByteRate   float64 // bytes per second
	RequestPercent  float64 // request handling time, % of one thread
	MutationRate    float64 // partitions created or deleted per second
	// ThrottleSeconds is the mean throttle given in the window, by quota type
	// (produce, fetch, request, controller_mutation).
	ThrottleSeconds map[string]float64
}

var (
	quotaLabels        = []string{"user", "client_id"}
	quotaTypeLabels    = []string{"type", "user", "client_id"}
	descQuotaByteRate  = desc("quota_byte_rate", "Bytes per second of a client (user, client id) over the quota window: type=produce counts its Produce requests, type=fetch its Fetch responses (Kafka's byte-rate).", quotaTypeLabels...)
	descQuotaRequest   = desc("quota_request_time_percent", "Request handling time of a client over the quota window, in percent of one thread (Kafka's request-time, against request_percentage).", quotaLabels...)
	descQuotaMutations = desc("quota_mutation_rate", "Partitions a client created or deleted per second over the quota window (Kafka's mutation-rate, against controller_mutation_rate).", quotaLabels...)
	descQuotaThrottle  = desc("quota_throttle_time_seconds", "Mean throttle given to a client's throttled responses over the quota window, by quota type (Kafka's throttle-time).", quotaTypeLabels...)
)

// quotaCollector reads the node's quota entities at each scrape. Their
// number, and so the series', is bounded by the quota manager's entity
// cap.
type quotaCollector struct{ read func() []QuotaEntity }

// RegisterQuotas adds the client quota metrics, read from read at every
// scrape. Call it at most once.
func (r *Registry) RegisterQuotas(read func() []QuotaEntity) {
	r.reg.MustRegister(quotaCollector{read: read})
}

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQuotaByteRate, descQuotaRequest, descQuotaMutations, descQuotaThrottle} {
		ch <- d
	}
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	g := prometheus.GaugeValue
	for _, e := range c.read() {
		ch <- prometheus.MustNewConstMetric(descQuotaByteRate, g, e.ProduceByteRate, "produce", e.User, e.ClientID)
		ch <- prometheus.MustNewConstMetric(descQuotaByteRate, g, e.FetchByteRate, "fetch", e.User, e.ClientID)
		ch <- prometheus.MustNewConstMetric(descQuotaRequest, g, e.RequestPercent, e.User, e.ClientID)
		ch <- prometheus.MustNewConstMetric(descQuotaMutations, g, e.MutationRate, e.User, e.ClientID)
		for typ, sec := range e.ThrottleSeconds {
			ch <- prometheus.MustNewConstMetric(descQuotaThrottle, g, sec, typ, e.User, e.ClientID)
		}
	}
}
