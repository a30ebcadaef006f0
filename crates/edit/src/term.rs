//! Renaming a term across documents: whole words, case variants and simple plurals, in prose
//! only unless other regions are asked for.

use crate::{EditError, Replacement, Result};
use aho_corasick::{AhoCorasick, MatchKind};
use ledger_core::progress::{Progress, Quiet};
use ledger_core::{Document, Format};
use ledger_parse::regions::{RegionKind, regions};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A terminology file (`ledger rename-terms`): a TOML table of `"old term" = "new term"`, as
/// Vale's substitution rules list them, in the file's order.
pub fn read_terms(path: &Path) -> Result<Vec<(String, String)>> {
    let bad = |message: String| EditError::Terms {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(crate::io(path))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    let mut terms = Vec::new();
    for (old, new) in table {
        let toml::Value::String(new) = new else {
            return Err(bad(format!(
                "`{old}` must map to a string (the new term), as in \"{old}\" = \"new term\""
            )));
        };
        terms.push((old, new));
    }
    if terms.is_empty() {
        return Err(bad("no term to rename".into()));
    }
    if let Some(message) = chained(&terms) {
        return Err(bad(message));
    }
    Ok(terms)
}

/// Renames that feed each other (`a` → `b` with `b` → `a`, or `b` → `c`), compared as their case
/// variants are matched: all are applied at once, so `b` written for `a` would be renamed by
/// nothing and reported as an old term still there. What is wrong, naming the cycle or chain.
fn chained(terms: &[(String, String)]) -> Option<String> {
    let key = |t: &str| t.to_lowercase();
    let renamed: BTreeMap<String, &str> = terms
        .iter()
        .map(|(old, new)| (key(old), new.as_str()))
        .collect();
    let shown = |path: &[&str]| {
        path.iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(" → ")
    };
    for (old, new) in terms {
        let mut path = vec![old.as_str(), new.as_str()];
        // Follow the last term while a rename changes more than its case.
        while let Some(&next) = renamed.get(&key(path[path.len() - 1])) {
            if key(next) == key(path[path.len() - 1]) {
                break;
            }
            let cycle = path.iter().any(|p| key(p) == key(next));
            path.push(next);
            if cycle {
                return Some(format!(
                    "the renames {} form a cycle: they cannot all hold at once; rename through a \
                     term no rename uses, in two runs",
                    shown(&path)
                ));
            }
        }
        if path.len() > 2 {
            return Some(format!(
                "the renames {} chain: `{}` is renamed and is also a new term; apply them in \
                 separate runs, or map `{old}` to `{}` directly",
                shown(&path),
                path[1],
                path[path.len() - 1]
            ));
        }
    }
    None
}

/// An occurrence of the old term that was not renamed, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Left {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The occurrence as written.
    pub text: String,
    /// Why it was left: the region it is in (`code`, `math` …), `casing` or `part of a name`.
    pub reason: String,
}

/// What [`rename_term`] found.
#[derive(Debug, Clone, Default)]
pub struct TermRename {
    /// One replacement per renamed occurrence.
    pub replacements: Vec<Replacement>,
    /// Occurrences left as they are.
    pub left: Vec<Left>,
}

/// The simple English plural of a term (of its last word): `-ies` after a consonant `y`,
/// `-es` after `s`, `x`, `z`, `ch`, `sh`, else `-s`.
pub fn plural(term: &str) -> String {
    let lower = term.to_lowercase();
    let consonant_y =
        lower.ends_with('y') && !lower[..lower.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &term[..term.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{term}es")
    } else {
        format!("{term}s")
    }
}

/// How a matched occurrence is cased, relative to the term as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Casing {
    /// Exactly as given.
    Given,
    /// all lower case.
    Lower,
    /// ALL UPPER CASE.
    Upper,
    /// First letter capitalised, the rest lower case.
    Sentence,
    /// Every Word Capitalised.
    Title,
}

fn capitalise(word: &str) -> String {
    let mut c = word.chars();
    c.next().map_or_else(String::new, |f| {
        f.to_uppercase().collect::<String>() + c.as_str()
    })
}

fn cased(words: &[&str], casing: Casing) -> Vec<String> {
    match casing {
        Casing::Given => words.iter().map(|w| w.to_string()).collect(),
        Casing::Lower => words.iter().map(|w| w.to_lowercase()).collect(),
        Casing::Upper => words.iter().map(|w| w.to_uppercase()).collect(),
        Casing::Sentence => words
            .iter()
            .enumerate()
            .map(|(k, w)| {
                let l = w.to_lowercase();
                if k == 0 { capitalise(&l) } else { l }
            })
            .collect(),
        Casing::Title => words
            .iter()
            .map(|w| capitalise(&w.to_lowercase()))
            .collect(),
    }
}

/// The casing of `found` (its words), if it is one of the known ones for `form`, which it
/// equals but for case.
fn casing_of(found: &[&str], form: &[String]) -> Option<Casing> {
    if found.len() != form.len() {
        return None;
    }
    if found.iter().zip(form).all(|(a, b)| a == b) {
        return Some(Casing::Given);
    }
    let has_upper = |w: &str| w.chars().any(char::is_uppercase);
    let capitalised = |w: &str| {
        let mut c = w.chars();
        c.next().is_some_and(|first| !first.is_lowercase()) && !has_upper(c.as_str())
    };
    if !found.iter().any(|w| has_upper(w)) {
        Some(Casing::Lower)
    } else if capitalised(found[0]) && !found[1..].iter().any(|w| has_upper(w)) {
        Some(Casing::Sentence)
    } else if found.iter().all(|w| capitalised(w)) {
        Some(Casing::Title)
    } else if !found.iter().any(|w| w.chars().any(char::is_lowercase)) {
        Some(Casing::Upper)
    } else {
        None
    }
}

/// One term's forms: the old and new words, singular and plural.
struct Forms {
    singular: Vec<String>,
    plural: Vec<String>,
    new_singular: Vec<String>,
    new_plural: Vec<String>,
}

impl Forms {
    fn new(old: &str, new: &str) -> Result<Forms> {
        let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let (singular, new_singular) = (words(old), words(new));
        if singular.is_empty() || new_singular.is_empty() {
            return Err(EditError::Invalid("the terms must not be empty".into()));
        }
        if singular
            .iter()
            .any(|w| !w.chars().any(char::is_alphanumeric))
        {
            return Err(EditError::Invalid(format!(
                "`{old}` is not a term: every word needs a letter or digit"
            )));
        }
        Ok(Forms {
            plural: words(&plural(&singular.join(" "))),
            new_plural: words(&plural(&new_singular.join(" "))),
            singular,
            new_singular,
        })
    }
}

/// Every term's forms in one automaton over case-folded text ([`fold`]), so that a file is
/// read once whatever the number of terms.
struct Matcher {
    forms: Vec<Forms>,
    automaton: AhoCorasick,
    /// Per pattern, the forms it stands for: (term, plural). Terms may share a form.
    owners: Vec<Vec<(usize, bool)>>,
}

impl Matcher {
    fn new(terms: &[(String, String)]) -> Result<Matcher> {
        let forms = terms
            .iter()
            .map(|(old, new)| Forms::new(old, new))
            .collect::<Result<Vec<_>>>()?;
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut owners: Vec<Vec<(usize, bool)>> = Vec::new();
        for (t, f) in forms.iter().enumerate() {
            for (is_plural, words) in [(true, &f.plural), (false, &f.singular)] {
                let pattern = fold(&words.join(" ")).0;
                let k = *index.entry(pattern).or_insert_with(|| {
                    owners.push(Vec::new());
                    owners.len() - 1
                });
                owners[k].push((t, is_plural));
            }
        }
        let mut patterns: Vec<(usize, String)> = index.into_iter().map(|(p, k)| (k, p)).collect();
        patterns.sort();
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns.iter().map(|(_, p)| p))
            .map_err(|e| EditError::Invalid(format!("the terms: {e}")))?;
        Ok(Matcher {
            forms,
            automaton,
            owners,
        })
    }
}

/// `text` case-folded, each character to the first of its lower-case mapping ("İ" to "i"),
/// each run of white space to one space; and for each byte of the result, the byte of `text`
/// it came from (and one more entry: the end).
fn fold(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len() + 1);
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if space && in_space {
            continue;
        }
        in_space = space;
        let folded = if space {
            ' '
        } else if c.is_ascii() {
            c.to_ascii_lowercase()
        } else {
            c.to_lowercase().next().unwrap_or(c)
        };
        out.push(folded);
        from.extend(std::iter::repeat_n(i, folded.len_utf8()));
    }
    from.push(text.len());
    (out, from)
}

/// The replacements that rename term `old` to `new` ([`rename_terms`] with one term).
pub fn rename_term(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    old: &str,
    new: &str,
    include: &[RegionKind],
) -> Result<TermRename> {
    rename_terms(docs, texts, &[(old.to_string(), new.to_string())], include)
}

/// The replacements that rename each term `old` to `new` of `terms` in every file of `docs`
/// (`texts` holds them as read), all terms in one pass over each file: whole words only, in
/// the casings as given, lower, UPPER, Sentence and Title case (compared as Unicode lower-cases
/// them: "İstanbul" is "istanbul" in Sentence case), singular and plural (the plural of `old`
/// becomes the plural of `new`). Where two terms match overlapping text the longer match wins
/// ("registry index" before "registry"), then the term listed first. Only regions of the kinds
/// in `include` are searched ([`RegionKind::Prose`] is always); occurrences elsewhere, in another
/// casing, or inside a name (`registry.toml`, `path/registry`) are listed in
/// [`TermRename::left`].
pub fn rename_terms(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    terms: &[(String, String)],
    include: &[RegionKind],
) -> Result<TermRename> {
    rename_terms_reporting(docs, texts, terms, include, &Quiet)
}

/// [`rename_terms`], advancing `progress` by one per file.
pub(crate) fn rename_terms_reporting(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    terms: &[(String, String)],
    include: &[RegionKind],
    progress: &dyn Progress,
) -> Result<TermRename> {
    if terms.is_empty() {
        return Err(EditError::Invalid("no term to rename".into()));
    }
    let matcher = Matcher::new(terms)?;
    // Each file once (documents may share one), in the order of their paths, in parallel: the
    // replacements and what was left come out sorted file by file, without comparing paths.
    let mut files: BTreeMap<PathBuf, &Document> = BTreeMap::new();
    for doc in docs {
        for file in &doc.files {
            files.entry(PathBuf::from(file)).or_insert(doc);
        }
    }
    let files: Vec<(PathBuf, &Document)> = files.into_iter().collect();
    progress.start("matching terms", files.len() as u64);
    let per_file: Vec<Result<TermRename>> = files
        .par_iter()
        .map(|(path, doc)| {
            let text = texts
                .get(path)
                .ok_or_else(|| EditError::NotRead(path.clone()))?;
            let found = rename_in_file(&matcher, path, doc, text, include);
            progress.advance(&path.to_string_lossy());
            Ok(found)
        })
        .collect();
    progress.finish();
    let mut out = TermRename::default();
    for file in per_file {
        let file = file?;
        out.replacements.extend(file.replacements);
        out.left.extend(file.left);
    }
    Ok(out)
}

/// [`rename_terms`] in one file (`path`, of `doc`, reading `text`).
fn rename_in_file(
    matcher: &Matcher,
    path: &Path,
    doc: &Document,
    text: &str,
    include: &[RegionKind],
) -> TermRename {
    let format = doc.format.unwrap_or(Format::Markdown);
    let file = path.to_string_lossy();
    let mut out = TermRename::default();
    let mut found: Vec<(Replacement, usize)> = Vec::new();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |byte: usize| line_starts.partition_point(|&s| s <= byte);
    // Per heading level: whether the file's headings of that level are title-cased.
    let mut headings: BTreeMap<usize, bool> = BTreeMap::new();
    for region in regions(format, &file, text, &doc.verbatim_envs) {
        let searched = region.kind == RegionKind::Prose || include.contains(&region.kind);
        let (folded, from) = fold(&text[region.start..region.end]);
        for m in matcher.automaton.find_overlapping_iter(&folded) {
            let start = region.start + from[m.start()];
            let end = region.start + from[m.end()];
            if !whole_term(text, start, end) {
                continue;
            }
            let found_text = &text[start..end];
            let left = |reason: &str| Left {
                path: path.to_path_buf(),
                line: line_of(start),
                text: found_text.to_string(),
                reason: reason.to_string(),
            };
            for &(term, is_plural) in &matcher.owners[m.pattern().as_usize()] {
                if !searched {
                    out.left.push(left(region.kind.as_str()));
                    continue;
                }
                if in_name(text, start, end) {
                    out.left.push(left("part of a name"));
                    continue;
                }
                let forms = &matcher.forms[term];
                let (form, target) = if is_plural {
                    (&forms.plural, &forms.new_plural)
                } else {
                    (&forms.singular, &forms.new_singular)
                };
                let found_words: Vec<&str> = found_text.split_whitespace().collect();
                let Some(mut casing) = casing_of(&found_words, form) else {
                    out.left.push(left("casing"));
                    continue;
                };
                // One capitalised word: Title Case in a title-cased line ("Registry Index",
                // "### Multiple Policies in a Workspace"), else a sentence's first word. A
                // heading that is the one word: Title Case when the headings of its level in
                // the file are title-cased ("## Workspace" among "## Build Scripts").
                if casing == Casing::Sentence
                    && found_words.len() == 1
                    && (title_cased_line(text, start, end)
                        || heading_level(text, start).is_some_and(|level| {
                            *headings
                                .entry(level)
                                .or_insert_with(|| headings_title_cased(text, level))
                        }))
                {
                    casing = Casing::Title;
                }
                let (start, replacement, uncertain) =
                    cased_replacement(text, start, found_text, target, casing);
                if uncertain {
                    out.left.push(Left {
                        reason: "article not certain".into(),
                        ..left("article")
                    });
                }
                found.push((
                    Replacement {
                        path: path.to_path_buf(),
                        start,
                        end,
                        text: replacement,
                        moved_from: None,
                    },
                    term,
                ));
            }
        }
    }
    out.replacements = longest_first(found);
    // One file: sorted as `Left` orders them, without comparing the (equal) paths.
    out.left
        .sort_by(|a, b| (a.line, &a.text, &a.reason).cmp(&(b.line, &b.text, &b.reason)));
    out
}

/// Whether `start..end` is part of a name: `registry.toml`, `path/registry`, `registry/x`.
fn in_name(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after: Vec<char> = text[end..].chars().take(2).collect();
    matches!(before, Some('/' | '\\' | '.' | '-' | '@'))
        && text[..start]
            .chars()
            .nth_back(1)
            .is_some_and(char::is_alphanumeric)
        || matches!(after.first(), Some('/' | '@'))
        || matches!(after.as_slice(), ['.' | '-', c, ..] if c.is_alphanumeric())
}

/// The text that replaces `found` (at `start`): the `target` words in `casing`, keeping the
/// writer's line breaks where the word counts allow; with the article before it ("a registry"
/// → "an index") made to follow the new term, which moves the start. The last field says
/// that an article is there that spelling does not settle.
fn cased_replacement(
    text: &str,
    start: usize,
    found: &str,
    target: &[String],
    casing: Casing,
) -> (usize, String, bool) {
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    let words = cased(&target, casing);
    let separators: Vec<&str> = found
        .split(|c: char| !c.is_whitespace())
        .filter(|s| !s.is_empty())
        .collect();
    let replacement = if separators.len() + 1 == words.len() {
        let mut s = words[0].clone();
        for (sep, w) in separators.iter().zip(&words[1..]) {
            s.push_str(sep);
            s.push_str(w);
        }
        s
    } else {
        words.join(" ")
    };
    let Some((at, article)) = article_before(text, start) else {
        return (start, replacement, false);
    };
    match article_for(&words[0]) {
        Some(wanted) if wanted != article.to_lowercase() => {
            let fixed = if article.starts_with(['A']) {
                capitalise(wanted)
            } else {
                wanted.to_string()
            };
            let space = &text[at + article.len()..start];
            (at, format!("{fixed}{space}{replacement}"), false)
        }
        Some(_) => (start, replacement, false),
        None => (start, replacement, true),
    }
}

/// Of overlapping replacements in one file (each with its term's index), the longest, then the
/// one of the term listed first; in order.
fn longest_first(mut found: Vec<(Replacement, usize)>) -> Vec<Replacement> {
    found.sort_by(|(a, i), (b, j)| {
        (b.end - b.start, a.start, i).cmp(&(a.end - a.start, b.start, j))
    });
    // The ranges taken: start -> end, disjoint.
    let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (r, _) in found {
        let overlaps = taken
            .range(..r.end)
            .next_back()
            .is_some_and(|(_, &e)| r.start < e);
        if !overlaps {
            taken.insert(r.start, r.end);
            out.push(r);
        }
    }
    out.sort_by(|a, b| (a.start, a.end, &a.text).cmp(&(b.start, b.end, &b.text)));
    out
}

/// The indefinite article right before `start` ("a " or "an ", a whole word followed by one
/// space), with its byte offset.
fn article_before(text: &str, start: usize) -> Option<(usize, &str)> {
    let before = text[..start].strip_suffix(' ')?;
    let word_start = before.rfind(|c: char| !c.is_alphanumeric()).map_or(0, |k| {
        k + before[k..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[word_start..];
    matches!(word, "a" | "A" | "an" | "An").then_some((word_start, word))
}

/// The indefinite article a word takes ("a" or "an"), when its spelling says so; `None` for
/// the cases spelling does not settle (acronyms, digits: "an SQL", "a 4K").
fn article_for(word: &str) -> Option<&'static str> {
    let lower = word.to_lowercase();
    let first = lower.chars().next()?;
    if !first.is_alphabetic() || (word.chars().count() > 1 && word.chars().all(char::is_uppercase))
    {
        return None;
    }
    const A_BEFORE: &[&str] = &[
        "uni", "use", "usu", "uti", "eu", "one", "once", "ubi", "ure",
    ];
    const AN_BEFORE: &[&str] = &["hour", "honest", "honor", "honour", "heir"];
    if AN_BEFORE.iter().any(|p| lower.starts_with(p)) {
        return Some("an");
    }
    if A_BEFORE.iter().any(|p| lower.starts_with(p)) {
        return Some("a");
    }
    Some(if "aeiou".contains(first) { "an" } else { "a" })
}

/// A repetition the edit made: `replacement` put a word beside the same word ("package index
/// index" from "registry index", "the the"), where the text before it did not already repeat.
/// Returns (the phrase before the edit, the phrase after it) for each one, with its byte offset
/// in the edited text.
pub fn repeats(
    old: &str,
    new: &str,
    old_range: (usize, usize),
    new_range: (usize, usize),
) -> Vec<(usize, String, String)> {
    let word_before = |t: &str, at: usize| -> Option<(usize, String)> {
        let head = t[..at].trim_end_matches([' ', '\t', '\n']);
        if head.len() == at || t[head.len()..at].matches('\n').count() > 1 {
            return None;
        }
        let s = head
            .rfind(|c: char| !is_word(c) && c != '\'')
            .map_or(0, |k| {
                k + head[k..].chars().next().map_or(1, char::len_utf8)
            });
        (s < head.len()).then(|| (s, head[s..].to_lowercase()))
    };
    let word_after = |t: &str, at: usize| -> Option<(usize, String)> {
        let tail = t[at..].trim_start_matches([' ', '\t', '\n']);
        let s = t.len() - tail.len();
        if s == at || t[at..s].matches('\n').count() > 1 {
            return None;
        }
        let e = tail
            .find(|c: char| !is_word(c) && c != '\'')
            .map_or(t.len(), |k| s + k);
        (e > s).then(|| (e, t[s..e].to_lowercase()))
    };
    let first_word = |t: &str, (a, b): (usize, usize)| {
        t[a..b]
            .split(|c: char| !is_word(c) && c != '\'')
            .find(|w| !w.is_empty())
            .map(str::to_lowercase)
    };
    let last_word = |t: &str, (a, b): (usize, usize)| {
        t[a..b]
            .rsplit(|c: char| !is_word(c) && c != '\'')
            .find(|w| !w.is_empty())
            .map(str::to_lowercase)
    };
    let phrase =
        |t: &str, a: usize, b: usize| t[a..b].split_whitespace().collect::<Vec<_>>().join(" ");
    // The same word, or it and its plural ("index indexes").
    let stem = |w: &str| -> String {
        let w = if w.len() > 4 {
            w.strip_suffix("es").unwrap_or(w)
        } else {
            w
        };
        if w.len() > 3 {
            w.strip_suffix('s').unwrap_or(w).to_string()
        } else {
            w.to_string()
        }
    };
    let same = |a: &str, b: &str| a == b || stem(a) == stem(b);
    let mut out = Vec::new();
    // On the left: the word before the edited text and its first word.
    if let (Some((ns, w)), Some(first)) =
        (word_before(new, new_range.0), first_word(new, new_range))
    {
        let was = word_before(old, old_range.0).zip(first_word(old, old_range));
        if same(&w, &first) && was.as_ref().is_none_or(|((_, a), b)| !same(a, b)) {
            let os = was.map_or(old_range.0, |((s, _), _)| s);
            out.push((
                ns,
                phrase(old, os, old_range.1),
                phrase(new, ns, new_range.1),
            ));
        }
    }
    // On the right: its last word and the word after it.
    if let (Some((ne, w)), Some(last)) = (word_after(new, new_range.1), last_word(new, new_range)) {
        let was = word_after(old, old_range.1).zip(last_word(old, old_range));
        if same(&w, &last) && was.as_ref().is_none_or(|((_, a), b)| !same(a, b)) {
            let oe = was.map_or(old_range.1, |((e, _), _)| e);
            out.push((
                new_range.0,
                phrase(old, old_range.0, oe),
                phrase(new, new_range.0, ne),
            ));
        }
    }
    out
}

/// A letter, digit or underscore: what `\b` calls a word character.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `start..end` of `text` is a whole term: no letter, digit or underscore right beside
/// it, and where it begins or ends with another character, not that character either: `c++` in
/// "C++ code" but not in "c+++" or "c++17", `registry` not in "subregistry".
fn whole_term(text: &str, start: usize, end: usize) -> bool {
    let found = &text[start..end];
    let (Some(first), Some(last)) = (found.chars().next(), found.chars().next_back()) else {
        return false;
    };
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    let free = |edge: char, outside: Option<char>| {
        outside.is_none_or(|c| !is_word(c) && (is_word(edge) || c != edge))
    };
    free(first, before) && free(last, after)
}

/// The level of the Markdown heading (`## …`) whose line holds byte `start`, if it is one.
fn heading_level(text: &str, start: usize) -> Option<usize> {
    let line_start = text[..start].rfind('\n').map_or(0, |k| k + 1);
    atx_level(&text[line_start..])
}

/// The level of an ATX heading line (`## Title`).
fn atx_level(line: &str) -> Option<usize> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
}

/// Whether the Markdown headings of `level` in `text` are mostly title-cased: counted over
/// those with a word of four letters or more after their first word.
fn headings_title_cased(text: &str, level: usize) -> bool {
    let (mut title, mut sentence) = (0, 0);
    for line in text.lines().filter(|l| atx_level(l) == Some(level)) {
        let words: Vec<&str> = line[level..]
            .split_whitespace()
            .skip(1)
            .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic))
            .collect();
        if words.is_empty() {
            continue;
        }
        if words
            .iter()
            .all(|w| w.chars().next().is_some_and(char::is_uppercase))
        {
            title += 1;
        } else {
            sentence += 1;
        }
    }
    title > sentence
}

/// Whether the line around `start..end` is title-cased: the next word is capitalised, or every
/// other word of four letters or more is.
fn title_cased_line(text: &str, start: usize, end: usize) -> bool {
    let line_start = text[..start].rfind('\n').map_or(0, |k| k + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |k| end + k);
    let capitalised = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
    let letters = |w: &str| w.trim_matches(|c: char| !c.is_alphabetic()).to_string();
    let next = text[end..line_end]
        .split_whitespace()
        .next()
        .map(letters)
        .filter(|w| !w.is_empty());
    if next.as_deref().is_some_and(capitalised) {
        return true;
    }
    let others: Vec<String> = text[line_start..start]
        .split_whitespace()
        .chain(text[end..line_end].split_whitespace())
        .map(letters)
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic))
        .collect();
    !others.is_empty() && others.iter().all(|w| capitalised(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_bounded_by_symbols_and_title_cased_lines() {
        assert!(whole_term("use C++ here", 4, 7));
        assert!(whole_term("(c++)", 1, 4));
        assert!(!whole_term("c+++", 0, 3));
        assert!(!whole_term("c++17", 0, 3));
        assert!(whole_term(".NET apps", 0, 4));
        assert!(!whole_term("x.NET", 1, 5));
        assert!(!whole_term("subregistry", 3, 11));
        assert!(whole_term("a registry.", 2, 10));
        let t = "### Multiple Policies in a Workspace\n";
        let at = t.find("Workspace").expect("found");
        assert!(title_cased_line(t, at, at + 9));
        let t = "* [Registry Index](reference/registry-index.md)";
        let at = t.find("Registry").expect("found");
        assert!(title_cased_line(t, at, at + 8));
        let t = "Workspace members share one lockfile.";
        assert!(!title_cased_line(t, 0, 9));
        // A one-word heading among title-cased siblings, and among sentence-cased ones.
        let t =
            "# Guide\n\n## Build Scripts Explained\n\n## Workspace\n\n## Publishing Your Crates\n";
        let at = t.find("Workspace").expect("found");
        assert_eq!(heading_level(t, at), Some(2));
        assert!(headings_title_cased(t, 2));
        let t = "# Glossary\n\n## Feature flags\n\n## Workspace\n\n## Package registry\n";
        assert!(!headings_title_cased(t, 2));
        assert_eq!(heading_level("Some Workspace Text", 5), None);
    }

    #[test]
    fn articles_follow_the_new_term_where_spelling_settles_it() {
        assert_eq!(article_for("index"), Some("an"));
        assert_eq!(article_for("registry"), Some("a"));
        assert_eq!(article_for("hour"), Some("an"));
        assert_eq!(article_for("user"), Some("a"));
        assert_eq!(article_for("SQL"), None);
        assert_eq!(article_before("see a registry", 6), Some((4, "a")));
        assert_eq!(article_before("see An registry", 7), Some((4, "An")));
        assert_eq!(article_before("a data registry", 7), None);
    }

    #[test]
    fn repeats_the_edit_made_are_found_and_old_ones_are_not() {
        // "registry index" → "package index index".
        let (old, new) = ("the registry index", "the package index index");
        let found = repeats(old, new, (4, 12), (4, 17));
        assert_eq!(
            found,
            [(4, "registry index".into(), "package index index".into())]
        );
        // "package registry" → "package package index".
        let (old, new) = ("a package registry.", "a package package index.");
        let found = repeats(old, new, (10, 18), (10, 23));
        assert_eq!(
            found,
            [(2, "package registry".into(), "package package index".into())]
        );
        // "registry indexes" → "package index indexes".
        let found = repeats("registry indexes", "package index indexes", (0, 8), (0, 13));
        assert_eq!(found.len(), 1);
        // A repetition already there is not the edit's.
        let (old, new) = ("index index registry", "index index crate");
        assert!(repeats(old, new, (12, 20), (12, 17)).is_empty());
        // Nothing repeated.
        assert!(repeats("a registry here", "a package index here", (2, 10), (2, 15)).is_empty());
    }

    #[test]
    fn plurals_and_casings() {
        assert_eq!(plural("registry"), "registries");
        assert_eq!(plural("key"), "keys");
        assert_eq!(plural("box"), "boxes");
        assert_eq!(plural("dependency graph"), "dependency graphs");
        let form = ["package".to_string(), "index".to_string()];
        assert_eq!(casing_of(&["Package", "Index"], &form), Some(Casing::Title));
        assert_eq!(
            casing_of(&["Package", "index"], &form),
            Some(Casing::Sentence)
        );
        assert_eq!(casing_of(&["PACKAGE", "INDEX"], &form), Some(Casing::Upper));
        assert_eq!(casing_of(&["pAckage", "index"], &form), None);
        assert_eq!(
            cased(&["crate", "registry"], Casing::Sentence),
            ["Crate", "registry"]
        );
    }
}
