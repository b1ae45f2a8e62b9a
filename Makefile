# MiniKafka-Go. The two commands: `make run` and `make test`.
GO       ?= go
BIN      := bin
NODE     := $(BIN)/minikafka-node
CLI      := $(BIN)/minikafka
DATA     := data

.PHONY: all build test vet fmt-check run cluster cluster-stop clean

all: build

build:
	$(GO) build -o $(NODE) ./cmd/node
	@if [ -d cmd/minikafka ]; then $(GO) build -o $(CLI) ./cmd/minikafka; fi

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: fmt-check vet
	$(GO) test -race -count=1 -timeout 14m ./...

# A single embedded node in the foreground, Kafka on 127.0.0.1:9092.
run: build
	$(NODE) --config configs/single.yaml

clean:
	rm -rf $(BIN) $(DATA)
