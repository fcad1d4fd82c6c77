//! Retrieval quality of `retrieve_tools`: recall@1, recall@5 and MRR over hand-written sets of
//! natural-language queries (`tests/data/retrieval_golden.json`, and the smaller
//! `retrieval_heldout.json` written later and never tuned against), compared with the figures
//! recorded in `tests/data/retrieval_figures.json` (and in docs/BENCHMARKS.md). The test fails
//! when a figure drops more than 0.05 below its record, so a ranking change that makes things
//! worse cannot slip in. Run with `--nocapture` to see every miss.

use mcp_relay_bridge::{tool_definitions, ToolIndex};
use serde_json::Value;

/// How far a figure may fall below the record before the test fails.
const TOLERANCE: f64 = 0.05;
/// Ranks beyond this count as not found for MRR.
const MRR_DEPTH: usize = 10;

fn load(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `[(figure, value)]` of one query set, printing every query not answered first.
fn evaluate(index: &ToolIndex, path: &str) -> (usize, [(&'static str, f64); 3]) {
    let set = load(path);
    let queries = set["queries"].as_array().unwrap();
    let (mut at1, mut at5, mut reciprocal) = (0usize, 0usize, 0.0f64);
    for q in queries {
        let query = q["query"].as_str().unwrap();
        let relevant: Vec<&str> = q["relevant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        for name in &relevant {
            assert!(index.get(name).is_some(), "{query}: unknown tool {name}");
        }
        let hits = index.search(query, MRR_DEPTH);
        let rank = hits
            .iter()
            .position(|h| relevant.contains(&h.name.as_str()));
        match rank {
            Some(0) => at1 += 1,
            _ => {
                let top: Vec<&str> = hits.iter().take(3).map(|h| h.name.as_str()).collect();
                println!("rank {rank:?} for {query:?}: want {relevant:?}, top {top:?}");
            }
        }
        if rank.is_some_and(|r| r < 5) {
            at5 += 1;
        }
        if let Some(r) = rank {
            reciprocal += 1.0 / (r as f64 + 1.0);
        }
    }
    let n = queries.len() as f64;
    (
        queries.len(),
        [
            ("recall_at_1", at1 as f64 / n),
            ("recall_at_5", at5 as f64 / n),
            ("mrr", reciprocal / n),
        ],
    )
}

#[test]
fn retrieval_quality_holds_its_recorded_figures() {
    let recorded = load("tests/data/retrieval_figures.json");
    let index = ToolIndex::new(&tool_definitions());
    println!("{} entries", index.entries.len());
    let mut failures = Vec::new();
    for (set, path, minimum) in [
        ("golden", "tests/data/retrieval_golden.json", 60),
        ("heldout", "tests/data/retrieval_heldout.json", 20),
    ] {
        let (count, figures) = evaluate(&index, path);
        assert!(count >= minimum, "{path} needs at least {minimum} queries");
        println!("{set}: {count} queries");
        for (name, value) in figures {
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
    assert!(failures.is_empty(), "{}", failures.join("; "));
}
