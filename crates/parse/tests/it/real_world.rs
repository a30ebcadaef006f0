//! Real-world LaTeX that LaTeX itself reads happily (issue 18), each with the `.aux` pdflatex
//! wrote for it as ground truth (`datasets/latex-features/`).

use crate::corpora::aux_numbers;
use crate::{datasets, parse_dir};
use ledger_core::{Format, Resolution, Severity, UnitKind};
use ledger_parse::regions::{RegionKind, regions};
use std::collections::BTreeMap;

/// Every label of `doc` with the number it prints ("" when none).
fn printed_numbers(doc: &ledger_core::Document) -> BTreeMap<String, String> {
    doc.units
        .iter()
        .flat_map(|u| u.labels.iter())
        .map(|(l, n)| (l.clone(), n.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn user_defined_verbatim_environments_are_read_verbatim() {
    let dir = datasets().join("latex-features/verbatim-envs");
    let docs = parse_dir(&dir);
    assert_eq!(docs.len(), 1);
    let doc = &docs[0];
    assert_eq!(doc.verbatim_envs, ["hidden", "lcode", "shell", "snippet"]);
    let errors: Vec<_> = doc
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // Exactly LaTeX's labels and numbers: none of the commands inside the environments counts,
    // and the `\end{document}` inside one does not end the document.
    let ours = printed_numbers(doc);
    assert_eq!(ours, aux_numbers(&dir.join("main.aux")));
    // Every reference outside them resolves; those inside are not references.
    let texts: Vec<&str> = doc.mentions.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(doc.mentions.len(), 4, "{texts:?}");
    for m in &doc.mentions {
        assert!(
            matches!(m.resolution, Resolution::Resolved { .. }),
            "{}: {:?}",
            m.text,
            m.resolution
        );
    }
    // Each verbatim environment is a listing but the excluded comment.
    let listings = doc
        .units
        .iter()
        .filter(|u| u.kind == UnitKind::Listing)
        .count();
    assert_eq!(listings, 4);
    // Wherever the files are read for prose (term renames), their content is code.
    let text = std::fs::read_to_string(dir.join("main.tex")).expect("main.tex");
    let fake = text.find("\\section{Not a section}").expect("fixture");
    let region = regions(Format::Latex, "main.tex", &text, &doc.verbatim_envs)
        .into_iter()
        .find(|r| r.start <= fake && fake < r.end)
        .expect("a region");
    assert_eq!(region.kind, RegionKind::Code);
}

#[test]
fn a_verbatim_environment_defined_in_a_package_beside_the_document_is_read_verbatim() {
    let dir = datasets().join("latex-features/verbatim-sty");
    let docs = parse_dir(&dir);
    assert_eq!(docs.len(), 1);
    let doc = &docs[0];
    assert_eq!(doc.verbatim_envs, ["console"]);
    assert!(
        doc.diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{:?}",
        doc.diagnostics
    );
    let ours = printed_numbers(doc);
    assert_eq!(ours, aux_numbers(&dir.join("main.aux")));
    assert_eq!(doc.mentions.len(), 2);
    assert!(
        doc.mentions
            .iter()
            .all(|m| matches!(m.resolution, Resolution::Resolved { .. }))
    );
    // The package was read: a rerun notices when it changes.
    assert!(
        doc.inputs.iter().any(|i| i.path.ends_with("manual.sty")),
        "{:?}",
        doc.inputs
    );
}

#[test]
fn an_unclosed_verbatim_environment_does_not_swallow_the_rest_of_the_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("main.tex"),
        "\\documentclass{article}\n\\begin{document}\n\\section{One}\\label{sec:one}\n\
         \\subsection{Code}\\label{sec:code}\n\\begin{lstlisting}\nint x; \\label{inside}\n\
         \\subsubsection{Still code}\\label{sec:still}\n\
         \\subsection{Next}\\label{sec:next}\nSee Section~\\ref{sec:one}.\n\
         \\section{Two}\\label{sec:two}\nAnd Section~\\ref{sec:next}.\n\\end{document}\n",
    )
    .expect("write");
    let docs = parse_dir(dir.path());
    let doc = &docs[0];
    let unclosed: Vec<&str> = doc
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        unclosed,
        ["\\begin{lstlisting} is never closed; read on from line 8"]
    );
    let ours = printed_numbers(doc);
    let expected: BTreeMap<String, String> = [
        ("sec:one", "1"),
        ("sec:code", "1.1"),
        ("sec:next", "1.2"),
        ("sec:two", "2"),
    ]
    .into_iter()
    .map(|(l, n)| (l.to_string(), n.to_string()))
    .collect();
    assert_eq!(ours, expected);
    assert_eq!(doc.mentions.len(), 2);
    assert!(
        doc.mentions
            .iter()
            .all(|m| matches!(m.resolution, Resolution::Resolved { .. }))
    );
}
