//! `browser_find`: searching the page's outline in the bridge (issue 23's contract).
//!
//! The extension sends the whole outline (`snapshot`, format outline); the bridge answers only
//! the lines that match, each under its path from the root (its ancestor lines, found by
//! indentation) with a few lines of context, so a model finds an element and its ref for a
//! fraction of a whole snapshot's characters.

use regex::{Regex, RegexBuilder};

/// Lines of context shown before and after each match.
const CONTEXT: usize = 2;
/// A match inside a table's row shows the whole row when it has at most this many lines: a
/// cell's neighbours say which record it is (Datasette's "refunded" showed the price and date
/// around it, not the order's id and customer two cells before).
const ROW_LINES: usize = 24;
/// Matches shown at most; the rest are counted.
const MAX_MATCHES: usize = 30;
/// Characters of one shown line at most (a long text node is clipped with "…").
const MAX_LINE_CHARS: usize = 300;
/// Characters of snippets at most: a find stays far cheaper than a snapshot, and within one
/// part (no `offset` to read on).
const MAX_OUTPUT_CHARS: usize = 20_000;

/// What to look for.
#[derive(Debug)]
pub(crate) enum Query {
    /// Case-insensitive substring, lowercased.
    Text(String),
    Regex(Regex),
}

impl Query {
    /// `text` (case-insensitive substring) or `regex` (Rust syntax; `/pattern/flags` with
    /// flags among `i`, `m`, `s`, `x`, `u`, `g` (ignored)): exactly one of them.
    pub(crate) fn new(text: Option<&str>, regex: Option<&str>) -> Result<Query, String> {
        match (text, regex) {
            (Some(_), Some(_)) => Err("give either \"text\" or \"regex\", not both".into()),
            (None, None) => Err(
                "give \"text\" (case-insensitive) or \"regex\" (e.g. \"/sign ?in/i\") to find"
                    .into(),
            ),
            (Some(""), None) => Err("\"text\" is empty".into()),
            (Some(text), None) => Ok(Query::Text(text.to_lowercase())),
            (None, Some(pattern)) => {
                let (pattern, flags) = match pattern
                    .strip_prefix('/')
                    .and_then(|rest| rest.rsplit_once('/'))
                {
                    Some((inner, flags)) if flags.chars().all(|c| "imsxug".contains(c)) => {
                        (inner, flags)
                    }
                    _ => (pattern, ""),
                };
                if pattern.is_empty() {
                    return Err("\"regex\" is empty".into());
                }
                RegexBuilder::new(pattern)
                    .case_insensitive(flags.contains('i'))
                    .multi_line(flags.contains('m'))
                    .dot_matches_new_line(flags.contains('s'))
                    .ignore_whitespace(flags.contains('x'))
                    .size_limit(1 << 20)
                    .build()
                    .map(Query::Regex)
                    .map_err(|e| format!("\"regex\" is not a valid regular expression: {e}"))
            }
        }
    }

    /// Whether `line` says what is looked for. Its refs are left out: they are the outline's
    /// own numbering, not the page's, and "15" matched every `[ref=e15]`, `[ref=e115]`,
    /// `[ref=e152]`… on a calendar whose one "15" was wanted.
    fn matches(&self, line: &str) -> bool {
        let line = without_refs(line);
        match self {
            Query::Text(needle) => line.to_lowercase().contains(needle.as_str()),
            Query::Regex(regex) => regex.is_match(&line),
        }
    }
}

/// `line` without its ` [ref=…]` marks.
fn without_refs(line: &str) -> std::borrow::Cow<'_, str> {
    const MARK: &str = " [ref=";
    if !line.contains(MARK) {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MARK.len()..];
        match after.find(']') {
            Some(end) => rest = &after[end + 1..],
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.into()
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The indices of `line`'s ancestors, root first: each earlier line less indented than the
/// one after it on the path.
fn ancestors(lines: &[&str], line: usize) -> Vec<usize> {
    let mut path = Vec::new();
    let mut level = indent(lines[line]);
    for i in (0..line).rev() {
        if level == 0 {
            break;
        }
        let own = indent(lines[i]);
        if own < level && !lines[i].trim().is_empty() {
            path.push(i);
            level = own;
        }
    }
    path.reverse();
    path
}

/// The lines of the table row `line` is in (the row's own line excluded, up to the line
/// after its last), when the row has at most [`ROW_LINES`] of them.
fn row_of(lines: &[&str], line: usize) -> Option<(usize, usize)> {
    let row = *ancestors(lines, line).iter().rev().find(|&&a| {
        lines[a].trim_start().starts_with("- row ") || lines[a].trim_start() == "- row:"
    })?;
    let level = indent(lines[row]);
    let end = (row + 1..lines.len())
        .find(|&i| !lines[i].trim().is_empty() && indent(lines[i]) <= level)
        .unwrap_or(lines.len());
    (end - row - 1 <= ROW_LINES).then_some((row + 1, end))
}

fn clip(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let mut clipped: String = line.chars().take(MAX_LINE_CHARS).collect();
    clipped.push('…');
    clipped
}

/// What `browser_find` found in `outline`: the text a model reads (without the page header)
/// and how many lines matched.
pub(crate) fn search(outline: &str, query: &Query) -> (String, usize) {
    let lines: Vec<&str> = outline.lines().collect();
    let matched: Vec<usize> = (0..lines.len())
        .filter(|&i| query.matches(lines[i]))
        .collect();
    if matched.is_empty() {
        return (String::new(), 0);
    }
    let mut out = String::new();
    // The end of the last context shown, so overlapping windows are not printed twice.
    let mut shown_until = 0usize;
    let mut printed = vec![false; lines.len()];
    let mut shown = 0;
    for (n, &line) in matched.iter().take(MAX_MATCHES).enumerate() {
        if out.len() > MAX_OUTPUT_CHARS {
            break;
        }
        shown += 1;
        let (window_from, to) = row_of(&lines, line).unwrap_or((
            line.saturating_sub(CONTEXT),
            (line + CONTEXT + 1).min(lines.len()),
        ));
        // A match in a row already shown whole was marked there.
        if to <= shown_until {
            continue;
        }
        let mut from = window_from.max(shown_until);
        // A window does not open on a blank line (one in a code block): its path from the
        // root goes by indentation, which a blank line does not have.
        while from < line && lines[from].trim().is_empty() {
            from += 1;
        }
        if from > shown_until || n == 0 {
            // A new snippet: the part of its path from the root not shown above it, then the
            // window. A later match in the same table or list goes on under the lines already
            // shown, after a "…" for what is skipped (Datasette's 30 matching rows read their
            // table's line once, not 30 times); one elsewhere starts a tree of its own.
            // (An ancestor printed already, as a path or as context, was printed with its own
            // ancestors; the lines come in order, so all printed since is inside it.)
            let path = ancestors(&lines, from);
            let shared = path.iter().take_while(|&&a| printed[a]).count();
            let first = path.get(shared).copied().unwrap_or(from);
            let mut elided = false;
            if n > 0 {
                if shared == 0 {
                    out.push('\n');
                } else if first > shown_until {
                    let pad = " ".repeat(indent(lines[first]));
                    out.push_str(&format!("{pad}…\n"));
                    elided = true;
                }
            }
            for &a in &path[shared..] {
                out.push_str(&clip(lines[a]));
                out.push('\n');
                printed[a] = true;
            }
            let opens_mid = from > 0 && path.last().map(|a| a + 1) != Some(from);
            if opens_mid && !(elided && shared == path.len()) {
                let pad = " ".repeat(indent(lines[from]));
                out.push_str(&format!("{pad}…\n"));
            }
        }
        for (i, text) in lines.iter().enumerate().take(to).skip(from) {
            printed[i] = true;
            out.push_str(&clip(text));
            if matched.binary_search(&i).is_ok() {
                out.push_str("  ◀");
            }
            out.push('\n');
        }
        shown_until = to;
    }
    if matched.len() > shown {
        out.push_str(&format!(
            "\n[{} more matches not shown: search for something more specific, or within an \
             element with \"target\".]\n",
            matched.len() - shown
        ));
    }
    (out, matched.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTLINE: &str = "\
- banner [ref=e1]:
  - link \"Home\" [ref=e2]
  - navigation \"Main\" [ref=e3]:
    - link \"Docs\" [ref=e4]
    - link \"Blog\" [ref=e5]
- main [ref=e6]:
  - heading \"Welcome\" [level=1] [ref=e7]
  - paragraph [ref=e8]: Lorem ipsum
  - paragraph [ref=e9]: dolor sit
  - paragraph [ref=e10]: amet
  - list \"Todo\" [ref=e11]:
    - listitem [ref=e12]: Buy milk
    - listitem [ref=e13]: Sign in to the bank
  - button \"Sign in\" [ref=e14]";

    #[test]
    fn a_match_in_a_code_block_comes_under_the_code_even_after_a_blank_line() {
        let outline = "- main [ref=e1]:\n  - code [ref=e2]: |\n      let a = 1;\n      let b = 2;\n      let c = 3;\n\n      let d = 4;\n      let wanted = 5;";
        let query = Query::new(Some("wanted"), None).unwrap();
        let (text, count) = search(outline, &query);
        assert_eq!(count, 1);
        assert!(
            text.starts_with("- main [ref=e1]:\n  - code [ref=e2]: |\n"),
            "{text}"
        );
        assert!(text.contains("      let wanted = 5;  ◀"), "{text}");
    }

    #[test]
    fn a_match_comes_under_its_path_from_the_root_with_context_and_refs() {
        let query = Query::new(Some("BLOG"), None).unwrap();
        let (text, count) = search(OUTLINE, &query);
        assert_eq!(count, 1);
        assert!(text.starts_with("- banner [ref=e1]:\n"), "{text}");
        assert!(text.contains("- link \"Blog\" [ref=e5]  ◀"), "{text}");
        assert!(
            text.contains("  - navigation \"Main\" [ref=e3]:\n"),
            "{text}"
        );

        let query = Query::new(None, Some("/sign in/i")).unwrap();
        let (text, count) = search(OUTLINE, &query);
        assert_eq!(count, 2);
        assert!(text.contains("- main [ref=e6]:\n"), "{text}");
        assert!(
            text.contains("    - listitem [ref=e13]: Sign in to the bank  ◀"),
            "{text}"
        );
        assert!(text.contains("- button \"Sign in\" [ref=e14]  ◀"), "{text}");
        // The two windows overlap: each line is printed once.
        assert_eq!(text.matches("[ref=e13]").count(), 1, "{text}");
    }

    #[test]
    fn a_number_matches_what_the_page_says_not_the_outline_refs() {
        let outline = "- table \"Auth\" [ref=e15]:\n  - row [ref=e152]:\n    - cell [ref=e153]:\n      - link \"8\" [ref=e154]\n    - cell [ref=e155]:\n      - link \"15\" [ref=e156]";
        let query = Query::new(Some("15"), None).unwrap();
        let (text, count) = search(outline, &query);
        assert_eq!(count, 1, "{text}");
        assert!(text.contains("- link \"15\" [ref=e156]  ◀"), "{text}");
        let query = Query::new(None, Some("^\\s*- link \"1\\d\"$")).unwrap();
        assert_eq!(search(outline, &query).1, 1);
        assert_eq!(
            without_refs("- x [ref=e1] [checked] [ref=e2"),
            "- x [checked] [ref=e2"
        );
    }

    #[test]
    fn a_match_in_a_table_row_shows_the_whole_row_and_not_the_next() {
        let outline = "- table [ref=e1]:\n  - row [ref=e2]:\n    - cell [ref=e3]:\n      - link \"1\" [ref=e4]:\n        - /url: /orders/1\n    - cell \"Ada\" [ref=e5]\n    - cell \"Honey\" [ref=e6]\n    - cell \"4\" [ref=e7]\n    - cell \"refunded\" [ref=e8]\n    - cell \"2026-05-28\" [ref=e9]\n  - row [ref=e10]:\n    - cell \"2\" [ref=e11]\n    - cell \"Grace\" [ref=e12]\n    - cell \"refunded\" [ref=e13]\n- paragraph [ref=e14]: refunded orders";
        let (text, count) = search(outline, &Query::new(Some("refunded"), None).unwrap());
        assert_eq!(count, 3, "{text}");
        // The order's id and customer, cells before the match, are shown; the next row's line
        // is not context of the first.
        assert!(
            text.starts_with("- table [ref=e1]:\n  - row [ref=e2]:\n    - cell [ref=e3]:\n      - link \"1\" [ref=e4]:\n"),
            "{text}"
        );
        assert!(text.contains("    - cell \"Ada\" [ref=e5]\n"), "{text}");
        // The next row's match goes on under the same table, its line not repeated.
        assert!(
            text.contains("    - cell \"2026-05-28\" [ref=e9]\n  - row [ref=e10]:\n    - cell \"2\" [ref=e11]\n"),
            "{text}"
        );
        assert_eq!(text.matches("- table").count(), 1, "{text}");
        assert!(
            text.contains("- paragraph [ref=e14]: refunded orders  ◀"),
            "{text}"
        );
        // A second match in a row already shown is marked there, not shown again.
        let (text, count) = search(outline, &Query::new(None, Some("Ada|Honey")).unwrap());
        assert_eq!(count, 2);
        assert_eq!(text.matches("[ref=e5]").count(), 1, "{text}");
        assert!(text.contains("- cell \"Honey\" [ref=e6]  ◀"), "{text}");
    }

    #[test]
    fn later_matches_go_on_under_the_lines_already_shown() {
        let row = |n: usize, status: &str| {
            format!("  - row [ref=r{n}]:\n    - cell \"{n}\" [ref=c{n}]\n    - cell \"{status}\" [ref=s{n}]\n")
        };
        let outline = format!(
            "- list [ref=l1]:\n  - listitem [ref=l2]: refunded 360\n- table [ref=t1]:\n{}{}{}",
            row(1, "refunded"),
            row(2, "paid"),
            row(3, "refunded")
        );
        let (text, count) = search(&outline, &Query::new(Some("refunded"), None).unwrap());
        assert_eq!(count, 3, "{text}");
        // The table's line, shown as the list's context, is the rows' path too; a row between
        // two matching ones is skipped with a "…" at its indent.
        assert_eq!(
            text,
            "- list [ref=l1]:\n  - listitem [ref=l2]: refunded 360  ◀\n- table [ref=t1]:\n\
             \x20 - row [ref=r1]:\n    - cell \"1\" [ref=c1]\n    - cell \"refunded\" [ref=s1]  ◀\n\
             \x20 …\n  - row [ref=r3]:\n    - cell \"3\" [ref=c3]\n    - cell \"refunded\" [ref=s3]  ◀\n"
        );
    }

    #[test]
    fn no_match_and_bad_queries_are_explained() {
        let query = Query::new(Some("nowhere"), None).unwrap();
        assert_eq!(search(OUTLINE, &query).1, 0);
        assert!(Query::new(None, Some("(unclosed"))
            .unwrap_err()
            .contains("not a valid regular expression"));
        assert!(Query::new(Some("a"), Some("b"))
            .unwrap_err()
            .contains("not both"));
        assert!(Query::new(None, None).unwrap_err().contains("\"text\""));
        // Case-sensitive by default, like Playwright MCP's.
        let query = Query::new(None, Some("sign in")).unwrap();
        assert_eq!(search(OUTLINE, &query).1, 0);
    }

    #[test]
    fn many_matches_are_bounded() {
        let outline: String = (0..500)
            .map(|i| format!("- listitem [ref=e{i}]: row {i}\n"))
            .collect();
        let (text, count) = search(&outline, &Query::new(Some("row"), None).unwrap());
        assert_eq!(count, 500);
        assert!(text.contains("470 more matches"), "{text}");
        assert!(text.chars().count() < 5_000);
        // Long lines: bounded by characters too.
        let outline: String = (0..100)
            .map(|i| format!("- paragraph [ref=e{i}]: {}\n", "word ".repeat(200)))
            .collect();
        let (text, count) = search(&outline, &Query::new(Some("word"), None).unwrap());
        assert_eq!(count, 100);
        assert!(
            text.chars().count() < MAX_OUTPUT_CHARS + 2_000,
            "{}",
            text.len()
        );
        assert!(text.contains("more matches not shown"), "{text}");
    }
}
