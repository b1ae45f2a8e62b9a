package membership

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Join contacts the seeds ("host:port", or "host" for DefaultPort) and
// merges cluster state with every one that answers. Seeds that are this
// node's own address are skipped, so every node may be given the same seed
// list; if nothing but this node is left, or seeds is empty, Join returns
// (0, nil) at once: this node starts the cluster.
//
// Otherwise Join retries all seeds in rounds, with backoff from
// Config.JoinBackoff doubling up to Config.JoinMaxBackoff, until at least
// one answers, and returns how many answered. If ctx ends first it returns a
// *JoinError (wrapping ctx.Err() and the last round's failure). A node id
// already alive at another address fails at once with a *DuplicateIDError
// (ErrDuplicateID). Host names are resolved again each round. One round
// waits at most Config.TCPTimeout per seed address; a round in flight when
// ctx ends finishes in the background, and Shutdown waits for it.
func (m *Membership) Join(ctx context.Context, seeds []string) (int, error) {
	if len(seeds) == 0 {
		return 0, nil
	}
	backoff := m.cfg.JoinBackoff
	var last error
	for attempt := 1; ; attempt++ {
		m.mu.Lock()
		err := m.usableLocked()
		m.mu.Unlock()
		if err != nil {
			return 0, err
		}
		targets, resolveErr := m.resolveSeeds(ctx, seeds)
		if len(targets) == 0 && resolveErr == nil {
			m.log.Info("no seed other than this node; starting a new cluster", "seeds", seeds)
			return 0, nil
		}
		n, err := m.joinRound(ctx, targets)
		if n > 0 {
			m.log.Info("joined cluster", "seeds", seeds, "answered", n, "attempts", attempt)
			m.rejoinIfReclaimed(ctx, targets)
			return n, nil
		}
		if errors.Is(err, ErrDuplicateID) || errors.Is(err, ErrClosed) {
			return 0, err
		}
		if err == nil || ctx.Err() == nil { // a round that ended on its own
			last = errors.Join(resolveErr, err)
		}
		if ctx.Err() != nil {
			return 0, &JoinError{Seeds: seeds, Attempts: attempt, Last: last, Cause: ctx.Err()}
		}
		m.log.Debug("join round failed; retrying", "seeds", seeds, "attempt", attempt, "backoff", backoff, "err", last)
		t := time.NewTimer(backoff)
		select {
		case <-t.C: // time for the next round
		case <-ctx.Done(): // the caller gave up
			t.Stop()
			return 0, &JoinError{Seeds: seeds, Attempts: attempt, Last: last, Cause: ctx.Err()}
		}
		backoff = min(2*backoff, m.cfg.JoinMaxBackoff)
	}
}

// rejoinIfReclaimed joins targets once more, DeadNodeReclaimTime after a
// round found this node's id failed at another address: until then the
// others refuse to take its new address, and would learn it only at the
// next push-pull (30 s).
func (m *Membership) rejoinIfReclaimed(ctx context.Context, targets []string) {
	m.mu.Lock()
	reclaim := m.reclaim
	m.reclaim = false
	m.mu.Unlock()
	if !reclaim {
		return
	}
	wait := m.cfg.DeadNodeReclaimTime + m.cfg.ProbeInterval
	m.log.Info("the cluster holds this node's id as failed at another address; joining again once it may move", "after", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return
	}
	if _, err := m.joinRound(ctx, targets); err != nil {
		m.log.Warn("joining again at the new address failed; the next push-pull retries", "err", err)
	}
}

// joinRound is one memberlist Join over targets (ip:port strings). It
// returns memberlist's count, and a DuplicateIDError if one was noticed
// while the round ran.
func (m *Membership) joinRound(ctx context.Context, targets []string) (int, error) {
	if len(targets) == 0 {
		return 0, nil
	}
	m.mu.Lock()
	m.joining++
	m.mu.Unlock()
	var n int
	err := m.call(ctx, func(time.Duration) error {
		var err error
		// memberlist bounds each target by TCPTimeout; ctx cannot stop it.
		n, err = m.ml.Join(targets)
		m.mu.Lock()
		if conflict := m.conflict; conflict != nil {
			err, n = conflict, 0
		}
		m.mu.Unlock()
		return err
	})
	m.mu.Lock()
	m.joining--
	if m.joining == 0 {
		m.conflict = nil
	}
	m.mu.Unlock()
	if err != nil {
		// The targets, also when the round ran out of time before
		// memberlist answered: the caller reports the last failure.
		return 0, fmt.Errorf("join %s: %w", strings.Join(targets, ", "), err)
	}
	return n, nil
}

// resolveSeeds turns seeds into ip:port targets, dropping this node's own
// addresses and duplicates. A seed that does not resolve is reported in
// the error and left out.
func (m *Membership) resolveSeeds(ctx context.Context, seeds []string) ([]string, error) {
	var (
		targets []string
		seen    = make(map[netip.AddrPort]bool)
		errs    []error
		local   *localIPs
	)
	for _, seed := range seeds {
		host, port, err := splitSeed(seed)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
			errs = append(errs, fmt.Errorf("resolve seed %q: %w", seed, err))
			continue
		}
		for _, ip := range ips {
			ap := netip.AddrPortFrom(ip.Unmap(), port)
			if seen[ap] {
				continue
			}
			seen[ap] = true
			if local == nil {
				local = &localIPs{}
			}
			if m.isSelf(ap, local) {
				continue
			}
			targets = append(targets, ap.String())
		}
	}
	return targets, errors.Join(errs...)
}

// splitSeed parses "host:port" or a bare host (DefaultPort).
func splitSeed(seed string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(seed)
	if err != nil {
		// A bare host, or an IPv6 literal without brackets.
		if _, perr := netip.ParseAddr(seed); perr == nil || !strings.Contains(seed, ":") {
			return seed, DefaultPort, nil
		}
		return "", 0, fmt.Errorf("bad seed %q: %w", seed, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 || host == "" {
		return "", 0, fmt.Errorf("bad seed %q: want host:port with port 1..65535", seed)
	}
	return host, uint16(p), nil
}

// isSelf reports whether ap reaches this node's gossip port: the advertised
// or bound address, or, when bound to all interfaces, any local address
// with our port.
func (m *Membership) isSelf(ap netip.AddrPort, local *localIPs) bool {
	if ap.String() == m.localAddr || ap == m.bindAddr {
		return true
	}
	if ap.Port() != m.bindAddr.Port() || !m.bindAddr.Addr().IsUnspecified() {
		return false
	}
	return ap.Addr().IsLoopback() || local.has(ap.Addr())
}

// localIPs lists this host's interface addresses once per Join round.
type localIPs struct {
	loaded bool
	ips    map[netip.Addr]bool
}

func (l *localIPs) has(ip netip.Addr) bool {
	if !l.loaded {
		l.loaded = true
		l.ips = make(map[netip.Addr]bool)
		addrs, err := net.InterfaceAddrs()
		if err == nil {
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					l.ips[p.Addr().Unmap()] = true
				}
			}
		}
	}
	return l.ips[ip]
}
