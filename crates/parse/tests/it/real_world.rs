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

#[test]
fn a_manual_whose_verbatim_examples_hold_whole_documents_is_read_to_its_end() {
    // `lcode` is defined in a style file that did not travel with the manual; its first example
    // holds `\documentclass`, `\begin{document}` … `\end{document}`. The manual goes on after it.
    let docs = parse_dir(&datasets().join("latex-features/verbatim-whole-document"));
    let doc = &docs[0];
    let said: Vec<(Severity, &str)> = doc
        .diagnostics
        .iter()
        .map(|d| (d.severity, d.message.as_str()))
        .collect();
    assert!(said.iter().all(|(s, _)| *s != Severity::Error), "{said:?}");
    assert!(
        said.iter().any(|(s, m)| *s == Severity::Warning
            && m.starts_with("\\begin{lcode} holds a whole document")),
        "{said:?}"
    );
    // Every label LaTeX wrote, numbered as LaTeX numbered it (the example's `sec:hello` is text).
    let aux =
        std::fs::read_to_string(datasets().join("latex-features/verbatim-whole-document/main.aux"))
            .expect("aux");
    let expected: BTreeMap<String, String> = aux
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("\\newlabel{")?;
            let (key, rest) = rest.split_once("}{{")?;
            Some((key.to_string(), rest.split('}').next()?.to_string()))
        })
        .collect();
    assert_eq!(printed_numbers(doc), expected);
    // The references after the examples are read: four resolve, and the one to a section not yet
    // written is reported broken; the example's `\ref{sec:nowhere}` is not a reference.
    let broken: Vec<&str> = doc
        .mentions
        .iter()
        .filter(|m| !matches!(m.resolution, Resolution::Resolved { .. }))
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(broken, ["\\ref{sec:appendix}"]);
    assert_eq!(doc.mentions.len(), 5, "{:?}", doc.mentions);
}

#[test]
fn each_document_class_numbers_like_latex() {
    // One small document per class (datasets/latex-features/classes/make.py), compiled by
    // pdflatex: the number of every label, for sections, equations (per line of align, eqnarray,
    // gather; \tag, \notag, split, aligned, subequations), floats, theorems and the appendix.
    let root = datasets().join("latex-features/classes");
    let mut classes: Vec<_> = std::fs::read_dir(&root)
        .expect("classes folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("main.aux").is_file())
        .collect();
    classes.sort();
    assert!(classes.len() >= 20, "{classes:?}");
    let mut wrong = Vec::new();
    for dir in &classes {
        let docs = parse_dir(dir);
        assert_eq!(docs.len(), 1, "{}", dir.display());
        let ours = printed_numbers(&docs[0]);
        let truth = aux_numbers(&dir.join("main.aux"));
        let labelled: Vec<_> = truth.keys().filter(|k| k.contains(':')).collect();
        assert!(labelled.len() > 60, "{}", dir.display());
        for key in labelled {
            if ours.get(key) != truth.get(key) {
                wrong.push(format!(
                    "{}: {key} ours {:?}, LaTeX {:?}",
                    dir.file_name().unwrap_or_default().to_string_lossy(),
                    ours.get(key),
                    truth[key]
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The bytes of a file.
fn bytes(path: &str) -> Vec<u8> {
    std::fs::read(path).expect("source file")
}

#[test]
fn documents_in_latin1_and_cp1252_are_read_in_their_encoding_with_offsets_into_their_bytes() {
    for (name, encoding, files) in [("latin1", "windows-1252", 2), ("cp1252", "windows-1252", 1)] {
        let dir = datasets().join("latex-features/encodings").join(name);
        let docs = parse_dir(&dir);
        assert_eq!(docs.len(), 1, "{name}");
        let doc = &docs[0];
        assert!(doc.diagnostics.is_empty(), "{name}: {:?}", doc.diagnostics);
        // The included file inherits the main file's encoding.
        assert_eq!(doc.files.len(), files, "{name}");
        assert_eq!(
            doc.encodings,
            (0..files)
                .map(|f| (f, encoding.to_string()))
                .collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(
            printed_numbers(doc),
            aux_numbers(&dir.join("main.aux")),
            "{name}"
        );
        assert!(!doc.mentions.is_empty());
        for m in &doc.mentions {
            assert!(
                matches!(m.resolution, Resolution::Resolved { .. }),
                "{name}: {m:?}"
            );
            // Offsets are the file's own bytes: ASCII reference commands read back as they are.
            let file = bytes(&doc.files[m.file]);
            assert_eq!(
                &file[m.start_byte..m.end_byte],
                m.text.as_bytes(),
                "{name}: {}",
                m.text
            );
        }
        for u in doc.units.iter().filter(|u| u.kind == UnitKind::Section) {
            let file = bytes(&doc.files[u.file]);
            assert!(
                file[u.start_byte..].starts_with(b"\\section"),
                "{name}: {u:?}"
            );
        }
    }
    // The text is decoded: accents and the euro sign are themselves.
    let latin1 = parse_dir(&datasets().join("latex-features/encodings/latin1"));
    let titles: Vec<_> = latin1[0]
        .units
        .iter()
        .filter_map(|u| u.title.clone())
        .collect();
    assert!(titles.contains(&"Dérivation".to_string()), "{titles:?}");
    let cp1252 = parse_dir(&datasets().join("latex-features/encodings/cp1252"));
    assert!(
        cp1252[0]
            .units
            .iter()
            .any(|u| u.text.contains("20 €; the “premium” tier"))
    );
}

#[test]
fn a_stray_byte_in_a_utf8_file_is_a_warning_at_its_line_not_the_loss_of_the_document() {
    let dir = datasets().join("latex-features/encodings/utf8-stray");
    let docs = parse_dir(&dir);
    assert_eq!(docs.len(), 1);
    let doc = &docs[0];
    let warnings: Vec<_> = doc.diagnostics.iter().collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].severity, Severity::Warning);
    assert_eq!(warnings[0].line, 4);
    assert!(
        warnings[0].message.contains("invalid UTF-8"),
        "{warnings:?}"
    );
    assert_eq!(doc.encodings, [(0, "UTF-8".to_string())]);
    assert_eq!(printed_numbers(doc), aux_numbers(&dir.join("main.aux")));
    let file = bytes(&doc.files[0]);
    assert_eq!(doc.mentions.len(), 2);
    for m in &doc.mentions {
        assert!(matches!(m.resolution, Resolution::Resolved { .. }), "{m:?}");
        assert_eq!(&file[m.start_byte..m.end_byte], m.text.as_bytes());
    }
}
