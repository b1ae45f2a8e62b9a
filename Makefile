# MiniKafka-Go. The two commands: `make run` and `make test`.
GO       ?= go
BIN      := bin
NODE     := $(BIN)/minikafka-node
CLI      := $(BIN)/minikafka
DATA     := data

.PHONY: all build test vet fmt-check run cluster cluster-secure certs cluster-stop clean

all: build

build:
	$(GO) build -o $(NODE) ./cmd/node
	@if [ -d cmd/minikafka ]; then $(GO) build -o $(CLI) ./cmd/minikafka; fi

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# -p 3: the packages' tests mostly wait (real clusters, timeouts), so a
# third package at a time shortens the run on a 2-core machine.
# go test starts packages in the order given (and runs each once): the
# longest first, so that no long one starts last and runs alone.
SLOW_TEST_PKGS := ./broker ./test/e2e ./test/reqfuzz ./multiraft ./test/interop ./client ./cmd/minikafka \
	./console ./test/jepsen ./test/readme ./test/netns ./metrics ./kafkaapi ./deploy
# The raft patches' tests and bench's run after the main run, alone: run
# beside it, a raft test lost its leader to the load
# (TestStaleSnapshotLateReadsKeepReplicasEqual), and bench's node
# processes pick ports as test/e2e's do (internal/loopports), so one could
# take a port that is free between an e2e node's kill and its restart.
test: fmt-check vet test-deps
	$(GO) test -race -count=1 -p 3 -timeout 14m $(SLOW_TEST_PKGS) ./...
	cd third_party/raft && $(GO) test -race -count=1 -run '$(RAFT_PATCH_TESTS)' .
	cd bench && $(GO) test -race -count=1 ./...

# hashicorp/raft as patched in third_party/raft (its MINIKAFKA.md): the
# patches' own tests run in make test; make raft-test also runs raft's
# whole suite, twice (the second time with ParallelLeaderWrite on), and
# make raft-diff prints the patches against the release.
RAFT_PATCH_TESTS := Quiesce|StaleSnapshot|LeaseVouch|CampaignGate|LeadershipTransferRacingShutdown|ApplyRacingShutdown|LogCacheDeleteRange|ParallelLeaderWrite
RAFT_VERSION     := v1.8.0
# Upstream's TestFileSS_BadPerm expects a read-only directory to refuse
# writes, which root's do not (third_party/raft/MINIKAFKA.md).
RAFT_ROOT_SKIP   := $(if $(filter 0,$(shell id -u)),-skip '^TestFileSS_BadPerm$$')
.PHONY: raft-test raft-diff
raft-test:
	cd third_party/raft && $(GO) test -count=1 -run '$(RAFT_PATCH_TESTS)' -v . && $(GO) test -count=1 -timeout 20m $(RAFT_ROOT_SKIP) . \
	  && RAFT_PARALLEL_LEADER_WRITE=1 $(GO) test -count=1 -timeout 20m $(RAFT_ROOT_SKIP) .
raft-diff:
	@$(GO) mod download github.com/hashicorp/raft@$(RAFT_VERSION) >/dev/null 2>&1 || true; \
	diff -ru -x MINIKAFKA.md "$$($(GO) env GOMODCACHE)/github.com/hashicorp/raft@$(RAFT_VERSION)" third_party/raft || true

# What the interop tests need besides Go: librdkafka as Debian's kcat and
# python3-confluent-kafka, and the Node.js clients pinned by
# test/interop/package-lock.json (kafkajs), installed with npm ci. The
# metrics tests need promtool (Debian's prometheus) and chromium; the
# network-namespace test ip (iproute2), the systemd unit's test
# systemd-analyze.
# Installed quietly, only what is missing or stale: when everything is
# there this only looks. Where an install fails, kcat's tests skip and the
# group suite's test of that client fails, saying what is missing.
.PHONY: test-deps
test-deps:
	@missing=; \
	command -v kcat >/dev/null 2>&1 || missing="$$missing kcat"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	{ command -v ip || [ -x /usr/sbin/ip ]; } >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 \
	  || python3 -c 'import confluent_kafka' >/dev/null 2>&1 \
	  || missing="$$missing python3-confluent-kafka"; \
	if [ -n "$$missing" ]; then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing$$missing for test/interop and metrics"; \
	  { $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; } >/dev/null 2>&1 \
	    || echo "could not install$$missing: the tests that need them skip (or fail where CI is set)"; \
	fi
	@if [ ! test/interop/node_modules/.package-lock.json -nt test/interop/package-lock.json ]; then \
	  echo "installing the Node.js clients of test/interop (npm ci)"; \
	  { command -v npm >/dev/null 2>&1 \
	    && cd test/interop && npm ci --no-audit --no-fund --loglevel=error >/dev/null; } \
	    || echo "could not install test/interop's Node.js clients: the kafkajs group test will fail"; \
	fi

# Nodes on separate hosts (issue 31, test/netns; about 35 s, also part of
# make test): three nodes each in its own network namespace and address,
# bound to all interfaces and advertising their own, clients in a fourth;
# produce, consume in a group, kill -9 a leader, produce and consume
# again, restart the killed node at a new address, read everything back.
# Needs root (CAP_NET_ADMIN); MINIKAFKA_NETNS_KEEP=1 keeps the nodes' logs.
.PHONY: netns
netns:
	$(GO) test -count=1 -v -run 'TestThreeHosts' ./test/netns/

# A single embedded node in the foreground, Kafka on 127.0.0.1:9092.
run: build
	$(NODE) --config configs/single.yaml

clean:
	rm -rf $(BIN) $(DATA)

# The long failover run (issue 5): every e2e scenario in its long version,
# at least 50 faults over several minutes, then a summary of faults,
# records acknowledged, lost, duplicated, out of order, replicas compared
# and failover times. The consumer-group failover (issue 12) runs long too:
# coordinator and data-leader kills under a group of 3 consumers, every
# consumer restarted after each round; the summary adds records lost,
# re-delivered below a commit, offset regressions and resume mismatches.
# TestGroupFailoverServerSide runs it again with KIP-848 members
# (kgo.ServerSideBalancer, issue 32).
# The long run's cluster is partitionable (issue 18): at least 30 of its
# faults are network partitions, counted by kind in the summary with the
# stale reads, isolated-leader acknowledgements and epoch conflicts.
.PHONY: e2e
e2e:
	MINIKAFKA_E2E_LONG=1 $(GO) test -count=1 -timeout 45m -v ./test/e2e/

# Jepsen's Kafka workload (issue 29, test/jepsen): 8 franz-go client
# processes (idempotent sends, transactions, consume-transform-produce,
# assign and subscribe polls at both isolation levels) against a
# partitionable 3-node cluster for JEPSEN_TIME, under a nemesis of kill -9,
# SIGSTOP, graceful restarts, partitions (isolating, bridging, one-way),
# leader and coordinator kills; then healed, read back to the end, and the
# history checked for every anomaly Jepsen looks for. Prints the fault
# schedule, examples of each anomaly and, last, the summary line
# "history: N ops (...), F faults; anomalies: none". JEPSEN_SEED=<seed>
# repeats a schedule; JEPSEN_TARGET=kfake runs the workload against
# franz-go's kfake instead (no faults), a cross-check of the harness.
# A failing run's history is saved as JSON (JEPSEN_OUT, default /tmp);
# JEPSEN_HISTORY=<file> go test -run TestCheckSavedHistory ./test/jepsen/
# checks it again. A 45-second run is part of make test.
JEPSEN_TIME   ?= 10m
JEPSEN_TARGET ?=
.PHONY: jepsen
jepsen:
	JEPSEN_TIME=$(JEPSEN_TIME) MINIKAFKA_JEPSEN_TARGET=$(JEPSEN_TARGET) $(GO) test -count=1 -timeout 0 -v -run 'TestJepsen$$' ./test/jepsen/

# Compaction soak (issue 30): a key-churn workload on a compacted topic of
# a 3-node cluster for SOAK_TIME, the topic's disk on every node sampled
# every 30 s; fails if it grows (the second half's peak over 1.5 times the
# first half's), then verifies as make e2e's compaction scenario does.
SOAK_TIME ?= 30m
.PHONY: soak-compaction
soak-compaction:
	MINIKAFKA_SOAK_TIME=$(SOAK_TIME) $(GO) test -count=1 -timeout 0 -v -run 'TestCompactionSoak$$' ./test/e2e/

# Request fuzzer (issue 27 item 6): a 3-node cluster of node processes
# gets requests of every API and version it advertises, built from kmsg
# with hostile values and raw mutations, pipelined on 6 connections, for
# FUZZ_TIME (default 30m). After each round every node must answer
# ApiVersions, a reference topic must read back unchanged, a duplicate of
# an idempotent batch must get its first offset, and no node's RSS may pass
# REQFUZZ_RSS_MIB (default 1536). Prints the seed (REQFUZZ_SEED=<seed>
# replays it) and a summary: requests per API, errors per code,
# connections the nodes closed, peak RSS per node, the largest answers.
# A failing round is saved as a case file in /tmp/reqfuzz (REQFUZZ_OUT; see
# test/reqfuzz/doc.go). A one-minute run against one node, from a fixed
# seed, is part of make test.
FUZZ_TIME ?= 30m
.PHONY: fuzz
fuzz:
	REQFUZZ_LONG=1 FUZZ_TIME=$(FUZZ_TIME) $(GO) test -count=1 -timeout 0 -v -run 'TestReqFuzzLong$$' ./test/reqfuzz/

# A local 3-node cluster in the background, from configs/node1..3.yaml
# (Kafka on 127.0.0.1:9092-9094, admin on 127.0.0.1:9644-9646): pids in
# data/nodeN.pid, logs in data/nodeN.log. Returns once every node's /readyz
# answers 200 (joined, metadata caught up, replicas open) and then every
# partition has a leader (cluster status --wait: /readyz does not wait for
# elections). `make cluster-stop` stops it gracefully.
CLUSTER_NODES   := 1 2 3
CLUSTER_BROKERS := 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094
CLUSTER_ADMIN   := 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646

# is_node PIDFILE: the pid file names a running minikafka-node. A zombie
# (killed, not yet reaped: ps state Z) is not running.
define is_node
{ [ -f $(1) ] && ps -p "$$(cat $(1))" -o stat= -o args= 2>/dev/null | grep -v '^ *Z' | grep -q minikafka-node; }
endef
# alive PID: the process runs and is not a zombie (kill -0 answers for both).
define alive
ps -p $(1) -o stat= 2>/dev/null | grep -qv '^ *Z'
endef
# answers N: something answers Kafka requests at node N's address.
define answers
$(CLI) topic list $(CLUSTER_CLI_FLAGS) --brokers "$$(echo $(CLUSTER_BROKERS) | cut -d, -f$(1))" --timeout 2s >/dev/null 2>&1
endef
# readyz N: node N's /readyz, printed (curl, else wget); fails unless 200.
define readyz
url=http://$$(echo $(CLUSTER_ADMIN) | cut -d, -f$(1))/readyz; \
if command -v curl >/dev/null 2>&1; then curl -sS --fail-with-body --max-time 2 "$$url"; \
else wget -q --content-on-error -O - -T 2 "$$url"; fi
endef

# The recipe of make cluster and make cluster-secure; CLUSTER_CONFIGS is
# the directory of node1..3.yaml, CLUSTER_ENV the nodes' extra environment,
# CLUSTER_CLI_FLAGS how the CLI reaches them.
CLUSTER_CONFIGS   := configs
CLUSTER_ENV       :=
CLUSTER_CLI_FLAGS :=
define cluster_recipe
	@mkdir -p $(DATA)
	@detach=; if command -v setsid >/dev/null 2>&1; then detach=setsid; fi; \
	for n in $(CLUSTER_NODES); do \
	  pidf=$(DATA)/node$$n.pid; \
	  if $(call is_node,$$pidf); then \
	    echo "node $$n is already running (pid $$(cat $$pidf))"; \
	  elif $(call answers,$$n); then \
	    echo "node $$n: something already answers at $$(echo $(CLUSTER_BROKERS) | cut -d, -f$$n), not started by make cluster; not starting another"; \
	  else \
	    env $(CLUSTER_ENV) nohup $$detach $(NODE) --config $(CLUSTER_CONFIGS)/node$$n.yaml >>$(DATA)/node$$n.log 2>&1 </dev/null & \
	    echo $$! >$$pidf; \
	    echo "node $$n started (pid $$!)"; \
	  fi; \
	done
	@for n in $(CLUSTER_NODES); do \
	  i=0; until out=$$($(call readyz,$$n) 2>&1); do \
	    i=$$((i+1)); if [ $$i -ge 300 ]; then \
	      echo "node $$n not ready after 30s: $$out; see $(DATA)/node$$n.log"; exit 1; \
	    fi; sleep 0.1; \
	  done; \
	  echo "node $$n ready"; \
	done
	@if ! $(CLI) cluster status $(CLUSTER_CLI_FLAGS) --brokers $(CLUSTER_BROKERS) --wait 30s; then \
	  echo "the cluster did not come up; see $(DATA)/node1.log $(DATA)/node2.log $(DATA)/node3.log"; exit 1; \
	fi
	@for n in $(CLUSTER_NODES); do \
	  if [ -f $(DATA)/node$$n.pid ] && ! $(call is_node,$(DATA)/node$$n.pid); then \
	    echo "node $$n exited; last lines of $(DATA)/node$$n.log:"; \
	    tail -n 5 $(DATA)/node$$n.log; rm -f $(DATA)/node$$n.pid; exit 1; \
	  fi; \
	done
	@echo "cluster up: brokers $(CLUSTER_BROKERS)"
	@echo "logs: $(DATA)/node1.log $(DATA)/node2.log $(DATA)/node3.log; stop with: make cluster-stop"
endef

cluster: build
	$(cluster_recipe)

# make certs: a development CA, a certificate per node and a gossip key in
# data/certs (cmd/minikafka certs; kept if data/certs/ca.pem exists).
certs: build
	@if [ -f $(DATA)/certs/ca.pem ]; then echo "$(DATA)/certs/ca.pem exists: keeping $(DATA)/certs (remove it for new certificates)"; \
	else $(CLI) certs --dir $(DATA)/certs; fi

# make cluster-secure: the local 3-node cluster from configs/secure
# (Kafka on SASL_SSL 127.0.0.1:9092-9094 with SCRAM-SHA-512, user admin,
# password admin-secret; mutual TLS between nodes; gossip encrypted with
# data/certs/gossip.key). Clients trust data/certs/ca.pem. Stop it with
# make cluster-stop.
cluster-secure: CLUSTER_CONFIGS := configs/secure
cluster-secure: CLUSTER_ENV := MINIKAFKA_GOSSIP_KEYS="$$(cat $(DATA)/certs/gossip.key)"
cluster-secure: CLUSTER_CLI_FLAGS := --tls-ca $(DATA)/certs/ca.pem --sasl-mechanism SCRAM-SHA-512 --sasl-user admin --sasl-password admin-secret
cluster-secure: build certs
	$(cluster_recipe)

cluster-stop:
	@pids=; for n in $(CLUSTER_NODES); do \
	  pidf=$(DATA)/node$$n.pid; \
	  if $(call is_node,$$pidf); then \
	    pid=$$(cat $$pidf); kill -TERM $$pid && echo "node $$n (pid $$pid): SIGTERM sent"; pids="$$pids $$n:$$pid"; \
	  else \
	    rm -f $$pidf; \
	    if $(call answers,$$n); then \
	      echo "node $$n: not started by make cluster (no pid in $$pidf), but something answers at $$(echo $(CLUSTER_BROKERS) | cut -d, -f$$n); stop it by hand"; \
	    else \
	      echo "node $$n is not running"; \
	    fi; \
	  fi; \
	done; \
	status=0; for np in $$pids; do \
	  n=$${np%%:*}; pid=$${np#*:}; i=0; \
	  while $(call alive,$$pid) && [ $$i -lt 300 ]; do sleep 0.1; i=$$((i+1)); done; \
	  if $(call alive,$$pid); then \
	    echo "node $$n (pid $$pid) still running after 30s; see $(DATA)/node$$n.log"; status=1; \
	  else \
	    echo "node $$n stopped"; rm -f $(DATA)/node$$n.pid; \
	  fi; \
	done; exit $$status

# Benchmark: MiniKafka (fsync on commit, and a write.caching=true topic) vs
# NATS JetStream (sync always / default) and our client vs franz-go, on
# 3-server loopback clusters. bench/ is its own Go module (nats-server is
# not a dependency of the broker). Prints a table with the aims of issue
# 14; writes bench/out/results.json and bench/out/chart.{png,svg}. Extra
# flags: make bench BENCH_FLAGS="--sizes 1024 --duration 20s"; the issue-14
# comparison: make bench BENCH_FLAGS='--partitions 1,12 --node-args
# "--raft-log-store pebble"' (see bench/README.md).
.PHONY: bench bench-quick
bench:
	cd bench && $(GO) build -o out/bench . && ./out/bench $(BENCH_FLAGS)

# Smoke check of the same (about a minute): short runs, smaller window.
bench-quick:
	cd bench && $(GO) build -o out/bench . && ./out/bench --quick $(BENCH_FLAGS)

# Share groups vs classic groups (issue 33): drain throughput and paced
# delivery latency on an in-process 3-node cluster, about a minute; the
# figures are in docs/performance.md.
.PHONY: bench-share
bench-share:
	$(GO) test -run '^$$' -bench BenchmarkShareVsClassic -benchtime 3x -count 3 ./broker/

# Scale check: starts the local cluster (make cluster; start from an
# empty one, e.g. after make clean, so that the topic is new), creates a
# topic of 1000 partitions x RF3 (SCALE_FLAGS="-partitions 10000" for
# more), reports the time until every partition is led, leaders per node,
# idle CPU, syscalls, file descriptors and RSS per node, then kills node 2
# with SIGKILL and times the fail-over of the partitions it led, and last
# prints each node's peak RSS over the run (VmHWM, read before the node
# is stopped). make cluster-stop runs even if the check fails. The nodes
# run with the default configuration; SCALE_ENV adds environment (MINIKAFKA_* keys),
# e.g. the many-partitions timing of docs/scale.md.
SCALE_ENV ?=
.PHONY: scale
scale:
	$(SCALE_ENV) $(MAKE) cluster
	@status=0; $(GO) run ./internal/scalecheck -partitions 1000 -kill 2 $(SCALE_FLAGS) || status=$$?; \
	$(MAKE) cluster-stop || true; exit $$status

# Soak (issue 13): a 3-node cluster from generated configs under steady
# load for SOAK_DURATION (default 30m): a topic of 6 partitions x RF 3 with
# retention.ms=60000 and segment.bytes=1 MiB, peak throughput of franz-go
# idempotent acks=all producing measured for 20 s, then half of it. Every
# 10 s each node's RSS and data-directory size; writes
# bench/out/soak/soak.{csv,svg} and prints first/last/max and the slope
# over the second half. Not part of make test. See docs/soak.md. Extra
# flags: make soak SOAK_FLAGS="--partitions 12 --value-size 4096".
SOAK_DURATION ?= 30m
.PHONY: soak
soak:
	cd bench && SOAK_DURATION=$(SOAK_DURATION) $(GO) run ./soak $(SOAK_FLAGS)
