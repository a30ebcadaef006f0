//! An independent check of a generated document's references after an edit: its printed
//! numbers ("Section 3", "Lemma 2", "Eq. (4)") and `\ref`s resolved to labels by numbering the
//! LaTeX as LaTeX does (one counter per environment, in source order); in Markdown, links
//! `[…](#anchor)` resolved to `{#anchor}` and `<a id>`. It shares no code with the parser, so an
//! edit that LEDGER verified can be held against it.

use ledger_core::Format;
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// A reference in a source: where it starts and the label it names (`None`: it names nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Byte offset of the mention.
    pub at: usize,
    /// The label of the unit it names.
    pub target: Option<String>,
}

static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\\section\{|\\begin\{(definition|lemma|theorem|equation|figure|table|algorithm)\}",
        r"|\\label\{([^}]*)\}|\\ref\{([^}]*)\}",
        r"|\b(Section|Definition|Lemma|Theorem|Figure|Table|Algorithm) (\d+)\b|Eq\. \((\d+)\)",
    ))
    .expect("valid pattern")
});

static MD_ANCHOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"\{#([^}\s]+)\}|<a id="([^"]+)"></a>"#).expect("valid pattern"));
static MD_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\]\(#([^)\s]+)\)").expect("valid pattern"));

/// Every reference of a generated source in order, resolved.
pub fn references(source: &str, format: Format) -> Vec<Resolved> {
    if format != Format::Latex {
        let anchors: HashMap<&str, ()> = MD_ANCHOR
            .captures_iter(source)
            .filter_map(|c| c.get(1).or_else(|| c.get(2)))
            .map(|m| (m.as_str(), ()))
            .collect();
        return MD_LINK
            .captures_iter(source)
            .map(|c| Resolved {
                at: c.get(0).map_or(0, |m| m.start()),
                target: anchors.contains_key(&c[1]).then(|| c[1].to_string()),
            })
            .collect();
    }
    let body = source.find("\\begin{document}").unwrap_or(0);
    // First pass: the number each label prints.
    let mut counters: HashMap<&str, usize> = HashMap::new();
    let mut pending: Option<(&str, usize)> = None;
    let mut numbered: HashMap<(&str, usize), String> = HashMap::new();
    let mut labels: HashMap<&str, ()> = HashMap::new();
    for c in TOKEN.captures_iter(&source[body..]) {
        let whole = c.get(0).map_or("", |m| m.as_str());
        let env = if whole.starts_with("\\section") {
            Some("section")
        } else {
            c.get(1).map(|m| m.as_str())
        };
        if let Some(env) = env {
            let n = counters.entry(env).or_insert(0);
            *n += 1;
            pending = Some((env, *n));
        } else if let Some(label) = c.get(2) {
            labels.insert(label.as_str(), ());
            if let Some(key) = pending.take() {
                numbered.insert(key, label.as_str().to_string());
            }
        }
    }
    // Second pass: the references.
    let mut out = Vec::new();
    for c in TOKEN.captures_iter(&source[body..]) {
        let at = body + c.get(0).map_or(0, |m| m.start());
        let target = if let Some(key) = c.get(3) {
            labels
                .contains_key(key.as_str())
                .then(|| key.as_str().to_string())
        } else if let (Some(word), Some(n)) = (c.get(4), c.get(5)) {
            let env = word.as_str().to_lowercase();
            let n: usize = n.as_str().parse().unwrap_or(0);
            numbered.get(&(env.as_str(), n)).cloned()
        } else if let Some(n) = c.get(6) {
            let n: usize = n.as_str().parse().unwrap_or(0);
            numbered.get(&("equation", n)).cloned()
        } else {
            continue;
        };
        out.push(Resolved { at, target });
    }
    out
}

/// How many references of `before` still name the same unit in `after`, in order (the edit
/// must neither add nor remove references); `renamed` maps a label renamed by the edit.
pub fn still_valid(
    before: &[Resolved],
    after: &[Resolved],
    renamed: Option<(&str, &str)>,
) -> usize {
    if before.len() != after.len() {
        return 0;
    }
    before
        .iter()
        .zip(after)
        .filter(|(b, a)| {
            let Some(want) = &b.target else { return false };
            let want = match renamed {
                Some((old, new)) if want == old => new,
                _ => want.as_str(),
            };
            a.target.as_deref() == Some(want)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_numbers_follow_the_counters_and_refs_their_labels() {
        let src = "\\begin{document}\n\\section{A}\\label{sec:a}\n\\section{B}\\label{sec:b}\n\
                   \\begin{lemma}\\label{lem:x}\nx\n\\end{lemma}\n\
                   \\begin{equation}\\label{eq:y}\ny\n\\end{equation}\n\
                   See Section 2, Lemma 1, Eq. (1), Lemma~\\ref{lem:x}, Section 3 and \\ref{nope}.";
        let resolved = references(src, Format::Latex);
        let got: Vec<Option<&str>> = resolved.iter().map(|r| r.target.as_deref()).collect();
        assert_eq!(
            got,
            [
                Some("sec:b"),
                Some("lem:x"),
                Some("eq:y"),
                Some("lem:x"),
                None,
                None
            ]
        );
        let shifted = src.replace("\\section{A}", "\\section{New}\\label{sec:n}\n\\section{A}");
        let after = references(&shifted, Format::Latex);
        // "Section 2" now names sec:a: one reference broke.
        assert_eq!(
            still_valid(&references(src, Format::Latex), &after, None),
            3
        );
        let md = "## A {#sec-a}\n\n<a id=\"lem-1\"></a>**Lemma 1.** x\n\nSee [A](#sec-a), [Lemma 1](#lem-1), [gone](#nope).";
        let got: Vec<Option<String>> = references(md, Format::Markdown)
            .into_iter()
            .map(|r| r.target)
            .collect();
        assert_eq!(got, [Some("sec-a".into()), Some("lem-1".into()), None]);
    }
}
