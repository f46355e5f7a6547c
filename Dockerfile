# syntax=docker/dockerfile:1.7
#
# appruntime images. One binary serves every role (api, console, worker,
# migrate); two final stages:
#
#   runtime        (default) distroless/static, non-root: api, console,
#                  migrate and every worker queue but "script".
#   script-worker  Alpine with python3 and bubblewrap, non-root: runs
#                  `appruntime worker --queues script` only.
#
# The binary is static although it uses cgo (pg_query_go parses SQL with
# libpg_query, which is C): it is built on Alpine against musl and linked
# with -static, so the runtime stage needs no libc at all. The sandboxed
# script queue needs an interpreter and bwrap, which the other roles must not
# carry (a smaller image and nothing to exec for an attacker), hence the
# second stage.
#
#   docker build -t appruntime .
#   docker build --target script-worker -t appruntime-script-worker .

ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22

FROM golang:${GO_VERSION}-alpine${ALPINE_VERSION} AS build
RUN apk add --no-cache build-base
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# netgo and osusergo keep the resolver and user lookups in Go, so the static
# link pulls no NSS modules in.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo \
      -ldflags "-s -w -linkmode external -extldflags -static" \
      -o /out/appruntime ./cmd/appruntime \
 && mkdir -p /out/blobs

FROM alpine:${ALPINE_VERSION} AS script-worker
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="appruntime script worker" \
      org.opencontainers.image.description="appruntime worker for the script queue (python3 in a bubblewrap sandbox)" \
      org.opencontainers.image.source="https://github.com/appruntime/appruntime" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
RUN apk add --no-cache python3 bubblewrap ca-certificates \
 && addgroup -S -g 65532 appruntime \
 && adduser -S -D -H -u 65532 -G appruntime appruntime \
 && mkdir -p /var/lib/appruntime/blobs \
 && chown 65532:65532 /var/lib/appruntime/blobs
COPY --from=build /out/appruntime /usr/local/bin/appruntime
USER 65532:65532
ENV PYTHON_BIN=/usr/bin/python3 PYTHON_BWRAP=/usr/bin/bwrap
ENTRYPOINT ["/usr/local/bin/appruntime"]
CMD ["worker", "--queues", "script"]

FROM gcr.io/distroless/static-debian12:nonroot AS runtime
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="appruntime" \
      org.opencontainers.image.description="appruntime: api, console, worker and migrate in one static binary" \
      org.opencontainers.image.source="https://github.com/appruntime/appruntime" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/appruntime /usr/local/bin/appruntime
COPY --from=build --chown=65532:65532 /out/blobs /var/lib/appruntime/blobs
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/appruntime"]
CMD ["api"]
