package kafkabackend

import (
	"context"
	"fmt"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

var _ kafkaapi.ClientQuotas = (*Backend)(nil)

// ClientQuotas lists the stored client quotas from the local metadata
// view.
func (b *Backend) ClientQuotas() []kafkaapi.QuotaEntry {
	stored := b.deps.Meta.State().ClientQuotas()
	out := make([]kafkaapi.QuotaEntry, 0, len(stored))
	for _, q := range stored {
		e := kafkaapi.QuotaEntry{Entity: kafkaapi.QuotaEntity{User: apiQuotaName(q.Entity.User), ClientID: apiQuotaName(q.Entity.ClientID)}}
		for _, v := range q.Values {
			e.Values = append(e.Values, kafkaapi.QuotaValue{Key: v.Key, Value: v.Value})
		}
		out = append(out, e)
	}
	return out
}

// AlterClientQuotas checks each alteration on its own (the checks depend
// on nothing else), then checks the valid ones together against the
// current state and proposes them as one command; if that fails, each of
// them gets its error.
func (b *Backend) AlterClientQuotas(ctx context.Context, alts []kafkaapi.QuotaAlteration, validateOnly bool) ([]error, error) {
	errs := make([]error, len(alts))
	var cmd metadata.AlterClientQuotas
	var at []int
	for i, a := range alts {
		ma := metadata.QuotaAlteration{Entity: metadata.QuotaEntity{User: metaQuotaName(a.Entity.User), ClientID: metaQuotaName(a.Entity.ClientID)}}
		for _, op := range a.Ops {
			ma.Ops = append(ma.Ops, metadata.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		if err := metadata.CheckQuotaAlteration(ma); err != nil {
			errs[i] = fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
			continue
		}
		cmd.Alterations, at = append(cmd.Alterations, ma), append(at, i)
	}
	if len(at) == 0 {
		return errs, nil
	}
	if err := b.checkAndPropose(ctx, cmd, validateOnly); err != nil {
		for _, i := range at {
			errs[i] = err
		}
	}
	return errs, nil
}

func apiQuotaName(n metadata.QuotaName) kafkaapi.QuotaName {
	switch n.Kind {
	case metadata.QuotaDefault:
		return kafkaapi.QuotaName{Kind: kafkaapi.QuotaDefault}
	case metadata.QuotaNamed:
		return kafkaapi.QuotaName{Kind: kafkaapi.QuotaNamed, Name: n.Name}
	}
	return kafkaapi.QuotaName{}
}

// metaQuotaName converts a component; an unknown kind stays unknown, so
// that CheckQuotaAlteration refuses it.
func metaQuotaName(n kafkaapi.QuotaName) metadata.QuotaName {
	switch n.Kind {
	case kafkaapi.QuotaAbsent:
		return metadata.QuotaName{Kind: metadata.QuotaAbsent, Name: n.Name}
	case kafkaapi.QuotaDefault:
		return metadata.QuotaName{Kind: metadata.QuotaDefault, Name: n.Name}
	case kafkaapi.QuotaNamed:
		return metadata.QuotaName{Kind: metadata.QuotaNamed, Name: n.Name}
	}
	return metadata.QuotaName{Kind: metadata.QuotaNamed + 1, Name: n.Name}
}
