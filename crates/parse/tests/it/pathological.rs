//! Inputs that once took quadratic time: each must parse in time linear in its size. The
//! timeout is a guard against a hang, not the measure (`ledger bench` reports the times).

use ledger_parse::throughput::Pathological;
use std::sync::mpsc;
use std::time::Duration;

/// Parses `text` as `main.tex` in a fresh folder, failing if it takes longer than `guard`.
fn parse_within(text: String, guard: Duration) -> ledger_core::Document {
    let dir = tempfile::tempdir().expect("tempdir");
    let main = dir.path().join("main.tex");
    std::fs::write(&main, text).expect("write");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let source = ledger_parse::Source {
            id: "main".into(),
            path: main,
            format: ledger_core::Format::Latex,
            root: None,
        };
        let _ = tx.send(ledger_parse::parse(&source, None));
    });
    let doc = rx
        .recv_timeout(guard)
        .unwrap_or_else(|_| panic!("no result within {guard:?}"));
    drop(dir);
    doc
}

#[test]
fn deeply_nested_enumerates_with_labels_parse_in_linear_time() {
    let case = Pathological::NestedEnumerates;
    let depth = case.size();
    let doc = parse_within(case.document(depth).1, Duration::from_secs(120));
    let labels: usize = doc.units.iter().map(|u| u.labels.len()).sum();
    assert_eq!(labels, depth);
    assert!(!doc.mentions.is_empty());
}

#[test]
fn unclosed_references_parse_in_linear_time() {
    let case = Pathological::UnclosedRefs;
    let n = case.size();
    let doc = parse_within(case.document(n).1, Duration::from_secs(120));
    // Every unclosed one is reported, none is lost silently; the closed one is a mention.
    let warnings = doc
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("without an argument"))
        .count();
    assert_eq!(warnings, n);
    assert!(doc.mentions.iter().any(|m| m.text.contains("\\ref{x}")));
}
