//! LaTeX and Markdown features on small documents with known answers.

use ledger_core::{Document, Resolution, UnitKind};

fn parse_one(name: &str, text: &str) -> Document {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(name), text).expect("write");
    let docs = crate::parse_dir(dir.path());
    assert_eq!(docs.len(), 1);
    docs.into_iter().next().expect("one document")
}

fn number_of(doc: &Document, label: &str) -> Option<String> {
    doc.units
        .iter()
        .flat_map(|u| &u.labels)
        .find(|(l, _)| l == label)
        .and_then(|(_, n)| n.clone())
}

fn target_of<'a>(doc: &'a Document, text: &str) -> &'a Resolution {
    &doc.mentions
        .iter()
        .find(|m| m.text == text)
        .unwrap_or_else(|| panic!("no mention {text:?}"))
        .resolution
}

const PAPER: &str = r"\documentclass{article}
\usepackage{amsmath}
\newtheorem{theorem}{Theorem}[section]
\newtheorem{lemma}[theorem]{Lemma}
\newtheorem*{remark}{Remark}
\numberwithin{equation}{section}
\newcommand{\thmref}[1]{Theorem~\ref{#1}}
\begin{document}
\section{Intro}\label{sec:intro}
% a comment with \ref{ignored} and Section 9
Text.
\begin{align}
a &= b \label{eq:a}\\
c &= d \notag\\
e &= f \label{eq:e}
\end{align}
\section*{Unnumbered}
\subsection{Sub}\label{sec:sub}
\begin{lemma}\label{lem:one} x \end{lemma}
\begin{theorem}[Main]\label{thm:main} y \end{theorem}
\begin{remark} z \end{remark}
By \thmref{thm:main}, \cref{eq:a,eq:e} and Eq.~(1.2) and Section~1.1 we conclude.
\begin{subequations}\label{eq:sys}
\begin{equation} p \label{eq:p} \end{equation}
\begin{equation} q \end{equation}
\end{subequations}
\begin{figure}\caption{Cap}\label{fig:one}\end{figure}
\appendix
\section{Extra}\label{app:extra}
\begin{equation} r \tag{$\star$} \label{eq:star} \end{equation}
See Appendix A and \ref{nowhere}.
\end{document}
";

#[test]
fn latex_numbering_and_references() {
    let doc = parse_one("paper.tex", PAPER);
    let n = |l: &str| number_of(&doc, l);
    assert_eq!(n("sec:intro").as_deref(), Some("1"));
    assert_eq!(n("eq:a").as_deref(), Some("1.1"));
    assert_eq!(
        n("eq:e").as_deref(),
        Some("1.2"),
        "\\notag lines take no number"
    );
    assert_eq!(
        n("sec:sub").as_deref(),
        Some("1.1"),
        "starred sections do not count"
    );
    assert_eq!(
        n("lem:one").as_deref(),
        Some("1.1"),
        "[section] numbering ignores the subsection"
    );
    assert_eq!(
        n("thm:main").as_deref(),
        Some("1.2"),
        "lemma and theorem share a counter"
    );
    assert_eq!(n("eq:p").as_deref(), Some("1.3a"));
    assert_eq!(n("fig:one").as_deref(), Some("1"));
    assert_eq!(n("app:extra").as_deref(), Some("A"));
    assert_eq!(n("eq:star").as_deref(), Some("$\\star$"));
    // One equation unit carries both labels of the align, with its line numbers.
    let align = doc
        .units
        .iter()
        .find(|u| u.id == "eq:a")
        .expect("align unit");
    assert_eq!(align.kind, UnitKind::Equation);
    assert_eq!(align.numbers, ["1.1", "1.2"]);
    assert_eq!(align.number.as_deref(), Some("1.1–1.2"));
    let remark = doc
        .units
        .iter()
        .find(|u| u.env == "remark")
        .expect("remark");
    assert_eq!(remark.number, None);
    assert_eq!(
        doc.units
            .iter()
            .find(|u| u.id == "thm:main")
            .and_then(|u| u.title.as_deref()),
        Some("Main")
    );

    let resolved = |text: &str, unit: &str| {
        assert_eq!(
            target_of(&doc, text),
            &Resolution::Resolved {
                doc: doc.id.clone(),
                unit: unit.into()
            },
            "{text}"
        )
    };
    resolved("\\thmref{thm:main}", "thm:main");
    resolved("eq:a", "eq:a");
    resolved("eq:e", "eq:a");
    resolved("Eq.~(1.2)", "eq:a");
    resolved("Section~1.1", "sec:sub");
    resolved("Appendix A", "app:extra");
    assert!(matches!(
        target_of(&doc, "\\ref{nowhere}"),
        Resolution::Broken { .. }
    ));
    // Comments are not read.
    assert!(
        doc.mentions
            .iter()
            .all(|m| !m.text.contains("ignored") && m.text != "Section 9")
    );
    // `\cref` lists give one mention per key, each spanning just its key.
    let a = doc
        .mentions
        .iter()
        .find(|m| m.text == "eq:a")
        .expect("eq:a");
    assert_eq!(&PAPER[a.start_byte..a.end_byte], "eq:a");
}

#[test]
fn book_chapters_frontmatter_and_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("book.tex"),
        "\\documentclass{book}\n\\begin{document}\n\\frontmatter\n\\chapter{Preface}\n\\mainmatter\n\\part{One}\n\\include{ch1}\n\\end{document}\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("ch1.tex"), "\\chapter{First}\\label{ch:first}\n\\section{S}\\label{s}\n\\begin{figure}\\caption{F}\\label{f}\\end{figure}\n").expect("write");
    let docs = crate::parse_dir(dir.path());
    assert_eq!(
        docs.len(),
        1,
        "an included file is not a document of its own"
    );
    let doc = &docs[0];
    assert_eq!(doc.files.len(), 2);
    let preface = doc
        .units
        .iter()
        .find(|u| u.title.as_deref() == Some("Preface"))
        .expect("preface");
    assert_eq!(preface.number, None, "front matter chapters are unnumbered");
    assert_eq!(number_of(doc, "ch:first").as_deref(), Some("1"));
    assert_eq!(number_of(doc, "s").as_deref(), Some("1.1"));
    assert_eq!(
        number_of(doc, "f").as_deref(),
        Some("1.1"),
        "figures are numbered within chapters in books"
    );
    let part = doc.units.iter().find(|u| u.env == "part").expect("part");
    assert_eq!(
        (part.number.as_deref(), part.id.as_str()),
        (Some("I"), "part-i")
    );
    let chapter = doc
        .units
        .iter()
        .find(|u| u.id == "ch:first")
        .expect("chapter");
    assert_eq!(doc.units[chapter.parent.expect("parent")].env, "part");
}

#[test]
fn markdown_book_numbers_anchors_and_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("SUMMARY.md"),
        "# Summary\n\n[Intro](intro.md)\n\n- [Basics](ch01.md)\n  - [More](ch01-01.md)\n",
    )
    .expect("write");
    std::fs::write(
        d.join("intro.md"),
        "# Introduction\n\nRead [Basics](ch01.md) and [the details](ch01-01.md#details-1).\n",
    )
    .expect("write");
    std::fs::write(
        d.join("ch01.md"),
        "# Basics\n\n<a id=\"old-name\"></a>\n\n## Setup {#setup}\n\nSee Listing 1-1 and [missing](#nope).\n\n<Listing number=\"1-1\" caption=\"Hello\">\n\n```rust\nfn main() {}\n```\n\n</Listing>\n",
    )
    .expect("write");
    std::fs::write(d.join("ch01-01.md"), "# More\n\n## Details\n\ntext\n\n## Details\n\nagain, back to [setup](ch01.html#old-name).\n").expect("write");
    let docs = crate::parse_dir(d);
    assert_eq!(docs.len(), 1, "a SUMMARY.md folder is one document");
    let doc = &docs[0];
    let unit = |id: &str| {
        doc.units
            .iter()
            .find(|u| u.id == id)
            .unwrap_or_else(|| panic!("no unit {id}"))
    };
    assert_eq!(unit("ch01.md#basics").number.as_deref(), Some("1"));
    assert_eq!(unit("ch01-01.md#more").number.as_deref(), Some("1.1"));
    assert_eq!(
        unit("ch01-01.md#more")
            .parent
            .map(|p| doc.units[p].id.as_str()),
        Some("ch01.md#basics")
    );
    assert!(
        unit("ch01.md#setup")
            .labels
            .iter()
            .any(|(l, _)| l == "ch01.md#old-name"),
        "an HTML anchor names the next unit"
    );
    let listing = unit("lst-1-1");
    assert_eq!(
        (listing.kind, listing.title.as_deref()),
        (UnitKind::Listing, Some("Hello"))
    );
    let resolved = |text: &str| match target_of(doc, text) {
        Resolution::Resolved { unit, .. } => unit.clone(),
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(resolved("Listing 1-1"), "lst-1-1");
    assert_eq!(resolved("ch01.md"), "ch01.md#basics");
    assert_eq!(
        resolved("ch01-01.md#details-1"),
        "ch01-01.md#details-1",
        "repeated headings get -1"
    );
    assert_eq!(resolved("ch01.html#old-name"), "ch01.md#setup");
    assert!(matches!(target_of(doc, "#nope"), Resolution::Broken { .. }));
}

#[test]
fn run_in_paragraph_headings_stay_inside_a_proof() {
    let doc = parse_one(
        "p.tex",
        "\\documentclass{article}\n\\begin{document}\n\\section{A}\n\\begin{proof}\n\\paragraph{Step 1.} x\n\\paragraph{Step 2.} y\n\\end{proof}\n\\end{document}\n",
    );
    let proof = doc
        .units
        .iter()
        .find(|u| u.kind == UnitKind::Proof)
        .expect("proof");
    assert!(proof.text.contains("Step 2."), "{:?}", proof.text);
    assert!(doc.diagnostics.is_empty(), "{:?}", doc.diagnostics);
    assert_eq!(
        doc.units
            .iter()
            .filter(|u| u.kind == UnitKind::Section)
            .count(),
        1
    );
}

#[test]
fn markdown_bold_labels_number_their_paragraphs_and_links_are_read_once() {
    let doc = parse_one(
        "notes.md",
        "# Notes\n\n<a id=\"lock\"></a>**Definition 1.** A *lockfile* records versions.\n\n\
         **Theorem 2.** Every build is reproducible.\n\n**Figure 3.** The resolver.\n\n\
         By Theorem 2 and Definition 1, see [Figure 3](#lock) and Theorem 7.\n",
    );
    let unit = |number: &str| {
        doc.units
            .iter()
            .position(|u| u.number.as_deref() == Some(number))
            .unwrap_or_else(|| panic!("no unit numbered {number}"))
    };
    assert_eq!(doc.units[unit("1")].env, "definition");
    assert_eq!(doc.units[unit("2")].kind, UnitKind::Theorem);
    assert_eq!(doc.units[unit("3")].kind, UnitKind::Figure);
    // The anchor named before the label still carries the number.
    assert_eq!(number_of(&doc, "notes.md#lock").as_deref(), Some("1"));
    for (text, number) in [("Theorem 2", "2"), ("Definition 1", "1")] {
        let Resolution::Resolved { unit, .. } = target_of(&doc, text) else {
            panic!("{text} unresolved");
        };
        assert_eq!(
            doc.units
                .iter()
                .find(|u| &u.id == unit)
                .and_then(|u| u.number.as_deref()),
            Some(number)
        );
    }
    assert!(matches!(
        target_of(&doc, "Theorem 7"),
        Resolution::Broken { .. }
    ));
    // Labels are not mentions of their own unit; a link's text is not read again.
    assert_eq!(doc.mentions.len(), 4, "{:?}", doc.mentions);
}
