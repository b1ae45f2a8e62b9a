// Package quota enforces Kafka's client quotas on one node, as Kafka's
// ClientQuotaManager, ClientRequestQuotaManager and
// ControllerMutationQuotaManager do (KIP-13, KIP-124, KIP-219, KIP-599).
//
// A Manager keeps, per (user, client id) entity, sliding-window sensors:
// produce bytes, fetch bytes and request time (a Rate over
// quota.window.num windows of quota.window.size), and a token bucket of
// partition mutations. The quotas themselves come from a Source (the
// metadata state), read at every record, so a change applies at once.
//
// The caller's duties, per request:
//  1. Record the request's value of each quota it is subject to; each
//     Record returns how long the client must be throttled.
//  2. Put the largest throttle in the response's throttle_time_ms, and
//     RecordThrottle it.
//  3. Read nothing more from the connection until the throttle has passed
//     (Kafka mutes the channel; KIP-219 clients also wait on their own).
//
// Memory is bounded: entities idle for IdleExpiry are dropped, and past
// MaxEntities new entities share one overflow entity (they throttle each
// other rather than escape their quotas).
package quota
