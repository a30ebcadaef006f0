//! What units introduce and use: defined terms and symbols (definition environments, "we
//! define", "let X denote", "X is called", `\emph` inside a definition, Markdown's "A *term* is
//! …", symbols defined with `:=`), and the antecedents of anaphors ("this approach", "these
//! results"). The rules judge's evidence and features of the learned judge.

use super::text::{judge_text, judgeable};
use ledger_core::{Document, UnitKind};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// Environments whose unit defines what it names.
pub(crate) const DEFINING_ENVS: &[&str] =
    &["definition", "defn", "def", "dfn", "notation", "convention"];

/// Words too generic to be a defined term on their own.
const GENERIC: &[&str] = &[
    "function",
    "functions",
    "set",
    "sets",
    "space",
    "map",
    "number",
    "value",
    "case",
    "result",
    "example",
    "following",
    "above",
    "proof",
    "lemma",
    "theorem",
    "type",
    "types",
    "element",
    "point",
    "points",
    "the",
    "this",
    "that",
    "and",
];

static EMPH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\(?:emph|textbf|textit|defn|define|term|intro)\{([^{}$]{3,60})\}").expect("valid")
});
/// Markdown's way of defining a term: "A *term* is …", "The **term** means …".
static MD_DEFINES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[.!?:]\s+|\*\*\s+)(?:An?|The) (?:\*\*|\*|_)([^*_\n]{3,60})(?:\*\*|\*|_) (?:is|are|means|denotes)\b")
        .expect("valid")
});
static CALLED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:is|are) (?:called|said to be|known as|referred to as) (?:an? |the )?([a-z][a-z\- ]{2,50}?)(?:[.,;:)]|\s+(?:if|when|of|for|and|with)\b)")
        .expect("valid")
});
static WE_DEFINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bwe (?:define|call|introduce|denote) (?:an? |the )?([a-z][a-z\- ]{2,50}?)(?:[.,;:(]|\s+(?:by|as|to be|of|for|if)\b|\s*\$)")
        .expect("valid")
});
/// `$X$ denotes`, `let $X$ be|denote`, `$X := …$`, `write $X$ for`.
static SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\blet\s+\$([^$]{1,30})\$\s+(?:be|denote)|\$([^$]{1,30})\$\s+denotes?\b|\bwrite\s+\$([^$]{1,30})\$\s+for\b|\$\s*([^$=:]{1,30}?)\s*(?::=|\\coloneqq|\\defeq)|\bdenote\b[^.$]{0,40}\bby\s+\$([^$]{1,30})\$)")
        .expect("valid")
});
/// A typed declaration in a definition: `$\op: G \times G \to G$`, `$f\colon X \to Y$`.
static DECLARED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\$\s*([^$=:,]{1,30}?)\s*(?::|\\colon)[^$]{0,60}?\\(?:to|rightarrow|longrightarrow)\b",
    )
    .expect("valid")
});
static MATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$([^$]{1,200})\$|\\\((.{1,200}?)\\\)").expect("valid"));
/// An anaphor at the start of a unit, with the kind word that names its antecedent.
static ANAPHOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\W*(?:[a-z]+\W+){0,6}?\b((?:this|these|that|those|the (?:above|preceding|previous|last)|such) (approach|method|metric|result|results|lemma|theorem|proposition|definition|construction|computation|estimate|bound|equation|identity|inequality|argument|algorithm|example|observation|claim|fact|procedure|setting|notation|formula|property|properties|case|figure|table))\b")
        .expect("valid")
});

/// Normalised form of a term: lower case, single spaces, no articles.
fn normalise(term: &str) -> String {
    let t = term.to_lowercase();
    let words: Vec<&str> = t
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty() && !matches!(*w, "a" | "an" | "the"))
        .collect();
    words.join(" ")
}

/// A symbol as written in math, without spaces (`T_{*}`, `\Mf`) but the one that ends a command
/// name before a letter (`\op z` is not `\opz`).
fn normalise_symbol(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut in_command, mut gap) = (false, false);
    for c in s.chars() {
        if c.is_whitespace() {
            gap = true;
            continue;
        }
        if gap && in_command && c.is_ascii_alphabetic() {
            out.push(' ');
        }
        gap = false;
        in_command = c == '\\' || (in_command && c.is_ascii_alphabetic());
        out.push(c);
    }
    out
}

/// Terms and symbols each unit introduces, and, per unit, what it uses of earlier introductions.
#[derive(Debug, Default)]
pub struct Introductions {
    /// Per unit: `(introducer, element)` pairs, introducer < unit, latest introducer per element.
    uses: Vec<Vec<(usize, String)>>,
}

/// What one unit introduces; `text` is its [`judge_text`].
fn introduced(u: &ledger_core::Unit, text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut terms = BTreeSet::new();
    let mut symbols = BTreeSet::new();
    if u.kind == UnitKind::Theorem && DEFINING_ENVS.contains(&u.env.as_str()) {
        if let Some(t) = u.title.as_deref() {
            terms.insert(normalise(t));
        }
        for c in EMPH.captures_iter(text) {
            terms.insert(normalise(&c[1]));
        }
        for c in DECLARED.captures_iter(text) {
            symbols.insert(normalise_symbol(&c[1]));
        }
    }
    for re in [&*CALLED, &*WE_DEFINE, &*MD_DEFINES] {
        for c in re.captures_iter(text) {
            terms.insert(normalise(&c[1]));
        }
    }
    for c in SYMBOL.captures_iter(text) {
        if let Some(m) = c.iter().skip(1).flatten().next() {
            symbols.insert(normalise_symbol(m.as_str()));
        }
    }
    terms.retain(|t| t.len() >= 4 && !GENERIC.contains(&t.as_str()));
    // One-letter symbols (x, T, K) are reused for everything: too weak a signal alone.
    symbols.retain(|s| s.chars().count() >= 2 && s.chars().any(char::is_alphabetic));
    (terms, symbols)
}

impl Introductions {
    /// Scans `doc` once: what every unit introduces, then, with one automaton pass per unit,
    /// which earlier introductions it uses.
    pub fn of(doc: &Document) -> Self {
        // What the judge sees of each unit (empty for units that are not judged).
        let texts: Vec<String> = doc
            .units
            .iter()
            .map(|u| {
                if judgeable(u) {
                    judge_text(&u.text)
                } else {
                    String::new()
                }
            })
            .collect();
        let mut term_units: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut symbol_units: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, u) in doc.units.iter().enumerate().filter(|(_, u)| judgeable(u)) {
            let (terms, symbols) = introduced(u, &texts[i]);
            for t in terms {
                term_units.entry(t).or_default().push(i);
            }
            for s in symbols {
                symbol_units.entry(s).or_default().push(i);
            }
        }
        let terms: Vec<(&String, &Vec<usize>)> = term_units.iter().collect();
        let symbols: Vec<(&String, &Vec<usize>)> = symbol_units.iter().collect();
        // Whole words: patterns and text padded with spaces; a plain plural counts as a use.
        let term_patterns: Vec<String> = terms
            .iter()
            .flat_map(|(t, _)| [format!(" {t} "), format!(" {t}s ")])
            .collect();
        let term_ac = aho_corasick::AhoCorasick::new(&term_patterns).ok();
        let symbol_ac =
            aho_corasick::AhoCorasick::new(symbols.iter().map(|(s, _)| s.as_str())).ok();
        let latest_before =
            |units: &[usize], i: usize| units.iter().rev().find(|&&j| j < i).copied();
        let uses = doc
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| {
                if !judgeable(u) {
                    return Vec::new();
                }
                let text = &texts[i];
                let padded = format!(" {} ", normalise(text));
                let math: String = MATH
                    .captures_iter(text)
                    .filter_map(|c| c.get(1).or_else(|| c.get(2)))
                    .map(|m| normalise_symbol(m.as_str()))
                    .collect::<Vec<_>>()
                    .join("\u{1}");
                let mut found: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
                if let Some(ac) = &term_ac {
                    for m in ac.find_overlapping_iter(&padded) {
                        let (t, units) = terms[m.pattern().as_usize() / 2];
                        if let Some(j) = latest_before(units, i) {
                            found.entry(j).or_default().insert(format!("term `{t}`"));
                        }
                    }
                }
                if let Some(ac) = &symbol_ac {
                    for m in ac.find_overlapping_iter(&math) {
                        let (s, units) = symbols[m.pattern().as_usize()];
                        // `\op` is not a use of `\operatorname`.
                        let cut_word = s.ends_with(|c: char| c.is_ascii_alphabetic())
                            && math[m.end()..].starts_with(|c: char| c.is_ascii_alphabetic());
                        if cut_word {
                            continue;
                        }
                        if let Some(j) = latest_before(units, i) {
                            found.entry(j).or_default().insert(format!("symbol `{s}`"));
                        }
                    }
                }
                found
                    .into_iter()
                    .flat_map(|(j, els)| els.into_iter().map(move |e| (j, e)))
                    .collect()
            })
            .collect();
        Introductions { uses }
    }

    /// What unit `i` uses of unit `j`'s introductions.
    pub fn used_by(&self, j: usize, i: usize) -> Vec<String> {
        self.uses
            .get(i)
            .map(|u| {
                u.iter()
                    .filter(|(k, _)| *k == j)
                    .map(|(_, e)| e.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// What unit `i` uses of earlier introductions: `(introducer, element)` pairs.
    pub fn uses_of(&self, i: usize) -> &[(usize, String)] {
        self.uses.get(i).map_or(&[], Vec::as_slice)
    }

    /// Earlier units that introduce something unit `i` uses, in document order.
    pub fn introducers_used_by(&self, i: usize) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .uses
            .get(i)
            .map(|u| u.iter().map(|(j, _)| *j).collect())
            .unwrap_or_default();
        out.dedup();
        out
    }
}

/// The antecedent of an anaphor opening unit `i`: the nearest earlier judgeable unit of the kind
/// the anaphor names (any kind for words such as "approach" or "computation").
pub(crate) fn antecedent(doc: &Document, i: usize) -> Option<(usize, String)> {
    let text = ledger_embed::summary::plain_text(&judge_text(&doc.units[i].text));
    let c = ANAPHOR.captures(&text)?;
    let (phrase, noun) = (c[1].to_lowercase(), c[2].to_lowercase());
    let wanted: Option<&[&str]> = match noun.trim_end_matches('s') {
        "lemma" => Some(&["lemma"]),
        "theorem" => Some(&["theorem"]),
        "proposition" => Some(&["proposition"]),
        "definition" => Some(&["definition", "defn", "def"]),
        "equation" | "identity" | "inequality" | "formula" => None,
        _ => None,
    };
    let kind_wanted = match noun.trim_end_matches('s') {
        "equation" | "identity" | "inequality" | "formula" => Some(UnitKind::Equation),
        "figure" => Some(UnitKind::Figure),
        "table" => Some(UnitKind::Table),
        "algorithm" => Some(UnitKind::Algorithm),
        _ => None,
    };
    (0..i)
        .rev()
        .filter(|&j| judgeable(&doc.units[j]) && doc.units[i].parent != Some(j))
        .find(|&j| {
            let u = &doc.units[j];
            match (wanted, kind_wanted) {
                (Some(envs), _) => envs.contains(&u.env.as_str()),
                (None, Some(k)) => u.kind == k,
                (None, None) => !matches!(u.kind, UnitKind::Listing),
            }
        })
        .map(|j| (j, format!("anaphor `{phrase}`")))
}
