//! Markdown: one file, or an mdBook-style book (a folder with `SUMMARY.md`) → units, anchors, mentions.
//!
//! Headings are sections (ids from `{#id}` or GitHub/mdBook slugs); paragraphs, lists and
//! quotes are paragraphs; fenced code is a listing unless it sits in a rust-book
//! `<Listing number="N-M">` block, which is the listing; tables, display math and captioned
//! images are tables, equations and figures. A paragraph led by a bold label ("**Theorem 2.**",
//! "**Figure 1.**") is that numbered unit, so prose such as "Theorem 2" finds it. Links to anchors
//! and pages are mentions; prose numbers inside a link's text are not read again.

use crate::builder::{Builder, Span};
use crate::paths::normalise;
use crate::source_file::Reading;
use ledger_core::{Document, Format, MentionKind, Severity, TargetKey, UnitKind};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;
// Fx hashing: keys are short strings and indices from our own parse, not attacker-chosen.
use rustc_hash::FxHashMap as HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_MATH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
}

/// A file of a Markdown document: where it sits in the book and the number mdBook gives it.
struct Chapter {
    path: PathBuf,
    rel: String,
    number: Option<String>,
    depth: usize,
}

/// Parses one Markdown file as a document.
pub(crate) fn parse_file(
    path: &Path,
    doc_id: &str,
    root: Option<&Path>,
    tokenizer: Option<&crate::tokens::Tokenizer>,
) -> Document {
    let mut b = Builder::new(doc_id, &path.display().to_string(), Format::Markdown, root);
    let rel = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let chapter = Chapter {
        path: path.to_path_buf(),
        rel,
        number: None,
        depth: 0,
    };
    let mut skipped = Vec::new();
    match b.inputs.read(path, Reading::Utf8) {
        Ok(source) => {
            let file = b.add_source(&path.display().to_string(), source);
            skipped.resize(file + 1, vec![]);
            parse_into(&mut b, file, &chapter, 0, &mut skipped[file]);
        }
        Err(e) => b.doc.diagnostics.push(ledger_core::Diagnostic {
            path: path.display().to_string(),
            line: 0,
            col: 0,
            severity: Severity::Error,
            message: e,
        }),
    }
    b.prose_mentions(&skipped);
    b.finish(tokenizer)
}

/// Parses an mdBook (`dir` holds `SUMMARY.md`) as one document, chapters in SUMMARY order.
pub(crate) fn parse_book(
    dir: &Path,
    doc_id: &str,
    root: Option<&Path>,
    tokenizer: Option<&crate::tokens::Tokenizer>,
) -> Document {
    let mut b = Builder::new(
        doc_id,
        &dir.display().to_string(),
        Format::MarkdownBook,
        root,
    );
    let summary_path = dir.join("SUMMARY.md");
    let mut chapters: Vec<Chapter> = Vec::new();
    let mut skipped: Vec<Vec<(usize, usize)>> = Vec::new();
    match b.inputs.read(&summary_path, Reading::Utf8) {
        Ok(source) => {
            let text = source.decoded.text.clone();
            let summary = b.add_source(&summary_path.display().to_string(), source);
            skipped.push(vec![]);
            for (dest, number, depth, at) in summary_entries(&text) {
                let path = dir.join(&dest);
                if let Some(why) = b.inputs.refused(&path) {
                    b.diag(
                        summary,
                        at,
                        Severity::Warning,
                        format!("SUMMARY.md links to `{dest}`: {why}"),
                    );
                    continue;
                }
                if !b.inputs.is_file(&path) {
                    b.diag(
                        summary,
                        at,
                        Severity::Warning,
                        format!("SUMMARY.md links to `{dest}`, which does not exist"),
                    );
                    continue;
                }
                chapters.push(Chapter {
                    path,
                    rel: normalise(Path::new(&dest)),
                    number,
                    depth,
                });
            }
        }
        Err(e) => b.diag(
            usize::MAX,
            0,
            Severity::Error,
            format!("{}: {e}", summary_path.display()),
        ),
    }
    // Markdown files under the book that SUMMARY.md does not list are still part of it.
    let listed: std::collections::HashSet<String> =
        chapters.iter().map(|c| c.rel.clone()).collect();
    let mut extra: Vec<PathBuf> = b.inputs.markdown_files(dir);
    extra.retain(|p| {
        let rel = normalise(p.strip_prefix(dir).unwrap_or(p));
        rel != "SUMMARY.md" && !listed.contains(&rel)
    });
    for p in extra {
        let rel = normalise(p.strip_prefix(dir).unwrap_or(&p));
        chapters.push(Chapter {
            path: p,
            rel,
            number: None,
            depth: 1,
        });
    }
    let mut parents: Vec<(usize, usize)> = Vec::new();
    for ch in &chapters {
        let source = match b.inputs.read(&ch.path, Reading::Utf8) {
            Ok(t) => t,
            Err(e) => {
                b.doc.diagnostics.push(ledger_core::Diagnostic {
                    path: ch.path.display().to_string(),
                    line: 0,
                    col: 0,
                    severity: Severity::Error,
                    message: e,
                });
                continue;
            }
        };
        while parents.last().is_some_and(|&(d, _)| d >= ch.depth) {
            parents.pop();
        }
        let base = parents.last().map_or(0, |p| p.1);
        let file = b.add_source(&ch.path.display().to_string(), source);
        skipped.resize(file + 1, vec![]);
        let first = b.doc.units.len();
        parse_into(&mut b, file, ch, base, &mut skipped[file]);
        if let Some(top) =
            (first..b.doc.units.len()).find(|&u| b.doc.units[u].kind == UnitKind::Section)
        {
            parents.push((ch.depth, top));
        }
    }
    b.prose_mentions(&skipped);
    b.finish(tokenizer)
}

/// `(link, number, depth, byte)` for each chapter link of a SUMMARY.md; numbered when inside a list.
fn summary_entries(text: &str) -> Vec<(String, Option<String>, usize, usize)> {
    let mut out = Vec::new();
    let mut counters: Vec<u32> = Vec::new();
    let mut item_has_link: Vec<bool> = Vec::new();
    let read = without_bom(text);
    for (ev, range) in Parser::new_ext(&read, options()).into_offset_iter() {
        match ev {
            Event::Start(Tag::List(_)) => counters.push(0),
            Event::End(TagEnd::List(_)) => {
                counters.pop();
            }
            Event::Start(Tag::Item) => {
                if let Some(c) = counters.last_mut() {
                    *c += 1;
                }
                item_has_link.push(false);
            }
            Event::End(TagEnd::Item) => {
                item_has_link.pop();
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                if item_has_link.last().copied().unwrap_or(false) {
                    continue;
                }
                if let Some(l) = item_has_link.last_mut() {
                    *l = true;
                }
                let dest = dest_url.split('#').next().unwrap_or_default().to_string();
                if dest.is_empty() {
                    continue;
                }
                let number = (!counters.is_empty()).then(|| {
                    counters
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(".")
                });
                out.push((dest, number, counters.len().max(1), range.start));
            }
            _ => {}
        }
    }
    out
}

/// The text pulldown-cmark reads: a UTF-8 byte-order mark becomes three line breaks (as many
/// bytes), so that a first `# Heading` stays a heading while every byte offset stays the file's
/// own; the mark itself is kept in the file and in edits.
pub(crate) fn without_bom(text: &str) -> std::borrow::Cow<'_, str> {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => std::borrow::Cow::Owned(format!("\n\n\n{rest}")),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// State of one file's parse.
struct FileParse<'a> {
    b: &'a mut Builder,
    file: usize,
    chapter: &'a Chapter,
    base: usize,
    headings: Vec<(u8, usize)>,
    pending_anchors: Vec<String>,
    listing: Option<usize>,
    last_figure: Option<usize>,
    /// The bold label of the block just begun ("**Lemma 2.**"): not a mention of itself.
    lead: Option<(usize, usize)>,
    slugs: HashMap<String, usize>,
    numbered_top: bool,
}

fn parse_into(
    b: &mut Builder,
    file: usize,
    chapter: &Chapter,
    base: usize,
    skipped: &mut Vec<(usize, usize)>,
) {
    let text = std::sync::Arc::clone(&b.texts[file]);
    let mut p = FileParse {
        b,
        file,
        chapter,
        base,
        headings: vec![],
        pending_anchors: vec![],
        listing: None,
        last_figure: None,
        lead: None,
        slugs: HashMap::default(),
        numbered_top: false,
    };
    let mut depth = 0usize;
    let mut block: Option<usize> = None;
    let mut heading_title: Option<(String, Option<String>)> = None;
    let read = without_bom(&text);
    for (ev, range) in Parser::new_ext(&read, options()).into_offset_iter() {
        match ev {
            Event::Start(tag) => {
                if depth == 0 {
                    block = p.begin_block(&text, &tag, range.clone());
                    skipped.extend(p.lead.take());
                }
                if let Tag::Heading { id, .. } = &tag {
                    heading_title = Some((String::new(), id.as_ref().map(|s| s.to_string())));
                }
                if let Tag::Link { dest_url, .. } = &tag
                    && let Some(unit) = block
                {
                    p.link(&text, unit, dest_url, range.clone());
                    // "[Section 3](#setup)": the link is the reference; its text is not another.
                    skipped.push((range.start, range.end));
                }
                if let Tag::CodeBlock(_) = &tag {
                    skipped.push((range.start, range.end));
                    p.includes(&text, range.clone());
                }
                depth += 1;
            }
            Event::End(end) => {
                depth = depth.saturating_sub(1);
                if let (TagEnd::Heading(_), Some(unit), Some((title, id))) =
                    (end, block, heading_title.take())
                {
                    if depth == 0 {
                        p.finish_heading(unit, title, id);
                    } else {
                        // A heading inside a quote or list: mdBook still gives it an anchor.
                        let anchor = id.unwrap_or_else(|| p.unique_slug(&title));
                        p.anchor(unit, &anchor);
                    }
                }
            }
            Event::Text(t) => {
                if let Some((title, _)) = heading_title.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::Code(t) => {
                skipped.push((range.start, range.end));
                if let Some((title, _)) = heading_title.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::InlineMath(_) | Event::DisplayMath(_) => skipped.push((range.start, range.end)),
            Event::Html(h) | Event::InlineHtml(h) => {
                skipped.push((range.start, range.end));
                if depth > 0 {
                    // Anchors inside a unit name it; anchors in pure markup name the next unit.
                    for a in anchors(&h) {
                        match block {
                            Some(unit) => p.anchor(unit, &a),
                            None => p.pending_anchors.push(a),
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(l) = p.listing {
        let start = p.b.doc.units[l].start_byte;
        p.b.diag(
            file,
            start,
            Severity::Warning,
            "<Listing> is never closed".into(),
        );
        p.b.doc.units[l].end_byte = text.len();
    }
}

static ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:<a\s+(?:[^>]*\s)?(?:id|name)|<[A-Za-z][A-Za-z0-9-]*\s+(?:[^>]*\s)?id)\s*=\s*["']([^"']+)["']"#).expect("valid")
});
static ATTR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"([A-Za-z-]+)\s*=\s*"([^"]*)""#).expect("valid"));
static CAPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^(?:<span\s+class\s*=\s*"caption"\s*>|<figcaption>)\s*(?:(Figure|Table|Listing)\s+([0-9A-Z]+(?:[-.][0-9]+)*)\s*[:.]\s*)?"#).expect("valid")
});
/// A paragraph's bold label: "**Theorem 2.**", "__Definition 1.4__", after anchors if any.
static LEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:<a\s[^>]*>\s*</a>\s*)*(?:\*\*|__)(Theorem|Lemma|Definition|Corollary|Proposition|Conjecture|Remark|Example|Claim|Assumption|Notation|Figure|Table|Algorithm) ([0-9]+(?:\.[0-9]+)*)\.?(?:\*\*|__)")
        .expect("valid")
});
static INCLUDE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{#(include|rustdoc_include|playground)\s+([^}\s]+)[^}]*\}\}").expect("valid")
});

fn anchors(html: &str) -> Vec<String> {
    ANCHOR
        .captures_iter(html)
        .map(|c| c[1].to_string())
        .collect()
}

impl FileParse<'_> {
    fn parent(&self) -> usize {
        self.headings.last().map_or(self.base, |h| h.1)
    }

    fn new_unit(&mut self, kind: UnitKind, env: &str, level: i32, range: &Range<usize>) -> usize {
        let parent = self.parent();
        let unit = self.b.unit(
            kind,
            env,
            level,
            parent,
            self.file,
            range.start,
            trim_end(&self.b.texts[self.file], range.clone()),
        );
        for a in std::mem::take(&mut self.pending_anchors) {
            self.anchor(unit, &a);
        }
        unit
    }

    fn anchor(&mut self, unit: usize, anchor: &str) {
        let label = format!("{}#{anchor}", self.chapter.rel);
        let number = self.b.doc.units[unit].number.clone();
        let at = self.b.doc.units[unit].start_byte;
        self.b
            .add_label(unit, &label, number, Span::at(self.file, at));
    }

    fn begin_block(&mut self, text: &str, tag: &Tag, range: Range<usize>) -> Option<usize> {
        let src = text[range.clone()].trim_start();
        match tag {
            Tag::Heading { level, .. } => {
                let level = *level as u8;
                while self.headings.last().is_some_and(|h| h.0 >= level) {
                    self.headings.pop();
                }
                self.last_figure = None;
                let unit = self.new_unit(
                    UnitKind::Section,
                    &format!("h{level}"),
                    level as i32,
                    &range,
                );
                if !self.numbered_top {
                    self.numbered_top = true;
                    if let Some(n) = &self.chapter.number {
                        let u = &mut self.b.doc.units[unit];
                        u.number = Some(n.clone());
                        u.numbers = vec![n.clone()];
                        u.env = if self.chapter.depth <= 1 {
                            "chapter".into()
                        } else {
                            "section".into()
                        };
                    }
                }
                self.headings.push((level, unit));
                Some(unit)
            }
            Tag::CodeBlock(kind) => {
                if let Some(l) = self.listing {
                    return Some(l);
                }
                let lang = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(info) => info
                        .split([',', ' '])
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    pulldown_cmark::CodeBlockKind::Indented => String::new(),
                };
                Some(self.new_unit(
                    UnitKind::Listing,
                    if lang.is_empty() { "code" } else { &lang },
                    0,
                    &range,
                ))
            }
            Tag::Table(_) => Some(self.new_unit(UnitKind::Table, "table", 0, &range)),
            Tag::HtmlBlock | Tag::Paragraph => {
                if let Some(l) = self.listing {
                    if src.starts_with("</Listing>") {
                        self.listing = None;
                        self.b.doc.units[l].end_byte = trim_end(text, range);
                        return None;
                    }
                    return Some(l);
                }
                if src.starts_with("<Listing") {
                    let unit = self.new_unit(UnitKind::Listing, "listing", 0, &range);
                    let tag_end = src.find('>').unwrap_or(src.len());
                    for c in ATTR.captures_iter(&src[..tag_end]) {
                        let u = &mut self.b.doc.units[unit];
                        match &c[1] {
                            "number" => {
                                u.number = Some(c[2].to_string());
                                u.numbers = vec![c[2].to_string()];
                            }
                            "caption" => u.title = Some(c[2].to_string()),
                            _ => {}
                        }
                    }
                    // A one-block listing (`<Listing …>` and `</Listing>` without blank lines) closes itself.
                    if !src.contains("</Listing>") {
                        self.listing = Some(unit);
                    }
                    return Some(unit);
                }
                if let Some(c) = CAPTION.captures(src) {
                    let (kind, number) = (
                        c.get(1).map(|m| m.as_str()),
                        c.get(2).map(|m| m.as_str().to_string()),
                    );
                    let title = strip_tags(&src[c.get(0).map_or(0, |m| m.end())..]);
                    let unit = match self.last_figure.take() {
                        Some(f) => {
                            self.b.doc.units[f].end_byte = trim_end(text, range);
                            f
                        }
                        None => self.new_unit(
                            if kind == Some("Table") {
                                UnitKind::Table
                            } else {
                                UnitKind::Figure
                            },
                            "caption",
                            0,
                            &range,
                        ),
                    };
                    let u = &mut self.b.doc.units[unit];
                    if let Some(n) = number {
                        u.number = Some(n.clone());
                        u.numbers = vec![n];
                    }
                    u.title = Some(title);
                    return Some(unit);
                }
                if src.starts_with("<img") || is_image_paragraph(src) {
                    let unit = self.new_unit(UnitKind::Figure, "image", 0, &range);
                    let alt = ATTR
                        .captures_iter(src)
                        .find(|c| &c[1] == "alt")
                        .map(|c| c[2].to_string())
                        .or_else(|| image_alt(src));
                    self.b.doc.units[unit].title =
                        alt.map(|a| a.split_whitespace().collect::<Vec<_>>().join(" "));
                    self.last_figure = Some(unit);
                    return Some(unit);
                }
                // Pure markup (`<a id="old"></a>`, comments, wrappers), as a block or a paragraph:
                // its anchors name the next unit.
                if src.starts_with('<') {
                    let inner = strip_tags(src);
                    if inner.trim().is_empty() {
                        for a in anchors(src) {
                            self.pending_anchors.push(a);
                        }
                        return None;
                    }
                }
                self.last_figure = None;
                if src.starts_with("$$") {
                    return Some(self.new_unit(UnitKind::Equation, "math", 0, &range));
                }
                if let Some(c) = LEAD.captures(src) {
                    let word = c[1].to_lowercase();
                    let kind = match word.as_str() {
                        "figure" => UnitKind::Figure,
                        "table" => UnitKind::Table,
                        "algorithm" => UnitKind::Algorithm,
                        _ => UnitKind::Theorem,
                    };
                    let unit = self.new_unit(kind, &word, 0, &range);
                    let number = c[2].to_string();
                    let u = &mut self.b.doc.units[unit];
                    u.number = Some(number.clone());
                    u.numbers = vec![number.clone()];
                    // Anchors named before the number was known carry it too.
                    for (_, n) in &mut u.labels {
                        *n = Some(number.clone());
                    }
                    let lead = c.get(0).map_or(0..0, |m| m.range());
                    self.lead = Some((range.start + lead.start, range.start + lead.end));
                    return Some(unit);
                }
                Some(self.new_unit(UnitKind::Paragraph, "paragraph", 0, &range))
            }
            Tag::List(_)
            | Tag::BlockQuote(_)
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList => {
                if let Some(l) = self.listing {
                    return Some(l);
                }
                self.last_figure = None;
                let env = match tag {
                    Tag::List(_) => "list",
                    Tag::BlockQuote(_) => "quote",
                    _ => "note",
                };
                Some(self.new_unit(UnitKind::Paragraph, env, 0, &range))
            }
            _ => None,
        }
    }

    fn finish_heading(&mut self, unit: usize, title: String, id: Option<String>) {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        let anchor = id.unwrap_or_else(|| self.unique_slug(&title));
        self.b.doc.units[unit].title = Some(title);
        // The anchor comes first: it is the heading's id; earlier `<a id>` anchors are aliases.
        let label = format!("{}#{anchor}", self.chapter.rel);
        let number = self.b.doc.units[unit].number.clone();
        let at = self.b.doc.units[unit].start_byte;
        self.b
            .add_label(unit, &label, number.clone(), Span::at(self.file, at));
        // The heading's own anchor is its id: it goes first, before `<a id>` aliases.
        let labels = &mut self.b.doc.units[unit].labels;
        if let Some(pos) = labels.iter().position(|(l, _)| l == &label) {
            let own = labels.remove(pos);
            labels.insert(0, own);
        }
        // The first heading of a file also answers for the file itself (`[x](ch04.md)`).
        if self.headings.len() == 1 && !self.b.has_label(&self.chapter.rel) {
            let rel = self.chapter.rel.clone();
            self.b
                .add_label(unit, &rel, number, Span::at(self.file, at));
        }
    }

    /// The heading's slug, with `-1`, `-2` … for repeats in the same file (as mdBook does).
    fn unique_slug(&mut self, title: &str) -> String {
        let base = heading_slug(
            title
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .as_str(),
        );
        let n = self.slugs.entry(base.clone()).or_insert(0);
        let anchor = if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        *n += 1;
        anchor
    }

    fn link(&mut self, text: &str, unit: usize, dest: &str, range: Range<usize>) {
        let book = self.b.doc.format == Some(Format::MarkdownBook);
        let Some(key) = link_key(dest, &self.chapter.rel, book) else {
            return;
        };
        // The minimal span is the destination when it is written inline, else the whole link.
        let src = &text[range.clone()];
        let (s, e) = match src.find(&format!("]({dest}")) {
            Some(k) => (range.start + k + 2, range.start + k + 2 + dest.len()),
            None => (range.start, range.end),
        };
        self.b
            .mention(unit, Span::new(self.file, s, e), MentionKind::Link, key);
    }

    fn includes(&mut self, text: &str, range: Range<usize>) {
        let dir = self
            .chapter
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for c in INCLUDE.captures_iter(&text[range.clone()]) {
            let raw = &c[2];
            // `path:anchor` and `path:1:5` select part of a file.
            let path = raw.split(':').next().unwrap_or(raw);
            let at = range.start + c.get(0).map_or(0, |m| m.start());
            if let Some(why) = self.b.inputs.refused(&dir.join(path)) {
                self.b.diag(
                    self.file,
                    at,
                    Severity::Warning,
                    format!("{{{{#{} {raw}}}}}: {why}", &c[1]),
                );
            } else if !self.b.inputs.is_file(&dir.join(path)) {
                self.b.diag(
                    self.file,
                    at,
                    Severity::Warning,
                    format!("{{{{#{} {raw}}}}}: included file {path} not found", &c[1]),
                );
            }
        }
    }
}

/// The key a Markdown link names, or `None` for external links and links to non-Markdown files.
fn link_key(dest: &str, current: &str, book: bool) -> Option<TargetKey> {
    static SCHEME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z0-9+.-]*:").expect("valid"));
    if dest.is_empty() || SCHEME.is_match(dest) || dest.starts_with("//") {
        return None;
    }
    let dest = dest.split('?').next().unwrap_or(dest);
    let (path, anchor) = dest.split_once('#').unwrap_or((dest, ""));
    if path.is_empty() {
        return Some(TargetKey::Anchor {
            file: current.to_string(),
            anchor: anchor.to_string(),
        });
    }
    let path = if let Some(stem) = path.strip_suffix(".html") {
        format!("{stem}.md")
    } else if path.ends_with('/') {
        format!("{path}index.md")
    } else {
        path.to_string()
    };
    if !path.ends_with(".md") {
        return None;
    }
    let joined = normalise(
        &Path::new(current)
            .parent()
            .unwrap_or(Path::new(""))
            .join(&path),
    );
    if book && joined.starts_with("../") {
        // Out of the book: another site's page (`../std/…`), not a unit of this corpus.
        return None;
    }
    Some(TargetKey::Anchor {
        file: joined,
        anchor: anchor.to_string(),
    })
}

/// The byte range of the definition (`[label]: dest`) that the reference link starting at byte
/// `link` of `text` uses (`[text][label]`, `[text][]`, `[text]`), its label matched as
/// CommonMark matches labels: the Markdown parser's own reference definitions, so that a link
/// text holding code or brackets (`` [`[[test]]` table][t] ``) is read as a reader reads it.
pub fn reference_definition(text: &str, link: usize) -> Option<Range<usize>> {
    use pulldown_cmark::LinkType;
    let mut events = Parser::new_ext(text, options()).into_offset_iter();
    let id = events.by_ref().find_map(|(event, range)| match event {
        Event::Start(Tag::Link {
            link_type: LinkType::Reference | LinkType::Collapsed | LinkType::Shortcut,
            id,
            ..
        }) if range.start == link => Some(id),
        _ => None,
    })?;
    Some(events.reference_definitions().get(&id)?.span.clone())
}

/// The anchor mdBook and GitHub give a heading: lower case, spaces to `-`, punctuation dropped.
pub fn heading_slug(title: &str) -> String {
    title
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().collect::<String>())
            } else if c.is_whitespace() {
                Some("-".into())
            } else {
                None
            }
        })
        .collect()
}

fn is_image_paragraph(src: &str) -> bool {
    let t = src.trim();
    t.starts_with("![") && t.ends_with(')') && !t[2..].contains("\n\n")
}

fn image_alt(src: &str) -> Option<String> {
    let t = src.trim().strip_prefix("![")?;
    Some(t[..t.find("](")?].to_string())
}

fn strip_tags(s: &str) -> String {
    static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<[^>]*>").expect("valid"));
    TAG.replace_all(s, "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The end of a range with trailing whitespace removed.
fn trim_end(text: &str, range: Range<usize>) -> usize {
    let slice = &text[range.clone()];
    range.start + slice.trim_end().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_like_mdbook() {
        assert_eq!(heading_slug("Hello, World!"), "hello-world");
        assert_eq!(heading_slug("The `Option` Enum"), "the-option-enum");
        assert_eq!(
            heading_slug("Storing UTF-8 Encoded Text with Strings"),
            "storing-utf-8-encoded-text-with-strings"
        );
    }

    #[test]
    fn link_keys() {
        assert_eq!(link_key("https://x.org/a.md", "a.md", true), None);
        assert_eq!(
            link_key("#intro", "b/a.md", true),
            Some(TargetKey::Anchor {
                file: "b/a.md".into(),
                anchor: "intro".into()
            })
        );
        assert_eq!(
            link_key("../c.html#x", "b/a.md", true),
            Some(TargetKey::Anchor {
                file: "c.md".into(),
                anchor: "x".into()
            })
        );
        assert_eq!(link_key("img/x.svg", "a.md", true), None);
        assert_eq!(link_key("../../std/x.html", "b/a.md", true), None);
        assert_eq!(
            link_key("../x.md", "a.md", false),
            Some(TargetKey::Anchor {
                file: "../x.md".into(),
                anchor: String::new()
            })
        );
    }
}
