//! Runs the extension's pure-logic unit tests (Node's built-in test runner) and its linter as
//! part of `cargo test`, so the README's single test command covers the whole suite.

use std::path::Path;
use std::process::Command;

/// Whether Node is there; outside CI a machine without it skips with a notice.
fn node_available(what: &str) -> bool {
    if Command::new("node").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "node is required in CI to run the extension's {what}"
    );
    eprintln!("\n*** SKIPPED: node not found; the extension's {what} did not run ***\n");
    false
}

#[test]
fn extension_unit_tests_pass_under_node_test_runner() {
    let root = env!("CARGO_MANIFEST_DIR");
    if !node_available("unit tests") {
        return;
    }
    let output = Command::new("node")
        .args(["--test", "test/"])
        .current_dir(format!("{root}/extension"))
        .output()
        .expect("running node --test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node --test failed:\n{stdout}\n{stderr}"
    );
    // Guard against a runner that silently found nothing.
    let passed = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(
        passed >= 50,
        "expected the extension's unit tests to run, got:\n{stdout}"
    );
}

/// ESLint (extension/eslint.config.js): undefined and unused names, and import cycles between
/// the extension's modules. It is a dev dependency (`npm ci --prefix extension`, which .ci/run
/// does); a checkout that has not installed it skips with a notice, except in CI.
#[test]
fn extension_code_passes_its_linter_with_no_import_cycle() {
    let root = env!("CARGO_MANIFEST_DIR");
    if !node_available("linter") {
        return;
    }
    let eslint = Path::new(root).join("extension/node_modules/eslint/bin/eslint.js");
    if !eslint.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the extension's linter is not installed: run `npm ci --prefix extension`"
        );
        eprintln!(
            "\n*** SKIPPED: the extension's linter is not installed (npm ci --prefix extension) ***\n"
        );
        return;
    }
    let output = Command::new("node")
        .arg(&eslint)
        .arg(".")
        .current_dir(format!("{root}/extension"))
        .output()
        .expect("running eslint");
    assert!(
        output.status.success(),
        "the extension's linter found problems:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
