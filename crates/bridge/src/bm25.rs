//! BM25 ranking with field weights, and the tokenizer it shares with queries.
//!
//! Tool names are identifiers (`clearDataForOrigin`, `browser_snapshot`, `DOMSnapshot`), so
//! the tokenizer splits camel case, acronyms, `_` and `.`; a light suffix stemmer makes
//! "cookies", "cookie", "navigating" and "navigate" meet. Field weights are applied to term
//! frequencies (a name word counts more than a description word), as in BM25F.

use std::collections::HashMap;

/// Okapi BM25 term-frequency saturation.
const K1: f32 = 1.2;
/// Okapi BM25 length normalisation.
const B: f32 = 0.75;

/// Words that carry no meaning for choosing a tool.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can",
    "could", "do", "does", "for", "from", "has", "have", "how", "i", "if", "in", "into", "is",
    "it", "its", "let", "me", "my", "need", "of", "on", "one", "or", "our", "please", "should",
    "so", "some", "that", "the", "their", "them", "then", "there", "these", "this", "those", "to",
    "up", "us", "use", "used", "using", "want", "was", "we", "what", "when", "which", "while",
    "who", "will", "with", "would", "you", "your",
];

/// Splits an identifier or a sentence into lower-case word stems.
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        split_camel(chunk, &mut words);
    }
    words
        .into_iter()
        .map(|w| w.to_lowercase())
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `getDOMCounters` → `get`, `DOM`, `Counters`.
pub(crate) fn split_camel(chunk: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = chunk.chars().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (prev, cur) = (chars[i - 1], chars[i]);
        let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
            || (prev.is_alphabetic() && cur.is_ascii_digit())
            || (prev.is_ascii_digit() && cur.is_alphabetic());
        if boundary {
            out.push(chars[start..i].iter().collect());
            start = i;
        }
    }
    if start < chars.len() {
        out.push(chars[start..].iter().collect());
    }
}

/// A deliberately small stemmer: plural, -ing/-ed/-ion, final e, doubled final consonant.
pub(crate) fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        w.pop();
    }
    if w.len() > 3 && w.ends_with("ie") {
        w.truncate(w.len() - 2);
        w.push('y');
    }
    for (suffix, min) in [("ing", 6), ("ion", 7), ("ed", 5)] {
        if w.len() >= min && w.ends_with(suffix) {
            w.truncate(w.len() - suffix.len());
            let b = w.as_bytes();
            if b.len() > 3
                && b[b.len() - 1] == b[b.len() - 2]
                && !b"aeiouls".contains(&b[b.len() - 1])
            {
                w.pop();
            }
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// An index over documents made of weighted text fields.
#[derive(Debug)]
pub(crate) struct Bm25 {
    /// Weighted term frequencies of each document.
    docs: Vec<HashMap<String, f32>>,
    /// Weighted length of each document.
    lengths: Vec<f32>,
    average_length: f32,
    /// In how many documents each term occurs.
    document_frequency: HashMap<String, usize>,
}

impl Bm25 {
    /// `docs[i]` is a list of `(text, weight)` fields.
    pub(crate) fn new(docs: &[Vec<(String, f32)>]) -> Bm25 {
        let mut index = Bm25 {
            docs: Vec::with_capacity(docs.len()),
            lengths: Vec::with_capacity(docs.len()),
            average_length: 0.0,
            document_frequency: HashMap::new(),
        };
        for fields in docs {
            let mut tf: HashMap<String, f32> = HashMap::new();
            let mut length = 0.0;
            for (text, weight) in fields {
                for term in tokenize(text) {
                    *tf.entry(term).or_default() += weight;
                    length += weight;
                }
            }
            for term in tf.keys() {
                *index.document_frequency.entry(term.clone()).or_default() += 1;
            }
            index.docs.push(tf);
            index.lengths.push(length);
        }
        let n = index.docs.len().max(1) as f32;
        index.average_length = index.lengths.iter().sum::<f32>() / n;
        index
    }

    /// Inverse document frequency (the non-negative variant).
    fn idf(&self, term: &str) -> f32 {
        let n = self.docs.len() as f32;
        let df = self.document_frequency.get(term).copied().unwrap_or(0) as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// The score of every document for weighted query terms (0 where nothing matches).
    pub(crate) fn scores(&self, query: &[(String, f32)]) -> Vec<f32> {
        let mut scores = vec![0.0; self.docs.len()];
        for (term, query_weight) in query {
            let idf = self.idf(term);
            if idf <= 0.0 {
                continue;
            }
            for (i, tf) in self.docs.iter().enumerate() {
                let Some(&f) = tf.get(term) else { continue };
                let norm = K1 * (1.0 - B + B * self.lengths[i] / self.average_length.max(1e-6));
                scores[i] += query_weight * idf * f * (K1 + 1.0) / (f + norm);
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(
            tokenize("Storage.clearDataForOrigin"),
            ["storag", "clear", "data", "origin"]
        );
        assert_eq!(tokenize("getDOMCounters"), ["get", "dom", "counter"]);
        assert_eq!(tokenize("browser_snapshot"), ["browser", "snapshot"]);
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("cookies", "cookie"),
            ("navigating", "navigate"),
            ("navigation", "navigate"),
            ("typing", "type"),
            ("entries", "entry"),
            ("loaded", "load"),
            ("disabled", "disable"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
    }

    #[test]
    fn rarer_and_name_terms_rank_higher() {
        let docs = vec![
            vec![
                ("getCookies".to_owned(), 3.0),
                ("Returns all browser cookies.".to_owned(), 1.0),
            ],
            vec![
                ("navigate".to_owned(), 3.0),
                ("Navigates the page to a URL.".to_owned(), 1.0),
            ],
            vec![
                ("reload".to_owned(), 3.0),
                ("Reloads the page, keeping cookies.".to_owned(), 1.0),
            ],
        ];
        let index = Bm25::new(&docs);
        let q: Vec<(String, f32)> = tokenize("get the cookies")
            .into_iter()
            .map(|t| (t, 1.0))
            .collect();
        let scores = index.scores(&q);
        assert!(
            scores[0] > scores[2] && scores[2] > 0.0 && scores[1] == 0.0,
            "{scores:?}"
        );
    }
}
