package membership

import (
	"context"
	"slices"
	"time"
)

// reconnectLoop joins, every Config.ReconnectInterval, the members this
// node saw fail, until Shutdown. A join that reaches one makes both sides
// exchange their state, and each refutes the other's verdict on itself,
// so a healed network partition closes without a restart. A member that
// is really gone costs one failed dial per interval.
func (m *Membership) reconnectLoop() {
	defer close(m.stopped)
	t := time.NewTicker(m.cfg.ReconnectInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop: // Shutdown
			return
		case <-t.C: // time for a round
		}
		addrs := m.failedAddrs()
		if len(addrs) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.TCPTimeout)
		n, err := m.joinRound(ctx, addrs)
		cancel()
		if n > 0 {
			m.log.Info("reconnected to failed members", "addrs", addrs, "answered", n)
		} else {
			m.log.Debug("failed members still unreachable", "addrs", addrs, "err", err)
		}
	}
}

// failedAddrs returns the failed members' addresses in id order, or none
// once this node leaves or shuts down.
func (m *Membership) failedAddrs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.usableLocked() != nil {
		return nil
	}
	ids := make([]int32, 0, len(m.failed))
	for id := range m.failed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	addrs := make([]string, len(ids))
	for i, id := range ids {
		addrs[i] = m.failed[id]
	}
	return addrs
}
