# syntax=docker/dockerfile:1

# recall: one static binary. Build with `docker build -t recall .` or through
# docker-compose.yml.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/recall ./cmd/recall

# Alpine rather than distroless: the compose health checks need a client
# (busybox wget) inside the container.
FROM alpine:3.22
RUN apk add --no-cache ca-certificates tzdata \
    && addgroup -S -g 10001 recall \
    && adduser -S -D -H -u 10001 -G recall recall
COPY --from=build /out/recall /recall
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["/recall"]
CMD ["run"]
