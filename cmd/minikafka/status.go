package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// waitProbeEvery is how often cluster status --wait asks again.
const waitProbeEvery = 200 * time.Millisecond

func (a *app) clusterCommand() *cobra.Command {
	return commandGroup("cluster", "Show the cluster", a.clusterStatusCommand())
}

func (a *app) clusterStatusCommand() *cobra.Command {
	var wait time.Duration
	status := &cobra.Command{
		Use:   "status",
		Short: "Show brokers with addresses, the controller, and every partition's leader, epoch, replicas and ISR",
		Long: `status prints the cluster id, the controller, every broker with its address,
and every partition with its leader, leader epoch, replicas and in-sync
replicas.

With --wait DURATION it first waits until every broker named in --brokers
answers a Metadata request, each answer names a controller among its
brokers, lists at least as many brokers as --brokers names, and shows a
leader for every partition: the cluster has formed and its topics can be
used. For scripts that start a cluster; it fails if that takes longer than
DURATION.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wait < 0 {
				return usageErrorf("--wait must not be negative, got %v", wait)
			}
			if wait > 0 {
				if err := a.waitReady(cmd.Context(), wait); err != nil {
					return err
				}
			}
			return a.status(cmd.Context())
		},
	}
	status.Flags().DurationVar(&wait, "wait", 0, "first wait up to this long until every --brokers address answers, with a controller and partition leaders known")
	return status
}

func (a *app) status(parent context.Context) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	adm, err := a.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	cd, err := adm.DescribeCluster(ctx)
	if err != nil {
		return a.explain(ctx, err)
	}
	capacity, down := brokerStatus(ctx, adm, cd)
	writeCluster(a.stdout, cd, capacity, down)
	return degraded(cd, down)
}

// errDegraded is cluster status's failure when a broker is down or a
// partition has no leader: the table is printed, the exit status is 1.
var errDegraded = errors.New("cluster degraded")

// degraded is errDegraded with what is wrong, or nil.
func degraded(cd *client.ClusterDetail, down []downBroker) error {
	var why []string
	for _, d := range down {
		why = append(why, fmt.Sprintf("broker %d down since %s", d.id, d.since))
	}
	offline := 0
	for _, t := range cd.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				offline++
			}
		}
	}
	if offline > 0 {
		why = append(why, fmt.Sprintf("%d partitions offline (no leader)", offline))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", errDegraded, strings.Join(why, "; "))
}

// capacityConfig is the broker config that reports a node's capacity in
// partition replicas (broker.NodeCapacityConfig).
const capacityConfig = "minikafka.max.partition.replicas.per.node"

// brokersDownConfig is the broker config that lists the registered
// brokers a node sees down (kafkabackend.BrokersDownConfig).
const brokersDownConfig = "minikafka.brokers.down"

// downBroker is a registered broker that the live ones see down.
type downBroker struct {
	id    int32
	since string // RFC 3339
}

// brokerStatus asks each live broker for its capacity in partition
// replicas (one that does not answer is shown as ?) and for the brokers it
// sees down; a broker is down when any live one sees it so (the earliest
// "since" is kept).
func brokerStatus(ctx context.Context, adm *client.Admin, cd *client.ClusterDetail) (map[int32]string, []downBroker) {
	capacity, since := map[int32]string{}, map[int32]string{}
	for _, b := range cd.Brokers {
		cfg, err := adm.DescribeBrokerConfigs(ctx, b.NodeID)
		if err != nil {
			continue
		}
		if v, ok := cfg[capacityConfig]; ok {
			if v == "0" {
				v = "unbounded"
			}
			capacity[b.NodeID] = v
		}
		for _, e := range strings.Split(cfg[brokersDownConfig], ",") {
			id, at, ok := strings.Cut(e, "=")
			n, err := strconv.ParseInt(id, 10, 32)
			if !ok || err != nil || slices.ContainsFunc(cd.Brokers, func(b client.BrokerDetail) bool { return b.NodeID == int32(n) }) {
				continue
			}
			if old, seen := since[int32(n)]; !seen || at < old {
				since[int32(n)] = at
			}
		}
	}
	var down []downBroker
	for id, at := range since {
		down = append(down, downBroker{id: id, since: at})
	}
	slices.SortFunc(down, func(x, y downBroker) int { return int(x.id - y.id) })
	return capacity, down
}

// writeCluster prints the cluster id and controller, the brokers with the
// partition replicas each holds and its capacity, and the partition table.
func writeCluster(w io.Writer, cd *client.ClusterDetail, capacity map[int32]string, down []downBroker) {
	controller := strconv.Itoa(int(cd.Controller))
	if cd.Controller < 0 {
		controller = "unknown"
	}
	fmt.Fprintf(w, "cluster %s, controller %s\n\n", cd.ClusterID, controller)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tADDRESS\tCONTROLLER\tREPLICAS\tCAPACITY")
	held := map[int32]int{}
	for _, t := range cd.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				held[r]++
			}
		}
	}
	for _, b := range cd.Brokers {
		mark := ""
		if b.NodeID == cd.Controller {
			mark = "yes"
		}
		c := capacity[b.NodeID]
		if c == "" {
			c = "?"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), mark, held[b.NodeID], c)
	}
	for _, d := range down {
		fmt.Fprintf(tw, "%d\tDOWN since %s\t\t%d\t\n", d.id, d.since, held[d.id])
	}
	tw.Flush()
	fmt.Fprintln(w)
	writePartitions(w, cd.Topics)
}

// waitReady waits until every seed in --brokers answers Metadata on its
// own as probe requires, or wait passes. Connection errors are
// expected while nodes start, so they are retried until then.
func (a *app) waitReady(parent context.Context, wait time.Duration) error {
	ctx, cancel := a.start(parent, false, false)
	defer cancel()
	ctx, cancelWait := context.WithTimeout(ctx, wait)
	defer cancelWait()
	pending := map[string]error{}
	for _, b := range a.brokers {
		pending[b] = errors.New("not asked yet")
	}
	for {
		for _, b := range a.brokers {
			if _, ok := pending[b]; !ok {
				continue
			}
			if err := a.probe(ctx, b, len(a.brokers)); err != nil {
				pending[b] = err
			} else {
				delete(pending, b)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		t := time.NewTimer(waitProbeEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			if a.interrupted() {
				return errInterrupted
			}
			var why []string
			for _, b := range a.brokers {
				if err, ok := pending[b]; ok {
					why = append(why, fmt.Sprintf("%s: %s", b, probeReason(err)))
				}
			}
			return fmt.Errorf("cluster not ready after %v: %s", wait, strings.Join(why, "; "))
		case <-t.C:
		}
	}
}

// errNoController is a broker that answered but knows no controller yet.
var errNoController = errors.New("no controller yet")

// probe asks one broker, and only it, for metadata, which must name a
// controller among its brokers, list at least want brokers and a leader
// for every partition. A fresh admin client whose only seed is addr knows
// no other broker, so its first request goes to addr; a retry after a
// failed one goes to addr too, since metadata from elsewhere can only come
// through addr.
func (a *app) probe(ctx context.Context, addr string, want int) error {
	pr := newReach([]string{addr}, nil)
	adm, err := client.NewAdmin(append([]client.Opt{client.Brokers(addr), client.ClientID("minikafka-cli"), client.Dialer(pr.dial),
		client.DialTimeout(time.Second), client.RequestTimeout(2 * time.Second)}, a.securityOpts()...)...)
	if err != nil {
		return err
	}
	defer adm.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cd, err := adm.DescribeCluster(pctx)
	if err != nil {
		if u := pr.unreachable(); u != nil {
			return u
		}
		return err
	}
	if cd.Controller < 0 || !slices.ContainsFunc(cd.Brokers, func(b client.BrokerDetail) bool { return b.NodeID == cd.Controller }) {
		return errNoController
	}
	if len(cd.Brokers) < want {
		return fmt.Errorf("sees %d of %d brokers", len(cd.Brokers), want)
	}
	for _, t := range cd.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 || p.Err != nil {
				return fmt.Errorf("partition %s[%d] has no leader yet", t.Name, p.Partition)
			}
		}
	}
	return nil
}

// probeReason is the short reason a broker is not ready yet.
func probeReason(err error) string {
	var u *UnreachableError
	if errors.As(err, &u) && len(u.Reasons) == 1 {
		return dialReason(u.Reasons[0])
	}
	return err.Error()
}
