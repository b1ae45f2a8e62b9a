package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// app is one command line being run: its streams, the global flags, and
// the dial watcher of the command that runs.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	brokers []string      // --brokers
	timeout time.Duration // --timeout

	tlsCA         string // --tls-ca: PEM CA file; set means TLS
	saslMechanism string // --sasl-mechanism
	saslUser      string // --sasl-user
	saslPassword  string // --sasl-password

	sig   context.Context // the caller's context: done means interrupted
	reach *reach
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "minikafka",
		Short: "Command-line client for a MiniKafka cluster",
		Long: `minikafka talks to a MiniKafka cluster (or any Kafka-compatible broker)
over the Kafka protocol: topics, produce, consume (alone or in a consumer
group), consumer groups, cluster status.

Errors are one line on stderr. Exit status: 0 ok, 1 failure, 2 bad usage,
130 interrupted.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRunE,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.checkGlobals()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	root.CompletionOptions.DisableDefaultCmd = true
	pf := root.PersistentFlags()
	pf.StringSliceVar(&a.brokers, "brokers", []string{"127.0.0.1:9092"}, "seed brokers, comma-separated host:port")
	pf.DurationVar(&a.timeout, "timeout", 10*time.Second, "how long to wait for the cluster (connecting, metadata, each record's delivery)")
	pf.StringVar(&a.tlsCA, "tls-ca", "", "connect with TLS, trusting the CA certificates in this PEM file")
	pf.StringVar(&a.saslMechanism, "sasl-mechanism", "", "authenticate with SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	pf.StringVar(&a.saslUser, "sasl-user", "", "SASL user name")
	pf.StringVar(&a.saslPassword, "sasl-password", "", "SASL password (default: $MINIKAFKA_SASL_PASSWORD)")

	root.AddCommand(a.topicCommand(), a.produceCommand(), a.consumeCommand(), a.groupCommand(), a.shareGroupCommand(), a.txnCommand(),
		a.clusterCommand(), a.userCommand(), a.aclCommand(), a.quotaCommand(), a.partitionCommand(), a.nodeCommand(), a.certsCommand())
	return root
}

// commandGroup is a command that only groups subs (groupRunE).
func commandGroup(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRunE}
	cmd.AddCommand(subs...)
	return cmd
}

// groupRunE runs a command that only groups others: alone it prints help;
// with an argument it names a subcommand that does not exist.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
}

// usageArgs makes an argument validator's errors usage errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &usageError{err: err}
		}
		return nil
	}
}

func (a *app) checkGlobals() error {
	if len(a.brokers) == 0 {
		return usageErrorf("--brokers: at least one broker is needed")
	}
	for i, b := range a.brokers {
		b = strings.TrimSpace(b)
		a.brokers[i] = b
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			return usageErrorf("--brokers: %q is not host:port", b)
		}
	}
	if a.timeout <= 0 {
		return usageErrorf("--timeout must be positive, got %v", a.timeout)
	}
	return a.checkSecurity()
}

func (a *app) checkSecurity() error {
	if a.tlsCA != "" {
		if _, err := os.Stat(a.tlsCA); err != nil {
			return usageErrorf("--tls-ca: %v", err)
		}
	}
	switch a.saslMechanism {
	case "":
		if a.saslUser != "" || a.saslPassword != "" {
			return usageErrorf("--sasl-user and --sasl-password need --sasl-mechanism")
		}
		return nil
	case client.SASLPlain, client.SASLScramSHA256, client.SASLScramSHA512:
	default:
		return usageErrorf("--sasl-mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.saslMechanism)
	}
	if a.saslUser == "" {
		return usageErrorf("--sasl-mechanism needs --sasl-user")
	}
	if a.saslPassword == "" {
		a.saslPassword = os.Getenv("MINIKAFKA_SASL_PASSWORD")
	}
	return nil
}

// start begins a command's work with the cluster: it returns a context
// bounded by --timeout (bound=false: not bounded, for consuming) that also
// ends early if no seed broker can be reached (failFast) or a broker's
// listener expects other security than the flags give, and installs the
// dial watcher that clientOpts uses. The caller must call the returned
// cancel.
func (a *app) start(parent context.Context, bound, failFast bool) (context.Context, context.CancelFunc) {
	a.sig = parent
	ctx, cancelCause := context.WithCancelCause(parent)
	var giveUp context.CancelCauseFunc
	if failFast {
		giveUp = cancelCause
	}
	a.reach = newReach(a.brokers, giveUp)
	a.reach.watchListeners(ctx, a.tlsCA != "", a.saslMechanism != "", cancelCause)
	r := a.reach
	cancel := func() { cancelCause(context.Canceled); r.wait() }
	if !bound {
		return ctx, cancel
	}
	tctx, tcancel := context.WithTimeout(ctx, a.timeout)
	return tctx, func() { tcancel(); cancel() }
}

// interrupted reports whether the user stopped the command.
func (a *app) interrupted() bool {
	return a.sig != nil && a.sig.Err() != nil
}

// clientOpts are the options every client of a command gets, plus extra.
func (a *app) clientOpts(extra ...client.Opt) []client.Opt {
	opts := []client.Opt{
		client.Brokers(a.brokers...),
		client.ClientID("minikafka-cli"),
		client.Dialer(a.reach.dial),
		client.DialTimeout(min(a.timeout, 10*time.Second)),
		client.RequestTimeout(a.timeout),
	}
	return append(append(opts, a.securityOpts()...), extra...)
}

// securityOpts are the TLS and SASL options of --tls-ca and --sasl-*.
func (a *app) securityOpts() []client.Opt {
	var opts []client.Opt
	if a.tlsCA != "" {
		opts = append(opts, client.TLSCAFile(a.tlsCA))
	}
	if a.saslMechanism != "" {
		opts = append(opts, client.SASL(a.saslMechanism, a.saslUser, a.saslPassword))
	}
	return opts
}

// withAdmin runs fn with an admin client and a context bounded by
// --timeout, and closes both after.
func (a *app) withAdmin(parent context.Context, fn func(context.Context, *client.Admin) error) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	adm, err := a.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	return fn(ctx, adm)
}

// admin creates an admin client; the caller closes it.
func (a *app) admin() (*client.Admin, error) {
	return client.NewAdmin(a.clientOpts()...)
}

// describeTopic returns a topic's details, or a *TopicNotFoundError.
func (a *app) describeTopic(ctx context.Context, adm *client.Admin, topic string) (client.TopicDetail, error) {
	ds, err := adm.DescribeTopics(ctx, topic)
	if err != nil {
		return client.TopicDetail{}, a.explain(ctx, err)
	}
	d := ds[0]
	if d.Err != nil {
		if isUnknownTopic(d.Err) {
			return d, &TopicNotFoundError{Topic: topic}
		}
		return d, fmt.Errorf("topic %q: %w", topic, d.Err)
	}
	return d, nil
}

// partitionCount returns the topic's partition count, or an error if the
// topic does not exist or lacks partition (-1: any partition will do).
func (a *app) partitionCount(ctx context.Context, topic string, partition int32) (int32, error) {
	adm, err := a.admin()
	if err != nil {
		return 0, err
	}
	d, err := a.describeTopic(ctx, adm, topic)
	adm.Close()
	if err != nil {
		return 0, err
	}
	n := int32(len(d.Partitions))
	if partition >= n {
		return 0, fmt.Errorf("topic %q has no partition %d (it has %d)", topic, partition, n)
	}
	return n, nil
}
