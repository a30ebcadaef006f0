//! The DEPENDS judge's input (no `\uses` leaks into it) and the candidate rules. Its quality
//! against the blueprint's author-written `\uses{}` is measured in `ledger-eval`'s tests.

use ledger_core::Document;
use ledger_llm::depends::{Cache, DocContext, OfflineJudge, candidates, judge_corpus, judge_text};
use std::path::PathBuf;

fn corpora() -> PathBuf {
    std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets"))
}

/// The documents of `path`, parsed (no token counts) and resolved.
pub(crate) fn parsed(path: &std::path::Path) -> Vec<Document> {
    let (sources, diags) = ledger_parse::discover(&[path.to_path_buf()]);
    assert!(diags.is_empty(), "{diags:?}");
    let mut docs: Vec<Document> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    docs
}

pub(crate) fn blueprint() -> Document {
    parsed(&corpora().join("carleson-blueprint/print.tex")).remove(0)
}

#[test]
fn the_judge_never_sees_uses_annotations() {
    let t = "\\begin{lemma}\\label{x}\\uses{a,b}\\leanok\\lean{Foo.bar} Text.\\end{lemma}";
    let seen = judge_text(t);
    assert!(!seen.contains("uses") && !seen.contains("lean"), "{seen}");
    assert!(seen.contains("Text."));
}

#[test]
fn a_markdown_definition_is_a_prerequisite_of_the_units_using_its_term() {
    let dir = std::env::temp_dir().join(format!("ledger-md-def-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("manual.md");
    std::fs::write(
        &path,
        "# Manual\n\nA **lockfile** is the record of every resolved version.\n\n\
         Unrelated text about colours.\n\nOne more unrelated paragraph.\n\n\
         Commit the lockfile with the sources.\n",
    )
    .expect("write");
    let mut docs = parsed(&path);
    std::fs::remove_dir_all(&dir).ok();
    judge_corpus(&mut docs, &OfflineJudge, 8, &Cache::new());
    let doc = &docs[0];
    let text = |id: &str| {
        doc.units
            .iter()
            .find(|u| u.id == id)
            .map(|u| u.text.clone())
            .unwrap_or_default()
    };
    let pairs: Vec<(String, String)> = doc
        .depends
        .iter()
        .map(|e| (text(&e.src_unit), text(&e.dst_unit)))
        .collect();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert!(pairs[0].0.starts_with("Commit the lockfile"), "{pairs:?}");
    assert!(pairs[0].1.starts_with("A **lockfile** is"), "{pairs:?}");
}

#[test]
fn candidates_are_a_window_plus_earlier_introducers() {
    let doc = blueprint();
    let ctx = DocContext::new(&doc);
    let last = doc.units.len() - 1;
    for i in [last / 3, last / 2, last] {
        let c = candidates(&ctx, i, 8);
        assert!(c.iter().all(|&j| j < i), "only earlier units");
        assert!(
            c.windows(2).all(|w| w[0] < w[1]),
            "document order, no duplicates"
        );
        let window: Vec<usize> = c.iter().copied().filter(|&j| j + 200 > i).collect();
        assert!(window.len() <= c.len());
    }
}
