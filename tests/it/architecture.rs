//! The module tree as `docs/ARCHITECTURE.md` draws it: no cycles between the relay's modules.
//!
//! The relay's source is read as text: every `crate::…` and `super::…` path in code that is
//! not under `#[cfg(test)]` is an edge from the module it is in to the module it names. At
//! every folder (the crate root, `routing`, `operator`, …) the edges are lifted to the folder's
//! children, and those graphs must have no cycle. A child using its own parent's items (Rust's
//! `super::` idiom) is not an edge between siblings, so it is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every `.rs` file under `src/`, as its module path (`routing/hub/mod.rs` is `routing::hub`).
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<Module, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).unwrap().with_extension("");
                let mut module: Module = relative
                    .iter()
                    .map(|part| part.to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|last| last == "mod") {
                    module.pop();
                }
                if module == ["lib"] || module == ["main"] {
                    continue;
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The code of a file without comments and without items under `#[cfg(test)]`.
fn production_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            // Skip the item that follows: up to its first `;` at depth 0 or its closing brace.
            let mut depth = 0i32;
            let mut opened = false;
            for line in lines.by_ref() {
                for c in line.chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth <= 0) || (!opened && line.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The paths `crate::a::b…` and `super::a…` in `code`, resolved against `module` (the file's
/// module; `is_mod_file` for a `mod.rs`, whose `super` is its folder's parent).
fn named_paths(code: &str, module: &Module) -> Vec<Module> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let preceded_by_ident = at > 0 && {
                let c = bytes[at - 1] as char;
                c.is_alphanumeric() || c == '_'
            };
            if preceded_by_ident {
                continue;
            }
            let mut path: Module = if start == "crate::" {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let rest = &code[from..];
            for segment in rest.split("::") {
                let ident: String = segment
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if ident.is_empty() {
                    break;
                }
                let whole = ident.len() == segment.len();
                path.push(ident);
                if !whole {
                    break;
                }
            }
            found.push(path);
        }
    }
    found
}

/// For every folder, the edges between its children, each with the file that makes it.
type Levels = BTreeMap<Module, BTreeMap<String, BTreeMap<String, String>>>;

fn sibling_edges(src: &Path) -> Levels {
    let modules = modules(src);
    let mut levels: Levels = BTreeMap::new();
    for (module, path) in &modules {
        let code = production_code(&std::fs::read_to_string(path).unwrap());
        for named in named_paths(&code, module) {
            // The longest prefix that is a module of ours (the rest names an item in it).
            let Some(target) = (1..=named.len())
                .rev()
                .map(|n| named[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix))
            else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue; // a module and its own ancestor or descendant
            }
            levels
                .entry(module[..common].to_vec())
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .entry(target[common].clone())
                .or_insert_with(|| path.display().to_string());
        }
    }
    levels
}

/// One cycle of `graph`, as the list of its nodes, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            return Some(stack[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_relays_modules_have_no_cycles_at_any_level() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let levels = sibling_edges(&src);
    let mut cycles = Vec::new();
    for (folder, graph) in &levels {
        if let Some(cycle) = find_cycle(graph) {
            let folder = if folder.is_empty() {
                "crate".to_owned()
            } else {
                folder.join("::")
            };
            let why: Vec<String> = cycle
                .iter()
                .zip(cycle.iter().cycle().skip(1))
                .map(|(from, to)| format!("{from} → {to} (in {})", graph[from][to]))
                .collect();
            cycles.push(format!("in {folder}: {}", why.join(", ")));
        }
    }
    assert!(
        cycles.is_empty(),
        "module cycles (docs/ARCHITECTURE.md says there are none):\n{}",
        cycles.join("\n")
    );
    // The check sees the tree: the core's layers and the operator's wing are there.
    let root = &levels[&Vec::new()];
    for (from, to) in [
        ("session", "routing"),
        ("operator", "state"),
        ("server", "operator"),
    ] {
        assert!(
            root.get(from).is_some_and(|edges| edges.contains_key(to)),
            "expected an edge {from} → {to}; the reader of the source is broken"
        );
    }
}

#[test]
fn the_cycle_check_finds_a_cycle_it_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a; pub mod b;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "pub mod x;\nuse crate::b::Thing;\n").unwrap();
    std::fs::write(src.join("a/x.rs"), "use super::Parent;\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub fn f() { crate::a::x::g() }\n#[cfg(test)]\nmod tests { use crate::c; }\n",
    )
    .unwrap();
    let levels = sibling_edges(src);
    let root = &levels[&Vec::new()];
    assert_eq!(
        find_cycle(root),
        Some(vec!["a".to_owned(), "b".to_owned()]),
        "{levels:?}"
    );
    // A child naming its parent is not a sibling edge; test-only code is not read.
    assert!(!levels.contains_key(&vec!["a".to_owned()]));
    assert!(!root["b"].contains_key("c"));
}
