// Package topicconfig holds Kafka's topic configs: their names, types,
// Kafka's defaults, the broker configs that supply cluster-wide and static
// defaults (Kafka's synonyms), and a validator for each value.
//
// A caller's duties, in order:
//
//  1. Validate every config a client asks to store, before it is stored:
//     ValidateAll for a topic's overrides, ValidateBroker for a cluster-wide
//     default (a broker config with an empty resource name). Errors wrap
//     kerr.InvalidConfig and read like Kafka's.
//  2. Resolve a topic's typed Config from its overrides, the cluster-wide
//     dynamic defaults and the node's static broker configs whenever it acts
//     on one (retention, segment rolling, batch limits, write caching);
//     Describe gives the same value with every source, for
//     DescribeConfigs.
//
// Precedence, as in Kafka: the topic's override, then the dynamic
// cluster default (under the broker synonym's name, for example
// log.retention.ms), then the node's static value (same name), then
// Kafka's default. Among a config's time synonyms the finest unit wins
// (log.retention.ms over log.retention.minutes over log.retention.hours).
// A stored value that no longer validates is skipped, so a bad value from
// an older build cannot break resolution.
package topicconfig
