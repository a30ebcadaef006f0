//! Type-specific summaries, the text that gets embedded (offline, extractive).
//!
//! Following the protocol: a section gives its main claim and key concepts (50–100 tokens, no
//! structural phrases or citations); a paragraph its central idea (30–50 tokens); a figure or table
//! its caption, prefixed with the kind; an equation the explanation around it, else the kind of
//! equation (20–40 tokens). Lengths are counted in words here (≈ 0.75 tokens per word).

use ledger_core::UnitKind;
use regex::Regex;
use std::sync::LazyLock;

/// What the summarizer needs to know about a unit.
#[derive(Debug, Clone, Copy)]
pub struct SummaryInput<'a> {
    /// Coarse kind.
    pub kind: UnitKind,
    /// Fine kind (`lemma`, `align`, `h2` …).
    pub env: &'a str,
    /// Title or caption.
    pub title: Option<&'a str>,
    /// The unit's own source text.
    pub text: &'a str,
    /// For sections: the text of their first paragraphs; for equations: the paragraph before.
    pub context: &'a str,
}

/// Markup removed: LaTeX commands (their brace arguments kept as words), math delimiters,
/// Markdown punctuation, HTML tags, comments; whitespace collapsed.
pub fn plain_text(source: &str) -> String {
    static COMMENT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)(^|[^\\])%.*$").expect("valid"));
    static DROP_ARG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\\(?:label|ref|eqref|cref|Cref|autoref|pageref|cite[a-zA-Z]*|uses|lean|index|includegraphics|input|include)\*?(?:\[[^\]]*\])*\{[^}]*\}")
            .expect("valid")
    });
    static CMD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\\(?:begin|end)\{[^}]*\}|\\[A-Za-z@]+\*?|\\.").expect("valid")
    });
    static HTML: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"<[^>]{1,200}>|\{\{#[^}]*\}\}").expect("valid"));
    static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\([^)]*\)").expect("valid"));
    let s = COMMENT.replace_all(source, "$1");
    let s = DROP_ARG.replace_all(&s, " ");
    let s = HTML.replace_all(&s, " ");
    let s = LINK.replace_all(&s, "]");
    let s = CMD.replace_all(&s, " ");
    let cleaned: String = s
        .chars()
        .map(|c| if "{}$&_^#*`|[]~".contains(c) { ' ' } else { c })
        .collect();
    let collapsed = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    // What removed arguments leave behind: "L( )", "by ,".
    collapsed
        .replace("( )", "")
        .replace(" ,", ",")
        .replace(" .", ".")
        .replace("  ", " ")
}

/// Sentences of plain text (split after `.`, `?`, `!` followed by a space and a capital).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    for i in 0..b.len() {
        if matches!(b[i], b'.' | b'?' | b'!')
            && b.get(i + 1) == Some(&b' ')
            && b.get(i + 2).is_some_and(u8::is_ascii_uppercase)
        {
            out.push(text[start..=i].trim());
            start = i + 2;
        }
    }
    if start < text.len() {
        out.push(text[start..].trim());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Whole sentences up to `max` words (at least the first sentence, cut at `max` words).
fn take_words(text: &str, max: usize) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in sentences(text) {
        let words: Vec<&str> = s.split_whitespace().collect();
        if !out.is_empty() && out.len() + words.len() > max {
            break;
        }
        out.extend(words.into_iter().take(max - out.len()));
        if out.len() >= max {
            break;
        }
    }
    out.join(" ")
}

/// Whether a summary says enough to relate it to anything: at least four words of four letters or more
/// ("Example: Should be written as:" does not).
fn has_content(summary: &str) -> bool {
    summary
        .split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphanumeric()).count() > 3)
        .count()
        >= 4
}

/// The last sentences of `text`, up to `max` words.
fn last_words(text: &str, max: usize) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in sentences(text).into_iter().rev() {
        let words: Vec<&str> = s.split_whitespace().collect();
        if !out.is_empty() && out.len() + words.len() > max {
            break;
        }
        let keep = words.len().min(max - out.len());
        let mut merged: Vec<&str> = words[words.len() - keep..].to_vec();
        merged.extend(out);
        out = merged;
        if out.len() >= max {
            break;
        }
    }
    out.join(" ")
}

/// Phrases that describe structure rather than content ("In this section we").
fn drop_structural(text: &str) -> String {
    static STRUCTURAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(in this (section|chapter|paper|part)(,? we)?|this (section|chapter) (is|will|we)|we (now )?(turn to|begin|start)|as (mentioned|shown|discussed) (above|below|earlier))\b,?").expect("valid")
    });
    STRUCTURAL
        .replace_all(text, "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes the summaries that get embedded. Implementations: [`Extractive`] (offline default) and
/// the LLM summarizer of `ledger-llm`.
pub trait Summarizer: Send + Sync {
    /// Recorded with every summary; with the input hash, the cache key of a summary.
    fn name(&self) -> &str;
    /// One summary per input, in order; an empty summary means "not worth embedding". A failed
    /// unit is an `Err` in its own slot, so one bad answer does not sink the others.
    fn summarize(&self, inputs: &[SummaryInput<'_>]) -> Vec<Result<String, crate::EmbedError>>;
}

/// The offline extractive summarizer ([`summarize`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

/// Name of the offline summarizer; bump the suffix whenever its output changes.
pub const EXTRACTIVE: &str = "extractive-v1";

impl Summarizer for Extractive {
    fn name(&self) -> &str {
        EXTRACTIVE
    }

    fn summarize(&self, inputs: &[SummaryInput<'_>]) -> Vec<Result<String, crate::EmbedError>> {
        // The units of one large document use every core too (documents already do).
        use rayon::prelude::*;
        inputs.par_iter().map(|u| Ok(summarize(u))).collect()
    }
}

/// blake3 of everything a summarizer reads about a unit: the summary cache key (with its name).
pub fn input_hash(u: &SummaryInput) -> String {
    let mut bytes = Vec::with_capacity(u.text.len() + u.context.len() + 64);
    for part in [
        u.kind.as_str(),
        u.env,
        u.title.unwrap_or_default(),
        u.text,
        u.context,
    ] {
        bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
        bytes.extend_from_slice(part.as_bytes());
    }
    ledger_core::content_hash(&bytes)
}

/// The offline summary of one unit.
pub fn summarize(u: &SummaryInput) -> String {
    let text = plain_text(u.text);
    let title = u.title.map(plain_text).unwrap_or_default();
    match u.kind {
        UnitKind::Section | UnitKind::Document => {
            let body = drop_structural(&plain_text(u.context));
            let claim = take_words(&body, 60);
            let summary = if title.is_empty() {
                claim
            } else {
                format!("{title}: {claim}")
            };
            if has_content(&summary) {
                summary
            } else {
                String::new()
            }
        }
        UnitKind::Paragraph | UnitKind::Proof => {
            // "Should be written as:" has too little content to relate to anything.
            let idea = take_words(&drop_structural(&text), 40);
            if has_content(&idea) {
                idea
            } else {
                String::new()
            }
        }
        UnitKind::Theorem => {
            let head = if title.is_empty() {
                u.env.to_string()
            } else {
                format!("{} ({title})", u.env)
            };
            format!("{head}: {}", take_words(&text, 50))
        }
        UnitKind::Figure | UnitKind::Table | UnitKind::Algorithm | UnitKind::Listing => {
            let prefix = match u.kind {
                UnitKind::Figure => "figure showing",
                UnitKind::Table => "table comparing",
                UnitKind::Algorithm => "algorithm for",
                _ => "code listing:",
            };
            // Code carries no caption-like prose: a listing without a caption is not summarised
            // (its code would make every uncaptioned listing look alike).
            let caption = if !title.is_empty() {
                take_words(&title, 75)
            } else if u.kind == UnitKind::Listing {
                String::new()
            } else {
                take_words(&text, 30)
            };
            if caption.is_empty() {
                String::new()
            } else {
                format!("{prefix} {caption}")
            }
        }
        UnitKind::Equation => {
            // The explanation just before the display. Without one the unit is not summarised:
            // bare symbols (or the kind alone) would make unrelated equations look alike.
            let around = last_words(&drop_structural(&plain_text(u.context)), 30);
            if around.is_empty() {
                String::new()
            } else {
                format!("equation: {around}")
            }
        }
        UnitKind::Bibitem => take_words(&title, 30),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(
        kind: UnitKind,
        text: &'a str,
        title: Option<&'a str>,
        context: &'a str,
    ) -> SummaryInput<'a> {
        SummaryInput {
            kind,
            env: "lemma",
            title,
            text,
            context,
        }
    }

    #[test]
    fn plain_text_drops_markup() {
        assert_eq!(
            plain_text(r"By \cref{thm:x}, the \emph{loss} $L(\theta)$ is convex. % note"),
            "By, the loss L is convex."
        );
        assert_eq!(
            plain_text("See [the guide](a.md#x) and `code`."),
            "See the guide and code."
        );
    }

    #[test]
    fn kinds_get_their_protocol() {
        let fig = summarize(&input(
            UnitKind::Figure,
            "",
            Some("Throughput of the parser. More detail here."),
            "",
        ));
        assert!(
            fig.starts_with("figure showing Throughput of the parser."),
            "{fig}"
        );
        assert_eq!(
            summarize(&input(
                UnitKind::Listing,
                "```rust\nfn main() {}\n```",
                None,
                ""
            )),
            ""
        );
        assert_eq!(
            summarize(&input(
                UnitKind::Paragraph,
                "Should be written as:",
                None,
                ""
            )),
            ""
        );
        let tab = summarize(&input(UnitKind::Table, "", Some("Results"), ""));
        assert_eq!(tab, "table comparing Results");
        let long = "word ".repeat(300);
        let para = summarize(&input(UnitKind::Paragraph, &long, None, ""));
        assert_eq!(para.split_whitespace().count(), 40);
        let sec = summarize(&input(
            UnitKind::Section,
            "",
            Some("Results"),
            "In this section we show that caching halves the cost. Then more.",
        ));
        assert!(
            sec.starts_with("Results: show that caching halves the cost."),
            "{sec}"
        );
        let eq = summarize(&input(
            UnitKind::Equation,
            "E = mc^2",
            None,
            "Some setup. The energy of a body at rest is",
        ));
        assert_eq!(eq, "equation: Some setup. The energy of a body at rest is");
        assert_eq!(
            summarize(&input(UnitKind::Equation, "E = mc^2", None, "")),
            "",
            "no explanation, no summary"
        );
        let thm = summarize(&input(
            UnitKind::Theorem,
            "Every group is a set.",
            Some("Main"),
            "",
        ));
        assert_eq!(thm, "lemma (Main): Every group is a set.");
    }
}
