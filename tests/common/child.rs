//! The relay binary as a child process: for tests that measure what the relay itself holds
//! (its RSS, apart from the test's own clients, and undisturbed by tests running in parallel
//! threads), read what it logs, or run it under a file-descriptor limit.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{http_get, metric, SECRET};

pub struct ChildRelay {
    child: Child,
    pub addr: SocketAddr,
    /// Everything the relay wrote to stderr (its log) so far.
    log: Arc<Mutex<String>>,
}

impl ChildRelay {
    /// `mcp-relay serve` on a free loopback port with the tests' secret, no rate limit (unless
    /// `args` give `--rate-limit`), and `args`. `MCP_RELAY_TEST_BINARY` runs another build of the
    /// binary (e.g. `target/release/mcp-relay`, for figures measured on the release build).
    pub fn start(args: &[&str]) -> ChildRelay {
        Self::start_with(args, &[], None)
    }

    /// As [`ChildRelay::start`], with extra environment variables and, with `nofile`, that
    /// file-descriptor limit. `HOSTILE_DEBUG=<log filter>` (e.g. `mcp_relay=debug`) prints the
    /// relay's log as it comes.
    pub fn start_with(args: &[&str], env: &[(&str, &str)], nofile: Option<u64>) -> ChildRelay {
        let binary = super::served::binary()
            .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_mcp-relay")));
        Self::start_binary(&binary, args, env, nofile)
    }

    /// As [`ChildRelay::start_with`], running `binary` (`MCP_RELAY_TEST_BINARY`, see
    /// [`super::served`]) rather than this build's.
    pub fn start_binary(
        binary: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        nofile: Option<u64>,
    ) -> ChildRelay {
        let mut command = Command::new(binary);
        command.args(["serve", "--listen", "127.0.0.1:0"]);
        if !args.contains(&"--rate-limit") {
            command.args(["--rate-limit", "0"]);
        }
        command
            .args(args)
            .env("MCP_RELAY_JWT_SECRET", SECRET)
            // Nothing shared through the user's data directory (`--state` overrides it).
            .env("MCP_RELAY_STATE", "memory")
            .env(
                "MCP_RELAY_LOG",
                std::env::var("HOSTILE_DEBUG").unwrap_or_else(|_| "info".into()),
            )
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        if let Some(limit) = nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let rlimit = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().expect("starting mcp-relay serve");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        let (tx, rx) = std::sync::mpsc::channel();
        // Drain stderr for the child's whole life, or it blocks on a full pipe; the address it
        // listens on is read from its first log line that names one (port 0: no race for it).
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var_os("HOSTILE_DEBUG").is_some() {
                    eprintln!("relay: {line}");
                }
                if let Some(addr) = line.split("local_addr=").nth(1) {
                    let addr = addr.split_whitespace().next().unwrap_or("").to_owned();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the relay logs its address")
            .parse()
            .unwrap();
        ChildRelay { child, addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The relay's log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A value from the relay's `/metrics`.
    pub async fn metric(&self, name: &str) -> f64 {
        let (_, body) = http_get(self.addr, "/metrics").await;
        metric(&body, name)
    }

    fn status_kib(&self, field: &str) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the relay process is alive");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc status"))
    }

    /// Resident memory now, in bytes.
    pub fn rss(&self) -> usize {
        self.status_kib("VmRSS:") * 1024
    }

    /// Peak resident memory so far, in bytes.
    pub fn peak_rss(&self) -> usize {
        self.status_kib("VmHWM:") * 1024
    }
}

impl Drop for ChildRelay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
