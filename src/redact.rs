//! What a log line may contain of what clients send.
//!
//! Logs are read by people and parsed by machines, and both trust one event per line. A string
//! a client chose (a JWT header's `alg`, a browser name, a close reason echoing either) could
//! otherwise end a line and forge the next one (`… ERROR mcp_relay: FORGED LINE admin=true`).
//! So every client-supplied string goes through [`printable`] before it reaches `tracing`:
//! control characters are escaped and the length is clipped. Tokens never reach a log at any
//! level; this module is for the strings that are allowed there.

use std::borrow::Cow;
use std::fmt;

/// Longest client-supplied string a log line carries.
pub const MAX_LOGGED_CHARS: usize = 200;

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut with `…`.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!("{}…", crate::text::truncate_utf8(text, max)))
}

/// A client-supplied string made safe for one log line: control characters (newlines, escape
/// sequences, …) are written as `\u{…}`, and at most [`MAX_LOGGED_CHARS`] characters are shown.
pub fn printable(text: &str) -> Printable<'_> {
    Printable(text)
}

/// See [`printable`].
pub struct Printable<'a>(&'a str);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (shown, c) in self.0.chars().enumerate() {
            if shown == MAX_LOGGED_CHARS {
                return f.write_str("…");
            }
            if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
                write!(f, "\\u{{{:x}}}", c as u32)?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_cannot_start_a_forged_log_line() {
        let shown =
            printable("HS256\n2026-11-23 ERROR mcp_relay: FORGED LINE\r\x1b[2J").to_string();
        assert!(!shown.contains('\n') && !shown.contains('\r') && !shown.contains('\x1b'));
        assert!(shown.starts_with("HS256\\u{a}2026"));
    }

    #[test]
    fn long_strings_are_clipped_on_a_character_boundary() {
        let long = "é".repeat(1000);
        assert_eq!(
            printable(&long).to_string().chars().count(),
            MAX_LOGGED_CHARS + 1
        );
        assert_eq!(clip("ééé", 3), "é…");
        assert_eq!(clip("short", 10), "short");
    }
}
