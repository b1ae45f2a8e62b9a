package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startAPIVersions answers ApiVersions 0-4 with the supported API table
// and, from v3, the cluster's features (features.go). The client software
// name and version (v3) are not checked.
func (s *Server) startAPIVersions(req *kmsg.ApiVersionsRequest, _ time.Time) responder {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = supportedAPIKeys()
	if req.Version >= 3 {
		s.addFeatures(resp)
	}
	return answered(resp)
}

// unsupportedAPIVersions answers an ApiVersions request above v4 the way
// Kafka does (KIP-511): a v0 body with UNSUPPORTED_VERSION whose key list
// holds only ApiVersions and its versions, from which the client picks the
// version to retry with.
func unsupportedAPIVersions(context.Context) (kmsg.Response, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	a, _ := lookupAPI(int16(kmsg.ApiVersions))
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{apiKey(a)}
	return resp, nil
}

func supportedAPIKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for _, a := range apis {
		keys = append(keys, apiKey(a))
	}
	return keys
}

func apiKey(a api) kmsg.ApiVersionsResponseApiKey {
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey = int16(a.key)
	k.MinVersion = a.min
	k.MaxVersion = a.max
	return k
}
