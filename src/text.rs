//! Cutting text that came from a client to a bound: names, methods, close reasons and log
//! lines all come from the other side of a socket, and each is kept only up to a size. One
//! helper, so every cut lands on a character boundary the same way.

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn truncate_utf8(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::truncate_utf8;

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(truncate_utf8("short", 256), "short");
        assert_eq!(truncate_utf8("é", 1), "");
        assert_eq!(truncate_utf8("aé", 2), "a");
        assert_eq!(truncate_utf8("abc", 2), "ab");
    }
}
