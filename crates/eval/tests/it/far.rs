//! Far gold in the real-edit track: what lies outside the target's enclosing section, and what
//! the graph's edges reach of it.

use ledger_core::{EdgeKind, Format};
use ledger_eval::run::real_edits::{is_far, reach_edge_sets};
use ledger_retrieve::Graph;

fn graph(tex: &str) -> Graph {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("main.tex");
    std::fs::write(&path, tex).expect("write");
    let doc = ledger_parse::parse(
        &ledger_parse::Source {
            id: "main.tex".into(),
            path,
            format: Format::Latex,
            root: Some(dir.path().to_path_buf()),
        },
        None,
    );
    Graph::new(doc.unit_records(), &doc.parsed_edges())
}

#[test]
fn gold_outside_the_targets_deepest_section_is_far_and_references_reach_it() {
    let g = graph(
        "\\documentclass{article}\\begin{document}\n\
         \\section{One}\\subsection{A}\n\
         \\begin{lemma}\\label{lem:a}Alpha.\\end{lemma}\n\nBeside the lemma.\n\
         \\subsection{B}\nIn the next subsection.\n\
         \\section{Two}\nFar away, citing Lemma~\\ref{lem:a}.\n\n\
         Far away, citing nothing.\n\\end{document}\n",
    );
    let find = |text: &str| {
        (0..g.units().len())
            .find(|&i| g.units()[i].text.contains(text))
            .unwrap_or_else(|| panic!("{text}"))
    };
    let lemma = g.find("lem:a", None).expect("lemma");
    let beside = find("Beside the lemma");
    let next = find("In the next subsection");
    let citing = find("citing Lemma");
    let silent = find("citing nothing");
    assert!(!is_far(&g, lemma, beside, false));
    // Outside subsection A: far, although section One holds both.
    assert!(is_far(&g, lemma, next, false));
    assert!(is_far(&g, lemma, citing, false));
    // One hop over REFERENCES reaches the unit that cites the lemma, nothing reaches the other.
    let references = g.within_hops(&[lemma], &[EdgeKind::References], 2);
    assert_eq!(references.get(&citing), Some(&1));
    assert_eq!(references.get(&silent), None);
    let all = reach_edge_sets();
    assert_eq!(all.last().expect("union").len(), EdgeKind::ALL.len() - 1);
    assert!(!all.iter().flatten().any(|&k| k == EdgeKind::Contains));
}
