package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cast"

	"github.com/minikafka/minikafka-go/broker"
)

// Structured keys read from the YAML file only (no flag or environment
// variable): lists of maps.
const (
	listenersKey = "listeners"
	saslUsersKey = "sasl_users"
)

var (
	listenerFields = []string{"name", "security_protocol", "addr", "advertised_addr", "tls_cert_file", "tls_key_file",
		"tls_ca_file", "client_auth", "sasl_mechanisms"}
	saslUserFields = []string{"name", "password", "mechanisms", "iterations"}
)

// maps reads a YAML list of maps with only the given fields.
func (g *getter) maps(key string, fields []string) []map[string]any {
	val := g.v.Get(key)
	if val == nil {
		return nil
	}
	items, ok := val.([]any)
	if !ok {
		g.fail(key, val, errors.New("not a list"))
		return nil
	}
	out := make([]map[string]any, 0, len(items))
	for i, it := range items {
		m, err := cast.ToStringMapE(it)
		if err != nil {
			g.fail(fmt.Sprintf("%s[%d]", key, i), it, errors.New("not a map"))
			return nil
		}
		for f := range m {
			if !slices.Contains(fields, f) {
				g.fail(fmt.Sprintf("%s[%d].%s", key, i, f), m[f], fmt.Errorf("unknown field; known: %s", strings.Join(fields, ", ")))
				return nil
			}
		}
		out = append(out, m)
	}
	return out
}

func (g *getter) field(key string, m map[string]any, f string) string {
	v, ok := m[f]
	if !ok || v == nil {
		return ""
	}
	s, err := cast.ToStringE(v)
	if err != nil {
		g.fail(key+"."+f, v, errors.New("not a string"))
	}
	return strings.TrimSpace(s)
}

func (g *getter) fieldList(key string, m map[string]any, f string) []string {
	v, ok := m[f]
	if !ok || v == nil {
		return nil
	}
	if s, ok := v.(string); ok {
		v = strings.Split(s, ",")
	}
	l, err := cast.ToStringSliceE(v)
	if err != nil {
		g.fail(key+"."+f, v, errors.New("not a list"))
	}
	for i := range l {
		l[i] = strings.TrimSpace(l[i])
	}
	return l
}

// listeners reads the listeners key (see broker.ListenerConfig).
func (g *getter) listeners() []broker.ListenerConfig {
	var out []broker.ListenerConfig
	for i, m := range g.maps(listenersKey, listenerFields) {
		key := fmt.Sprintf("%s[%d]", listenersKey, i)
		out = append(out, broker.ListenerConfig{
			Name:             g.field(key, m, "name"),
			SecurityProtocol: strings.ToUpper(g.field(key, m, "security_protocol")),
			Addr:             g.field(key, m, "addr"),
			AdvertisedAddr:   g.field(key, m, "advertised_addr"),
			TLSCertFile:      g.field(key, m, "tls_cert_file"),
			TLSKeyFile:       g.field(key, m, "tls_key_file"),
			TLSCAFile:        g.field(key, m, "tls_ca_file"),
			ClientAuth:       strings.ToLower(g.field(key, m, "client_auth")),
			SASLMechanisms:   g.fieldList(key, m, "sasl_mechanisms"),
		})
	}
	return out
}

// saslUsers reads the sasl_users key (see broker.SASLUser).
func (g *getter) saslUsers() []broker.SASLUser {
	var out []broker.SASLUser
	for i, m := range g.maps(saslUsersKey, saslUserFields) {
		key := fmt.Sprintf("%s[%d]", saslUsersKey, i)
		u := broker.SASLUser{
			Name:       g.field(key, m, "name"),
			Password:   g.field(key, m, "password"),
			Mechanisms: g.fieldList(key, m, "mechanisms"),
		}
		if it := g.field(key, m, "iterations"); it != "" {
			n, err := cast.ToIntE(it)
			if err != nil {
				g.fail(key+".iterations", it, errors.New("not an integer"))
			}
			u.Iterations = n
		}
		out = append(out, u)
	}
	return out
}
