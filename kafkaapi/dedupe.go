package kafkaapi

import "github.com/twmb/franz-go/pkg/kmsg"

// Kafka reads a Fetch's or a Produce's partitions into a map keyed by
// topic-partition (FetchRequest.fetchData builds a LinkedHashMap;
// KafkaApis.handleProduceRequest a map of batches), so a partition named
// twice is read, or appended to, once, as its last entry asks, and
// answered once. collapse does the same to a request's topics.

// topicPartition names a partition of a request.
type topicPartition struct {
	topic     string
	partition int32
}

// requestTopics is how collapse reads and builds one API's topic entries,
// of type T with partition entries of type P.
type requestTopics[T, P any] struct {
	name      func(*T) string
	parts     func(*T) *[]P
	partition func(*P) int32
	// byTopic gathers a topic's partitions under its first entry, as
	// Kafka's ProduceResponse does; otherwise only an entry right after
	// one of the same topic joins it, as Kafka's FetchResponse does.
	byTopic bool
}

// collapse returns topics with each partition named once: where it first
// appears, with its last entry's fields. Topics without partitions go, as
// they are not in Kafka's map either. It returns topics itself when
// nothing changes.
func collapse[T, P any](topics []T, rt requestTopics[T, P]) []T {
	if !rt.needsCollapse(topics) {
		return topics
	}
	type at struct{ topic, part int }
	seen := make(map[topicPartition]at)
	firstOf := make(map[string]int) // byTopic: a topic's entry in out
	var out []T
	for ti := range topics {
		t := &topics[ti]
		name := rt.name(t)
		for _, p := range *rt.parts(t) {
			k := topicPartition{name, rt.partition(&p)}
			if a, ok := seen[k]; ok {
				(*rt.parts(&out[a.topic]))[a.part] = p
				continue
			}
			oi, ok := firstOf[name]
			if !rt.byTopic {
				oi, ok = len(out)-1, len(out) > 0 && rt.name(&out[len(out)-1]) == name
			}
			if !ok {
				nt := *t
				*rt.parts(&nt) = nil
				out = append(out, nt)
				oi = len(out) - 1
				firstOf[name] = oi
			}
			ps := rt.parts(&out[oi])
			seen[k] = at{oi, len(*ps)}
			*ps = append(*ps, p)
		}
	}
	return out
}

// needsCollapse reports whether collapse would change topics: a
// partition named twice, a topic without partitions, or a topic entry
// that would join an earlier one.
func (rt requestTopics[T, P]) needsCollapse(topics []T) bool {
	n := 0
	for ti := range topics {
		n += len(*rt.parts(&topics[ti]))
	}
	seen := make(map[topicPartition]struct{}, n)
	names := make(map[string]struct{}, len(topics))
	for ti := range topics {
		t := &topics[ti]
		name := rt.name(t)
		_, again := names[name]
		if len(*rt.parts(t)) == 0 || (rt.byTopic && again) || (ti > 0 && rt.name(&topics[ti-1]) == name) {
			return true
		}
		names[name] = struct{}{}
		for _, p := range *rt.parts(t) {
			k := topicPartition{name, rt.partition(&p)}
			if _, ok := seen[k]; ok {
				return true
			}
			seen[k] = struct{}{}
		}
	}
	return false
}

var fetchTopics = requestTopics[kmsg.FetchRequestTopic, kmsg.FetchRequestTopicPartition]{
	name:      func(t *kmsg.FetchRequestTopic) string { return t.Topic },
	parts:     func(t *kmsg.FetchRequestTopic) *[]kmsg.FetchRequestTopicPartition { return &t.Partitions },
	partition: func(p *kmsg.FetchRequestTopicPartition) int32 { return p.Partition },
}

var produceTopics = requestTopics[kmsg.ProduceRequestTopic, kmsg.ProduceRequestTopicPartition]{
	name:      func(t *kmsg.ProduceRequestTopic) string { return t.Topic },
	parts:     func(t *kmsg.ProduceRequestTopic) *[]kmsg.ProduceRequestTopicPartition { return &t.Partitions },
	partition: func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition },
	byTopic:   true,
}
