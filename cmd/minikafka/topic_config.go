package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// parseConfigs reads repeated k=v flag values into a map.
func parseConfigs(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--%s wants NAME=VALUE, got %q", flag, kv)
		}
		if _, dup := m[k]; dup {
			return nil, usageErrorf("--%s names %s twice", flag, k)
		}
		m[k] = v
	}
	return m, nil
}

// configError explains a config the broker refused; other errors pass
// through explain.
func (a *app) configError(ctx context.Context, topic string, err error) error {
	var ke *client.KafkaError
	switch {
	case errors.Is(err, client.ErrUnknownTopicOrPartition):
		return &TopicNotFoundError{Topic: topic}
	case errors.Is(err, client.ErrInvalidTopicConfig) && errors.As(err, &ke) && ke.Message != "":
		return fmt.Errorf("invalid config for topic %q: %s", topic, ke.Message)
	case errors.Is(err, client.ErrInvalidRequest) && errors.As(err, &ke) && ke.Message != "":
		return fmt.Errorf("bad config change for topic %q: %s", topic, ke.Message)
	}
	return a.explain(ctx, err)
}

func (a *app) topicAlterConfigCommand() *cobra.Command {
	var sets, dels []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME [--set NAME=VALUE]... [--delete NAME]...",
		Short: "Set or delete a topic's config overrides (Kafka's names, e.g. retention.ms)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := parseConfigs("set", sets)
			if err != nil {
				return err
			}
			if len(set) == 0 && len(dels) == 0 {
				return usageErrorf("nothing to change: give --set NAME=VALUE or --delete NAME")
			}
			topic := args[0]
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := adm.AlterTopicConfigs(ctx, topic, set, dels); err != nil {
					return a.configError(ctx, topic, err)
				}
				fmt.Fprintf(a.stdout, "altered configs of topic %q\n", topic)
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "a config to set, NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&dels, "delete", nil, "a config override to remove (repeatable)")
	return cmd
}

// writeConfigs prints each topic's configs that are not Kafka's default,
// with where their value comes from.
func writeConfigs(w io.Writer, configs map[string][]client.TopicConfig, order []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, topic := range order {
		for _, c := range configs[topic] {
			if c.Source == client.SourceDefault {
				continue
			}
			if !header {
				fmt.Fprintln(tw, "\nTOPIC\tCONFIG\tVALUE\tSOURCE")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", topic, c.Name, c.Value, sourceName(c.Source))
		}
	}
	tw.Flush()
}

// sourceName says where a config's value comes from.
func sourceName(s client.ConfigSource) string {
	switch s {
	case client.SourceTopic:
		return "topic"
	case client.SourceClusterDefault:
		return "cluster default"
	case client.SourceStaticBroker:
		return "broker config"
	case client.SourceDefault:
		return "default"
	}
	return s.String()
}
