# The controller image: a static wva binary on distroless, as non-root.
# The manifests (config/manager, charts/wva) run it with a read-only root
# filesystem; it writes nothing to disk. make docker-build passes VERSION
# (the VERSION file) and REVISION; make image builds an equivalent image
# without Docker (hack/image).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} go build -trimpath -buildvcs=false -ldflags "-s -w -X github.com/llm-d-incubation/wva/internal/cli.Version=${VERSION}" -o /out/wva ./cmd/wva

FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
ARG REVISION=""
LABEL org.opencontainers.image.title="wva" \
      org.opencontainers.image.description="WVA, the SLO-driven autoscaler for LLM inference servers (controller)" \
      org.opencontainers.image.source="https://github.com/llm-d-incubation/wva" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/wva /wva
USER 65532:65532
ENTRYPOINT ["/wva"]
CMD ["controller"]
