//! Long text results in parts a host keeps whole.
//!
//! Claude Code moves a text result over 50,000 characters to a file and caps one at 25,000
//! tokens, so by default no text result is over 40,000 characters (`--max-result-chars`).
//! A longer text is cut at line boundaries (a single line longer than a part is cut at a
//! character boundary), each part ends with a line that says where it is and how to read on,
//! and the parts put back together are exactly the text. Offsets count characters (Unicode
//! scalar values), not bytes, so a model can copy them without knowing the encoding.

/// The default `--max-result-chars`.
pub(crate) const DEFAULT_MAX_RESULT_CHARS: usize = 40_000;

/// Room kept in each part for its note (the longest note is about 220 characters).
const NOTE_RESERVE: usize = 300;

/// One part of a text: `body` is `text[start..end]` (char offsets).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Part {
    pub(crate) body: String,
    /// Char offset of the first character of `body` in the whole text.
    pub(crate) start: usize,
    /// Char offset just past `body`.
    pub(crate) end: usize,
    pub(crate) total: usize,
    /// 1-based, among the parts counted from `start` of the first part asked for.
    pub(crate) index: usize,
    pub(crate) count: usize,
    /// 1-based line numbers of the first and last line `body` touches, and of the text.
    pub(crate) first_line: usize,
    pub(crate) last_line: usize,
    pub(crate) lines: usize,
}

/// How many characters of text a part carries when a whole result may be `limit` long.
pub(crate) fn body_limit(limit: usize) -> usize {
    if limit > 4 * NOTE_RESERVE {
        limit - NOTE_RESERVE
    } else {
        (limit / 4).max(1)
    }
}

/// Where the part starting at byte `from` ends (a byte offset): after the last line break
/// within `max_chars` characters, or at `max_chars` characters when the line is longer. A
/// line after that break too long for a part of its own is cut wherever it is, so it is cut
/// at `max_chars` too: the part is filled, not sent with the few lines before it (a page
/// whose one paragraph is 150,000 characters read `[Part 1 of 7: lines 1–2 …]` and nothing).
fn part_end(text: &str, from: usize, max_chars: usize) -> usize {
    let rest = &text[from..];
    let hard = match rest.char_indices().nth(max_chars) {
        None => return text.len(),
        Some((i, _)) => i,
    };
    match rest[..hard].rfind('\n') {
        Some(i) if fits_a_part(&rest[i + 1..], max_chars) => from + i + 1,
        _ => from + hard,
    }
}

/// Whether the first line of `rest` (its line break included) is at most `max_chars` long.
fn fits_a_part(rest: &str, max_chars: usize) -> bool {
    match rest.char_indices().nth(max_chars) {
        None => true,
        Some((i, _)) => rest[..i].contains('\n'),
    }
}

/// The start of the line holding byte `at`, when it is within `max_chars` characters before
/// it; `at` otherwise.
fn line_start_near(text: &str, at: usize, max_chars: usize) -> usize {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    if text[line_start..at].chars().count() < max_chars {
        line_start
    } else {
        at
    }
}

/// Byte offset of char offset `chars` (the end of the text when beyond it).
pub(crate) fn byte_at(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn line_count(text: &str) -> usize {
    let breaks = text.bytes().filter(|&b| b == b'\n').count();
    if text.is_empty() || text.ends_with('\n') {
        breaks.max(1)
    } else {
        breaks + 1
    }
}

/// The part of `text` that starts at char offset `from`, for results limited to `limit`
/// characters (0 = no limit: the rest in one part). `None` when `from` is past the end.
pub(crate) fn part_at(text: &str, from: usize, limit: usize) -> Option<Part> {
    let total = text.chars().count();
    if from > total || (from == total && total > 0) {
        return None;
    }
    let max = if limit == 0 {
        usize::MAX
    } else {
        body_limit(limit)
    };
    // Cut from the start, so a part read on from a note's offset is numbered as its first
    // part said; an offset a model made up starts its own numbering, at the start of the line
    // it falls in (a part that opens mid-line reads as a broken outline line), unless that
    // line is too long for one part.
    let mut starts = Vec::new();
    let mut byte = 0;
    while byte < text.len() || starts.is_empty() {
        starts.push(byte);
        if byte >= text.len() {
            break;
        }
        byte = part_end(text, byte, max);
    }
    let asked = byte_at(text, from);
    let target = line_start_near(text, asked, max);
    let from_byte = starts
        .iter()
        .position(|&start| start == asked)
        .or_else(|| starts.iter().position(|&start| start == target));
    let (index, starts) = match from_byte {
        Some(index) => (index, starts),
        None => {
            let mut own = Vec::new();
            let mut byte = target;
            while byte < text.len() {
                own.push(byte);
                byte = part_end(text, byte, max);
            }
            (0, own)
        }
    };
    let start_byte = starts[index];
    let end_byte = starts.get(index + 1).copied().unwrap_or(text.len());
    let start = text[..start_byte].chars().count();
    let body = text[start_byte..end_byte].to_owned();
    let end = start + body.chars().count();
    let last_byte = if end_byte > start_byte {
        end_byte - 1
    } else {
        start_byte
    };
    Some(Part {
        body,
        start,
        end,
        total,
        index: index + 1,
        count: starts.len(),
        first_line: line_of(text, start_byte),
        last_line: line_of(text, last_byte),
        lines: line_count(text),
    })
}

/// Thousands separated by commas, as the notes print numbers.
pub(crate) fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Part {
    pub(crate) fn is_whole(&self) -> bool {
        self.count == 1 && self.start == 0 && self.end == self.total
    }

    /// The line that ends a part: where it is, and how to read on (`tool` takes `offset`),
    /// or, for a tool that cannot read on, how to see more.
    pub(crate) fn note(&self, tool: &str, can_read_on: bool) -> String {
        let place = format!(
            "Part {} of {}: lines {}–{} of {}",
            self.index,
            self.count,
            grouped(self.first_line),
            grouped(self.last_line),
            grouped(self.lines)
        );
        if self.end >= self.total {
            format!("[{place}. End of the result.]")
        } else if can_read_on {
            // A model that wants one thing on a long page is better off not reading it all.
            let less = if tool == "browser_snapshot" {
                " Or see less: browser_find, or target, depth, interactive."
            } else {
                ""
            };
            format!(
                "[{place}. To read on, call {tool} with {{\"offset\": {}}}.{less}]",
                self.end
            )
        } else {
            format!(
                "[{place}; the rest ({} characters) is not shown. Start the bridge with a \
                 larger --max-result-chars (0 = no limit) to see it.]",
                grouped(self.total - self.end)
            )
        }
    }

    /// The body and its note, as the result's text.
    pub(crate) fn text(&self, tool: &str, can_read_on: bool) -> String {
        if self.is_whole() {
            return self.body.clone();
        }
        let mut text = self.body.clone();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&self.note(tool, can_read_on));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every part from offset 0 the way a model does, checking each on the way.
    fn read_all(text: &str, limit: usize) -> Vec<Part> {
        let mut parts = Vec::new();
        let mut offset = 0;
        while let Some(part) = part_at(text, offset, limit) {
            let shown = part.text("browser_snapshot", true);
            assert!(
                shown.chars().count() <= limit,
                "a part of {} characters over {limit}",
                shown.chars().count()
            );
            assert_eq!(part.index, parts.len() + 1);
            offset = part.end;
            let done = part.end >= part.total;
            parts.push(part);
            if done {
                break;
            }
            assert!(parts.len() < 100_000, "no progress");
        }
        parts
    }

    /// A tiny deterministic generator, so the property test needs no crate.
    fn lines(seed: u64, count: usize) -> String {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        let alphabet = ["a", "é", "€", "𝄞", " ", "\"", "x", "[ref=e5]"];
        let mut text = String::new();
        for _ in 0..count {
            let indent = next() % 6;
            let width = match next() % 10 {
                0 => next() % 700,
                _ => next() % 60,
            };
            text.push_str(&"  ".repeat(indent));
            text.push_str("- ");
            for _ in 0..width {
                text.push_str(alphabet[next() % alphabet.len()]);
            }
            text.push('\n');
        }
        if seed.is_multiple_of(2) {
            text.pop();
        }
        text
    }

    #[test]
    fn parts_put_back_together_are_exactly_the_text_and_each_fits() {
        for seed in 0..40u64 {
            let text = lines(seed, 20 + (seed as usize * 37) % 400);
            for limit in [1_300, 2_000, 5_000, 40_000] {
                let parts = read_all(&text, limit);
                let joined: String = parts.iter().map(|p| p.body.as_str()).collect();
                assert_eq!(joined, text, "seed {seed} limit {limit}");
                let count = parts.len();
                for (i, part) in parts.iter().enumerate() {
                    assert_eq!(part.count, count, "seed {seed}");
                    // Every part but the last ends at a line break unless its line is longer
                    // than a part, and is filled then.
                    if i + 1 < count && !part.body.ends_with('\n') {
                        let cut_at = part.end;
                        let line_start = text[..byte_at(&text, cut_at)]
                            .rfind('\n')
                            .map_or(0, |b| b + 1);
                        let line_end = text[line_start..]
                            .find('\n')
                            .map_or(text.len(), |b| line_start + b + 1);
                        assert!(
                            text[line_start..line_end].chars().count() > body_limit(limit),
                            "seed {seed}"
                        );
                        assert_eq!(part.body.chars().count(), body_limit(limit), "seed {seed}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_line_longer_than_a_part_is_cut_at_a_character_boundary() {
        let text = format!("head\n{}\ntail\n", "€".repeat(5_000));
        let parts = read_all(&text, 2_000);
        assert!(parts.len() >= 3);
        let joined: String = parts.iter().map(|p| p.body.as_str()).collect();
        assert_eq!(joined, text);
        // The part before the long line is filled with its start, not sent with "head" alone.
        assert!(parts[0].body.starts_with("head\n€"), "{}", parts[0].body);
        assert_eq!(parts[0].body.chars().count(), body_limit(2_000));
        assert!(parts[1].body.chars().all(|c| c == '€'));
        // Each part read on from its note's offset is the next, not its line's start again.
        assert_eq!(parts[1].start, parts[0].end);
    }

    #[test]
    fn notes_say_where_a_part_is_and_how_to_read_on() {
        let text: String = (1..=3_000).map(|i| format!("- line {i}\n")).collect();
        let first = part_at(&text, 0, 10_000).unwrap();
        let note = first.note("browser_snapshot", true);
        assert!(
            note.starts_with(&format!("[Part 1 of {}: lines 1–", first.count)),
            "{note}"
        );
        assert!(note.contains("of 3,000."), "{note}");
        assert!(
            note.contains(&format!(
                "call browser_snapshot with {{\"offset\": {}}}.",
                first.end
            )),
            "{note}"
        );
        let second = part_at(&text, first.end, 10_000).unwrap();
        assert_eq!(second.index, 2);
        assert_eq!(second.first_line, first.last_line + 1);
        let last = part_at(&text, text.chars().count() - 3, 10_000).unwrap();
        assert!(last.note("x", true).ends_with("End of the result.]"));
        assert!(part_at(&text, text.chars().count(), 10_000).is_none());
        // A short text is one whole part without a note.
        let short = part_at("a\nb", 0, 40_000).unwrap();
        assert!(short.is_whole());
        assert_eq!(short.text("browser_snapshot", true), "a\nb");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(12), "12");
    }

    #[test]
    fn an_offset_made_up_mid_line_reads_from_the_start_of_its_line() {
        let text: String = (1..=3_000).map(|i| format!("- line {i}\n")).collect();
        let line_500 = text.find("- line 500\n").unwrap();
        let part = part_at(&text, line_500 + 4, 10_000).unwrap();
        assert_eq!(part.start, line_500, "ASCII: bytes are characters");
        assert!(
            part.body.starts_with("- line 500\n"),
            "{}",
            &part.body[..20]
        );
        assert_eq!(part.first_line, 500);
        // In a line longer than a part, the offset is where the part starts.
        let text = format!("head\n{}\ntail\n", "x".repeat(5_000));
        let part = part_at(&text, 3_000, 2_000).unwrap();
        assert_eq!(part.start, 3_000);
    }

    #[test]
    fn no_limit_means_one_part() {
        let text = "x\n".repeat(100_000);
        let part = part_at(&text, 0, 0).unwrap();
        assert!(part.is_whole());
    }
}
