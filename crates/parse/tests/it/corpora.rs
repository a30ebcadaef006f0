//! Real documents: reference resolution against an independent count, printed numbers against
//! LaTeX's own `.aux` files, golden outlines, prose mentions, missing includes.

use crate::{corpora, datasets, parse_dir};
use ledger_core::{Document, MentionKind, Resolution, UnitKind};
use regex::Regex;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// Strips `%` comments (not `\%`) line by line, as the corpora README's counts do.
fn strip_comments(text: &str) -> String {
    let re = Regex::new(r"(^|[^\\])%.*").expect("valid");
    text.lines()
        .map(|l| re.replace(l, "$1").into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `(labels, targets)` of a LaTeX folder found by plain regular expressions, independent of the parser.
fn gold_refs(dir: &Path) -> (HashSet<String>, Vec<String>) {
    // `\label{x}`, and `label=x` in listings options (the sympy paper has one).
    let label = Regex::new(r"\\label\{([^}]*)\}|\blabel=\{?([^,\]}\s]+)").expect("valid");
    let refs =
        Regex::new(r"\\(?:ref|eqref|cref|Cref|autoref|pageref|uses)\{((?:[^{}]|\{[^{}]*\})*)\}")
            .expect("valid");
    let mut labels = HashSet::new();
    let mut targets = Vec::new();
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.path().extension().is_none_or(|x| x != "tex") {
            continue;
        }
        let text = strip_comments(&std::fs::read_to_string(e.path()).expect("corpus is UTF-8"));
        labels.extend(
            label
                .captures_iter(&text)
                .filter_map(|c| c.get(1).or(c.get(2)))
                .map(|m| m.as_str().trim().to_string()),
        );
        for c in refs.captures_iter(&text) {
            targets.extend(
                c[1].split(',')
                    .map(|k| k.trim().to_string())
                    .filter(|k| !k.is_empty() && !k.contains('#')),
            );
        }
    }
    (labels, targets)
}

/// Checks the acceptance rule: ≥ 99% of targets with a matching label resolve to the unit carrying
/// it, and every target without a label is reported broken.
fn check_resolution(corpus: &str, mains: &[&str], external_prefix: Option<&str>) -> (usize, usize) {
    let dir = corpora().join(corpus);
    let docs = parse_dir(&dir);
    let (labels, targets) = gold_refs(&dir);
    let chosen: Vec<&Document> = docs
        .iter()
        .filter(|d| mains.iter().any(|m| d.path.ends_with(m)))
        .collect();
    assert_eq!(chosen.len(), mains.len(), "main documents found");
    let mut resolved: HashMap<String, usize> = HashMap::new();
    let mut broken: HashMap<String, usize> = HashMap::new();
    let by_id: HashMap<(&str, &str), &ledger_core::Unit> = docs
        .iter()
        .flat_map(|d| {
            d.units
                .iter()
                .map(move |u| ((d.id.as_str(), u.id.as_str()), u))
        })
        .collect();
    for m in chosen.iter().flat_map(|d| &d.mentions).filter(|m| {
        matches!(
            m.kind,
            MentionKind::Ref | MentionKind::Eqref | MentionKind::Cref | MentionKind::Uses
        )
    }) {
        let ledger_core::TargetKey::Label(key) = &m.key else {
            continue;
        };
        match &m.resolution {
            Resolution::Resolved { doc, unit } => {
                let wanted = external_prefix
                    .and_then(|p| key.strip_prefix(p))
                    .unwrap_or(key);
                let u = by_id[&(doc.as_str(), unit.as_str())];
                assert!(
                    u.labels.iter().any(|(l, _)| l == wanted),
                    "{key} resolved to {unit}, which does not carry it"
                );
                *resolved.entry(key.clone()).or_default() += 1;
            }
            _ => *broken.entry(key.clone()).or_default() += 1,
        }
    }
    let has_label = |k: &str| {
        labels.contains(k)
            || external_prefix
                .and_then(|p| k.strip_prefix(p))
                .is_some_and(|k| labels.contains(k))
    };
    let mut want: HashMap<&str, usize> = HashMap::new();
    for t in &targets {
        *want.entry(t.as_str()).or_default() += 1;
    }
    let (mut found, mut total) = (0, 0);
    let mut missing = Vec::new();
    for (k, n) in &want {
        if has_label(k) {
            total += n;
            let got = resolved.get(*k).copied().unwrap_or(0);
            if got < *n {
                missing.push(format!("{k} ({got}/{n})"));
            }
            found += (*n).min(got);
        } else {
            assert!(
                broken.get(*k).copied().unwrap_or(0) > 0 || mains == ["print.tex"],
                "{corpus}: target `{k}` has no label but was not reported broken"
            );
        }
    }
    assert!(total > 0);
    assert!(
        found as f64 >= 0.99 * total as f64,
        "{corpus}: only {found} of {total} labelled targets resolved; short: {missing:?}"
    );
    if !missing.is_empty() {
        eprintln!("{corpus}: not resolved as often as written: {missing:?}");
    }
    (found, total)
}

#[test]
fn latex_references_resolve_on_every_corpus() {
    let mut report = Vec::new();
    for (corpus, mains, prefix) in [
        ("hott-book", &["main.tex"][..], None),
        ("carleson-blueprint", &["print.tex"], None),
        ("paper-carleson-lean", &["main.tex"], None),
        ("paper-equational-theories", &["main.tex"], None),
        ("paper-sympy", &["paper.tex", "supplement.tex"], Some("S-")),
    ] {
        let (found, total) = check_resolution(corpus, mains, prefix);
        report.push(format!("{corpus}: {found}/{total}"));
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn hott_double_brace_cref_is_broken() {
    let docs = parse_dir(&corpora().join("hott-book"));
    let broken: Vec<_> = docs[0]
        .mentions
        .iter()
        .filter(|m| m.text.contains("{{cor:omega-s1}}"))
        .collect();
    assert_eq!(broken.len(), 2);
    assert!(
        broken
            .iter()
            .all(|m| matches!(m.resolution, Resolution::Broken { .. }))
    );
}

/// `\newlabel{key}{{number}{page}…}` lines of an `.aux` file: the number without commands,
/// control symbols (REVTeX's `I\,A`), braces, spaces, or the `Appendix` elsarticle writes into it.
pub(crate) fn aux_numbers(path: &Path) -> BTreeMap<String, String> {
    let re = Regex::new(r"^\\newlabel\{([^}]*)\}\{\{(.*?)\}\{").expect("valid");
    let cmd = Regex::new(r"\\[A-Za-z@]+ *|\\[^A-Za-z@]|[{}\s]|^Appendix").expect("valid");
    let text = String::from_utf8_lossy(&std::fs::read(path).expect("aux file")).into_owned();
    text.lines()
        .filter_map(|l| re.captures(l))
        .filter(|c| !c[1].ends_with("@cref"))
        .map(|c| (c[1].to_string(), cmd.replace_all(&c[2], "").to_string()))
        .collect()
}

#[test]
fn printed_numbers_match_latex_aux_files() {
    // The .aux files come from pdflatex/xelatex runs on the shared corpora (datasets/ground-truth/README.md).
    for (corpus, main) in [
        ("paper-carleson-lean", "main"),
        ("paper-equational-theories", "main"),
        ("paper-sympy", "paper"),
        ("paper-sympy", "supplement"),
        ("carleson-blueprint", "print"),
    ] {
        let truth = aux_numbers(&datasets().join(format!("ground-truth/{corpus}--{main}.aux")));
        let docs = parse_dir(&corpora().join(corpus));
        let doc = docs
            .iter()
            .find(|d| d.path.ends_with(&format!("{main}.tex")))
            .expect("document");
        let ours: HashMap<&str, Option<&str>> = doc
            .units
            .iter()
            .flat_map(|u| u.labels.iter().map(|(l, n)| (l.as_str(), n.as_deref())))
            .collect();
        let mut mismatches = Vec::new();
        for (label, number) in &truth {
            if ours.get(label.as_str()).copied().flatten() != Some(number.as_str()) {
                mismatches.push(format!(
                    "{label}: ours {:?}, LaTeX {number}",
                    ours.get(label.as_str())
                ));
            }
        }
        let ok = truth.len() - mismatches.len();
        assert!(
            ok as f64 >= 0.99 * truth.len() as f64,
            "{corpus}/{main}: {ok}/{} numbers match; {mismatches:?}",
            truth.len()
        );
        eprintln!("{corpus}/{main}: {ok}/{} numbers match LaTeX", truth.len());
    }
}

#[test]
fn the_generated_sample_numbers_like_latex_and_resolves_every_reference() {
    // datasets/generated/gen-5k-1 was compiled with pdflatex (datasets/README.md): the number in
    // each label (`lem:3`) is the one the generator printed, LaTeX printed it too, and so do we.
    let truth = aux_numbers(&datasets().join("ground-truth/generated--gen-5k-1.aux"));
    assert!(truth.len() > 50);
    let docs = parse_dir(&datasets().join("generated/gen-5k-1"));
    let ours: HashMap<&str, Option<&str>> = docs[0]
        .units
        .iter()
        .flat_map(|u| u.labels.iter().map(|(l, n)| (l.as_str(), n.as_deref())))
        .collect();
    for (label, number) in &truth {
        assert_eq!(label.rsplit(':').next(), Some(number.as_str()), "{label}");
        assert_eq!(
            ours.get(label.as_str()).copied().flatten(),
            Some(number.as_str()),
            "{label}"
        );
    }
    for dir in ["gen-5k-1", "gen-5k-md-1"] {
        let docs = parse_dir(&datasets().join("generated").join(dir));
        assert_eq!(docs.len(), 1, "{dir}");
        let broken: Vec<_> = docs[0]
            .mentions
            .iter()
            .filter(|m| !matches!(m.resolution, Resolution::Resolved { .. }))
            .collect();
        assert!(docs[0].mentions.len() > 30, "{dir}");
        assert!(broken.is_empty(), "{dir}: {broken:?}");
    }
}

/// A compact, stable outline of a document: counts, then the section tree with numbers and ids.
fn outline(doc: &Document) -> String {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for u in &doc.units {
        *kinds.entry(u.kind.as_str()).or_default() += 1;
    }
    let mut mentions: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for m in &doc.mentions {
        *mentions
            .entry((m.kind.as_str(), m.resolution.status()))
            .or_default() += 1;
    }
    let mut s = format!(
        "units: {kinds:?}\nmentions: {mentions:?}\nreference edges: {}\n",
        doc.reference_edges().len()
    );
    let depth = |mut i: usize| {
        let mut d: usize = 0;
        while let Some(p) = doc.units[i].parent {
            d += 1;
            i = p;
        }
        d
    };
    for (i, u) in doc
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == UnitKind::Section)
    {
        let children = doc.units.iter().filter(|c| c.parent == Some(i)).count();
        s.push_str(&format!(
            "{}{} {} `{}` [{}] ({children})\n",
            "  ".repeat(depth(i).saturating_sub(1)),
            u.number.as_deref().unwrap_or("-"),
            u.title.as_deref().unwrap_or(""),
            u.id,
            u.env
        ));
    }
    s
}

#[test]
fn golden_latex_book_hott() {
    let docs = parse_dir(&corpora().join("hott-book"));
    insta::assert_snapshot!("hott_book", outline(&docs[0]));
}

#[test]
fn golden_latex_paper_equational_theories() {
    let docs = parse_dir(&corpora().join("paper-equational-theories"));
    insta::assert_snapshot!("paper_equational_theories", outline(&docs[0]));
}

#[test]
fn golden_markdown_manual_cargo_book() {
    let docs = parse_dir(&corpora().join("cargo-book"));
    insta::assert_snapshot!("cargo_book", outline(&docs[0]));
}

#[test]
fn prose_listing_and_chapter_mentions_resolve_in_rust_book() {
    let docs = parse_dir(&corpora().join("rust-book"));
    let book = &docs[0];
    let unit = |id: &str| book.units.iter().find(|u| u.id == id);
    let listing = book
        .mentions
        .iter()
        .find(|m| m.text == "Listing 7-3")
        .expect("the book mentions Listing 7-3");
    let Resolution::Resolved { unit: target, .. } = &listing.resolution else {
        panic!("Listing 7-3 unresolved: {:?}", listing.resolution)
    };
    let u = unit(target).expect("target exists");
    assert_eq!(
        (u.kind, u.number.as_deref()),
        (UnitKind::Listing, Some("7-3"))
    );
    let chapter = book
        .mentions
        .iter()
        .find(|m| m.text == "Chapter 4")
        .expect("mentions Chapter 4");
    let Resolution::Resolved { unit: target, .. } = &chapter.resolution else {
        panic!("Chapter 4 unresolved")
    };
    assert_eq!(
        unit(target).and_then(|u| u.title.as_deref()),
        Some("Understanding Ownership")
    );
    let prose: Vec<_> = book
        .mentions
        .iter()
        .filter(|m| m.kind == MentionKind::Prose)
        .collect();
    let resolved = prose
        .iter()
        .filter(|m| matches!(m.resolution, Resolution::Resolved { .. }))
        .count();
    assert!(
        resolved as f64 >= 0.99 * prose.len() as f64,
        "{resolved}/{} prose mentions resolved",
        prose.len()
    );
}

#[test]
fn prose_theorem_numbers_resolve_in_latex() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("p.tex"),
        "\\documentclass{article}\n\\newtheorem{theorem}{Theorem}[section]\n\\newtheorem{lemma}[theorem]{Lemma}\n\\begin{document}\n\\section{A}\n\\begin{lemma}x\\end{lemma}\n\\begin{theorem}\\label{t}y\\end{theorem}\nBy Theorem 1.2 and Lemma~1.1, and Sections 1 and 2.\n\\end{document}\n",
    )
    .expect("write");
    let docs = parse_dir(dir.path());
    let got: Vec<(String, String)> = docs[0]
        .mentions
        .iter()
        .map(|m| {
            (
                m.text.clone(),
                match &m.resolution {
                    Resolution::Resolved { unit, .. } => unit.clone(),
                    r => r.status().to_string(),
                },
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("Theorem 1.2".to_string(), "t".to_string()),
            ("Lemma~1.1".into(), "lem-1-1".into()),
            ("Sections 1".into(), "sec-1".into()),
            ("2".into(), "broken".into()),
        ]
    );
}

#[test]
fn rust_book_missing_includes_are_diagnostics() {
    let docs = parse_dir(&corpora().join("rust-book"));
    let missing = docs[0]
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("included file") && d.message.contains("not found"))
        .count();
    // The listings/ tree is not part of the corpus: every include directive is reported, none crashes.
    assert!(missing >= 600, "only {missing} missing includes reported");
    assert!(
        docs[0]
            .diagnostics
            .iter()
            .all(|d| d.line > 0 && d.path.ends_with(".md"))
    );
}
