package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/internal/nodecert"
)

// certsCommand writes a development CA, node certificates and a gossip
// key (make certs).
func (a *app) certsCommand() *cobra.Command {
	var (
		dir      string
		nodes    []int32
		validity time.Duration
		force    bool
	)
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Write a development CA, a certificate per node and a gossip key (for a secure local cluster)",
		Long: `certs writes, in --dir: ca.pem (the CA clients and nodes trust) and
ca-key.pem; for each node N, nodeN.pem and nodeN-key.pem, a certificate
that names the node (URI SAN minikafka:node:N) and 127.0.0.1, ::1 and
localhost, for the Raft port's mutual TLS and the node's Kafka listeners;
and gossip.key, a random base64 AES-256 key for gossip_keys. Keys are
written with mode 0600. For development only: the CA key sits next to
the certificates.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err == nil && !force {
				return fmt.Errorf("%s already holds ca.pem; pass --force to replace every file", dir)
			} else if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if err := nodecert.Write(dir, nodes, validity); err != nil {
				return err
			}
			key := make([]byte, 32)
			_, _ = rand.Read(key) // crypto/rand never fails on Linux
			if err := os.WriteFile(filepath.Join(dir, "gossip.key"), []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %s: ca.pem, ca-key.pem, gossip.key and certificates of nodes %v\n", dir, nodes)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "data/certs", "directory to write to")
	cmd.Flags().Int32SliceVar(&nodes, "nodes", []int32{1, 2, 3}, "node ids to write certificates for")
	cmd.Flags().DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificates are valid")
	cmd.Flags().BoolVar(&force, "force", false, "replace existing files")
	return cmd
}
