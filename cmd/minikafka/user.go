package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) userCommand() *cobra.Command {
	return commandGroup("user", "Manage SCRAM users (for SASL listeners)",
		a.userCreateCommand(), a.userDeleteCommand(), a.userListCommand())
}

func (a *app) userCreateCommand() *cobra.Command {
	var password string
	var mechanisms []string
	var iterations int
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user, or set its password (salted and hashed here; only the salted password is sent)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if password == "" {
				password = os.Getenv("MINIKAFKA_USER_PASSWORD")
			}
			if password == "" {
				return usageErrorf("--password (or $MINIKAFKA_USER_PASSWORD) is needed")
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				for _, m := range mechanisms {
					if err := adm.UpsertUser(ctx, args[0], password, m, iterations); err != nil {
						return fmt.Errorf("user %q %s: %w", args[0], m, a.explain(ctx, err))
					}
				}
				fmt.Fprintf(a.stdout, "user %q: %v credentials set\n", args[0], mechanisms)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&password, "password", "", "the user's password (default: $MINIKAFKA_USER_PASSWORD)")
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", []string{client.SASLScramSHA256, client.SASLScramSHA512}, "SCRAM mechanisms to set")
	cmd.Flags().IntVar(&iterations, "iterations", 4096, "SCRAM iterations (4096 to 16384)")
	return cmd
}

func (a *app) userDeleteCommand() *cobra.Command {
	var mechanisms []string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user's SCRAM credentials",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				ms := mechanisms
				if len(ms) == 0 {
					users, err := adm.ListUsers(ctx)
					if err != nil {
						return a.explain(ctx, err)
					}
					for _, u := range users {
						if u.User == args[0] {
							ms = append(ms, u.Mechanism)
						}
					}
					if len(ms) == 0 {
						return fmt.Errorf("user %q has no credentials", args[0])
					}
				}
				for _, m := range ms {
					if err := adm.DeleteUser(ctx, args[0], m); err != nil {
						return fmt.Errorf("user %q %s: %w", args[0], m, a.explain(ctx, err))
					}
				}
				fmt.Fprintf(a.stdout, "user %q: %v credentials deleted\n", args[0], ms)
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", nil, "only these SCRAM mechanisms (default: all the user has)")
	return cmd
}

func (a *app) userListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the users with their SCRAM mechanisms and iterations",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				users, err := adm.ListUsers(ctx)
				if err != nil {
					return a.explain(ctx, err)
				}
				writeUsers(a.stdout, users)
				return nil
			})
		},
	}
}

func writeUsers(w io.Writer, users []client.UserCredential) {
	if len(users) == 0 {
		fmt.Fprintln(w, "no users")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
	for _, u := range users {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", u.User, u.Mechanism, u.Iterations)
	}
	tw.Flush()
}
