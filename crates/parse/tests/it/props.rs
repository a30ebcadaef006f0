//! Arbitrary input never panics, and the output keeps its invariants: the units form a tree in
//! document order, every span lies inside its file and unit ids are unique.

use ledger_core::Document;
use proptest::prelude::*;
use std::collections::HashSet;

fn check(doc: &Document, texts: &[Vec<u8>]) {
    let mut ids = HashSet::new();
    for (i, u) in doc.units.iter().enumerate() {
        assert!(ids.insert(u.id.as_str()), "duplicate id {}", u.id);
        match u.parent {
            None => assert_eq!(i, 0),
            Some(p) => assert!(p < i, "parent after child"),
        }
        if i > 0 {
            let len = texts.get(u.file).map_or(0, Vec::len);
            assert!(
                u.start_byte <= u.end_byte && u.end_byte <= len,
                "unit span {}..{} outside file of {len}",
                u.start_byte,
                u.end_byte
            );
        }
    }
    for m in &doc.mentions {
        let len = texts.get(m.file).map_or(0, Vec::len);
        assert!(m.start_byte <= m.end_byte && m.end_byte <= len);
        assert!(m.unit < doc.units.len());
    }
}

fn parse_bytes(name: &str, bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    let (sources, _) = ledger_parse::discover(&[path]);
    for s in sources {
        let doc = ledger_parse::parse(&s, None);
        check(&doc, &[bytes.to_vec()]);
    }
}

fn latexish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "\\section{",
        "\\section*{A}",
        "\\chapter{B}",
        "}",
        "{",
        "\\begin{theorem}",
        "\\end{theorem}",
        "\\begin{align}",
        "\\end{align}",
        "\\\\",
        "\\label{x}",
        "\\label{y}",
        "\\ref{x}",
        "\\cref{x,y}",
        "\\eqref{",
        "\\cite{k}",
        "%",
        "\n",
        "\n\n",
        "$$",
        "\\[",
        "\\]",
        "Theorem 1.1",
        "Section 2",
        "\\begin{figure}",
        "\\caption{c}",
        "\\end{figure}",
        "\\input{",
        "\\newcommand{\\r}[1]{\\ref{#1}}",
        "\\r{x}",
        "\\begin{enumerate}",
        "\\item",
        "\\end{enumerate}",
        "\\footnote{",
        "\\appendix",
        "\\tag{a}",
        "\\notag",
        "é",
        "§3",
        "\\verb|x|",
        "\\begin{verbatim}",
        "\\end{verbatim}",
        "\\newtheorem{lem}{Lemma}[section]",
        "\\begin{lem}",
        "\\end{lem}",
        "text ",
        "\\begin{document}",
    ]);
    prop::collection::vec(pieces, 0..60).prop_map(|v| v.concat())
}

fn markdownish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "# H\n",
        "## H2 {#id}\n",
        "text ",
        "\n\n",
        "[l](#h)",
        "[l](other.md#x)",
        "```rust\n",
        "```\n",
        "<Listing number=\"1-2\">\n",
        "</Listing>\n",
        "<a id=\"a\"></a>\n",
        "| a | b |\n|---|---|\n| 1 | 2 |\n",
        "$$x$$",
        "Listing 1-2",
        "Chapter 1",
        "> quote\n",
        "- item\n",
        "![alt](x.png)\n",
        "<span class=\"caption\">Figure 1-1: c</span>\n",
        "{{#include missing.rs}}",
        "é",
        "\n",
    ]);
    prop::collection::vec(pieces, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        parse_bytes("x.tex", &bytes);
        parse_bytes("x.md", &bytes);
    }

    #[test]
    fn latex_like_input_keeps_invariants(text in latexish()) {
        parse_bytes("doc.tex", text.as_bytes());
    }

    #[test]
    fn markdown_like_input_keeps_invariants(text in markdownish()) {
        parse_bytes("doc.md", text.as_bytes());
    }
}
