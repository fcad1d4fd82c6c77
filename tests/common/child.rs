//! The relay binary as a child process: for tests that measure what the relay itself holds
//! (its RSS, apart from the test's own clients) or read what it logs.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::SECRET;

pub struct ChildRelay {
    child: Child,
    pub addr: SocketAddr,
    /// Everything the relay wrote to stderr (its log) so far.
    log: Arc<Mutex<String>>,
}

impl ChildRelay {
    /// Starts `mcp-relay serve` on a free loopback port with the tests' secret, plus `args`
    /// and `env`, and waits until it accepts connections.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> ChildRelay {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-relay"));
        command
            .args(["serve", "--listen", &addr.to_string()])
            .args(args)
            .env("MCP_RELAY_JWT_SECRET", SECRET)
            .env_remove("MCP_RELAY_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("starting mcp-relay serve");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the relay did not start listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        ChildRelay { child, addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    /// The relay's log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("reading the relay's /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc status"))
    }

    /// Resident memory now, in bytes.
    pub fn rss_bytes(&self) -> u64 {
        self.status_kib("VmRSS:") * 1024
    }

    /// Peak resident memory so far, in bytes.
    pub fn peak_rss_bytes(&self) -> u64 {
        self.status_kib("VmHWM:") * 1024
    }
}

impl Drop for ChildRelay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
