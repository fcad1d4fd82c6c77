//! [`ChunkedIo`]: the read buffer under every relay socket, and under the bench's baseline
//! forwarder.
//!
//! tungstenite allocates its whole read buffer for every socket up front and never reads more
//! than that per call, so one buffer size has to serve two opposite needs: ten thousand idle
//! sockets want it tiny, a 5 MiB screenshot wants it large (a 2 KiB buffer means 2,600 system
//! calls per screenshot). A small read is served here from a 64 KiB chunk filled by one system
//! call, and that chunk is freed as soon as the socket has nothing more to read, so an idle
//! socket holds no buffer at all.
//!
//! Why it lives in this crate rather than in the relay's `transport`: `mcp-relay bench`
//! quotes the relay's figures as ratios to a JSON-free forwarder, and that comparison is only
//! fair if both read their sockets the same way. The bench cannot depend on the relay library
//! (the `mcp-relay` binary depends on the bench), and a copy would drift, so the one
//! implementation sits here. The relay's `transport::BufferedIo` wraps it and adds what only
//! the relay needs: the read budget before authentication and the write-stall clock.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes one system call may fill for small reads.
const CHUNK: usize = 64 * 1024;
/// Reads at least this large go straight to the socket: they need no chunk.
const DIRECT: usize = 16 * 1024;

/// A stream whose small reads are served from a transient 64 KiB chunk. Writes pass through.
pub struct ChunkedIo<S> {
    inner: S,
    /// Bytes read from the socket and not yet handed out: `chunk[start..]`. Empty (and
    /// unallocated) whenever the socket has been drained.
    chunk: Vec<u8>,
    start: usize,
}

impl<S> ChunkedIo<S> {
    pub fn new(inner: S) -> Self {
        ChunkedIo {
            inner,
            chunk: Vec::new(),
            start: 0,
        }
    }

    /// Bytes held for this socket right now (0 whenever it is idle).
    #[cfg(test)]
    fn buffered_capacity(&self) -> usize {
        self.chunk.capacity()
    }

    fn release(&mut self) {
        self.chunk = Vec::new();
        self.start = 0;
    }

    /// Copies buffered bytes into `dst`; frees the chunk once it is empty.
    fn hand_out(&mut self, dst: &mut ReadBuf<'_>) {
        let n = dst.remaining().min(self.chunk.len() - self.start);
        dst.put_slice(&self.chunk[self.start..self.start + n]);
        self.start += n;
        if self.start == self.chunk.len() {
            // Keep the allocation for the next read of this burst only if the socket is busy;
            // the next poll that finds nothing frees it (see `poll_read`).
            self.chunk.clear();
            self.start = 0;
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ChunkedIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start < this.chunk.len() {
            this.hand_out(dst);
            return Poll::Ready(Ok(()));
        }
        if dst.remaining() >= DIRECT {
            this.release();
            return Pin::new(&mut this.inner).poll_read(cx, dst);
        }
        if this.chunk.capacity() < CHUNK {
            this.chunk = Vec::with_capacity(CHUNK);
        }
        let mut fill = ReadBuf::uninit(&mut this.chunk.spare_capacity_mut()[..CHUNK]);
        match Pin::new(&mut this.inner).poll_read(cx, &mut fill) {
            Poll::Ready(Ok(())) => {
                let filled = fill.filled().len();
                // SAFETY: `ReadBuf` guarantees its first `filled` bytes were initialized by
                // the read, and they lie within the vector's capacity.
                unsafe { this.chunk.set_len(filled) };
                this.start = 0;
                if filled == 0 {
                    this.release();
                    return Poll::Ready(Ok(())); // end of stream
                }
                this.hand_out(dst);
                Poll::Ready(Ok(()))
            }
            other => {
                // Nothing to read (or an error): an idle socket keeps no buffer.
                this.release();
                other
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ChunkedIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn small_reads_get_every_byte_in_order_and_idle_frees_the_chunk() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let mut io = ChunkedIo::new(server);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        client.write_all(&data).await.unwrap();
        let mut got = Vec::new();
        let mut small = [0u8; 1000];
        while got.len() < data.len() {
            let n = io.read(&mut small).await.unwrap();
            got.extend_from_slice(&small[..n]);
        }
        assert_eq!(got, data);
        // Nothing left to read: the poll returns Pending and the chunk is freed.
        let pending =
            tokio::time::timeout(std::time::Duration::from_millis(20), io.read(&mut small)).await;
        assert!(pending.is_err());
        assert_eq!(io.buffered_capacity(), 0);
        drop(client);
        assert_eq!(io.read(&mut small).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn large_reads_go_straight_through() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let mut io = ChunkedIo::new(server);
        client.write_all(&[7u8; 100_000]).await.unwrap();
        let mut big = vec![0u8; 64 * 1024];
        let n = io.read(&mut big).await.unwrap();
        assert!(n > 0 && big[..n].iter().all(|b| *b == 7));
        assert_eq!(io.buffered_capacity(), 0);
    }
}
