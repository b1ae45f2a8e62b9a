package broker

import "context"

// ForgetDeletedShareState runs the node's sweep of deleted topics' share
// state now (housekeeping runs it every minute).
func (n *Node) ForgetDeletedShareState(ctx context.Context) { n.coords.ForgetDeletedShareState(ctx) }
