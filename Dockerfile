# Builds the relay into a small runtime image.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked --bin mcp-relay

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 relay
COPY --from=build /src/target/release/mcp-relay /usr/local/bin/mcp-relay
USER relay
EXPOSE 8443
ENV MCP_RELAY_LISTEN=0.0.0.0:8443
HEALTHCHECK --interval=15s --timeout=3s CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8443"]
ENTRYPOINT ["mcp-relay"]
CMD ["serve"]
