package groupcoord

import (
	"cmp"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sync"
)

// The topics a consumer group subscribes to. A regex subscription (which,
// as in Kafka, matches whole topic names, internal ones too) is resolved
// when a member with that regex heartbeats, keeping the topics that
// member may DESCRIBE (Kafka resolves a regex with the context of the
// member that asked for it); the result is the group's until another
// such heartbeat. A regex not resolved on this coordinator yet (after a
// failover, or on a timer's op) keeps the topics its member's target
// already holds, so nobody gets a topic no member was allowed to see.

// regexCache holds each consumer group's resolved regexes on this
// coordinator, and each regex's matches among every topic while a
// VersionedTopics source says the topics did not change, so that a regex
// member's heartbeat costs its matches, not the cluster's topics.
type regexCache struct {
	mu      sync.Mutex // guards groups and matches; a leaf lock
	groups  map[string]map[string][]string
	matches map[string]regexMatches // at most maxRegexMatches regexes
}

type regexMatches struct {
	version uint64   // the source's Version when they were found
	names   []string // sorted; never changed once stored
}

// maxRegexMatches bounds the regexes whose matches are kept; past it the
// cache starts over.
const maxRegexMatches = 1024

// matching is every topic whose name re (the regex s) matches, sorted.
func (c *Coordinator) matching(s string, re *regexp.Regexp) []string {
	vt, versioned := c.cfg.Topics.(VersionedTopics)
	var version uint64
	if versioned {
		version = vt.Version() // before All: a change after it moves Version again
		c.regex.mu.Lock()
		m, ok := c.regex.matches[s]
		c.regex.mu.Unlock()
		if ok && m.version == version {
			return m.names
		}
	}
	var names []string
	for _, t := range c.cfg.Topics.All() {
		if re.MatchString(t.Name) {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	if versioned {
		c.regex.mu.Lock()
		if len(c.regex.matches) >= maxRegexMatches {
			clear(c.regex.matches)
		}
		c.regex.matches[s] = regexMatches{version: version, names: names}
		c.regex.mu.Unlock()
	}
	return names
}

// regexes returns a copy of a group's resolved regexes.
func (c *Coordinator) regexes(group string) map[string][]string {
	c.regex.mu.Lock()
	defer c.regex.mu.Unlock()
	return maps.Clone(c.regex.groups[group])
}

// keepRegexes stores an op's resolved regexes once its records are
// written (nil: the group is gone).
func (c *Coordinator) keepRegexes(group string, resolved map[string][]string) {
	c.regex.mu.Lock()
	defer c.regex.mu.Unlock()
	if resolved == nil {
		delete(c.regex.groups, group)
		return
	}
	c.regex.groups[group] = resolved
}

// topicCache looks up the topics one op names, each name once, so that
// the op sees one answer per topic and costs what it names, not the
// cluster's size.
type topicCache struct {
	src    TopicSource
	byName map[string]cachedTopic
}

type cachedTopic struct {
	t  TopicInfo
	ok bool
}

func newTopicCache(src TopicSource) topicCache {
	return topicCache{src: src, byName: make(map[string]cachedTopic)}
}

// get returns the topic of that name, if it exists.
func (c topicCache) get(name string) (TopicInfo, bool) {
	e, seen := c.byName[name]
	if !seen {
		e.t, e.ok = c.src.Topic(name)
		c.byName[name] = e
	}
	return e.t, e.ok
}

// byID returns the topic with that id, if it exists.
func (c topicCache) byID(id TopicID) (TopicInfo, bool) {
	t, ok := c.src.TopicByID(id)
	if ok {
		c.byName[t.Name] = cachedTopic{t, true}
	}
	return t, ok
}

// name is the name of the topic with that id ("" if there is none).
func (c topicCache) name(id TopicID) string {
	t, _ := c.byID(id)
	return t.Name
}

// subset is the named topics that exist, by name, for the assignors.
func (c topicCache) subset(names []string) map[string]TopicInfo {
	out := make(map[string]TopicInfo, len(names))
	for _, n := range names {
		if t, ok := c.get(n); ok {
			out[n] = t
		}
	}
	return out
}

// resolveSelf resolves the regex of the op's own member, if it has one,
// with the member's permissions.
func (op *consumerOp) resolveSelf() {
	m := op.g.Members[op.self]
	if m == nil || m.Regex == nil {
		return
	}
	re, err := compileRegex(*m.Regex)
	if err != nil {
		return // validated when subscribed
	}
	var out []string
	for _, name := range op.c.matching(*m.Regex, re) {
		if op.canDescribe == nil || op.canDescribe(name) {
			out = append(out, name)
		}
	}
	op.resolved[*m.Regex] = out
	for re := range op.resolved { // forget the regexes no member uses
		if !slices.ContainsFunc(slices.Collect(maps.Values(op.g.Members)), func(m *ConsumerMember) bool { return deref(m.Regex) == re }) {
			delete(op.resolved, re)
		}
	}
}

// memberTopics are the existing topics a member subscribes to, by name
// or regex, sorted.
func (op *consumerOp) memberTopics(m *ConsumerMember) []string {
	set := make(map[string]bool)
	for _, t := range m.Topics {
		if _, ok := op.topics.get(t); ok {
			set[t] = true
		}
	}
	if m.Regex != nil {
		if ts, ok := op.resolved[*m.Regex]; ok {
			for _, t := range ts {
				if _, ok := op.topics.get(t); ok {
					set[t] = true
				}
			}
		} else {
			op.keepTargetTopics(m, set)
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// keepTargetTopics adds the topics of m's target that its regex matches.
func (op *consumerOp) keepTargetTopics(m *ConsumerMember, set map[string]bool) {
	re, err := compileRegex(*m.Regex)
	if err != nil {
		return
	}
	for id := range m.Target {
		if t, ok := op.topics.byID(id); ok && re.MatchString(t.Name) {
			set[t.Name] = true
		}
	}
}

func (op *consumerOp) subscribedTopics() []string {
	set := make(map[string]bool)
	for _, m := range op.g.Members {
		for _, t := range op.memberTopics(m) {
			set[t] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// metadataHash identifies the subscribed topics' ids and partition
// counts: when it changes, the group needs a new assignment (KIP-1101's
// idea; the value is ours). 0 for no topics.
func (op *consumerOp) metadataHash(names []string) int64 { return topicsHash(op.topics, names) }

// topicsHash is metadataHash over the topics the cache finds (share
// groups use it too).
func topicsHash(topics topicCache, names []string) int64 {
	if len(names) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, n := range names {
		t, _ := topics.get(n)
		h.Write([]byte(n))
		h.Write(t.ID[:])
		h.Write([]byte{byte(t.Partitions >> 24), byte(t.Partitions >> 16), byte(t.Partitions >> 8), byte(t.Partitions), 0})
	}
	return int64(cmp.Or(h.Sum64(), 1))
}

func compileRegex(s string) (*regexp.Regexp, error) { return regexp.Compile("^(?:" + s + ")$") }
