GO ?= go
BIN := bin

.PHONY: all build test vet fmt-check run

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: fmt-check vet
	$(GO) test -race -count=1 -timeout 14m ./...
