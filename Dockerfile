# A MiniKafka node image: minikafka-node and the minikafka CLI, static
# (CGO_ENABLED=0), on distroless/static, running as nonroot. Build with
#   docker build -t minikafka .
# and see docs/deploy.md for running nodes on separate hosts. The config
# is deploy/docker/node.yaml; every key can be overridden with MINIKAFKA_*
# environment variables (docs/configuration.md).
# deploy/deploy_test.go checks what it can without a Docker engine: the
# build commands below give static binaries, the copied files exist, the
# exposed ports and the volume are the config's.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again;
# hashicorp/raft is replaced by the patched copy in third_party/raft.
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -ldflags="-s -w" -o /out/minikafka-node ./cmd/node
RUN CGO_ENABLED=0 go build -ldflags="-s -w" -o /out/minikafka ./cmd/minikafka
# The data volume's mount point, owned by distroless's nonroot user.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/minikafka-node /out/minikafka /usr/local/bin/
COPY deploy/docker/node.yaml /etc/minikafka/node.yaml
COPY --from=build --chown=65532:65532 /out/data /var/lib/minikafka
VOLUME /var/lib/minikafka
# Kafka, Raft, gossip (TCP and UDP), admin (metrics, /livez, /readyz).
EXPOSE 9092 9192 9292 9292/udp 9644
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/minikafka-node"]
CMD ["--config", "/etc/minikafka/node.yaml"]
