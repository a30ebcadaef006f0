//! Bad input: each case gives a diagnostic naming the file and line, and every other document still parses.

use ledger_core::{Document, Severity};
use std::path::Path;

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).expect("write fixture");
}

fn diag<'a>(docs: &'a [Document], file: &str, needle: &str) -> &'a ledger_core::Diagnostic {
    docs.iter()
        .flat_map(|d| &d.diagnostics)
        .find(|d| d.path.ends_with(file) && d.message.contains(needle))
        .unwrap_or_else(|| {
            panic!(
                "no diagnostic for {file} containing {needle:?}; got {:#?}",
                docs.iter().flat_map(|d| &d.diagnostics).collect::<Vec<_>>()
            )
        })
}

#[test]
fn every_bad_input_is_a_diagnostic_with_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(d, "good.md", b"# Title\n\nSee [below](#title).\n");
    write(d, "utf8.md", b"# Fine\n\nline two\nbad \xff byte\n");
    write(d, "binary.tex", b"\\documentclass{article}\0\0\0\x01\x02");
    write(d, "empty.md", b"");
    write(d, "braces.tex", b"\\documentclass{article}\n\\begin{document}\n\\section{Intro\ntext text\n\\end{document}\n");
    write(d, "unterminated.tex", b"\\documentclass{article}\n\\begin{document}\n\\section{A}\n\\begin{theorem}\nnever closed\n");
    write(
        d,
        "missing.tex",
        b"\\documentclass{article}\n\\begin{document}\n\n\\input{nowhere}\n\\end{document}\n",
    );
    write(
        d,
        "cycle.tex",
        b"\\documentclass{article}\n\\begin{document}\n\\input{cycle-a}\n\\end{document}\n",
    );
    write(d, "cycle-a.tex", b"A\n\\input{cycle-b}\n");
    write(d, "cycle-b.tex", b"B\n\n\\input{cycle-a}\n");
    let docs = crate::parse_dir(d);
    assert_eq!(
        docs.len(),
        8,
        "every document is kept: {:?}",
        docs.iter().map(|d| &d.id).collect::<Vec<_>>()
    );

    let good = docs
        .iter()
        .find(|d| d.path.ends_with("good.md"))
        .expect("good.md");
    assert!(good.diagnostics.is_empty());
    assert!(matches!(
        good.mentions[0].resolution,
        ledger_core::Resolution::Resolved { .. }
    ));

    // A stray byte is a warning at its line; the document is kept.
    let u = diag(&docs, "utf8.md", "invalid UTF-8");
    assert_eq!((u.severity, u.line), (Severity::Warning, 4));
    assert!(
        docs.iter()
            .any(|d| d.path.ends_with("utf8.md") && d.units.len() > 1)
    );
    diag(&docs, "binary.tex", "binary file");
    assert_eq!(diag(&docs, "empty.md", "empty document").line, 1);
    assert_eq!(
        diag(&docs, "braces.tex", "\\section without a title").line,
        3
    );
    assert_eq!(
        diag(
            &docs,
            "unterminated.tex",
            "\\begin{theorem} is never closed"
        )
        .line,
        4
    );
    assert_eq!(
        diag(&docs, "missing.tex", "\\input{nowhere}: file not found").line,
        4
    );
    assert_eq!(diag(&docs, "cycle-b.tex", "include cycle").line, 3);
}

#[test]
fn a_fifty_megabyte_file_parses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let para = "Some text about Section 1 and [a link](#intro) with `code` in it, repeated to fill the file.\n\n";
    let mut text = String::from("# Intro\n\n");
    while text.len() < 50 * 1024 * 1024 {
        text.push_str(para);
    }
    write(dir.path(), "big.md", text.as_bytes());
    let docs = crate::parse_dir(dir.path());
    assert_eq!(docs[0].bytes as usize, text.len());
    assert!(docs[0].units.len() > 500_000);
    assert!(
        docs[0]
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error)
    );
}

#[test]
fn diagnostics_give_their_column_and_a_brace_never_closed_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let indented = format!(
        "\\documentclass{{article}}\n\\begin{{document}}\n{}\\begin{{zz}}\ntext\n",
        "é".repeat(39)
    );
    write(d, "column.tex", indented.as_bytes());
    write(d, "utf8.md", b"# Fine\n\nbad \xff byte\n");
    let mut braces = b"\\documentclass{article}\n\\begin{document}\nSome text.\n\\textbf".to_vec();
    braces.extend(std::iter::repeat_n(b'{', 100_000));
    write(d, "braces.tex", &braces);
    let docs = crate::parse_dir(d);
    let zz = diag(&docs, "column.tex", "\\begin{zz}");
    assert_eq!((zz.line, zz.col), (3, 40), "{zz:?}");
    let byte = diag(&docs, "utf8.md", "invalid UTF-8");
    assert_eq!((byte.line, byte.col), (3, 5), "{byte:?}");
    let open = diag(&docs, "braces.tex", "never closed");
    assert_eq!(
        (open.severity, open.line, open.col),
        (Severity::Warning, 4, 8),
        "{open:?}"
    );
    assert!(open.message.contains("99999 more"), "{}", open.message);
}
