// Package netns runs MiniKafka nodes as if on separate hosts: each in its
// own Linux network namespace with its own address, the namespaces joined
// by veth pairs on a bridge, all made by the test itself on this machine.
// Nodes bind all interfaces and advertise their namespace's address;
// clients run in another namespace and reach the nodes only through the
// advertised addresses.
//
// A test's duties, in order:
//
//  1. Setup a Net of hosts (needs root or CAP_NET_ADMIN; it registers
//     cleanup that deletes the namespaces and the bridge, even when the
//     test fails, and first removes those of earlier runs whose process
//     was killed before its cleanup).
//  2. Build the binaries (Build) and Start nodes with NodeConfig's YAML;
//     Start registers cleanup that kills them.
//  3. Run clients with Net.Command in a namespace of their own.
//  4. Inject faults (Node.Kill, SIGKILL) and readdress a host (Net.Readdress)
//     to move a node.
package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/test/e2e"
)

// ipTool is iproute2's ip, which makes namespaces, veth pairs and the
// bridge: on the PATH, else where Debian puts it (/usr/sbin is not on a
// user's PATH).
var ipTool = func() string {
	if p, err := exec.LookPath("ip"); err == nil {
		return p
	}
	return "/usr/sbin/ip"
}()

// ErrNoPrivilege is returned by Setup when the process may not create
// network namespaces (not root, no CAP_NET_ADMIN).
var ErrNoPrivilege = errors.New("netns: cannot create network namespaces (needs root or CAP_NET_ADMIN)")

// Net is a bridge and the namespaces of hosts 1..Hosts on it, host i at
// Subnet.i (a /24).
type Net struct {
	prefix string // namespace names: prefix-1 ..
	bridge string
	subnet string // "10.77.N"
	hosts  int
	addr   map[int]string // host i's address now
}

// Setup makes hosts namespaces on a new bridge, named after this
// process's id so that concurrent runs do not collide, and registers
// their removal with t.Cleanup.
func Setup(ctx context.Context, t testing.TB, hosts int) (*Net, error) {
	pid := os.Getpid()
	n := &Net{
		prefix: fmt.Sprintf("mk-%d", pid),
		bridge: fmt.Sprintf("mk%dbr", pid%10_000_000),
		subnet: fmt.Sprintf("10.77.%d", pid%250+1),
		hosts:  hosts, addr: map[int]string{},
	}
	sweep(ctx)
	if err := ip(ctx, "netns", "add", n.NS(1)); err != nil {
		if msg := err.Error(); strings.Contains(msg, "not permitted") || strings.Contains(msg, "denied") {
			return nil, fmt.Errorf("%w: %w", ErrNoPrivilege, err)
		}
		return nil, err
	}
	t.Cleanup(n.remove)
	steps := [][]string{{"link", "add", n.bridge, "type", "bridge"}, {"link", "set", n.bridge, "up"}}
	for i := 1; i <= hosts; i++ {
		veth, ns := fmt.Sprintf("mk%dv%d", pid%10_000_000, i), n.NS(i)
		if i > 1 {
			steps = append(steps, []string{"netns", "add", ns})
		}
		steps = append(steps,
			[]string{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"link", "set", veth, "master", n.bridge, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "link", "set", "eth0", "up"})
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= hosts; i++ {
		if err := n.Readdress(ctx, i, fmt.Sprintf("%s.%d", n.subnet, i)); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// NS is host i's namespace name.
func (n *Net) NS(i int) string { return fmt.Sprintf("%s-%d", n.prefix, i) }

// IP is host i's address now.
func (n *Net) IP(i int) string { return n.addr[i] }

// Subnet is the first three octets of the hosts' /24.
func (n *Net) Subnet() string { return n.subnet }

// Readdress gives host i the address addr (in the subnet) instead of the
// one it had: a host that moved.
func (n *Net) Readdress(ctx context.Context, i int, addr string) error {
	if err := ip(ctx, "-n", n.NS(i), "addr", "flush", "dev", "eth0"); err != nil {
		return err
	}
	if err := ip(ctx, "-n", n.NS(i), "addr", "add", addr+"/24", "dev", "eth0"); err != nil {
		return err
	}
	n.addr[i] = addr
	return nil
}

// Command runs name in host i's namespace.
func (n *Net) Command(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, ipTool, append([]string{"netns", "exec", n.NS(i), name}, args...)...)
}

// remove deletes the namespaces (their veth ends go with them) and the
// bridge, whatever exists of them.
func (n *Net) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i <= n.hosts; i++ {
		_ = ip(ctx, "netns", "del", n.NS(i)) // absent after a failed Setup
	}
	_ = ip(ctx, "link", "del", n.bridge)
}

// leftover matches the names Setup gives namespaces and bridges; the
// first group is the pid of the process that made them.
var leftover = regexp.MustCompile(`^mk-?(\d+)(?:-\d+|br)$`)

// sweep removes the namespaces and bridges of earlier runs whose process
// is gone (a test binary killed before its cleanup ran).
func sweep(ctx context.Context) {
	var names []string
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show", "type", "bridge"}} {
		out, err := exec.CommandContext(ctx, ipTool, args...).Output()
		if err != nil {
			continue // no privilege: Setup says so next
		}
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 1 && args[0] == "-o" {
				names = append(names, strings.TrimSuffix(f[1], ":"))
			} else if len(f) > 0 && args[0] == "netns" {
				names = append(names, f[0])
			}
		}
	}
	for _, name := range names {
		m := leftover.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // ours, or its process still runs
		}
		if strings.HasSuffix(name, "br") {
			_ = ip(ctx, "link", "del", name)
		} else {
			_ = ip(ctx, "netns", "del", name)
		}
	}
}

func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, ipTool, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Build compiles the packages (import paths relative to the module root,
// "./cmd/node") into dir, one binary each named after its last element,
// without the race detector, and returns their paths.
func Build(ctx context.Context, dir string, pkgs ...string) ([]string, error) {
	var bins []string
	for _, p := range pkgs {
		bin, err := e2e.Build(ctx, dir, p, filepath.Base(p))
		if err != nil {
			return nil, err
		}
		bins = append(bins, bin)
	}
	return bins, nil
}

// Ports are the nodes' ports, the same on every host: the defaults of
// configs/node1.yaml.
const (
	KafkaPort  = 9092
	RaftPort   = 9192
	GossipPort = 9292
	AdminPort  = 9644
)

// NodeConfig is node id's YAML on a host at addr: it binds all
// interfaces and advertises addr, and joins the seeds (gossip host:port).
func NodeConfig(id int, dataDir, addr string, seeds []string) string {
	return fmt.Sprintf(`node_id: %d
data_dir: %s
kafka_addr: 0.0.0.0:%d
advertised_kafka_addr: %s:%d
raft_addr: 0.0.0.0:%d
advertised_raft_addr: %s:%d
gossip_addr: 0.0.0.0:%d
advertised_gossip_addr: %s:%d
admin_addr: %s:%d
join: [%s]
bootstrap_expect: 3
default_replication_factor: 3
log_level: info
`, id, dataDir, KafkaPort, addr, KafkaPort, RaftPort, addr, RaftPort, GossipPort, addr, GossipPort,
		addr, AdminPort, strings.Join(seeds, ", "))
}

// Node is a node process in a host's namespace.
type Node struct {
	ID   int
	Log  string // its stdout and stderr
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin --config config in host i's namespace as node id, in a
// process group of its own, logging to dir/node<id>.log, and registers
// cleanup that kills it.
func (n *Net) Start(t testing.TB, i, id int, bin, config, dir string) (*Node, error) {
	nd := &Node{ID: id, Log: filepath.Join(dir, fmt.Sprintf("node%d.log", id)), done: make(chan struct{})}
	logf, err := os.OpenFile(nd.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	nd.cmd = exec.Command(ipTool, "netns", "exec", n.NS(i), bin, "--config", config)
	nd.cmd.Stdout, nd.cmd.Stderr = logf, logf
	nd.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := nd.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node %d: %w", id, err)
	}
	go func() { // owned by the Node: ends when the process does
		_ = nd.cmd.Wait()
		close(nd.done)
	}()
	t.Cleanup(nd.Kill)
	return nd, nil
}

// Kill sends SIGKILL to the node's process group and waits for it to
// end; a node already gone is left alone.
func (nd *Node) Kill() {
	select {
	case <-nd.done:
		return
	default:
	}
	_ = syscall.Kill(-nd.cmd.Process.Pid, syscall.SIGKILL)
	<-nd.done
}

// Exited reports whether the node's process has ended.
func (nd *Node) Exited() bool {
	select {
	case <-nd.done:
		return true
	default:
		return false
	}
}

// LogTail is the last n lines of the node's log.
func (nd *Node) LogTail(n int) string {
	b, err := os.ReadFile(nd.Log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
