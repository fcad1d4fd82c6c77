# Builds the relay into a small runtime image.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# Cargo reads every workspace member (manifest and targets) even when building one package.
COPY crates ./crates
COPY src ./src
# The relay with everything it serves: the WebSockets, MCP over Streamable HTTP on /mcp (hosts
# connect by URL; feature `http-mcp`), the admin API and /dashboard. The stdio `bridge` and the
# `bench` load generator run where the MCP host and the load generator are. `.ci/run` builds
# with this very line and runs the HTTP MCP and dashboard tests against its binary.
RUN cargo build --release --locked --no-default-features --features http-mcp --bin mcp-relay

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 relay \
    && mkdir -p /var/lib/mcp-relay && chown relay /var/lib/mcp-relay
COPY --from=build /src/target/release/mcp-relay /usr/local/bin/mcp-relay
USER relay
EXPOSE 8443
ENV MCP_RELAY_LISTEN=0.0.0.0:8443
# Approvals, revocations and the audit trail (docs/ADMIN.md): a single relay keeps them in
# /var/lib/mcp-relay/state.db, a volume, so they survive a new container (the system user has no
# home directory to default to); with --cluster the default is the state shared on NATS.
ENV XDG_DATA_HOME=/var/lib
VOLUME ["/var/lib/mcp-relay"]
HEALTHCHECK --interval=15s --timeout=3s CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8443"]
ENTRYPOINT ["mcp-relay"]
CMD ["serve"]
