// Package console is a node's web console: the pages an operator opens on
// the node's admin port (under /console/) instead of a separate tool.
// They show the cluster (brokers up and down, the controller, partitions
// under-replicated and offline, this node's disk), topics (configs,
// partitions, leaders, ISR, sizes, offsets), a partition's records from an
// offset or a time, consumer groups (members, assignment, lag per
// partition and over time), this node's traffic over time, and the
// reassignments in progress. Every asset is embedded; nothing is fetched
// from elsewhere. The console is read-only unless Config.AdminKey is set:
// then a visitor who presents that key may create and delete topics and
// reset a group's offsets (writes.go).
//
// The console reads the cluster as a Kafka client of its own node's
// listener. When the listener authenticates (SASL), each visitor logs in
// with SASL credentials, and the console reads with them, so the broker's
// own ACL checks decide what the visitor sees; an anonymous visitor gets
// the login form and every API call is refused (401).
//
// The caller's duties, in order:
//
//  1. Make the console with New, giving it the node's metrics.Source (log
//     sizes, disk and traffic, which the Kafka protocol does not carry)
//     and the address of a listener the console may use.
//  2. Run it (Console.Run) in a goroutine the node owns, until the node
//     stops: it samples the traffic and the groups' lag into bounded
//     in-memory history, ends idle sessions, and closes every Kafka client
//     when it returns.
//  3. Serve Console.Handler under /console/ on the admin port.
package console
