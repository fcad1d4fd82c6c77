//! The baseline the relay is measured against: a WebSocket forwarder with no JSON work at all.
//!
//! It uses the same axum/tungstenite stack and buffer settings as the relay and pipes frames
//! unchanged between two sockets that name the same pair (`/pair/<key>/mcp` and
//! `/pair/<key>/extension`). What it costs is what the network stack and the WebSocket framing
//! alone cost on this machine at this moment; the relay's figures are reported as ratios to it.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use dashmap::DashMap;
use futures_util::{SinkExt, StreamExt};
use mcp_relay_wire::io::ChunkedIo;
use tokio::sync::oneshot;

/// Sockets waiting for their partner, by pair key.
type Waiting = Arc<DashMap<String, oneshot::Sender<WebSocket>>>;

/// Serves the baseline forwarder on `listen` until the process ends.
pub async fn serve(listen: std::net::SocketAddr, max_message_bytes: usize) -> anyhow::Result<()> {
    let waiting: Waiting = Arc::new(DashMap::new());
    let app = Router::new()
        .route("/pair/{key}/{side}", get(pair))
        .with_state((waiting, max_message_bytes));
    let listener = tokio::net::TcpListener::bind(listen).await?;
    axum::serve(SameTransport(listener), app).await?;
    Ok(())
}

async fn pair(
    ws: WebSocketUpgrade,
    Path((key, side)): Path<(String, String)>,
    State((waiting, max)): State<(Waiting, usize)>,
) -> Response {
    ws.read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| async move {
            // The extension side waits; the MCP side joins it and runs the pipe.
            if side == "extension" {
                let (tx, rx) = oneshot::channel();
                waiting.insert(key, tx);
                if let Ok(partner) = rx.await {
                    pipe(socket, partner).await;
                }
            } else if let Some((_, tx)) = waiting.remove(&key) {
                let _ = tx.send(socket);
            }
        })
}

/// Gives the baseline's sockets the relay's transport (TCP_NODELAY and the chunked reader under
/// the relay's `transport::BufferedIo`, [`ChunkedIo`]), so only the relay's own work differs.
/// The relay's wrapper adds only its pre-authentication budget, which an authenticated
/// socket skips with one branch per read.
struct SameTransport(tokio::net::TcpListener);

impl axum::serve::Listener for SameTransport {
    type Io = ChunkedIo<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    return (ChunkedIo::new(stream), addr);
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// Copies frames both ways until either side closes.
async fn pipe(a: WebSocket, b: WebSocket) {
    let (mut a_tx, mut a_rx) = a.split();
    let (mut b_tx, mut b_rx) = b.split();
    let a_to_b = async {
        while let Some(Ok(message)) = a_rx.next().await {
            if matches!(message, Message::Close(_)) || b_tx.send(message).await.is_err() {
                break;
            }
        }
    };
    let b_to_a = async {
        while let Some(Ok(message)) = b_rx.next().await {
            if matches!(message, Message::Close(_)) || a_tx.send(message).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = a_to_b => {}
        _ = b_to_a => {}
    }
}
