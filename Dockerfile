# syntax=docker/dockerfile:1
#
# kuryr-l7-router container image.
#
#   docker build -t kuryr-l7-router:dev .
#
# Stage 1 builds the release binary with the locked dependency set; stage 2 is a distroless
# runtime (glibc, libgcc, CA certificates, no shell, no package manager) running as the
# unprivileged uid/gid 65532. No credentials are baked in: kuryr.conf comes from a ConfigMap and
# secrets from the environment (KURYR_<SECTION>__<KEY>), see etc/manifests/ and docs/deployment.md.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
# .dockerignore keeps target/, .git and local credentials out of the build context.
COPY . .
# The cache mounts keep the crates.io registry and the target directory between builds;
# the binary is copied out of the cached target/ so that the next stage can see it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin kuryr-l7-router \
    && install -D -m 0755 target/release/kuryr-l7-router /out/kuryr-l7-router

FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="kuryr-l7-router" \
      org.opencontainers.image.description="Kubernetes Ingress controller routing on one shared OpenStack Octavia load balancer" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/kuryr-l7-router /usr/local/bin/kuryr-l7-router
COPY --from=builder /src/etc/kuryr.conf.sample /etc/kuryr/kuryr.conf.sample
# distroless "nonroot" is uid/gid 65532; numeric so that runAsNonRoot can verify it.
USER 65532:65532
# /healthz, /readyz and /metrics ([kubernetes] health_port).
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kuryr-l7-router"]
CMD ["run", "--config-file", "/etc/kuryr/kuryr.conf"]
