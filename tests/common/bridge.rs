//! Driving `mcp-relay bridge` as an MCP host does: the binary as a subprocess, rmcp's client
//! over its stdio.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

use super::WAIT;

pub type Bridge<C = ()> = RunningService<RoleClient, C>;

/// `mcp-relay bridge <args>` with `mcp_token`, and none of the bridge's variables inherited
/// from the developer's environment.
pub fn bridge_command(args: &[&str], mcp_token: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"));
    command
        .arg("bridge")
        .args(args)
        .env("MCP_RELAY_TOKEN", mcp_token)
        .env("MCP_RELAY_LOG", "mcp_relay=info");
    for variable in [
        "MCP_RELAY_URL",
        "MCP_RELAY_BROWSER",
        "MCP_RELAY_CA_CERT",
        "MCP_RELAY_MAX_RESULT_BYTES",
        "MCP_RELAY_BRIDGE_REQUEST_TIMEOUT",
        "MCP_RELAY_BRIDGE_APPROVAL_WAIT",
        "MCP_RELAY_BRIDGE_TOOLS",
        "MCP_RELAY_BRIDGE_DYNAMIC",
        "MCP_RELAY_BRIDGE_DYNAMIC_POOL",
        "MCP_RELAY_AUDIT_LOG",
        "MCP_RELAY_BRIDGE_PROGRESS_INTERVAL",
    ] {
        command.env_remove(variable);
    }
    command
}

/// Starts the bridge and initializes it with `client`.
pub async fn start_bridge<C: ClientHandler>(
    client: C,
    args: &[&str],
    mcp_token: &str,
) -> Bridge<C> {
    let transport =
        TokioChildProcess::new(bridge_command(args, mcp_token)).expect("spawning the bridge");
    tokio::time::timeout(WAIT, client.serve(transport))
        .await
        .expect("initialize timed out")
        .expect("initialize")
}

/// Calls a tool and returns the result as the host sees it on the wire.
pub async fn call<C: ClientHandler>(bridge: &Bridge<C>, tool: &str, args: Value) -> Value {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().expect("arguments are an object").clone());
    let result = tokio::time::timeout(WAIT, bridge.call_tool(params))
        .await
        .unwrap_or_else(|_| panic!("{tool} timed out"))
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    serde_json::to_value(result).unwrap()
}

/// The text contents of a result, joined.
pub fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

/// A successful result's text parsed as JSON.
/// The answer's fields: `structuredContent` (where the bridge puts them beside the text a model
/// reads), else the text parsed as JSON.
pub fn ok_json(result: &Value) -> Value {
    assert!(!is_error(result), "unexpected error: {result}");
    if let Some(structured) = result.get("structuredContent").filter(|s| s.is_object()) {
        let mut fields = structured.clone();
        // Where a part is says nothing about the answer.
        fields.as_object_mut().unwrap().remove("part");
        return fields;
    }
    serde_json::from_str(&text(result)).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"))
}

/// Runs a third-party MCP client script (the official TypeScript or Python SDK) that drives
/// `mcp-relay bridge --relay <url> <bridge_args>` against a fresh relay with one echoing fake
/// extension, and returns the JSON report the script prints as its last line. `interpreter`
/// runs `script`; bridge and extension belong to `user`.
pub async fn run_sdk_client(
    interpreter: &std::path::Path,
    script: &std::path::Path,
    bridge_args: &[&str],
    user: &str,
) -> Value {
    let relay = super::relay().await;
    let echo = super::Extension::connect(&relay, user, "Chrome", "client-1")
        .await
        .spawn_echo();
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(interpreter)
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_mcp-relay"))
            .args(["bridge", "--relay", &relay.url("/mcp")])
            .args(bridge_args)
            .env(
                "MCP_RELAY_TOKEN",
                super::token(user, Some(mcp_relay::auth::Role::Mcp)),
            )
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{} timed out", script.display()))
    .unwrap_or_else(|e| panic!("running {}: {e}", interpreter.display()));
    echo.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{} printed no JSON ({e}): {stdout}", script.display()))
}

/// `tests/mcp-sdk-client`, once `npm ci` has installed the official TypeScript SDK there.
pub fn typescript_sdk_client(test: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-sdk-client");
    let found = dir.join("node_modules").exists().then_some(dir);
    super::present_or_skip(
        found,
        test,
        "tests/mcp-sdk-client/node_modules is missing (run `npm ci` in tests/mcp-sdk-client)",
    )
}

/// A Python that has the official MCP SDK: `$MCP_PYTHON`, the virtualenv `.ci/run` creates in
/// `tests/mcp-python-client/.venv`, or `python3`.
pub fn python_sdk_client(test: &str) -> Option<std::path::PathBuf> {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-python-client/.venv/bin/python");
    let found = std::env::var_os("MCP_PYTHON")
        .map(Into::into)
        .into_iter()
        .chain([venv, "python3".into()])
        .find(|python| {
            std::process::Command::new(python)
                .args(["-c", "import mcp.client.stdio"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        });
    super::present_or_skip(
        found,
        test,
        "no Python with the MCP SDK (python3 -m venv tests/mcp-python-client/.venv && \
         tests/mcp-python-client/.venv/bin/pip install -r tests/mcp-python-client/requirements.txt)",
    )
}

/// An official SDK whose scripts drive `mcp-relay bridge` as a host does: the TypeScript SDK in
/// `tests/mcp-sdk-client` (`<name>.mjs`, run by `node`) or the Python SDK of
/// `tests/mcp-python-client` (`<name with _ for ->.py`, run by a Python that has it).
#[derive(Debug, Clone)]
pub enum Sdk {
    TypeScript { dir: std::path::PathBuf },
    Python { python: std::path::PathBuf },
}

impl Sdk {
    /// The TypeScript SDK, or None (after a loud message) when it is not installed outside CI.
    pub fn typescript_or_skip(test: &str) -> Option<Sdk> {
        typescript_sdk_client(test).map(|dir| Sdk::TypeScript { dir })
    }

    /// The Python SDK, or None (after a loud message) when it is not installed outside CI.
    pub fn python_or_skip(test: &str) -> Option<Sdk> {
        python_sdk_client(test).map(|python| Sdk::Python { python })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Sdk::TypeScript { .. } => "TypeScript SDK",
            Sdk::Python { .. } => "Python SDK",
        }
    }

    /// Starts the script `name` with `script_args`, then `--http <url>`: the script connects to
    /// the relay's MCP Streamable HTTP endpoint `url` itself, with `mcp_token` as its bearer
    /// token, instead of starting a bridge.
    pub fn spawn_http(
        &self,
        name: &str,
        script_args: &[&str],
        url: &str,
        mcp_token: &str,
    ) -> tokio::process::Child {
        let mut command = self.command(name);
        command
            .args(script_args)
            .args(["--http", url])
            .env("MCP_RELAY_TOKEN", mcp_token)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting the {} script {name}: {e}", self.name()))
    }

    /// The interpreter and the script `name`, nothing else yet.
    fn command(&self, name: &str) -> tokio::process::Command {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        match self {
            Sdk::TypeScript { dir } => {
                let mut command = tokio::process::Command::new("node");
                command.arg(dir.join(format!("{name}.mjs")));
                command
            }
            Sdk::Python { python } => {
                let mut command = tokio::process::Command::new(python);
                command.arg(
                    root.join("tests/mcp-python-client")
                        .join(format!("{}.py", name.replace('-', "_"))),
                );
                command
            }
        }
    }

    /// Starts the script `name` (`page-tools` is `page-tools.mjs` or `page_tools.py`) with
    /// `script_args`, then the bridge's command line: `mcp-relay bridge --relay <relay_url>
    /// <bridge_args>`, its token in `MCP_RELAY_TOKEN`. Its stdout is piped for the report (see
    /// [`sdk_report`]), and its stdin for what the person answers in the host (a script that
    /// asks reads it); its stderr and the bridge's go to the test's output.
    pub fn spawn(
        &self,
        name: &str,
        script_args: &[&str],
        relay_url: &str,
        bridge_args: &[&str],
        mcp_token: &str,
    ) -> tokio::process::Child {
        let mut command = self.command(name);
        // MCP_RELAY_TEST_BINARY: another build of the relay, as tests/common/served.rs takes it.
        let binary = std::env::var("MCP_RELAY_TEST_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_mcp-relay").to_owned());
        command
            .args(script_args)
            .arg(binary)
            .args(["bridge", "--relay", relay_url])
            .args(bridge_args)
            .env("MCP_RELAY_TOKEN", mcp_token)
            .env("MCP_RELAY_LOG", "mcp_relay=info")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting the {} script {name}: {e}", self.name()))
    }
}

/// The JSON report an SDK script prints as its last line, once it exits successfully within
/// `limit`.
pub async fn sdk_report(
    script: &mut tokio::process::Child,
    what: &str,
    limit: std::time::Duration,
) -> Value {
    use tokio::io::AsyncReadExt;
    let mut stdout = script.stdout.take().expect("the script's stdout is piped");
    let mut out = String::new();
    let read = async {
        stdout.read_to_string(&mut out).await.unwrap();
        script.wait().await.unwrap()
    };
    let status = tokio::time::timeout(limit, read)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"));
    assert!(status.success(), "{what} failed ({status}):\n{out}");
    serde_json::from_str(out.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{what} printed no JSON report ({e}):\n{out}"))
}
