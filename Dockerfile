# The controller image: a static wva binary on distroless, as non-root.
# The manifests (config/manager, charts/wva) run it with a read-only root
# filesystem; it writes nothing to disk.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/llm-d-incubation/wva/internal/cli.Version=${VERSION}" -o /out/wva ./cmd/wva

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/wva /wva
USER 65532:65532
ENTRYPOINT ["/wva"]
CMD ["controller"]
