package clusters

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// RunNATSD is the "natsd" subcommand: it runs one embedded nats-server
// from a configuration file until SIGTERM or SIGINT, then shuts it down.
// It returns the process exit status.
func RunNATSD(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("natsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conf := fs.String("config", "", "nats-server configuration file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts, err := server.ProcessConfigFile(*conf)
	if err != nil {
		fmt.Fprintf(stderr, "natsd: %v\n", err)
		return 2
	}
	opts.NoSigs = true // we handle signals: a clean Shutdown, not os.Exit
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintf(stderr, "natsd: %v\n", err)
		return 1
	}
	s.ConfigureLogger()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(stderr, "natsd: not ready after 30s")
		s.Shutdown()
		return 1
	}
	<-sigs
	s.Shutdown()
	s.WaitForShutdown()
	return 0
}
