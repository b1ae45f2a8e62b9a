package e2e

import "github.com/minikafka/minikafka-go/internal/loopports"

// freePort returns a port of 127.0.0.1 that is free for TCP and UDP
// (gossip needs both) and was not handed out before by this process.
func freePort() (int, error) { return loopports.Free("127.0.0.1") }

// freePortOn is freePort on a loopback IP.
func freePortOn(ip string) (int, error) { return loopports.Free(ip) }
