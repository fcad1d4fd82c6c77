//! Large incoming WebSocket frames cut into fragments under 64 KiB before tungstenite reads
//! them, so a socket never keeps a read buffer the size of the largest message it got.
//!
//! tungstenite's frame codec reserves a whole frame in its read buffer and hands the payload
//! out as a slice of that allocation, and the buffer goes on sharing (then reusing) it: a
//! socket that once received a 16 MiB frame holds about 16 MiB until it closes. axum gives no
//! access to the codec, and tungstenite offers no way to shrink it. A message that arrives in
//! fragments is another matter: tungstenite copies each fragment into the message it is
//! assembling and hands that buffer out whole when the message completes, so its frame buffer
//! never needs more than one fragment. RFC 6455 (section 5.4) lets an intermediary split frames
//! when no extension was negotiated, which the relay never does; [`Refragment`] is that
//! intermediary, on the read side of every socket, below the codec.
//!
//! A data frame longer than 65,535 bytes becomes fragments of 65,532 bytes (the last one
//! shorter): the first keeps the frame's opcode and RSV bits with FIN clear, the others are
//! continuations, and the last carries the frame's FIN. A client's mask key applies by payload
//! index modulo 4 (RFC 6455 section 5.3), so fragments whose lengths are multiples of 4 can all
//! reuse the frame's key: the payload passes through unchanged, only headers are written.
//! Control frames (at most 125 bytes) and frames of up to 65,535 bytes pass untouched, and so
//! do frames over `--max-message-bytes`, which tungstenite refuses at their header. The
//! message limit still bounds the whole message: tungstenite counts it as fragments arrive.
//!
//! Cost on the data path: payload bytes go straight from the stream below into the caller's
//! buffer; each read is followed by a walk from header to header over what it brought, and a
//! read never takes more than one fragment's worth, so the one copy the layer makes (the bytes
//! that came in behind a frame's header in the read that found it, moved up over the shorter
//! fragment header) is under 64 KiB per cut frame.
//!
//! ## Where the frames begin
//!
//! The connection starts as HTTP, and hyper reads the upgrade request through this layer.
//! Bytes behind the request's head that hyper has read (a client that sends frames before the
//! 101, which RFC 6455 forbids but which happens) stay in hyper's buffer and reach tungstenite
//! unchanged: they can only be watched, and the layer must know exactly where they begin. A
//! guess from the bytes would not do: a client chooses its masked bytes, so it could plant a
//! `\r\n\r\n` there and make the layer give up on its connection. Instead:
//!
//! - no read hands hyper bytes past an empty line (`\n\n` or `\n\r\n`, which ends every request
//!   head hyper's parser accepts; empty lines inside bodies only make reads shorter), the rest
//!   waits here for the next read;
//! - hyper parses a head only once it has all of it, and then calls the connection's service
//!   (`transport::WithConn`), which counts the head before hyper reads again. So when the
//!   layer finds the count changed, the head ended exactly where the last read ended: frames
//!   would begin there, and the layer follows what hyper reads from then on as frames;
//! - hyper takes nothing else out of the stream between the head and the frames: an upgrade
//!   request with a body, which hyper would consume there, is refused (`server::admit`);
//! - when the connection turns into a WebSocket, the layer carries on from where it stands: a
//!   frame whose header hyper already holds passes whole (before authentication it is within
//!   the 64 KiB read budget anyway), the ones after it are cut.
//!
//! Whenever the picture is in doubt (bytes behind the head that are no frame a client may
//! send, an HTTP/2 connection, no head counted), the rest of the connection passes untouched:
//! a wrong cut would corrupt the stream, a frame left whole only costs memory. The same holds
//! after the upgrade: a header no client may send (unmasked, a reserved opcode, a fragmented or
//! long control frame) ends the cutting, and tungstenite fails the connection on it anyway.
//!
//! The layer sits above TLS (it must see the frames in the clear) and above the transport's
//! byte budget, which therefore counts what the peer sent, not the headers written here.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Data frames up to this payload pass whole (their header has at most a 16-bit length).
const WHOLE: u64 = 0xFFFF;
/// The payload of every fragment but a frame's last: a multiple of 4 (the mask key stays
/// valid) that still has a 16-bit length, so a fragment header is never longer than the
/// frame's own (which has a 64-bit length).
const FRAGMENT: u64 = 0xFFFC;
/// The longest frame header: 2 bytes, a 64-bit length and a mask key.
const MAX_HEADER: usize = 14;
/// HTTP/2's connection preface begins with these bytes, and no HTTP/1 method does.
const HTTP2_PREFACE: &[u8; 3] = b"PRI";

/// A frame's header as a client sends it.
#[derive(Debug, Clone, Copy)]
struct Header {
    /// FIN, RSV and opcode.
    first: u8,
    mask: [u8; 4],
    len: u64,
    /// Bytes of the header itself.
    size: usize,
}

/// Bytes that are not a frame header a client may send.
#[derive(Debug)]
struct Anomaly;

/// The header bytes `bytes` must reach to be parsed: 2 until the length's form is known.
fn header_size(bytes: &[u8]) -> usize {
    match bytes {
        [_, second, ..] => {
            let extended = match second & 0x7F {
                126 => 2,
                127 => 8,
                _ => 0,
            };
            2 + extended + if second & 0x80 != 0 { 4 } else { 0 }
        }
        _ => 2,
    }
}

/// The header at the start of `bytes`; `Ok(None)` when more bytes are needed. Only what
/// tungstenite accepts from a client is a header here: masked, a known opcode, control frames
/// final and at most 125 bytes, a length below 2^63.
fn parse(bytes: &[u8]) -> Result<Option<Header>, Anomaly> {
    let [first, second, ..] = *bytes else {
        return Ok(None);
    };
    let short = second & 0x7F;
    match first & 0x0F {
        0..=2 => {}
        8..=10 if first & 0x80 != 0 && short <= 125 => {}
        _ => return Err(Anomaly),
    }
    if second & 0x80 == 0 {
        return Err(Anomaly);
    }
    let size = header_size(bytes);
    if bytes.len() < size {
        return Ok(None);
    }
    let len = match short {
        126 => u64::from(u16::from_be_bytes([bytes[2], bytes[3]])),
        127 => u64::from_be_bytes(bytes[2..10].try_into().expect("8 bytes")),
        short => u64::from(short),
    };
    if len >> 63 != 0 {
        return Err(Anomaly);
    }
    Ok(Some(Header {
        first,
        mask: bytes[size - 4..size].try_into().expect("4 bytes"),
        len,
        size,
    }))
}

/// A masked header for a fragment of `len` (at most [`WHOLE`]) bytes, in the shortest form.
fn fragment_header(first: u8, mask: [u8; 4], len: u64) -> Bytes14 {
    debug_assert!(len <= WHOLE);
    let mut header = Bytes14::default();
    if len < 126 {
        header.push(&[first, 0x80 | len as u8]);
    } else {
        header.push(&[first, 0x80 | 126]);
        header.push(&(len as u16).to_be_bytes());
    }
    header.push(&mask);
    header
}

/// Up to one frame header's worth of bytes, with a read position.
#[derive(Debug, Default, Clone, Copy)]
struct Bytes14 {
    bytes: [u8; MAX_HEADER],
    start: u8,
    end: u8,
}

impl Bytes14 {
    fn of(bytes: &[u8]) -> Bytes14 {
        let mut held = Bytes14::default();
        held.push(bytes);
        held
    }
    fn get(&self) -> &[u8] {
        &self.bytes[self.start as usize..self.end as usize]
    }
    fn len(&self) -> usize {
        (self.end - self.start) as usize
    }
    fn push(&mut self, bytes: &[u8]) {
        let end = self.end as usize + bytes.len();
        self.bytes[self.end as usize..end].copy_from_slice(bytes);
        self.end = end as u8;
    }
    fn clear(&mut self) {
        *self = Bytes14::default();
    }
}

/// Where the layer stands in the frame sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// At a frame boundary (a header may have begun: see `Refragment::held`).
    Header,
    /// Inside a frame passed whole: `left` payload bytes to go.
    Whole { left: u64 },
    /// Inside a frame being cut: `left` bytes of the current fragment, `rest` after it.
    Cut {
        left: u64,
        rest: u64,
        fin: bool,
        mask: [u8; 4],
    },
}

impl Phase {
    /// After a header with a `len`-byte payload, passed whole.
    fn whole(len: u64) -> Phase {
        if len == 0 {
            Phase::Header
        } else {
            Phase::Whole { left: len }
        }
    }
}

enum Mode {
    /// Still HTTP: watching for the upgrade, following what comes after the last head.
    Http(Box<Lookout>),
    /// A WebSocket: frames are cut from here on.
    Frames(Phase),
    /// The rest of the connection passes untouched.
    Through,
}

/// What the connection tells the layer (the transport's connection state holds it and sets
/// it; the layer only reads it, so this module needs nothing of the transport's).
#[derive(Debug, Default)]
pub struct Signals {
    /// Request heads hyper has parsed: the layer learns from it where a head ended.
    heads: AtomicU64,
    /// Whether the connection is becoming a WebSocket (its 101 is on the way): from the next
    /// read on, the layer treats what it reads as frames.
    websocket: AtomicBool,
}

impl Signals {
    /// hyper has parsed a request head (it calls the connection's service at once, before it
    /// reads again).
    pub fn request_arrived(&self) {
        self.heads.fetch_add(1, Ordering::AcqRel);
    }

    /// The connection is becoming a WebSocket.
    pub fn upgrading(&self) {
        self.websocket.store(true, Ordering::Release);
    }

    fn request_heads(&self) -> u64 {
        self.heads.load(Ordering::Acquire)
    }

    fn is_websocket(&self) -> bool {
        self.websocket.load(Ordering::Acquire)
    }
}

/// What the layer knows of an HTTP connection that may become a WebSocket.
struct Lookout {
    conn: Arc<Signals>,
    /// Request heads hyper had parsed at the last read.
    heads: u64,
    /// Bytes of [`HTTP2_PREFACE`] the connection began with; `u8::MAX` once it began otherwise.
    preface: u8,
    /// The last two bytes handed out (an empty line may straddle two reads).
    last: [u8; 2],
    /// The frames followed since the end of the last request head; `None` before any head
    /// ended, or once what followed was no frame.
    frames: Option<Phase>,
}

impl Lookout {
    /// Where the first empty line in `bytes` ends (after `\n\n` or `\n\r\n`), if it does.
    fn empty_line_end(&self, bytes: &[u8]) -> Option<usize> {
        let before = |at: usize, back: usize| {
            if at >= back {
                bytes[at - back]
            } else {
                self.last[2 + at - back]
            }
        };
        bytes
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .map(|(at, _)| at)
            .find(|&at| {
                before(at, 1) == b'\n' || (before(at, 1) == b'\r' && before(at, 2) == b'\n')
            })
            .map(|at| at + 1)
    }

    /// Takes note of `bytes`, just handed to hyper unchanged.
    fn saw(&mut self, bytes: &[u8], held: &mut Bytes14) {
        let mut checked = 0;
        while self.preface < HTTP2_PREFACE.len() as u8 && checked < bytes.len() {
            if bytes[checked] == HTTP2_PREFACE[self.preface as usize] {
                self.preface += 1;
                checked += 1;
            } else {
                self.preface = u8::MAX;
            }
        }
        if let Some(phase) = &mut self.frames {
            if follow_frames(phase, held, bytes).is_err() {
                self.frames = None;
                held.clear();
            }
        }
        match bytes {
            [.., a, b] => self.last = [*a, *b],
            [b] => self.last = [self.last[1], *b],
            [] => {}
        }
    }
}

/// Follows the frames in `bytes`, which went out unchanged; a header's first bytes wait in
/// `held` for the rest.
fn follow_frames(phase: &mut Phase, held: &mut Bytes14, mut bytes: &[u8]) -> Result<(), Anomaly> {
    while !bytes.is_empty() {
        match phase {
            Phase::Whole { left } => {
                let skip = (*left).min(bytes.len() as u64);
                *left -= skip;
                bytes = &bytes[skip as usize..];
                if *left == 0 {
                    *phase = Phase::Header;
                }
            }
            Phase::Header => {
                let take = (header_size(held.get()) - held.len()).min(bytes.len());
                held.push(&bytes[..take]);
                bytes = &bytes[take..];
                if let Some(header) = parse(held.get())? {
                    held.clear();
                    *phase = Phase::whole(header.len);
                }
            }
            Phase::Cut { .. } => unreachable!("frames seen before the upgrade are never cut"),
        }
    }
    Ok(())
}

/// The stream below, with the bytes a read took but did not hand out in front of it.
struct Source<S> {
    inner: S,
    /// `stash[start..]` comes before the stream. Freed at the first read that finds it empty.
    stash: Vec<u8>,
    start: usize,
    /// Whether the last read came from the stash.
    from_stash: bool,
}

impl<S: AsyncRead + Unpin> Source<S> {
    /// Reads at most `limit` bytes into `dst`; the count read.
    fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
        limit: u64,
    ) -> Poll<io::Result<usize>> {
        if self.start < self.stash.len() {
            let n = (self.stash.len() - self.start)
                .min(dst.remaining())
                .min(limit.try_into().unwrap_or(usize::MAX));
            dst.put_slice(&self.stash[self.start..self.start + n]);
            self.start += n;
            self.from_stash = true;
            return Poll::Ready(Ok(n));
        }
        if self.stash.capacity() > 0 {
            self.stash = Vec::new();
            self.start = 0;
        }
        self.from_stash = false;
        read_at_most(&mut self.inner, cx, dst, limit)
    }

    /// Puts back the last `bytes` of the last read: they come first at the next one.
    fn give_back(&mut self, bytes: &[u8]) {
        if self.from_stash {
            self.start -= bytes.len();
        } else {
            self.stash = bytes.to_vec();
            self.start = 0;
        }
    }
}

/// Reads at most `limit` bytes into `dst`; the count read.
fn read_at_most<S: AsyncRead + Unpin>(
    inner: &mut S,
    cx: &mut Context<'_>,
    dst: &mut ReadBuf<'_>,
    limit: u64,
) -> Poll<io::Result<usize>> {
    if limit >= dst.remaining() as u64 {
        let before = dst.filled().len();
        ready!(Pin::new(inner).poll_read(cx, dst))?;
        return Poll::Ready(Ok(dst.filled().len() - before));
    }
    let mut part = dst.take(limit as usize);
    let ptr = part.filled().as_ptr();
    ready!(Pin::new(inner).poll_read(cx, &mut part))?;
    assert_eq!(ptr, part.filled().as_ptr(), "the read replaced its buffer");
    let n = part.filled().len();
    // SAFETY: `part` is the start of `dst`'s unfilled space, and the read initialized its
    // first `n` bytes.
    unsafe { dst.assume_init(n) };
    dst.advance(n);
    Poll::Ready(Ok(n))
}

/// The read side's re-framer (see the module documentation). Writes pass through.
pub struct Refragment<S> {
    source: Source<S>,
    mode: Mode,
    /// Frames longer than this pass whole: tungstenite refuses them at their header.
    max_frame: u64,
    /// The first bytes of a header that straddles two reads, taken out of the stream (or, just
    /// after the upgrade, already in hyper's hands: the first `shown` of them).
    held: Bytes14,
    shown: usize,
    /// Header bytes to hand out before anything else.
    out: Bytes14,
}

impl<S> Refragment<S> {
    /// An HTTP connection that may become a WebSocket: cutting starts once `conn` says it is
    /// upgrading. Frames over `max_frame` (`--max-message-bytes`) pass whole.
    pub fn watching(inner: S, conn: Arc<Signals>, max_frame: u64) -> Self {
        Self::with_mode(
            inner,
            max_frame,
            Mode::Http(Box::new(Lookout {
                heads: conn.request_heads(),
                conn,
                preface: 0,
                last: [0; 2],
                frames: None,
            })),
        )
    }

    /// A stream of client frames from its first byte.
    #[cfg(test)]
    fn frames(inner: S, max_frame: u64) -> Self {
        Self::with_mode(inner, max_frame, Mode::Frames(Phase::Header))
    }

    fn with_mode(inner: S, max_frame: u64, mode: Mode) -> Self {
        Refragment {
            source: Source {
                inner,
                stash: Vec::new(),
                start: 0,
                from_stash: false,
            },
            mode,
            max_frame,
            held: Bytes14::default(),
            shown: 0,
            out: Bytes14::default(),
        }
    }

    /// The connection has become a WebSocket: frames from here on, from where the lookout
    /// stands, or untouched if it is in any doubt.
    fn upgraded(&mut self) {
        let Mode::Http(lookout) = &mut self.mode else {
            return;
        };
        self.mode = match lookout.frames.take() {
            Some(phase) => {
                self.shown = self.held.len();
                Mode::Frames(phase)
            }
            _ => {
                self.held.clear();
                Mode::Through
            }
        };
    }

    fn cuts(&self, header: &Header) -> bool {
        header.first & 0x0F <= 2 && header.len > WHOLE && header.len <= self.max_frame
    }

    /// The phase after `header`, whose bytes in `held` are complete; sets the header bytes to
    /// hand out next (the frame's own, or its first fragment's).
    fn after_held(&mut self, header: &Header) -> Phase {
        let phase = if self.shown == 0 && self.cuts(header) {
            self.out = fragment_header(header.first & 0x7F, header.mask, FRAGMENT);
            Phase::Cut {
                left: FRAGMENT,
                rest: header.len - FRAGMENT,
                fin: header.first & 0x80 != 0,
                mask: header.mask,
            }
        } else {
            self.out = Bytes14::of(&self.held.get()[self.shown..]);
            Phase::whole(header.len)
        };
        self.held.clear();
        self.shown = 0;
        phase
    }

    /// Walks the frames in `dst.filled()[from..]`, just read: headers of frames to cut are
    /// rewritten, a header cut short by the end of the read is taken out into `held`.
    fn scan(&mut self, dst: &mut ReadBuf<'_>, from: usize) {
        let end = dst.filled().len();
        let mut at = from;
        while at < end {
            let Mode::Frames(phase) = self.mode else {
                return;
            };
            match phase {
                Phase::Whole { left } => {
                    let skip = left.min((end - at) as u64);
                    at += skip as usize;
                    self.mode = Mode::Frames(Phase::whole(left - skip));
                }
                Phase::Header => match parse(&dst.filled()[at..end]) {
                    Err(Anomaly) => self.mode = Mode::Through,
                    Ok(None) => {
                        self.held = Bytes14::of(&dst.filled()[at..end]);
                        dst.set_filled(at);
                        return;
                    }
                    Ok(Some(header)) if !self.cuts(&header) => {
                        at += header.size;
                        self.mode = Mode::Frames(Phase::whole(header.len));
                    }
                    Ok(Some(header)) => {
                        // Everything behind this header in the read is its payload (the read
                        // is shorter than one fragment): move it up behind the first
                        // fragment's header, which is shorter than the frame's.
                        let first = fragment_header(header.first & 0x7F, header.mask, FRAGMENT);
                        let payload = end - at - header.size;
                        let buf = dst.filled_mut();
                        buf.copy_within(at + header.size..end, at + first.len());
                        buf[at..at + first.len()].copy_from_slice(first.get());
                        dst.set_filled(at + first.len() + payload);
                        self.mode = Mode::Frames(Phase::Cut {
                            left: FRAGMENT - payload as u64,
                            rest: header.len - FRAGMENT,
                            fin: header.first & 0x80 != 0,
                            mask: header.mask,
                        });
                        return;
                    }
                },
                Phase::Cut { .. } => unreachable!("a cut frame is read one fragment at a time"),
            }
        }
    }
}

impl<S: AsyncRead + Unpin> Refragment<S> {
    /// A read while the connection is HTTP: never past an empty line (see the module
    /// documentation), and what it hands out is followed as frames once a head has ended.
    fn poll_http(&mut self, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let Mode::Http(lookout) = &mut self.mode else {
            unreachable!("called while the connection is HTTP");
        };
        let before = dst.filled().len();
        let n = ready!(self.source.poll_read(cx, dst, u64::MAX))?;
        let read = &dst.filled()[before..before + n];
        let end = lookout.empty_line_end(read).unwrap_or(n);
        if end < n {
            self.source.give_back(&read[end..]);
            dst.set_filled(before + end);
        }
        lookout.saw(&dst.filled()[before..], &mut self.held);
        if lookout.preface == HTTP2_PREFACE.len() as u8 {
            // HTTP/2 never becomes a WebSocket here (axum upgrades HTTP/1.1 only).
            self.held.clear();
            self.mode = Mode::Through;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_frames(&mut self, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let start = dst.filled().len();
        loop {
            if self.out.len() > 0 {
                let n = self.out.len().min(dst.remaining());
                dst.put_slice(&self.out.get()[..n]);
                self.out.start += n as u8;
                if self.out.len() > 0 {
                    return Poll::Ready(Ok(()));
                }
            }
            if dst.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            let progress = dst.filled().len() > start;
            let phase = match self.mode {
                Mode::Frames(phase) => phase,
                _ => {
                    return match self.source.poll_read(cx, dst, u64::MAX) {
                        Poll::Pending if progress => Poll::Ready(Ok(())),
                        other => other.map_ok(drop),
                    };
                }
            };
            match phase {
                Phase::Cut {
                    left,
                    rest,
                    fin,
                    mask,
                } => {
                    let n = match self.source.poll_read(cx, dst, left) {
                        Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                        Poll::Ready(Ok(n)) => n as u64,
                        Poll::Pending if progress => return Poll::Ready(Ok(())),
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    };
                    let phase = if n < left {
                        Phase::Cut {
                            left: left - n,
                            rest,
                            fin,
                            mask,
                        }
                    } else if rest == 0 {
                        Phase::Header
                    } else {
                        let next = rest.min(FRAGMENT);
                        let last = next == rest;
                        // A continuation; FIN as the frame had it on the last fragment.
                        self.out = fragment_header(if last && fin { 0x80 } else { 0 }, mask, next);
                        Phase::Cut {
                            left: next,
                            rest: rest - next,
                            fin,
                            mask,
                        }
                    };
                    self.mode = Mode::Frames(phase);
                    return Poll::Ready(Ok(()));
                }
                Phase::Header if self.held.len() > 0 => {
                    match parse(self.held.get()) {
                        Ok(Some(header)) => {
                            self.mode = Mode::Frames(self.after_held(&header));
                            continue;
                        }
                        Err(Anomaly) => {
                            self.out = Bytes14::of(&self.held.get()[self.shown..]);
                            self.held.clear();
                            self.shown = 0;
                            self.mode = Mode::Through;
                            continue;
                        }
                        Ok(None) => {}
                    }
                    // Exactly the header's missing bytes, so nothing behind it is taken.
                    let need = header_size(self.held.get());
                    let held = &mut self.held;
                    let mut rest = ReadBuf::new(&mut held.bytes[held.end as usize..need]);
                    match self.source.poll_read(cx, &mut rest, u64::MAX) {
                        Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                        Poll::Ready(Ok(n)) => held.end += n as u8,
                        Poll::Pending if progress => return Poll::Ready(Ok(())),
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    }
                }
                Phase::Header | Phase::Whole { .. } => {
                    let before = dst.filled().len();
                    match self.source.poll_read(cx, dst, FRAGMENT) {
                        Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                        Poll::Ready(Ok(_)) => {}
                        Poll::Pending if progress => return Poll::Ready(Ok(())),
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    }
                    self.scan(dst, before);
                    if dst.filled().len() > start {
                        return Poll::Ready(Ok(()));
                    }
                    // The read brought only the start of a header, now held: read on.
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Refragment<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Mode::Http(lookout) = &mut this.mode {
            // A head parsed since the last read ended where that read did: frames would begin
            // there. Checked before the upgrade, which follows a head.
            let heads = lookout.conn.request_heads();
            if heads != lookout.heads {
                lookout.heads = heads;
                lookout.frames = Some(Phase::Header);
                this.held.clear();
            }
            if !lookout.conn.is_websocket() {
                return this.poll_http(cx, dst);
            }
            this.upgraded();
        }
        if matches!(this.mode, Mode::Through) && this.out.len() == 0 && this.source.stash.is_empty()
        {
            return Pin::new(&mut this.source.inner).poll_read(cx, dst);
        }
        this.poll_frames(cx, dst)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Refragment<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().source.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().source.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.source.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().source.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().source.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Read, Write};
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::FrameSocket;
    use tokio_tungstenite::tungstenite::protocol::{Role, WebSocket, WebSocketConfig};
    use tokio_tungstenite::tungstenite::Message;

    /// A small deterministic generator (splitmix64): every case is reproducible from its seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn mask(&mut self) -> [u8; 4] {
            (self.next() as u32).to_be_bytes()
        }
    }

    /// A frame as a client sends it: masked, the length in its shortest form.
    fn client_frame(first: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut frame = vec![first];
        match payload.len() {
            len @ 0..=125 => frame.push(0x80 | len as u8),
            len @ 126..=0xFFFF => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        frame
    }

    /// Bytes handed out in reads of the given sizes, in turn (the last size repeats).
    struct Chunks {
        data: Vec<u8>,
        at: usize,
        sizes: Vec<usize>,
        turn: usize,
    }

    impl Chunks {
        fn new(data: Vec<u8>, sizes: Vec<usize>) -> Self {
            Chunks {
                data,
                at: 0,
                sizes,
                turn: 0,
            }
        }
    }

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            dst: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let size = self.sizes[self.turn.min(self.sizes.len() - 1)];
            self.turn += 1;
            let n = size.min(dst.remaining()).min(self.data.len() - self.at);
            let at = self.at;
            dst.put_slice(&self.data[at..at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    /// Reads `from` to its end in reads of sizes drawn from `sizes` (a caller like tungstenite,
    /// whose buffer is what it is).
    fn read_all<S: AsyncRead + Unpin>(from: &mut S, sizes: &mut dyn FnMut() -> usize) -> Vec<u8> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        loop {
            let mut buf = vec![0u8; sizes().max(1)];
            let mut dst = ReadBuf::new(&mut buf);
            match Pin::new(&mut *from).poll_read(&mut cx, &mut dst) {
                Poll::Ready(Ok(())) if dst.filled().is_empty() => return out,
                Poll::Ready(Ok(())) => out.extend_from_slice(dst.filled()),
                other => panic!("an in-memory stream read gave {other:?}"),
            }
        }
    }

    /// A recorded stream for tungstenite: reads from the bytes, writes (pongs) go nowhere.
    struct Replay(Cursor<Vec<u8>>);

    impl Read for Replay {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Write for Replay {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The messages tungstenite (server role, the relay's read buffer) reads from `bytes`,
    /// pings included, until the stream ends.
    fn messages(bytes: Vec<u8>) -> Vec<Message> {
        let config = WebSocketConfig::default()
            .read_buffer_size(1024)
            .max_message_size(None)
            .max_frame_size(None);
        let mut ws =
            WebSocket::from_raw_socket(Replay(Cursor::new(bytes)), Role::Server, Some(config));
        let mut got = Vec::new();
        loop {
            match ws.read() {
                Ok(message) => got.push(message),
                Err(tokio_tungstenite::tungstenite::Error::Protocol(
                    tokio_tungstenite::tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
                )) => return got,
                Err(error) => panic!("tungstenite refused the stream: {error}"),
            }
        }
    }

    /// A frame as (opcode, FIN, mask key, payload as sent).
    type Seen = (OpCode, bool, Option<[u8; 4]>, Vec<u8>);

    /// Every frame in `bytes`.
    fn frames(bytes: &[u8]) -> Vec<Seen> {
        let mut socket = FrameSocket::new(Cursor::new(bytes.to_vec()));
        let mut got = Vec::new();
        while let Some(frame) = socket.read(None).expect("a well-formed frame") {
            let header = frame.header();
            got.push((
                header.opcode,
                header.is_final,
                header.mask,
                frame.payload().to_vec(),
            ));
        }
        got
    }

    fn controls(bytes: &[u8]) -> Vec<Seen> {
        frames(bytes)
            .into_iter()
            .filter(|frame| matches!(frame.0, OpCode::Control(_)))
            .collect()
    }

    /// The largest data frame payload in `bytes`.
    fn largest_data_frame(bytes: &[u8]) -> usize {
        frames(bytes)
            .iter()
            .filter(|frame| matches!(frame.0, OpCode::Data(_)))
            .map(|frame| frame.3.len())
            .max()
            .unwrap_or(0)
    }

    /// Text with one- to four-byte characters, so cuts fall inside characters too.
    fn text(rng: &mut Rng, len: usize) -> String {
        let mut text = String::with_capacity(len + 4);
        while text.len() < len {
            text.push(['a', 'é', '€', '😀', '{', '"'][rng.below(6)]);
        }
        text
    }

    /// A random client stream: messages of sizes around the boundaries, sometimes fragmented by
    /// the client itself (with fragments of any size), pings between frames (inside messages
    /// too). Returns the bytes and the messages tungstenite must read from them.
    fn random_stream(rng: &mut Rng, messages: usize) -> (Vec<u8>, Vec<Message>) {
        const SIZES: [usize; 14] = [
            0, 1, 125, 126, 4096, 65531, 65532, 65535, 65536, 65537, 131_064, 131_065, 200_003,
            300_000,
        ];
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        let ping = |rng: &mut Rng, bytes: &mut Vec<u8>, expected: &mut Vec<Message>| {
            if rng.below(3) == 0 {
                let payload: Vec<u8> = (0..rng.below(126)).map(|_| rng.next() as u8).collect();
                bytes.extend(client_frame(0x89, &payload, rng.mask()));
                expected.push(Message::Ping(payload.into()));
            }
        };
        for _ in 0..messages {
            let size = SIZES[rng.below(SIZES.len())] + rng.below(3) * rng.below(9);
            let (opcode, payload, message) = if rng.below(2) == 0 {
                let text = text(rng, size);
                (0x1, text.clone().into_bytes(), Message::text(text))
            } else {
                let data: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
                (0x2, data.clone(), Message::binary(data))
            };
            let mut pieces = vec![payload.as_slice()];
            if rng.below(3) == 0 && payload.len() > 1 {
                // The client fragments the message itself.
                let mut rest = payload.as_slice();
                pieces.clear();
                while !rest.is_empty() {
                    let take = (1 + rng.below(rest.len().min(140_000))).min(rest.len());
                    pieces.push(&rest[..take]);
                    rest = &rest[take..];
                }
            }
            for (i, piece) in pieces.iter().enumerate() {
                let fin = if i + 1 == pieces.len() { 0x80 } else { 0 };
                let opcode = if i == 0 { opcode } else { 0x0 };
                bytes.extend(client_frame(fin | opcode, piece, rng.mask()));
                if i + 1 < pieces.len() {
                    ping(rng, &mut bytes, &mut expected);
                }
            }
            expected.push(message);
            ping(rng, &mut bytes, &mut expected);
        }
        (bytes, expected)
    }

    /// Random streams, read in random pieces (1 byte and up) from a source that itself hands
    /// out random pieces, come out of the layer as frames under 64 KiB that tungstenite
    /// reads as exactly the messages sent; pings come out byte for byte.
    #[test]
    fn random_streams_are_read_as_the_same_messages_in_frames_under_64_kib() {
        for seed in 0..40 {
            let mut rng = Rng(seed);
            let (input, expected) = random_stream(&mut rng, 6);
            let source_sizes: Vec<usize> = (0..64)
                .map(|_| match rng.below(4) {
                    0 => 1,
                    1 => 1 + rng.below(20),
                    2 => 1 + rng.below(2000),
                    _ => 1 + rng.below(200_000),
                })
                .collect();
            let mut caller = Rng(seed ^ 0xABCD);
            let one_byte_reads = seed % 5 == 0;
            let mut sizes = move || match caller.below(if one_byte_reads { 1 } else { 4 }) {
                0 => 1,
                1 => 1 + caller.below(16),
                2 => 1024,
                _ => 1 + caller.below(100_000),
            };
            let mut layer = Refragment::frames(Chunks::new(input.clone(), source_sizes), u64::MAX);
            let output = read_all(&mut layer, &mut sizes);
            assert!(
                largest_data_frame(&output) <= WHOLE as usize,
                "seed {seed}: a data frame of {} bytes came out",
                largest_data_frame(&output)
            );
            assert_eq!(
                controls(&output),
                controls(&input),
                "seed {seed}: control frames"
            );
            let got = messages(output);
            assert_eq!(got.len(), expected.len(), "seed {seed}");
            for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
                assert!(got == expected, "seed {seed}: message {i} differs");
            }
        }
    }

    /// A cut frame: fragments of 65,532 bytes with the frame's mask key, the first with the
    /// frame's opcode, the last with its FIN.
    #[test]
    fn a_large_frame_becomes_fragments_with_its_opcode_first_and_its_fin_last() {
        let payload: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
        let mask = [1, 2, 3, 4];
        let input = client_frame(0x82, &payload, mask);
        let mut layer = Refragment::frames(Chunks::new(input, vec![4096]), u64::MAX);
        let output = read_all(&mut layer, &mut || 1024);
        let frames = frames(&output);
        let shape: Vec<_> = frames.iter().map(|f| (f.0, f.1, f.2, f.3.len())).collect();
        let key = Some(mask);
        assert_eq!(
            shape,
            vec![
                (OpCode::Data(Data::Binary), false, key, 65_532),
                (OpCode::Data(Data::Continue), false, key, 65_532),
                (
                    OpCode::Data(Data::Continue),
                    true,
                    key,
                    150_000 - 2 * 65_532
                ),
            ]
        );
        assert_eq!(
            messages(output),
            vec![Message::binary(payload)],
            "the same message"
        );
    }

    /// A frame over `--max-message-bytes` passes whole (tungstenite refuses it at its header),
    /// and so does everything after a header no client may send (here unmasked).
    #[test]
    fn frames_over_the_limit_and_everything_after_an_anomaly_pass_untouched() {
        let big = vec![7u8; 150_000];
        let over_limit = client_frame(0x82, &big, [9, 9, 9, 9]);
        let mut layer = Refragment::frames(Chunks::new(over_limit.clone(), vec![1000]), 100_000);
        assert!(read_all(&mut layer, &mut || 1024) == over_limit);

        let mut unmasked = vec![0x82, 126, 0x01, 0x00];
        unmasked.extend_from_slice(&[0u8; 256]);
        let mut input = client_frame(0x81, b"first", [1, 2, 3, 4]);
        input.extend(&unmasked);
        input.extend(client_frame(0x82, &big, [5, 6, 7, 8]));
        for sizes in [vec![3], vec![100_000]] {
            let mut layer = Refragment::frames(Chunks::new(input.clone(), sizes), u64::MAX);
            assert!(read_all(&mut layer, &mut || 777) == input);
        }
    }

    /// An HTTP exchange ahead of the frames, as hyper reads it. `heads` are where the request
    /// heads in `http` end: hyper reads (into 64 KiB) until it has each one, counts it
    /// (`request_arrived`, as `WithConn::call` does) and reads on; after the last it makes
    /// `extra` more reads, as it does while a request is in flight, before the connection is
    /// upgraded. The source hands out `sizes` in turn. Returns what tungstenite gets: what
    /// hyper read behind the last head (handed over as it was), then what the layer gives.
    fn upgrade_after(
        http: &[u8],
        heads: &[usize],
        frames: &[u8],
        sizes: Vec<usize>,
        extra: usize,
    ) -> Vec<u8> {
        let conn = Arc::new(Signals::default());
        let mut all = http.to_vec();
        all.extend_from_slice(frames);
        let mut layer = Refragment::watching(Chunks::new(all, sizes), Arc::clone(&conn), u64::MAX);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut seen = Vec::new();
        let mut hyper_read = |layer: &mut Refragment<Chunks>, seen: &mut Vec<u8>| {
            let mut buf = vec![0u8; 64 * 1024];
            let mut dst = ReadBuf::new(&mut buf);
            assert!(Pin::new(layer).poll_read(&mut cx, &mut dst).is_ready());
            seen.extend_from_slice(dst.filled());
        };
        for &end in heads {
            while seen.len() < end {
                hyper_read(&mut layer, &mut seen);
                assert!(seen.len() <= end, "a read went past a request head");
            }
            conn.request_arrived();
        }
        while seen.len() < http.len() {
            hyper_read(&mut layer, &mut seen);
        }
        for _ in 0..extra {
            hyper_read(&mut layer, &mut seen);
        }
        assert_eq!(seen[..http.len()], *http, "HTTP passes untouched");
        conn.upgrading();
        let mut stream = seen[http.len()..].to_vec();
        stream.extend(read_all(&mut layer, &mut || 1024));
        stream
    }

    const HEAD: &[u8] = b"GET /mcp HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Version: 13\r\n\r\n";

    /// The payload sizes of the data frames in `bytes`.
    fn data_frame_sizes(bytes: &[u8]) -> Vec<usize> {
        frames(bytes)
            .iter()
            .filter(|frame| matches!(frame.0, OpCode::Data(_)))
            .map(|frame| frame.3.len())
            .collect()
    }

    /// Frames sent before the 101 reach tungstenite as sent, wherever hyper's reads end: what
    /// hyper holds passes as it is (a large frame whose header it holds stays whole), every
    /// frame after it is cut. A read never goes past the request's head.
    #[test]
    fn frames_sent_before_the_101_are_followed_from_the_end_of_the_head() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 13) as u8).collect();
        let mut frames = client_frame(0x81, b"{\"early\":true}", [1, 2, 3, 4]);
        let small = frames.len();
        frames.extend(client_frame(0x82, &big, [5, 6, 7, 8]));
        frames.extend(client_frame(0x89, b"ping", [9, 9, 9, 9]));
        frames.extend(client_frame(0x82, &big, [2, 4, 6, 8]));
        let expected = vec![
            Message::text("{\"early\":true}"),
            Message::binary(big.clone()),
            Message::Ping(b"ping".to_vec().into()),
            Message::binary(big.clone()),
        ];
        // How much came with the head, whether hyper read on (one more read while the request
        // is in flight: what came with the head, else what the socket has next, here 300
        // bytes), and whether the first large frame then passes whole.
        for (behind, extra, first_whole) in [
            (0, 0, false),
            (0, 1, true),
            (3, 1, false),
            (small, 1, false),
            (small + 5, 1, true),
            (small + 14 + 100, 1, true),
            (small + 14 + 100, 0, false),
        ] {
            let sizes = vec![HEAD.len() + behind, 300, 5000, 100_000];
            let output = upgrade_after(HEAD, &[HEAD.len()], &frames, sizes, extra);
            let sizes = data_frame_sizes(&output);
            assert_eq!(
                sizes[1] == big.len(),
                first_whole,
                "{behind} bytes behind: {sizes:?}"
            );
            assert!(
                sizes[sizes.len() - 4..]
                    .iter()
                    .all(|&s| s <= FRAGMENT as usize),
                "{sizes:?}"
            );
            assert_eq!(messages(output), expected, "{behind} bytes behind the head");
        }
    }

    /// A client that sends empty lines in bytes before the 101 (here a ping whose mask key is
    /// `\r\n\r\n`), or ends its head with bare `\n`s, does not move where the layer thinks
    /// its frames begin: its large frames are still cut.
    #[test]
    fn a_client_cannot_hide_where_its_frames_begin() {
        let big = vec![0u8; 100_000];
        let mut frames = client_frame(0x89, &[0u8; 20], *b"\r\n\r\n");
        frames.extend(client_frame(0x82, &big, *b"\n\n\n\n"));
        let bare = b"GET /mcp HTTP/1.1\nHost: relay\nUpgrade: websocket\n\n";
        for head in [HEAD, bare.as_slice()] {
            for extra in [0, 1, 3, 8] {
                let sizes = vec![head.len() + 60, 7, 100_000];
                let output = upgrade_after(head, &[head.len()], &frames, sizes, extra);
                assert!(data_frame_sizes(&output)
                    .iter()
                    .all(|&s| s <= FRAGMENT as usize));
                assert_eq!(
                    messages(output),
                    vec![
                        Message::Ping(vec![0u8; 20].into()),
                        Message::binary(big.clone())
                    ]
                );
            }
        }
    }

    /// A keep-alive connection whose earlier request had a body (with empty lines in it): the
    /// frames begin after the last head.
    #[test]
    fn frames_after_earlier_requests_on_the_connection_are_cut() {
        let mut http = b"POST /mcp HTTP/1.1\r\nHost: relay\r\nContent-Length: 20\r\n\r\n".to_vec();
        let first_head = http.len();
        http.extend_from_slice(b"{\"a\":\"\n\n\r\n\r\n....\"}");
        http.extend_from_slice(HEAD);
        let big = vec![3u8; 100_000];
        let frames = client_frame(0x82, &big, [1, 1, 2, 2]);
        for sizes in [vec![http.len() + 50], vec![1], vec![first_head + 3, 9]] {
            let output = upgrade_after(&http, &[first_head, http.len()], &frames, sizes, 0);
            assert_eq!(largest_data_frame(&output), FRAGMENT as usize);
            assert_eq!(messages(output), vec![Message::binary(big.clone())]);
        }
    }

    /// In doubt the rest of the connection passes untouched: bytes behind the head that are no
    /// client frame, an HTTP/2 connection, an upgrade without a head counted.
    #[test]
    fn in_doubt_about_where_frames_begin_the_connection_passes_untouched() {
        let big = vec![5u8; 100_000];
        let frame = client_frame(0x82, &big, [1, 2, 3, 4]);
        let mut garbage = b"not a frame at all".to_vec();
        garbage.extend(&frame);
        let mut http2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        let first_empty_line = b"PRI * HTTP/2.0\r\n\r\n".len();
        http2.extend_from_slice(HEAD);
        for (http, heads, frames) in [
            (HEAD.to_vec(), vec![HEAD.len()], garbage),
            (http2.clone(), vec![first_empty_line], frame.clone()),
            (HEAD.to_vec(), vec![], frame.clone()),
        ] {
            let sizes = vec![http.len() + 30, 1000];
            let output = upgrade_after(&http, &heads, &frames, sizes, 1);
            assert!(output == frames, "passed untouched");
        }
    }
}
