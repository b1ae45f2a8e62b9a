package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The admin's ACL methods: a refused binding is reported while the others
// are stored; list by filter; delete returns what it removed.
func TestAdminACLs(t *testing.T) {
	c := testcluster.Start(t, 1)
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	read := acl.Binding{ResourceType: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral,
		Principal: "User:app", Host: acl.Wildcard, Operation: acl.OpRead, Permission: acl.PermissionAllow}
	group := read
	group.ResourceType, group.Name = acl.ResourceGroup, "billing"
	bad := read
	bad.Host = "not-an-ip"
	err = adm.CreateACLs(ctx, []acl.Binding{read, bad, group})
	var ke *client.KafkaError
	if !errors.As(err, &ke) || ke.Code != kerr.InvalidRequest.Code {
		t.Fatalf("create with a bad host: %v, want INVALID_REQUEST", err)
	}

	any := acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	all, err := adm.ListACLs(ctx, any)
	if err != nil || len(all) != 2 || all[0] != read || all[1] != group {
		t.Fatalf("list all: %v, %v", all, err)
	}
	topics := any
	topics.ResourceType = acl.ResourceTopic
	if got, err := adm.ListACLs(ctx, topics); err != nil || len(got) != 1 || got[0] != read {
		t.Fatalf("list topics: %v, %v", got, err)
	}
	removed, err := adm.DeleteACLs(ctx, []acl.Filter{topics})
	if err != nil || len(removed) != 1 || removed[0] != read {
		t.Fatalf("delete topics: %v, %v", removed, err)
	}
	if left, err := adm.ListACLs(ctx, any); err != nil || len(left) != 1 || left[0] != group {
		t.Fatalf("after delete: %v, %v", left, err)
	}
}
