//! A `nats-server` child process on a loopback port, killed on drop.
//!
//! The cluster tests and the bench's `cross`/`scale` scenarios need the same thing: a fresh
//! server nobody else uses, ready before the first relay node dials it. The port is picked by
//! binding port 0 and releasing it, then kept across [`NatsServer::restart`] so the cluster
//! tests can take the server away and bring it back where the nodes expect it.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a starting server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running (or stopped, see [`NatsServer::stop`]) `nats-server`.
pub struct NatsServer {
    /// `None` between [`NatsServer::stop`] and [`NatsServer::restart`].
    child: Option<Child>,
    port: u16,
    /// Extra `nats-server` arguments (authentication, TLS), repeated on every restart.
    args: Vec<String>,
}

impl NatsServer {
    /// Whether a `nats-server` binary is on the PATH.
    fn installed() -> bool {
        Command::new("nats-server")
            .arg("--version")
            .output()
            .is_ok()
    }

    /// Starts a server with extra `args` and waits until it accepts connections.
    pub fn start(args: &[&str]) -> io::Result<NatsServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut nats = NatsServer {
            child: None,
            port,
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        nats.restart()?;
        Ok(nats)
    }

    /// For tests: a started server, or `None` after [`crate::present_or_skip`]'s loud SKIP when
    /// none is installed (a failure in CI).
    pub fn start_or_skip(test: &str, args: &[&str]) -> Option<NatsServer> {
        crate::present_or_skip(
            Self::installed().then_some(()),
            test,
            "nats-server is not installed (apt-get install nats-server; .ci/run does)",
        )?;
        Some(Self::start(args).expect("nats-server starts"))
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's process id (for reading its CPU time), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts the server (again) on the same port and waits until it accepts connections.
    pub fn restart(&mut self) -> io::Result<()> {
        let child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting nats-server: {e}")))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() >= deadline {
                self.stop();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nats-server did not start",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Kills the server; [`NatsServer::restart`] brings it back on the same port.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
