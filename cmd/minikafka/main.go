// Command minikafka is MiniKafka's command-line client: it creates, lists
// and describes topics, produces lines from standard input, consumes
// records to standard output (alone, or as a member of a consumer group
// that commits what it printed), lists, describes and deletes consumer
// groups and resets their offsets, and shows the cluster's brokers and
// partition leaders. It speaks the Kafka protocol through this module's
// client package, so it works against any MiniKafka cluster (and most
// Kafka brokers).
//
//	minikafka topic create events --partitions 2 --replication-factor 3
//	printf 'a\nb\nc\n' | minikafka produce events --key same
//	minikafka consume events --from-beginning -n 3 --format '%p:%o %k=%v'
//	minikafka consume events --group billing --from-beginning -n 3
//	minikafka group describe billing
//	minikafka group reset-offsets billing --to-earliest --topic events
//	minikafka cluster status --brokers 127.0.0.1:9092,127.0.0.1:9093 --wait 30s
//
// Every command takes --brokers (comma-separated host:port seeds, default
// 127.0.0.1:9092), --timeout (how long to wait for the cluster, default
// 10s), and for secured listeners --tls-ca (a PEM CA file; TLS on) and
// --sasl-mechanism, --sasl-user, --sasl-password (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512; the password may come from $MINIKAFKA_SASL_PASSWORD).
// user create|list|delete manage SCRAM users. A command that fails prints one line, "minikafka: <what went
// wrong>", on standard error. Exit status: 0 success, 1 failure, 2 bad
// usage (unknown flag, missing argument), 130 interrupted.
//
// A command that has never reached a broker and whose every seed refuses
// the connection gives up at once ("cannot reach any broker at ...")
// instead of retrying until --timeout; cluster status --wait, which exists
// to wait for nodes that are still starting, keeps trying.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// run executes one command line and returns the exit status. ctx ending
// is an interrupt (Ctrl-C): consume stops normally, other commands stop
// and report it.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "minikafka: %v\n", err)
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	}
	return exitFailure
}
