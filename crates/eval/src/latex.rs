//! Fidelity to LaTeX (`ledger eval latex`): LEDGER's references and printed numbers against
//! the `.aux` file pdflatex wrote for the same document.
//!
//! The gold is LaTeX's, not LEDGER's: every `\newlabel{key}{{number}…}` line of the `.aux` is
//! a label that exists and the number `\ref` prints for it; the references are every `\ref`-family
//! command in the document's files found by a plain regular expression (comments stripped) whose
//! key LaTeX knows. Two ratios per document:
//! - **references**: of those references, how many LEDGER found and resolved to the unit that
//!   carries the label;
//! - **numbers**: of the labels in the `.aux` that a `\label` in the sources wrote, how many
//!   carry the same number in LEDGER (compared after dropping spacing commands and braces, and a
//!   leading `Appendix ` some classes put into the reference itself).
//!
//! Which files belong to the document is the parser's list (`Document::files`): following
//! `\input` is tested on its own; this measures what is done with the files.

use crate::{EvalError, Result};
use ledger_core::{Document, MentionKind, Resolution, TargetKey};
use regex::Regex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// One document and the `.aux` LaTeX wrote for it.
#[derive(Debug, Clone)]
pub struct LatexCase {
    /// A name for the report (`corpus/main`).
    pub name: String,
    /// The main `.tex` file.
    pub main: PathBuf,
    /// The `.aux` pdflatex (or xelatex) wrote for it.
    pub aux: PathBuf,
}

/// What one document scored.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LatexRow {
    /// The case's name.
    pub name: String,
    /// References in the sources whose key LaTeX knows.
    pub references: usize,
    /// Of those, found by LEDGER and resolved to the unit carrying the label.
    pub resolved: usize,
    /// Labels of the `.aux` written by a `\label` in the sources.
    pub labels: usize,
    /// Of those, with LEDGER's number equal to LaTeX's.
    pub numbers_equal: usize,
    /// The first misses, for the report: `key: ours …, LaTeX …` or `ref key: n of m resolved`.
    pub misses: Vec<String>,
}

/// The cases bundled with the repository: every `main.aux` under `datasets/latex-features`
/// with the `main.tex` beside it, and every `datasets/ground-truth/<corpus>--<main>.aux` whose
/// document is in `datasets/<corpus>/` or, when given, in `corpora/<corpus>/`.
pub fn bundled_cases(datasets: &Path, corpora: Option<&Path>) -> Vec<LatexCase> {
    let mut cases = Vec::new();
    let features = datasets.join("latex-features");
    let mut dirs = vec![features.clone()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "main.aux")
                && path.with_extension("tex").is_file()
            {
                let name = dir.strip_prefix(&features).unwrap_or(&dir);
                cases.push(LatexCase {
                    name: format!("latex-features/{}", name.display()),
                    main: path.with_extension("tex"),
                    aux: path,
                });
            }
        }
    }
    let truth = datasets.join("ground-truth");
    for e in std::fs::read_dir(&truth).into_iter().flatten().flatten() {
        let path = e.path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".aux"))
        else {
            continue;
        };
        let Some((corpus, main)) = stem.split_once("--") else {
            continue;
        };
        let main_file = format!("{main}.tex");
        let found = [
            Some(datasets.join(corpus).join(&main_file)),
            // A generated document's folder: `generated/gen-5k-1/main.tex`.
            Some(datasets.join(corpus).join(main).join("main.tex")),
            corpora.map(|c| c.join(corpus).join(&main_file)),
        ]
        .into_iter()
        .flatten()
        .find(|p| p.is_file());
        if let Some(main) = found {
            cases.push(LatexCase {
                name: format!(
                    "{corpus}/{stem}",
                    stem = stem.split_once("--").map_or(stem, |s| s.1)
                ),
                main,
                aux: path,
            });
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// `\newlabel{key}{{number}{page}…}` lines of an `.aux` file: key → the number `\ref` prints,
/// normalised (see [`normalise_number`]); `@cref` companions are left out.
pub fn aux_labels(text: &str) -> BTreeMap<String, String> {
    static LINE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\\newlabel\{([^}]*)\}\{\{(.*)$").expect("valid"));
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(c) = LINE.captures(line) else {
            continue;
        };
        if c[1].ends_with("@cref") {
            continue;
        }
        // The first argument of the pair, braces balanced.
        let rest = &c[2];
        let Some(end) = closing_brace(rest) else {
            continue;
        };
        let mut number = &rest[..end];
        // memoir writes `\M@TitleReference {number}{title}`.
        if let Some(args) = number.strip_prefix("\\M@TitleReference") {
            let args = args.trim_start();
            if let Some(inner) = args.strip_prefix('{')
                && let Some(e) = closing_brace(inner)
            {
                number = &inner[..e];
            }
        }
        out.insert(c[1].to_string(), normalise_number(number));
    }
    out
}

/// The index of the `}` that closes a group whose `{` came just before `text`.
fn closing_brace(text: &str) -> Option<usize> {
    let mut depth = 1;
    for (k, ch) in text.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// A printed number as compared: commands (`\relax`, `\hbox`), control symbols (`\,`), braces
/// and spaces dropped, and a leading `Appendix` (elsarticle prints `Appendix A` for `\ref`).
pub fn normalise_number(printed: &str) -> String {
    static DROP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\\[A-Za-z@]+ *|\\[^A-Za-z@]|[{}~\s]").expect("valid"));
    let flat = DROP.replace_all(printed, "").into_owned();
    flat.strip_prefix("Appendix").unwrap_or(&flat).to_string()
}

/// The reference commands the gold counts, with their key lists.
static REFS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\\(?:ref|eqref|cref|Cref|autoref|pageref|vref|nameref|labelcref|uses)\*?\{((?:[^{}]|\{[^{}]*\})*)\}",
    )
    .expect("valid")
});
static LABELS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\\label\{([^}]*)\}").expect("valid"));

/// `%` comments (not `\%`) removed, line by line.
fn strip_comments(text: &str) -> String {
    static COMMENT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(^|[^\\])%.*").expect("valid"));
    text.lines()
        .map(|l| COMMENT.replace(l, "$1").into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Scores one parsed document against its `.aux` (`sources`: the text of each of its files).
pub fn score(name: &str, doc: &Document, aux: &str, sources: &[String]) -> LatexRow {
    let truth = aux_labels(aux);
    let mut row = LatexRow {
        name: name.to_string(),
        ..LatexRow::default()
    };
    let mut written: HashMap<String, usize> = HashMap::new();
    let mut labelled = std::collections::BTreeSet::new();
    for text in sources {
        let text = strip_comments(text);
        for c in LABELS.captures_iter(&text) {
            labelled.insert(c[1].trim().to_string());
        }
        for c in REFS.captures_iter(&text) {
            for key in c[1].split(',').map(str::trim) {
                if truth.contains_key(key) {
                    *written.entry(key.to_string()).or_default() += 1;
                }
            }
        }
    }
    let by_id: HashMap<&str, &ledger_core::Unit> =
        doc.units.iter().map(|u| (u.id.as_str(), u)).collect();
    let mut resolved: HashMap<&str, usize> = HashMap::new();
    for m in &doc.mentions {
        let (TargetKey::Label(key), Resolution::Resolved { doc: d, unit }) =
            (&m.key, &m.resolution)
        else {
            continue;
        };
        if m.kind == MentionKind::Cite || d != &doc.id {
            continue;
        }
        if by_id
            .get(unit.as_str())
            .is_some_and(|u| u.labels.iter().any(|(l, _)| l == key))
        {
            *resolved.entry(key.as_str()).or_default() += 1;
        }
    }
    let mut keys: Vec<_> = written.iter().collect();
    keys.sort();
    for (key, &want) in keys {
        let got = resolved.get(key.as_str()).copied().unwrap_or(0).min(want);
        row.references += want;
        row.resolved += got;
        if got < want && row.misses.len() < 20 {
            row.misses
                .push(format!("ref {key}: {got} of {want} resolved"));
        }
    }
    let ours: HashMap<&str, Option<&str>> = doc
        .units
        .iter()
        .flat_map(|u| u.labels.iter().map(|(l, n)| (l.as_str(), n.as_deref())))
        .collect();
    for (key, number) in &truth {
        if !labelled.contains(key) {
            continue;
        }
        row.labels += 1;
        // A label in an unnumbered unit prints nothing.
        let mine = ours
            .get(key.as_str())
            .map(|n| normalise_number(n.unwrap_or("")));
        if mine.as_deref() == Some(number.as_str()) {
            row.numbers_equal += 1;
        } else if row.misses.len() < 40 {
            row.misses
                .push(format!("{key}: ours {mine:?}, LaTeX {number}"));
        }
    }
    row
}

/// Parses each case's document (with the other documents of its folder, for references across
/// them) and scores it; a case whose files cannot be read is an error naming it.
pub fn run(cases: &[LatexCase]) -> Result<Vec<LatexRow>> {
    use rayon::prelude::*;
    cases
        .par_iter()
        .map(|case| {
            let context = |e: std::io::Error, what: &Path| EvalError::Context {
                context: format!("{}: reading {}", case.name, what.display()),
                source: Box::new(EvalError::Io(e)),
            };
            let aux = read_aux(&case.aux, 0).map_err(|e| context(e, &case.aux))?;
            let (sources, _) = ledger_parse::discover(std::slice::from_ref(&case.main));
            let mut docs: Vec<Document> = sources
                .iter()
                .map(|s| ledger_parse::parse(s, None))
                .collect();
            ledger_parse::resolve_corpus(&mut docs);
            let doc = docs.into_iter().next().ok_or_else(|| {
                EvalError::Invalid(format!(
                    "{}: no document in {}",
                    case.name,
                    case.main.display()
                ))
            })?;
            let mut texts = Vec::new();
            for f in doc.files.iter().filter(|f| f.ends_with(".tex")) {
                let bytes = std::fs::read(f).map_err(|e| context(e, Path::new(f)))?;
                texts.push(String::from_utf8_lossy(&bytes).into_owned());
            }
            Ok(score(&case.name, &doc, &aux, &texts))
        })
        .collect()
}

/// An `.aux` file with the ones it reads (`\@input{chapter.aux}`, written for `\include`d
/// files), relative to its folder.
fn read_aux(path: &Path, depth: usize) -> std::io::Result<String> {
    static INPUT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^\\@input\{([^}]+)\}").expect("valid"));
    let text = String::from_utf8_lossy(&std::fs::read(path)?).into_owned();
    let mut all = text.clone();
    if depth < 8 {
        let dir = path.parent().unwrap_or(Path::new("."));
        for c in INPUT.captures_iter(&text) {
            // A missing one is LaTeX's own first run; its labels are then missing too.
            if let Ok(more) = read_aux(&dir.join(&c[1]), depth + 1) {
                all.push('\n');
                all.push_str(&more);
            }
        }
    }
    Ok(all)
}

/// The class of feature a bundled case tests, from its name: the folder under
/// `datasets/latex-features` (verbatim, sub-floats, multi-line displays, document classes,
/// encodings, papers), else generated or real documents.
pub fn class_of(name: &str) -> &'static str {
    let Some(feature) = name.strip_prefix("latex-features/") else {
        return if name.starts_with("generated/") {
            "generated documents"
        } else {
            "real documents"
        };
    };
    match feature.split('/').next().unwrap_or_default() {
        "classes" => "document classes",
        "encodings" => "encodings",
        "papers" => "papers",
        "subfloats" => "sub-floats",
        "displays" => "multi-line displays",
        f if f.starts_with("verbatim") => "verbatim",
        _ => "other features",
    }
}

/// `ledger eval latex`: the rows of every bundled case, printed as a Markdown table of both
/// ratios per document and in total, then each document's misses.
pub struct Table {
    /// One row per document.
    pub rows: Vec<LatexRow>,
    /// Every miss rather than the first few per document.
    pub all_misses: bool,
}

impl Table {
    /// Scores the bundled cases (see [`bundled_cases`]); an error when there is none.
    pub fn of_bundled(datasets: &Path, corpora: Option<&Path>, all_misses: bool) -> Result<Table> {
        let cases = bundled_cases(datasets, corpora);
        if cases.is_empty() {
            return Err(EvalError::Invalid(format!(
                "no LaTeX document with an .aux under {} (run from the repository's root or pass --datasets)",
                datasets.display()
            )));
        }
        Ok(Table {
            rows: run(&cases)?,
            all_misses,
        })
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ratio = |a: usize, b: usize| {
            if b == 0 {
                "–".to_string()
            } else {
                format!("{:.3}", a as f64 / b as f64)
            }
        };
        writeln!(
            f,
            "| document | references resolved | ratio | numbers equal to LaTeX's | ratio |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|")?;
        let (mut refs, mut resolved, mut labels, mut equal) = (0, 0, 0, 0);
        for r in &self.rows {
            writeln!(
                f,
                "| {} | {}/{} | {} | {}/{} | {} |",
                r.name,
                r.resolved,
                r.references,
                ratio(r.resolved, r.references),
                r.numbers_equal,
                r.labels,
                ratio(r.numbers_equal, r.labels)
            )?;
            refs += r.references;
            resolved += r.resolved;
            labels += r.labels;
            equal += r.numbers_equal;
        }
        writeln!(
            f,
            "| **all {} documents** | {resolved}/{refs} | {} | {equal}/{labels} | {} |",
            self.rows.len(),
            ratio(resolved, refs),
            ratio(equal, labels)
        )?;
        // Per class of feature, so that a regression in one shows though the total hides it.
        let mut classes: BTreeMap<&str, [usize; 5]> = BTreeMap::new();
        for r in &self.rows {
            let c = classes.entry(class_of(&r.name)).or_default();
            for (sum, add) in
                c.iter_mut()
                    .zip([1, r.resolved, r.references, r.numbers_equal, r.labels])
            {
                *sum += add;
            }
        }
        writeln!(
            f,
            "\n| class | documents | references resolved | ratio | numbers equal to LaTeX's | ratio |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|")?;
        for (class, [n, resolved, refs, equal, labels]) in &classes {
            writeln!(
                f,
                "| {class} | {n} | {resolved}/{refs} | {} | {equal}/{labels} | {} |",
                ratio(*resolved, *refs),
                ratio(*equal, *labels)
            )?;
        }
        for r in self.rows.iter().filter(|r| !r.misses.is_empty()) {
            let shown = if self.all_misses { r.misses.len() } else { 5 };
            writeln!(f, "\n{}:", r.name)?;
            for m in r.misses.iter().take(shown) {
                writeln!(f, "  {m}")?;
            }
            if r.misses.len() > shown {
                writeln!(f, "  … {} more (--misses)", r.misses.len() - shown)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aux_numbers_are_read_with_their_braces_balanced_and_spacing_dropped() {
        let aux = "\\relax\n\\newlabel{ch:1}{{\\M@TitleReference {1}{Chapter 1}}{3}}\n\\newlabel{sec:a}{{I\\,A}{1}{}{}{}}\n\\newlabel{eq:t}{{{*}}{2}}\n\\newlabel{eq:m}{{\\M@TitleReference {{*}}{First}}{3}}\n\\newlabel{eq:a}{{\\hbox {A1}}{3}}\n\\newlabel{sec:a@cref}{{[section][1][]I}{1}}\n\\newlabel{app}{{Appendix\\nobreakspace {}A}{4}}\n";
        let labels = aux_labels(aux);
        assert_eq!(labels["sec:a"], "IA");
        assert_eq!(labels["ch:1"], "1");
        assert_eq!(labels["eq:m"], "*");
        assert_eq!(labels["eq:t"], "*");
        assert_eq!(labels["eq:a"], "A1");
        assert_eq!(labels["app"], "A");
        assert!(!labels.contains_key("sec:a@cref"));
    }

    #[test]
    fn cases_fall_into_the_classes_of_the_report() {
        assert_eq!(
            class_of("latex-features/verbatim-whole-document"),
            "verbatim"
        );
        assert_eq!(class_of("latex-features/subfloats/subfig"), "sub-floats");
        assert_eq!(class_of("latex-features/displays"), "multi-line displays");
        assert_eq!(class_of("generated/gen-5k-1"), "generated documents");
        assert_eq!(class_of("paper-sympy/paper"), "real documents");
    }

    #[test]
    fn every_bundled_latex_document_resolves_and_numbers_like_latex() {
        let datasets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
        let cases = bundled_cases(&datasets, None);
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        for wanted in [
            "latex-features/verbatim-whole-document",
            "latex-features/subfloats/subcaption",
            "latex-features/subfloats/subfig",
            "latex-features/displays",
            "latex-features/classes/revtex4-2",
            "latex-features/encodings/latin1",
            "latex-features/papers/report-latin1-thesis",
            "paper-equational-theories/main",
            "generated/gen-5k-1",
        ] {
            assert!(names.contains(&wanted), "{wanted} not in {names:?}");
        }
        let rows = run(&cases).expect("every case reads");
        for r in &rows {
            assert!(r.labels > 0, "{}", r.name);
            assert_eq!(
                (r.resolved, r.numbers_equal),
                (r.references, r.labels),
                "{}: {:?}",
                r.name,
                r.misses
            );
        }
    }
}
