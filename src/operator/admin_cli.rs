//! `mcp-relay admin`: the admin API (`crate::operator::admin`) from a terminal. Each verb is one HTTP
//! request; the answer is printed as a table (or, with `--json`, as the API's JSON).
//!
//! It speaks plain HTTP/1.1 over one connection per command (`http_client.rs`), with TLS
//! (public roots plus `--ca-cert`) for `https://` and `wss://` relay URLs.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::http_client::{call, Base};

/// Options of `mcp-relay admin`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// The relay: its base URL (`https://relay.example.com`) or any of its endpoint URLs
    /// (`wss://relay.example.com/mcp` works too).
    #[arg(
        long,
        env = "MCP_RELAY_ADMIN_URL",
        default_value = "http://127.0.0.1:8080",
        global = true
    )]
    pub relay: String,

    /// A token of role `admin` (every user's things) or your own MCP token (your things
    /// only). Prefer the environment variable: a flag shows in the process list.
    #[arg(
        long,
        env = "MCP_RELAY_ADMIN_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub token: Option<String>,

    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,

    /// PEM CA certificate(s) to trust besides the public roots (e.g. `certs/ca.pem` from
    /// `mcp-relay dev-certs`).
    #[arg(long, global = true)]
    pub ca_cert: Option<PathBuf>,

    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// List browsers (id, user, name, approved, connected, last seen, version).
    Browsers,
    /// Approve a browser (also lifts a revocation of it).
    Approve { id: String },
    /// Revoke a browser: its sockets close now, and it may not connect until approved again.
    RevokeBrowser { id: String },
    /// Revoke one token by its `jti` (an admin revokes it for whoever holds it; a user for
    /// their own tokens).
    RevokeToken {
        jti: String,
        /// Only this user's token with that jti (admins only; users always mean their own).
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke every token of USER issued before a moment (default: now).
    RevokeUser {
        user: String,
        /// Seconds since the epoch, RFC 3339, `now`, or how long ago (`15m`).
        #[arg(long, default_value = "now")]
        issued_before: String,
    },
    /// List live assistant (MCP) connections (in a cluster, on every node; NODE says which).
    Connections,
    /// End an assistant's connection (its client is told `disconnected`).
    Kick { connection: String },
    /// Query the audit trail, newest first.
    Audit {
        #[arg(long)]
        user: Option<String>,
        /// A browser's extension id.
        #[arg(long)]
        browser: Option<String>,
        #[arg(long)]
        method: Option<String>,
        /// From this moment (RFC 3339, seconds, or how long ago: `1h`).
        #[arg(long)]
        since: Option<String>,
        /// Before this moment.
        #[arg(long)]
        until: Option<String>,
        /// At most this many events (the relay caps it at 1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

/// Runs one `admin` command, printing its answer to stdout.
pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    let token = args
        .token
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .context(
            "no token: set MCP_RELAY_ADMIN_TOKEN (or pass --token) to an admin token (`mcp-relay \
         token --user ops --role admin`) or your own MCP token",
        )?;
    let base = Base::parse(&args.relay)?;
    let (method, path, body) = request(&args.verb);
    let (status, answer) = call(
        &base,
        args.ca_cert.as_deref(),
        method,
        &path,
        Some(token),
        body,
    )
    .await?;
    if !(200..300).contains(&status) {
        let message = answer["error"].as_str().unwrap_or("(no error message)");
        anyhow::bail!("the relay answered {status}: {message}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", render(&args.verb, &answer));
    }
    Ok(())
}

fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn request(verb: &Verb) -> (&'static str, String, Option<Value>) {
    match verb {
        Verb::Browsers => ("GET", "/api/v1/browsers".into(), None),
        Verb::Approve { id } => (
            "POST",
            format!("/api/v1/browsers/{}/approve", encode(id)),
            None,
        ),
        Verb::RevokeBrowser { id } => (
            "POST",
            format!("/api/v1/browsers/{}/revoke", encode(id)),
            None,
        ),
        Verb::RevokeToken { jti, user } => {
            let mut body = json!({ "jti": jti });
            if let Some(user) = user {
                body["user_id"] = user.as_str().into();
            }
            ("POST", "/api/v1/tokens/revoke".into(), Some(body))
        }
        Verb::RevokeUser {
            user,
            issued_before,
        } => (
            "POST",
            "/api/v1/tokens/revoke".into(),
            Some(json!({ "user_id": user, "issued_before": issued_before })),
        ),
        Verb::Connections => ("GET", "/api/v1/connections".into(), None),
        Verb::Kick { connection } => (
            "DELETE",
            format!("/api/v1/connections/{}", encode(connection)),
            None,
        ),
        Verb::Audit {
            user,
            browser,
            method,
            since,
            until,
            limit,
        } => {
            let mut query = vec![format!("limit={limit}")];
            for (key, value) in [
                ("user_id", user),
                ("browser", browser),
                ("method", method),
                ("since", since),
                ("until", until),
            ] {
                if let Some(value) = value {
                    query.push(format!("{key}={}", encode(value)));
                }
            }
            ("GET", format!("/api/v1/audit?{}", query.join("&")), None)
        }
    }
}

/// A table with a header row, columns as wide as their widest cell.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                text.push_str(cell);
                text.push_str(&" ".repeat(pad + 2));
            }
        }
        text.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        out += &line(row);
    }
    out
}

fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        other => other.to_string(),
    }
}

fn render(verb: &Verb, answer: &Value) -> String {
    let rows = |key: &str, fields: &[&str]| -> Vec<Vec<String>> {
        answer[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| fields.iter().map(|f| cell(&item[*f])).collect())
                    .collect()
            })
            .unwrap_or_default()
    };
    match verb {
        Verb::Browsers => {
            let fields = [
                "id",
                "user_id",
                "name",
                "approved",
                "connected",
                "last_seen",
                "version",
            ];
            table(
                &[
                    "ID",
                    "USER",
                    "NAME",
                    "APPROVED",
                    "CONNECTED",
                    "LAST SEEN",
                    "VERSION",
                ],
                rows("browsers", &fields),
            )
        }
        Verb::Connections => table(
            &[
                "ID",
                "USER",
                "MCP CLIENT",
                "CLIENT NAME",
                "BROWSER",
                "PENDING",
                "NODE",
            ],
            rows(
                "connections",
                &[
                    "id",
                    "user_id",
                    "mcp_client_id",
                    "client_name",
                    "extension_id",
                    "pending_requests",
                    "node",
                ],
            ),
        ),
        Verb::Audit { .. } => table(
            &[
                "AT", "KIND", "USER", "BROWSER", "METHOD", "CODE", "MS", "DETAIL",
            ],
            rows(
                "events",
                &[
                    "at",
                    "kind",
                    "user_id",
                    "extension_id",
                    "method",
                    "code",
                    "duration_ms",
                    "detail",
                ],
            ),
        ),
        Verb::Approve { id } => format!("approved {id}\n"),
        Verb::RevokeBrowser { id } => format!(
            "revoked browser {id} (closed {} sockets)\n",
            cell(&answer["closed_sockets"])
        ),
        Verb::RevokeToken { jti, .. } => format!(
            "revoked token {jti} (closed {} sockets)\n",
            cell(&answer["closed_sockets"])
        ),
        Verb::RevokeUser { user, .. } => format!(
            "revoked every token of {user} issued before {} (closed {} sockets)\n",
            cell(&answer["issued_before"]),
            cell(&answer["closed_sockets"])
        ),
        Verb::Kick { connection } => format!("closed connection {connection}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_their_columns() {
        let text = table(&["A", "LONG"], vec![vec!["xyz".into(), "1".into()]]);
        assert_eq!(text, "A    LONG\nxyz  1\n");
    }
}
