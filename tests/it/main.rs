//! The relay's integration tests, in one binary: each module is what used to be a test file
//! of its own (`relay_protocol`, `browser_e2e`, …), so the suite compiles and links once.
//! Name a tier by module path: `cargo test --test it relay_protocol::` runs one module, and
//! `cargo fast` (the alias in `.cargo/config.toml`) runs every module that needs nothing but
//! loopback sockets.
//!
//! Two test files stay binaries of their own, each for a reason given at its top:
//! `tests/hostile_state.rs` measures its own process's memory, and `tests/side_by_side.rs` is a
//! benchmark against Playwright MCP.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod blueprint_extension;
mod bridge;
mod bridge_proxy;
mod browser_e2e;
mod browser_owner;
mod browser_page_tools;
mod browser_person;
mod browser_webmcp;
mod chaos;
mod cluster;
mod dashboard;
mod extension_unit;
mod hostile_protocol;
mod hostile_sockets;
mod hostile_user;
mod jwks;
mod mcp_http;
mod operator;
mod properties;
mod relay_hardening;
mod relay_protocol;
mod sdk_code_execution;
mod sdk_page_tools;
