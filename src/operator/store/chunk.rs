//! The SQLite store's packing of audit events: many events in one blob (a *chunk*), so that
//! appending a batch of a tenth of a second's requests is one row insert, not thousands.
//!
//! At saturation a row per request cost the relay a fifth of its CPU in SQLite's VM, B-tree and
//! WAL (docs/BENCHMARKS.md); packing an event is a few `Vec` pushes. Reading decodes chunks
//! newest first, which is what every query wants (the newest events that match).
//!
//! An event, in order: a flags byte ([`METHOD`], [`DURATION`], [`DETAIL`], [`KIND`]); `at_ms`
//! minus the chunk's `first_ms` and `code` as zigzag varints; the `audit_labels` id as a varint;
//! then, each only when its flag is set, the kind (when not `request`), the method and the detail
//! as a varint length and UTF-8 bytes, and the duration as the 8 little-endian bytes of the
//! `f64` (so it reads back exactly as written).

/// The event has a method.
const METHOD: u8 = 1;
/// The event has a duration.
const DURATION: u8 = 2;
/// The event has a detail.
const DETAIL: u8 = 4;
/// The event's kind is not `request` (and is stored).
const KIND: u8 = 8;

/// One event as stored, its text borrowed from the chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Packed<'a> {
    pub at_ms: i64,
    pub labels: i64,
    pub kind: &'a str,
    pub method: Option<&'a str>,
    pub code: i64,
    pub duration_ms: Option<f64>,
    pub detail: Option<&'a str>,
}

/// Appends `event` to `buf`; `first_ms` is the chunk's smallest `at_ms`.
pub fn pack(buf: &mut Vec<u8>, first_ms: i64, event: &Packed<'_>) {
    let mut flags = 0;
    if event.method.is_some() {
        flags |= METHOD;
    }
    if event.duration_ms.is_some() {
        flags |= DURATION;
    }
    if event.detail.is_some() {
        flags |= DETAIL;
    }
    if event.kind != "request" {
        flags |= KIND;
    }
    buf.push(flags);
    put_varint(buf, zigzag(event.at_ms.wrapping_sub(first_ms)));
    put_varint(buf, zigzag(event.code));
    put_varint(buf, zigzag(event.labels));
    if flags & KIND != 0 {
        put_text(buf, event.kind);
    }
    if let Some(method) = event.method {
        put_text(buf, method);
    }
    if let Some(duration) = event.duration_ms {
        buf.extend_from_slice(&duration.to_le_bytes());
    }
    if let Some(detail) = event.detail {
        put_text(buf, detail);
    }
}

/// The events of a chunk, in the order they were packed. A chunk that does not decode (a
/// damaged file) yields one `Err` and ends.
pub fn unpack(blob: &[u8], first_ms: i64) -> Unpack<'_> {
    Unpack {
        blob,
        at: 0,
        first_ms,
    }
}

pub struct Unpack<'a> {
    blob: &'a [u8],
    at: usize,
    first_ms: i64,
}

/// A chunk that does not decode.
#[derive(Debug)]
pub struct Damaged;

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an audit chunk does not decode (the file is damaged)")
    }
}

impl std::error::Error for Damaged {}

impl<'a> Iterator for Unpack<'a> {
    type Item = Result<Packed<'a>, Damaged>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.blob.len() {
            return None;
        }
        let item = self.read();
        if item.is_err() {
            self.at = self.blob.len();
        }
        Some(item)
    }
}

impl<'a> Unpack<'a> {
    fn read(&mut self) -> Result<Packed<'a>, Damaged> {
        let flags = self.byte()?;
        let at_ms = self.first_ms.wrapping_add(unzigzag(self.varint()?));
        let code = unzigzag(self.varint()?);
        let labels = unzigzag(self.varint()?);
        let kind = if flags & KIND != 0 {
            self.text()?
        } else {
            "request"
        };
        let method = if flags & METHOD != 0 {
            Some(self.text()?)
        } else {
            None
        };
        let duration_ms = if flags & DURATION != 0 {
            let bytes = self.take(8)?;
            Some(f64::from_le_bytes(bytes.try_into().map_err(|_| Damaged)?))
        } else {
            None
        };
        let detail = if flags & DETAIL != 0 {
            Some(self.text()?)
        } else {
            None
        };
        Ok(Packed {
            at_ms,
            labels,
            kind,
            method,
            code,
            duration_ms,
            detail,
        })
    }

    fn byte(&mut self) -> Result<u8, Damaged> {
        let byte = *self.blob.get(self.at).ok_or(Damaged)?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, Damaged> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Damaged)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Damaged> {
        let end = self.at.checked_add(n).ok_or(Damaged)?;
        let bytes = self.blob.get(self.at..end).ok_or(Damaged)?;
        self.at = end;
        Ok(bytes)
    }

    fn text(&mut self) -> Result<&'a str, Damaged> {
        let len = usize::try_from(self.varint()?).map_err(|_| Damaged)?;
        std::str::from_utf8(self.take(len)?).map_err(|_| Damaged)
    }
}

fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

fn put_text(buf: &mut Vec<u8>, text: &str) {
    put_varint(buf, text.len() as u64);
    buf.extend_from_slice(text.as_bytes());
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_unpack_exactly_as_packed_whatever_their_fields() {
        let events = [
            Packed {
                at_ms: 1_700_000_000_123,
                labels: 1,
                kind: "request",
                method: Some("tabs/list"),
                code: 0,
                duration_ms: Some(0.123_456_789),
                detail: None,
            },
            Packed {
                at_ms: 1_700_000_000_100, // earlier than the one before: threads race
                labels: 70_000,
                kind: "kick",
                method: None,
                code: -32011,
                duration_ms: None,
                detail: Some("by ädmin"),
            },
            Packed {
                at_ms: i64::MAX,
                labels: i64::MAX,
                kind: "",
                method: Some(""),
                code: i64::MIN,
                duration_ms: Some(f64::MAX),
                detail: Some(""),
            },
        ];
        let first_ms = 1_700_000_000_100;
        let mut blob = Vec::new();
        for event in &events {
            pack(&mut blob, first_ms, event);
        }
        let back: Vec<_> = unpack(&blob, first_ms).map(Result::unwrap).collect();
        assert_eq!(back, events);
        // The common case is small: a request with a 9-byte method is 22 bytes.
        let mut one = Vec::new();
        pack(&mut one, first_ms, &events[0]);
        assert_eq!(one.len(), 22);
    }

    #[test]
    fn a_damaged_chunk_is_an_error_not_a_panic_or_a_loop() {
        let mut blob = Vec::new();
        let event = Packed {
            at_ms: 5,
            labels: 3,
            kind: "connect",
            method: Some("m"),
            code: 1,
            duration_ms: Some(1.0),
            detail: Some("d"),
        };
        pack(&mut blob, 0, &event);
        for cut in 0..blob.len() {
            let items: Vec<_> = unpack(&blob[..cut], 0).collect();
            assert!(items.len() <= 1, "cut at {cut}");
            assert!(items.iter().all(Result::is_err), "cut at {cut}");
        }
        let endless = vec![0x80; 20];
        let items: Vec<_> = unpack(&endless, 0).collect();
        assert!(matches!(items.as_slice(), [Err(Damaged)]));
    }
}
