//! What each byte range of a source file holds for a reader: prose, code, math, a URL, a label
//! or reference key, a link target, or markup. Bulk edits of words (`ledger rename-term`) search
//! only the kinds they are asked to.

use crate::latex::lex::{arg, is_cite, math_env, non_text_args, opt, verbatim_env};
use ledger_core::Format;
use pulldown_cmark::{Event, LinkType, Parser, Tag, TagEnd};
use regex::Regex;
use std::sync::LazyLock;

/// The kind of a [`Region`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegionKind {
    /// Text a reader reads as prose (titles, captions, link texts included).
    Prose,
    /// Inline code, code blocks, verbatim environments.
    Code,
    /// Inline and display math.
    Math,
    /// A URL written out (bare, autolinked, or the argument of `\url`/`\href`).
    Url,
    /// A LaTeX label or reference key (`\label`, `\ref`, `\cite` … arguments).
    Label,
    /// Where a link points: a Markdown link destination, or the text of a reference-style
    /// link whose text is its label (`[term]`, `[term][]`).
    LinkTarget,
}

impl RegionKind {
    /// The name used on the command line (`--include code,math`).
    pub fn as_str(self) -> &'static str {
        match self {
            RegionKind::Prose => "prose",
            RegionKind::Code => "code",
            RegionKind::Math => "math",
            RegionKind::Url => "url",
            RegionKind::Label => "label",
            RegionKind::LinkTarget => "link-target",
        }
    }

    /// The kind named by [`RegionKind::as_str`] (`urls` and `labels` accepted too).
    pub fn parse(name: &str) -> Option<RegionKind> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "prose" => RegionKind::Prose,
            "code" => RegionKind::Code,
            "math" => RegionKind::Math,
            "url" | "urls" => RegionKind::Url,
            "label" | "labels" => RegionKind::Label,
            "link-target" | "link-targets" | "links" => RegionKind::LinkTarget,
            _ => return None,
        })
    }
}

/// A byte range of a file and what it holds. Ranges a reader never sees as text (commands,
/// comments, HTML tags, Markdown syntax) are in no region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Start byte.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
    /// What the range holds.
    pub kind: RegionKind,
}

/// The regions of one source file, in order, adjacent regions of one kind merged. A `.bib`
/// file is all [`RegionKind::Label`] (bibliography data is not the document's prose).
/// `verbatim`: the verbatim-like environments its document defines
/// ([`ledger_core::Document::verbatim_envs`]), code like the built-in ones.
pub fn regions(format: Format, path: &str, text: &str, verbatim: &[String]) -> Vec<Region> {
    let raw = if path.ends_with(".bib") {
        vec![Region {
            start: 0,
            end: text.len(),
            kind: RegionKind::Label,
        }]
    } else {
        match format {
            Format::Latex => latex(text, verbatim),
            Format::Markdown | Format::MarkdownBook => markdown(text),
        }
    };
    let mut out: Vec<Region> = Vec::with_capacity(raw.len());
    for r in raw.into_iter().filter(|r| r.start < r.end) {
        match out.last_mut() {
            Some(last) if last.kind == r.kind && last.end == r.start => last.end = r.end,
            _ => out.push(r),
        }
    }
    out
}

static URL: LazyLock<Regex> = LazyLock::new(|| {
    // Trailing punctuation ends the sentence, not the URL.
    Regex::new(
        r#"(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.|mailto:)[^\s<>()\[\]{}]*[^\s<>()\[\]{}.,;:!?'"]"#,
    )
    .expect("valid")
});

/// Where an HTML scan is: inside a comment, and how deep inside code-like elements.
#[derive(Debug, Default)]
struct HtmlState {
    comment: bool,
    code: usize,
}

/// Regions of raw HTML: text between tags is prose, or code inside `<code>`, `<pre>`, `<kbd>`,
/// `<samp>`, `<script>`, `<style>`; tags and comments are markup.
fn html(text: &str, start: usize, end: usize, state: &mut HtmlState, out: &mut Vec<Region>) {
    let mut i = start;
    let mut run = start;
    let flush = |out: &mut Vec<Region>, from: usize, to: usize, state: &HtmlState| {
        if from < to {
            if state.code > 0 {
                out.push(Region {
                    start: from,
                    end: to,
                    kind: RegionKind::Code,
                });
            } else {
                prose_with_urls(text, from, to, out);
            }
        }
    };
    while i < end {
        if state.comment {
            match text[i..end].find("-->") {
                Some(k) => {
                    state.comment = false;
                    i += k + 3;
                    run = i;
                }
                None => return,
            }
            continue;
        }
        if text.as_bytes()[i] != b'<' {
            i += 1;
            continue;
        }
        flush(out, run, i, state);
        if text[i..end].starts_with("<!--") {
            state.comment = true;
            i += 4;
            continue;
        }
        let close = text[i..end].find('>').map_or(end, |k| i + k + 1);
        let tag = &text[i + 1..close.saturating_sub(1).max(i + 1)];
        let (closing, name) = match tag.strip_prefix('/') {
            Some(t) => (true, t),
            None => (false, tag),
        };
        let name: String = name
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "code" | "pre" | "kbd" | "samp" | "script" | "style"
        ) && !tag.ends_with('/')
        {
            if closing {
                state.code = state.code.saturating_sub(1);
            } else {
                state.code += 1;
            }
        }
        i = close;
        run = i;
    }
    flush(out, run, end, state);
}

/// Splits a prose range at the URLs written in it.
fn prose_with_urls(text: &str, start: usize, end: usize, out: &mut Vec<Region>) {
    let mut at = start;
    for m in URL.find_iter(&text[start..end]) {
        let (s, e) = (start + m.start(), start + m.end());
        out.push(Region {
            start: at,
            end: s,
            kind: RegionKind::Prose,
        });
        out.push(Region {
            start: s,
            end: e,
            kind: RegionKind::Url,
        });
        at = e;
    }
    out.push(Region {
        start: at,
        end,
        kind: RegionKind::Prose,
    });
}

fn markdown(text: &str) -> Vec<Region> {
    static DIRECTIVE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\{\{#[^}]*\}\}").expect("valid"));
    let mut out = Vec::new();
    let mut code_block = false;
    let mut raw = HtmlState::default();
    // Kind of the link being read: its text is a link target when it is its own label.
    let mut links: Vec<RegionKind> = Vec::new();
    let read = crate::markdown::without_bom(text);
    for (ev, range) in Parser::new_ext(&read, crate::markdown::options()).into_offset_iter() {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => code_block = true,
            Event::End(TagEnd::CodeBlock) => code_block = false,
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => {
                links.push(match link_type {
                    LinkType::Autolink | LinkType::Email => RegionKind::Url,
                    LinkType::Shortcut
                    | LinkType::ShortcutUnknown
                    | LinkType::Collapsed
                    | LinkType::CollapsedUnknown => RegionKind::LinkTarget,
                    _ => RegionKind::Prose,
                });
                // An inline destination: `](dest`.
                let src = &text[range.clone()];
                if !dest_url.is_empty()
                    && let Some(k) = src.find(&format!("]({dest_url}"))
                {
                    let s = range.start + k + 2;
                    out.push(Region {
                        start: s,
                        end: s + dest_url.len(),
                        kind: RegionKind::LinkTarget,
                    });
                }
            }
            Event::End(TagEnd::Link) => {
                links.pop();
            }
            Event::Text(_) if code_block => out.push(Region {
                start: range.start,
                end: range.end,
                kind: RegionKind::Code,
            }),
            Event::Text(_) | Event::SoftBreak if raw.code > 0 || raw.comment => {
                out.push(Region {
                    start: range.start,
                    end: range.end,
                    kind: RegionKind::Code,
                });
            }
            Event::Html(_) | Event::InlineHtml(_) => {
                html(text, range.start, range.end, &mut raw, &mut out);
            }
            Event::Text(_) | Event::SoftBreak => {
                let kind = links.last().copied().unwrap_or(RegionKind::Prose);
                if kind != RegionKind::Prose {
                    out.push(Region {
                        start: range.start,
                        end: range.end,
                        kind,
                    });
                    continue;
                }
                // mdBook directives (`{{#include file.rs}}`) are markup.
                let mut at = range.start;
                for m in DIRECTIVE.find_iter(&text[range.clone()]) {
                    prose_with_urls(text, at, range.start + m.start(), &mut out);
                    at = range.start + m.end();
                }
                prose_with_urls(text, at, range.end, &mut out);
            }
            Event::Code(_) => out.push(Region {
                start: range.start,
                end: range.end,
                kind: RegionKind::Code,
            }),
            Event::InlineMath(_) | Event::DisplayMath(_) => out.push(Region {
                start: range.start,
                end: range.end,
                kind: RegionKind::Math,
            }),
            _ => {}
        }
    }
    out.sort_by_key(|r| (r.start, r.end));
    out
}

/// Reference and label commands: their brace arguments are keys.
fn key_command(name: &str) -> bool {
    is_cite(name)
        || matches!(
            name,
            "label"
                | "ref"
                | "eqref"
                | "autoref"
                | "Autoref"
                | "cref"
                | "Cref"
                | "crefrange"
                | "Crefrange"
                | "cpageref"
                | "pageref"
                | "nameref"
                | "vref"
                | "uses"
                | "hyperref"
                | "hypertarget"
                | "hyperlink"
                | "input"
                | "include"
                | "subfile"
                | "bibliography"
                | "externaldocument"
                | "documentclass"
                | "begin"
                | "end"
                | "newtheorem"
                | "newenvironment"
                | "renewenvironment"
                | "newcommand"
                | "renewcommand"
                | "providecommand"
                | "DeclareRobustCommand"
                | "def"
        )
}

/// Braced arguments taken by a key command (beyond its optional ones).
fn key_args(name: &str) -> usize {
    match name {
        "crefrange" | "Crefrange" | "hypertarget" | "hyperlink" => 1,
        "newenvironment" | "renewenvironment" => 3,
        "newcommand" | "renewcommand" | "providecommand" | "DeclareRobustCommand" => 2,
        _ => 1,
    }
}

fn latex(text: &str, verbatim: &[String]) -> Vec<Region> {
    let is_verbatim =
        |env: &str| verbatim_env(env) || verbatim.iter().any(|v| v == env.trim_end_matches('*'));
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let push = |out: &mut Vec<Region>, start: usize, end: usize, kind: RegionKind| {
        out.push(Region {
            start,
            end: end.min(text.len()),
            kind,
        });
    };
    // The preamble of a main file is markup.
    let mut i = text
        .find("\\begin{document}")
        .map_or(0, |k| k + "\\begin{document}".len());
    let mut prose_start = i;
    let end_of = |i: usize, pat: &str| text.get(i..).and_then(|t| t.find(pat)).map(|k| i + k);
    while i < bytes.len() {
        let b = bytes[i];
        if !matches!(
            b,
            b'\\' | b'%' | b'$' | b'{' | b'}' | b'~' | b'&' | b'^' | b'_'
        ) {
            i += 1;
            continue;
        }
        if prose_start < i {
            prose_with_urls(text, prose_start, i, &mut out);
        }
        match b {
            b'%' => {
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |k| i + k);
            }
            b'$' => {
                let display = bytes.get(i + 1) == Some(&b'$');
                let open = if display { 2 } else { 1 };
                let close = if display { "$$" } else { "$" };
                let mut j = i + open;
                let end = loop {
                    match end_of(j, close) {
                        Some(k) if bytes[k - 1] == b'\\' => j = k + 1,
                        Some(k) => break k + close.len(),
                        None => break bytes.len(),
                    }
                };
                push(&mut out, i, end, RegionKind::Math);
                i = end;
            }
            b'\\' => {
                let name_start = i + 1;
                let mut j = name_start;
                while j < bytes.len() && bytes[j].is_ascii_alphabetic() {
                    j += 1;
                }
                if j == name_start {
                    // A control symbol: `\(`, `\[` open math; `\\`, `\%` … are markup.
                    match bytes.get(name_start) {
                        Some(b'(') | Some(b'[') => {
                            let close = if bytes[name_start] == b'(' {
                                "\\)"
                            } else {
                                "\\]"
                            };
                            let end = end_of(name_start + 1, close)
                                .map_or(bytes.len(), |k| k + close.len());
                            push(&mut out, i, end, RegionKind::Math);
                            i = end;
                        }
                        Some(_) => {
                            i = (name_start + 1).min(bytes.len());
                            while i < bytes.len() && !text.is_char_boundary(i) {
                                i += 1;
                            }
                        }
                        None => i = bytes.len(),
                    }
                    prose_start = i;
                    continue;
                }
                let name = &text[name_start..j];
                let mut k = if bytes.get(j) == Some(&b'*') {
                    j + 1
                } else {
                    j
                };
                if name == "verb" || name == "lstinline" {
                    // `\verb|…|`, `\lstinline{…}`.
                    let (_, after_opt) = opt(text, k);
                    k = after_opt;
                    let end = match bytes.get(k) {
                        Some(b'{') => end_of(k + 1, "}").map_or(bytes.len(), |e| e + 1),
                        Some(&d) => {
                            memchr::memchr(d, &bytes[k + 1..]).map_or(bytes.len(), |e| k + 2 + e)
                        }
                        None => bytes.len(),
                    };
                    push(&mut out, i, end, RegionKind::Code);
                    i = end;
                } else if name == "begin" {
                    let Some((env, after)) = arg(text, k) else {
                        i = k;
                        prose_start = i;
                        continue;
                    };
                    let env = env.trim();
                    let base = env.trim_end_matches('*');
                    let close = format!("\\end{{{env}}}");
                    if is_verbatim(env) || math_env(base).is_some() {
                        let end = end_of(after, &close).map_or(bytes.len(), |e| e + close.len());
                        let kind = if is_verbatim(env) {
                            RegionKind::Code
                        } else {
                            RegionKind::Math
                        };
                        push(&mut out, i, end, kind);
                        i = end;
                    } else if matches!(
                        base,
                        "tabular" | "tabularx" | "tabulary" | "array" | "longtable" | "tabu"
                    ) {
                        // The column specification (and tabularx's width) is markup.
                        let mut at = opt(text, after).1;
                        let specs = if base == "tabularx" || base == "tabulary" {
                            2
                        } else {
                            1
                        };
                        for _ in 0..specs {
                            at = arg(text, at).map_or(at, |a| a.1);
                        }
                        i = at;
                    } else {
                        i = after;
                    }
                } else if name == "url" || name == "href" || name == "path" {
                    let Some((_, after)) = arg(text, k) else {
                        i = k;
                        prose_start = i;
                        continue;
                    };
                    push(&mut out, i, after, RegionKind::Url);
                    // `\href`'s second argument is the visible text.
                    i = after;
                } else if key_command(name) {
                    let mut at = k;
                    for _ in 0..4 {
                        let next = opt(text, at).1;
                        if next == at {
                            break;
                        }
                        at = next;
                    }
                    if name == "def" {
                        // `\def\name#1{body}`: up to the body's end.
                        at = end_of(at, "{").map_or(at, |b| arg(text, b).map_or(b, |a| a.1));
                    } else {
                        for _ in 0..key_args(name) {
                            at = arg(text, at).map_or(at, |a| a.1);
                            at = opt(text, at).1;
                        }
                    }
                    let kind = if matches!(
                        name,
                        "begin"
                            | "end"
                            | "input"
                            | "include"
                            | "subfile"
                            | "documentclass"
                            | "newcommand"
                            | "renewcommand"
                            | "providecommand"
                            | "DeclareRobustCommand"
                            | "def"
                            | "newtheorem"
                            | "newenvironment"
                            | "renewenvironment"
                    ) {
                        None
                    } else {
                        Some(RegionKind::Label)
                    };
                    if let Some(kind) = kind {
                        push(&mut out, i, at, kind);
                    }
                    i = at;
                } else if let Some(n) = non_text_args(name) {
                    let mut at = opt(text, k).1;
                    for _ in 0..n {
                        at = arg(text, at).map_or(at, |a| a.1);
                        at = opt(text, at).1;
                    }
                    i = at;
                } else {
                    // Any other command: its name is markup, its arguments are read on.
                    i = k;
                }
            }
            _ => i += 1,
        }
        prose_start = i;
    }
    if prose_start < bytes.len() {
        prose_with_urls(text, prose_start, bytes.len(), &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(format: Format, text: &str) -> Vec<(RegionKind, &str)> {
        regions(format, "x", text, &[])
            .into_iter()
            .map(|r| (r.kind, &text[r.start..r.end]))
            .collect()
    }

    #[test]
    fn latex_regions_separate_prose_from_math_code_keys_and_urls() {
        let t = r"The term $x+y$ in \emph{term} (see~\cref{a,b}, \url{http://x.org/term}) % term
\begin{equation}term\end{equation}\verb|term| \label{sec:term}\href{http://t}{the term}.";
        let got = kinds(Format::Latex, t);
        let prose: Vec<&str> = got
            .iter()
            .filter(|(k, _)| *k == RegionKind::Prose)
            .map(|(_, s)| *s)
            .collect();
        assert_eq!(prose.concat(), "The term  in term (see, ) \n the term.");
        assert!(got.contains(&(RegionKind::Math, "$x+y$")));
        assert!(got.contains(&(RegionKind::Math, r"\begin{equation}term\end{equation}")));
        assert!(got.contains(&(RegionKind::Code, r"\verb|term|")));
        assert!(got.contains(&(RegionKind::Label, r"\cref{a,b}")));
        assert!(got.contains(&(RegionKind::Label, r"\label{sec:term}")));
        assert!(got.contains(&(RegionKind::Url, r"\url{http://x.org/term}")));
    }

    #[test]
    fn markdown_regions_separate_prose_from_code_links_and_urls() {
        let t = "# The term\n\nA `term` and [the term](term.md#term) and [term] and \
                 <https://term.org> and https://x.org/term.\n\n```\nterm\n```\n\n[term]: t.md\n";
        let got = kinds(Format::Markdown, t);
        let prose: String = got
            .iter()
            .filter(|(k, _)| *k == RegionKind::Prose)
            .map(|(_, s)| *s)
            .collect();
        assert_eq!(prose, "The termA  and the term and  and  and .");
        assert!(got.contains(&(RegionKind::Code, "`term`")));
        assert!(got.contains(&(RegionKind::LinkTarget, "term.md#term")));
        assert!(got.contains(&(RegionKind::LinkTarget, "term")));
        assert!(got.contains(&(RegionKind::Url, "https://x.org/term")));
        assert!(got.contains(&(RegionKind::Code, "term\n")));
    }
}
