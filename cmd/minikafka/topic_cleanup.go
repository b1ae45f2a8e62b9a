package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/minikafka/minikafka-go/client"
)

// dirtyRatiosConfig is the broker config in which a node reports the dirty
// ratio of each partition of a compacted topic it leads, as
// topic:partition=ratio, comma-separated (kafkabackend.DirtyRatiosConfig).
const dirtyRatiosConfig = "minikafka.log.cleaner.dirty.ratios"

// partitionKey names a partition.
type partitionKey struct {
	topic     string
	partition int32
}

// cleanupPolicy is a topic's cleanup.policy among its configs, and whether
// it compacts.
func cleanupPolicy(configs []client.TopicConfig) (policy string, compacted bool) {
	for _, c := range configs {
		if c.Name == "cleanup.policy" {
			return c.Value, slices.Contains(strings.Split(c.Value, ","), "compact")
		}
	}
	return "", false
}

// dirtyRatios asks the leader of each partition of the compacted topics
// for its dirty ratio, as the leader's cleaner sees it. A leader that does
// not answer, or no longer leads the partition, leaves it out (shown as ?).
func dirtyRatios(ctx context.Context, adm *client.Admin, topics []client.TopicDetail, configs map[string][]client.TopicConfig) map[partitionKey]string {
	byNode := map[int32]map[partitionKey]string{}
	out := map[partitionKey]string{}
	for _, t := range topics {
		if _, compacted := cleanupPolicy(configs[t.Name]); !compacted {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				continue
			}
			ratios, asked := byNode[p.Leader]
			if !asked {
				if cfg, err := adm.DescribeBrokerConfigs(ctx, p.Leader); err == nil {
					ratios = parseDirtyRatios(cfg[dirtyRatiosConfig])
				}
				byNode[p.Leader] = ratios
			}
			k := partitionKey{t.Name, p.Partition}
			if r, ok := ratios[k]; ok {
				out[k] = r
			}
		}
	}
	return out
}

// parseDirtyRatios reads dirtyRatiosConfig's value; topic names hold no
// ':', ',' or '=', and entries that do not parse are left out.
func parseDirtyRatios(v string) map[partitionKey]string {
	out := map[partitionKey]string{}
	for _, e := range strings.Split(v, ",") {
		tp, ratio, ok := strings.Cut(e, "=")
		topic, p, ok2 := strings.Cut(tp, ":")
		n, err := strconv.ParseInt(p, 10, 32)
		if !ok || !ok2 || err != nil {
			continue
		}
		out[partitionKey{topic, int32(n)}] = ratio
	}
	return out
}

// writeCleanup prints each topic's cleanup.policy and, for a compacted
// topic, a row per partition with its dirty ratio from its leader.
func writeCleanup(w io.Writer, topics []client.TopicDetail, configs map[string][]client.TopicConfig, ratios map[partitionKey]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, t := range topics {
		cs, ok := configs[t.Name]
		if !ok {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nTOPIC\tCLEANUP.POLICY\tPARTITION\tDIRTY.RATIO")
			header = true
		}
		policy, compacted := cleanupPolicy(cs)
		if !compacted {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\n", t.Name, policy)
			continue
		}
		for _, p := range t.Partitions {
			r, ok := ratios[partitionKey{t.Name, p.Partition}]
			if !ok {
				r = "?"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.Name, policy, p.Partition, r)
		}
	}
	tw.Flush()
}
