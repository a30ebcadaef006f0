//! Prose mentions: "Section 3.2", "Fig. 5(a)", "Eq. (1)", "Theorems 2 and 3", "Listing 7-3", "§3.2".
//!
//! The span of each mention is minimal: the first number of a list carries the
//! word ("Sections 2"), later numbers only themselves ("3").
//!
//! A mention that names a unit of another work is marked external: a citation follows it
//! ("Theorem 2 \cite{x}", "Sections 5 and 6 of the blueprint \cite{x}", "Lemma 3 in [12]") or
//! precedes it ("\cite{x}, Theorem 2", "[12, Section 3]"), it is "of"/"in" a link to another
//! site, or "of"/"in" a work the document cites by name elsewhere ("the blueprint \cite{x}"
//! makes "Section 6 of the blueprint" external: [`cited_works`]).

use regex::Regex;
use std::sync::LazyLock;

/// One number named in prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProseMention {
    /// Start byte of the minimal span, relative to the scanned text.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
    /// Family the word names: `section`, `chapter`, `part`, `appendix`, `figure`, `table`,
    /// `equation`, `algorithm`, `listing`, or a theorem-like name (`theorem`, `lemma` …).
    pub family: String,
    /// The number as printed ("3.2", "7-3", "A.1").
    pub number: String,
    /// Why it names a unit of another work, when it does.
    pub external: Option<&'static str>,
}

const WORDS: &str = r"Sections?|Secs?\.|Chapters?|Chaps?\.|Ch\.|Parts?|Appendix|Appendices|App\.|Figures?|Figs?\.|Tables?|Tabs?\.|Equations?|Eqns?\.|Eqs?\.|Theorems?|Thms?\.|Lemmas?|Lemmata|Definitions?|Defs?\.|Corollary|Corollaries|Cors?\.|Propositions?|Props?\.|Remarks?|Examples?|Exercises?|Algorithms?|Algs?\.|Listings?|Conjectures?|Claims?|Axioms?|Assumptions?|Hypothes[ie]s|Observations?|Problems?|Notations?|Facts?";

/// A number: `3`, `3.2`, `7-3`, `A`, `A.1`, `(3)`, `(2.1)`, `5(a)`.
const NUM: &str = r"\(?(?:[A-Z](?:\.[0-9]+)*(?-u:\b)|[0-9]+(?:[.\-][0-9]+)*)(?:\([a-z]\))?\)?";

static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    // ASCII classes and case folding keep the automaton small (captures are cheap, the DFA stays lazy).
    let sep = r"(?:(?-u:\s)*(?:,(?-u:\s)*(?:and|or)?|and|or|&|\\&|–|—|--|to|through)(?-u:\s)*)";
    let pattern = format!(
        r"(?P<word>(?-u:\b)(?i-u:{WORDS})|§§?)(?P<gap>(?:(?-u:\s)|~|\\ |\\,|\\nobreakspace\{{\}}|\u{{a0}})*)(?P<list>{NUM}(?:{sep}{NUM})*)"
    );
    Regex::new(&pattern).expect("prose regex is valid")
});

/// A citation beginning: `\cite…`, `\parencite`, `[12]`, `[@key]`.
static CITATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\\[a-zA-Z]*cite[a-zA-Z]*|\[(?:@|[0-9]+(?:[,;\]]|\s*[,;]?\s*[0-9]+)))")
        .expect("citation regex is valid")
});

/// A citation anywhere in a short clause.
static CITATION_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\[a-zA-Z]*cite[a-zA-Z]*|\[(?:@[A-Za-z]|[0-9]+(?:\s*,\s*[0-9]+)*\])")
        .expect("citation regex is valid")
});

/// A citation command just before a mention: `\cite{x}, ` or `\cite[p. 3]{x} `.
static CITATION_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\\[a-zA-Z]*cite[a-zA-Z]*\*?(?:\[[^\]]*\])*\{[^}]*\}|\[(?:@[A-Za-z][\w:.-]*|[0-9]+(?:\s*,\s*[0-9]+)*)\s*,)[\s~,]*$")
        .expect("citation regex is valid")
});

/// "our" or "this" just before a mention: the document's own.
static OURS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:our|this|these|the present)\s*$").expect("ours regex is valid")
});

/// "of", "in" or "from" and what follows.
static OF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:of|in|from)\s+").expect("of regex is valid"));

/// A Markdown link to another site: `[the Reference](https://…)`.
static SITE_LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[Tt]he\s+)?\[[^\]]{1,100}\]\([a-zA-Z][a-zA-Z0-9+.-]*://")
        .expect("link regex is valid")
});

/// A work cited by a definite description: "the blueprint \cite{x}".
static CITED_WORK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i-u:\bthe)\s+((?:[A-Za-z][A-Za-z-]*\s+){0,2}[A-Za-z][A-Za-z-]*)\s*~?\\[a-zA-Z]*cite",
    )
    .expect("cited work regex is valid")
});

/// The works `text` cites by a definite description ("the blueprint \cite{x}" gives
/// `blueprint`), lower case, words separated by one space; sorted, without duplicates.
pub fn cited_works(text: &str) -> Vec<String> {
    let mut works: Vec<String> = CITED_WORK
        .captures_iter(text)
        .filter_map(|c| {
            let name = c[1].split_whitespace().collect::<Vec<_>>().join(" ");
            let name = name.to_ascii_lowercase();
            // "the following \cite", "the same \cite": not names.
            let first = name.split(' ').next().unwrap_or_default();
            let generic = matches!(
                first,
                "following"
                    | "same"
                    | "above"
                    | "below"
                    | "original"
                    | "literature"
                    | "references"
                    | "reference"
            ) || family(first).is_some();
            (!generic).then_some(name)
        })
        .collect();
    works.sort();
    works.dedup();
    works
}

/// Why the mention list at `start..end` of `text` names units of another work, if it does.
fn external(text: &str, start: usize, end: usize, works: &[String]) -> Option<&'static str> {
    let mut cut = (end + 200).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let after = text[end..cut].trim_start_matches([' ', '\t', '\n', '\r', '~', '\u{a0}']);
    if CITATION.is_match(after) {
        return Some("a citation follows it");
    }
    if let Some(of) = OF.find(after) {
        // The clause: up to the end of the sentence or a parenthesis, at most 100 bytes.
        let rest = &after[of.end()..];
        let mut stop = rest
            .find(['.', ';', ':', '!', '?', '(', ')'])
            .unwrap_or(rest.len())
            .min(rest.find("\n\n").unwrap_or(rest.len()));
        // A citation's key may hold dots: "\cite{a.b}" ends the clause after it.
        if let Some(c) = CITATION_IN.find(rest)
            && c.start() < stop.min(100)
        {
            return Some("\"of\" or \"in\" a cited work");
        }
        stop = stop.min(100);
        while !rest.is_char_boundary(stop) {
            stop -= 1;
        }
        let clause = &rest[..stop];
        if SITE_LINK.is_match(rest) {
            return Some("\"of\" or \"in\" a link to another site");
        }
        if let Some(described) = clause
            .strip_prefix("the ")
            .or_else(|| clause.strip_prefix("The "))
        {
            let words = described
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase();
            let named = works.iter().any(|w| {
                words.strip_prefix(w.as_str()).is_some_and(|r| {
                    !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                })
            });
            if named {
                return Some("\"of\" or \"in\" a work the document cites by that name");
            }
        }
    }
    let mut from = start.saturating_sub(200);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    CITATION_BEFORE
        .is_match(&text[from..start])
        .then_some("a citation precedes it")
}

static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(NUM).expect("number regex is valid"));

/// The family a prose word names, or `None` when the word is not a reference word.
pub fn family(word: &str) -> Option<&'static str> {
    let w = word.trim_end_matches('.').to_ascii_lowercase();
    let w = w.as_str();
    Some(match w {
        _ if w.starts_with("§") => "section",
        "section" | "sections" | "sec" | "secs" => "section",
        "chapter" | "chapters" | "chap" | "chaps" | "ch" => "chapter",
        "part" | "parts" => "part",
        "appendix" | "appendices" | "app" => "appendix",
        "figure" | "figures" | "fig" | "figs" => "figure",
        "table" | "tables" | "tab" | "tabs" => "table",
        "equation" | "equations" | "eq" | "eqs" | "eqn" | "eqns" => "equation",
        "theorem" | "theorems" | "thm" | "thms" => "theorem",
        "lemma" | "lemmas" | "lemmata" => "lemma",
        "definition" | "definitions" | "def" | "defs" => "definition",
        "corollary" | "corollaries" | "cor" | "cors" => "corollary",
        "proposition" | "propositions" | "prop" | "props" => "proposition",
        "remark" | "remarks" => "remark",
        "example" | "examples" => "example",
        "exercise" | "exercises" => "exercise",
        "algorithm" | "algorithms" | "alg" | "algs" => "algorithm",
        "listing" | "listings" => "listing",
        "conjecture" | "conjectures" => "conjecture",
        "claim" | "claims" => "claim",
        "axiom" | "axioms" => "axiom",
        "assumption" | "assumptions" => "assumption",
        "hypothesis" | "hypotheses" => "hypothesis",
        "observation" | "observations" => "observation",
        "problem" | "problems" => "problem",
        "notation" | "notations" => "notation",
        "fact" | "facts" => "fact",
        _ => return None,
    })
}

/// Finds every prose mention in `text`, marking those that name units of other works (`works`:
/// the document's [`cited_works`]). Offsets are relative to `text`.
pub fn find(text: &str, works: &[String]) -> Vec<ProseMention> {
    let mut out = Vec::new();
    // Families this text has named in another work: later bare mentions of them ("Section~5
    // gives…" after "Section~7 of the blueprint") go on about that work.
    let mut elsewhere: Vec<&'static str> = Vec::new();
    // Find matches with the lazy DFA, then take groups from the match alone: capturing over a
    // whole paragraph makes the regex engine clear a visited set as large as the paragraph each time.
    for whole in PROSE.find_iter(text) {
        let base = whole.start();
        let Some(caps) = PROSE.captures(whole.as_str()) else {
            continue;
        };
        let (Some(word), Some(list)) = (caps.name("word"), caps.name("list")) else {
            continue;
        };
        let Some(fam) = family(word.as_str()) else {
            continue;
        };
        // A lower-case word must be the plain word ("section 3"), not an abbreviation like "eq. 3" mid-sentence
        // only when it is followed by a digit; letters alone ("part A") are too ambiguous in lower case.
        let lower = word
            .as_str()
            .chars()
            .next()
            .is_some_and(|c| c.is_lowercase());
        let gap = caps.name("gap").map_or("", |g| g.as_str());
        if gap.is_empty() && !word.as_str().starts_with('§') {
            continue;
        }
        // The number list must end at a word boundary: "Section 3rd", "Table 2x" are not mentions.
        let after = text[base + list.end()..].chars().next();
        if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut numbers: Vec<(usize, usize, String)> = Vec::new();
        let mut prev_end: Option<usize> = None;
        for m in NUMBER.find_iter(list.as_str()) {
            let (s, e) = (
                base + list.start() + m.start(),
                base + list.start() + m.end(),
            );
            let raw = m.as_str();
            let number = normalise(raw, fam);
            if number.is_empty() || (lower && !number.starts_with(|c: char| c.is_ascii_digit())) {
                continue;
            }
            // In lower case, "(3)" after a word other than "equation" is an aside, not a reference.
            if lower && raw.starts_with('(') && fam != "equation" {
                continue;
            }
            // "sections 3-9": a hyphen between integers is a range for sections, chapters and parts.
            if matches!(fam, "section" | "chapter" | "part")
                && let Some((a, b)) = number.split_once('-')
                && a.parse::<u32>().is_ok()
                && b.parse::<u32>().is_ok()
            {
                let first = a.to_string();
                numbers.push((s, s + a.len(), first.clone()));
                for mid in range_between(&first, b) {
                    numbers.push((s, e, mid));
                }
                numbers.push((s + a.len() + 1, e, b.to_string()));
                prev_end = Some(e);
                continue;
            }
            if fam != "appendix"
                && number.chars().all(|c| c.is_ascii_uppercase())
                && number.len() == 1
                && fam != "part"
            {
                // "Figure A" is rare; a lone capital after a non-appendix word is usually prose ("Table A lists").
                continue;
            }
            // A range "3–5" expands to 3, 4, 5 when both ends are plain integers with the same prefix.
            if let Some(pe) = prev_end {
                let between = &text[pe..s];
                if (between.contains('–')
                    || between.contains("--")
                    || between.contains("to")
                    || between.contains("through"))
                    && let Some((prev_s, _, prev_num)) = numbers.last().cloned()
                {
                    for mid in range_between(&prev_num, &number) {
                        numbers.push((prev_s, e, mid));
                    }
                }
            }
            numbers.push((s, e, number));
            prev_end = Some(e);
        }
        let start = base + word.start();
        let external = match numbers.last() {
            Some(&(_, end, _)) => external(text, start, end, works).or_else(|| {
                (elsewhere.contains(&fam) && !OURS.is_match(&text[..start]))
                    .then_some("the passage is about another work's numbering")
            }),
            None => None,
        };
        if external.is_some() && !elsewhere.contains(&fam) {
            elsewhere.push(fam);
        }
        for (i, (s, e, number)) in numbers.into_iter().enumerate() {
            let start = if i == 0 { base + word.start() } else { s };
            out.push(ProseMention {
                start,
                end: e,
                family: fam.to_string(),
                number,
                external,
            });
        }
    }
    out
}

/// Strips parentheses and a sub-figure letter: "(3.1)" → "3.1", "5(a)" → "5".
fn normalise(raw: &str, family: &str) -> String {
    let mut s = raw.trim();
    if let Some(idx) = s.find("(")
        && idx > 0
    {
        s = &s[..idx];
    }
    let s = s.trim_start_matches('(').trim_end_matches(')');
    let _ = family;
    s.to_string()
}

/// The numbers strictly between `a` and `b` when both are `P.n` with the same prefix P (at most 50).
fn range_between(a: &str, b: &str) -> Vec<String> {
    let split = |x: &str| -> Option<(String, u32)> {
        let (prefix, last) = match x.rfind(['.', '-']) {
            Some(i) => (x[..=i].to_string(), &x[i + 1..]),
            None => (String::new(), x),
        };
        Some((prefix, last.parse().ok()?))
    };
    match (split(a), split(b)) {
        (Some((pa, na)), Some((pb, nb))) if pa == pb && na < nb && nb - na <= 50 => {
            ((na + 1)..nb).map(|n| format!("{pa}{n}")).collect()
        }
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String, String)> {
        find(text, &[])
            .into_iter()
            .map(|m| (text[m.start..m.end].to_string(), m.family, m.number))
            .collect()
    }

    fn t(span: &str, fam: &str, num: &str) -> (String, String, String) {
        (span.into(), fam.into(), num.into())
    }

    #[test]
    fn single_mentions() {
        assert_eq!(
            found("see Section 3.2 for"),
            vec![t("Section 3.2", "section", "3.2")]
        );
        assert_eq!(found("in Sec. 3,"), vec![t("Sec. 3", "section", "3")]);
        assert_eq!(found("by §3.2."), vec![t("§3.2", "section", "3.2")]);
        assert_eq!(
            found("Chapter 4 shows"),
            vec![t("Chapter 4", "chapter", "4")]
        );
        assert_eq!(
            found("Fig. 5(a) plots"),
            vec![t("Fig. 5(a)", "figure", "5")]
        );
        assert_eq!(found("Eq. (1) gives"), vec![t("Eq. (1)", "equation", "1")]);
        assert_eq!(
            found("Equation (2.3)"),
            vec![t("Equation (2.3)", "equation", "2.3")]
        );
        assert_eq!(
            found("by Theorem~2.1,"),
            vec![t("Theorem~2.1", "theorem", "2.1")]
        );
        assert_eq!(
            found("Listing 7-3 shows"),
            vec![t("Listing 7-3", "listing", "7-3")]
        );
        assert_eq!(
            found("Appendix A lists"),
            vec![t("Appendix A", "appendix", "A")]
        );
        assert_eq!(
            found("Algorithm 1."),
            vec![t("Algorithm 1", "algorithm", "1")]
        );
    }

    #[test]
    fn lists_and_ranges() {
        assert_eq!(
            found("Sections 2 and 3"),
            vec![t("Sections 2", "section", "2"), t("3", "section", "3")]
        );
        assert_eq!(
            found("Figures 3–5"),
            vec![
                t("Figures 3", "figure", "3"),
                t("3–5", "figure", "4"),
                t("5", "figure", "5")
            ]
        );
        assert_eq!(
            found("Lemmas 2.1, 2.2"),
            vec![t("Lemmas 2.1", "lemma", "2.1"), t("2.2", "lemma", "2.2")]
        );
        assert_eq!(
            found("sections 3-5"),
            vec![
                t("sections 3", "section", "3"),
                t("3-5", "section", "4"),
                t("5", "section", "5")
            ]
        );
    }

    /// The mentions found in `text` with whether each is external.
    fn externals(text: &str, works: &[&str]) -> Vec<(String, bool)> {
        let works: Vec<String> = works.iter().map(|w| w.to_string()).collect();
        find(text, &works)
            .into_iter()
            .map(|m| (text[m.start..m.end].to_string(), m.external.is_some()))
            .collect()
    }

    #[test]
    fn mentions_of_other_works_are_external() {
        let ext = |text: &str| externals(text, &[]).iter().all(|(_, e)| *e);
        assert!(ext(
            r"The proof is in Sections 5, 6 and 7 of the blueprint \cite{CarlesonBlueprint};"
        ));
        assert!(ext(r"by Theorem~2.1 \cite{rudin} we"));
        assert!(ext(r"see Lemma 3 in [12] and"));
        assert!(ext(r"as in \cite[p. 4]{knuth}, Theorem 3 gives"));
        assert!(ext(r"from [12, Theorem 2] it follows"));
        assert!(ext(r"by [@smith2020, Section 3],"));
        assert!(ext(
            r"Chapter 4 of [the Reference](https://example.org/ref) says"
        ));
        assert!(ext(r"Lemma 2 of our earlier paper \cite{a.b} holds."));
        // "of the blueprint" without a citation: external when the document cites it so.
        let text = "The main result of Section~6 of the blueprint gives";
        assert_eq!(
            externals(text, &["blueprint"]),
            vec![("Section~6".into(), true)]
        );
        assert_eq!(externals(text, &[]), vec![("Section~6".into(), false)]);
        assert!(
            externals("chapters 2 through 7 of the blueprint: a", &["blueprint"])
                .iter()
                .all(|(_, e)| *e)
        );
        // The rest of a passage about another work's sections, unless "our".
        assert_eq!(
            externals(
                r"Section~7 of the blueprint \cite{b} does this. Section~5 gives that; our Section 2 shows it.",
                &[]
            ),
            vec![
                ("Section~7".into(), true),
                ("Section~5".into(), true),
                ("Section 2".into(), false)
            ]
        );
        // Ours.
        let ours = |text: &str| externals(text, &["blueprint"]).iter().all(|(_, e)| !*e);
        assert!(ours(
            "By Theorem 2 of Section 3, and Lemma 4 in the proof of Theorem 5."
        ));
        assert!(ours(r"Section 3 of this paper. \cite{x} shows"));
        assert!(ours(
            "In Chapter 4, in the [Dangling References][dangling] section"
        ));
        assert!(ours("Chapter 4 of [the book](ch04-00.md) says"));
        assert!(ours("Theorem 2 in the blueprints folder"));
    }

    #[test]
    fn cited_works_are_named_by_their_description() {
        assert_eq!(
            cited_works(
                r"the blueprint \cite{B}, the Lean blueprint~\citep{C} and the following \cite{D}; see the Theorem \cite{E}"
            ),
            vec!["blueprint".to_string(), "lean blueprint".into()]
        );
    }

    #[test]
    fn non_mentions() {
        assert!(found("the table 2x").is_empty());
        assert!(found("Section 3rd").is_empty());
        assert!(found("Table A lists").is_empty());
        assert!(found("a Theorem about").is_empty());
        assert!(found("Figure4").is_empty());
        assert!(found("reference definitions (332 with").is_empty());
    }
}
