//! `ledger verify`: every broken and ambiguous reference and every problem with a document,
//! as findings located like a compiler's, each with a rule; suppressed by an inline comment, a
//! `.ledgerignore` of path globs, or a baseline of findings already known. The findings print
//! as text, JSON lines, SARIF 2.1.0 or GitHub Actions annotations.

use crate::config::{IndexConfig, VerifyConfig, VerifyFormat};
use crate::index::{discover_inputs, parse_map};
use crate::{Error, Result};
use ledger_core::{Diagnostic, Resolution, Severity};
use ledger_parse::CorpusIndex;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Fails the check.
    Error,
    /// Reported; fails nothing.
    Warning,
    /// Worth knowing.
    Note,
}

impl Level {
    /// `error`, `warning` or `note` (SARIF's names too).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

/// The rules of `ledger verify`, with what each finds.
pub const RULES: [(&str, &str); 5] = [
    (
        "broken-reference",
        "A reference names no unit: no such label, number, anchor or file.",
    ),
    (
        "ambiguous-reference",
        "A reference could name several units.",
    ),
    (
        "unreadable-document",
        "A document cannot be read: binary, undecodable, or gone.",
    ),
    (
        "source-warning",
        "Something in a source was skipped or guessed: a missing included file, an unclosed environment.",
    ),
    (
        "unfinished-edit",
        "An edit stopped between writing two of its files: they are part old, part new until `ledger undo`.",
    ),
];

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, as the documents name it.
    pub path: String,
    /// 1-based line; 0 when the whole file is meant.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// The rule (one of [`RULES`]).
    pub rule: &'static str,
    /// How bad it is.
    pub level: Level,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}: {}",
            self.path,
            self.line,
            self.col,
            self.level.as_str(),
            self.message
        )
    }
}

impl Finding {
    /// One JSON object: file, line, column, rule, severity, message.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.path,
            "line": self.line,
            "column": self.col,
            "rule": self.rule,
            "severity": self.level.as_str(),
            "message": self.message,
        })
    }

    /// A GitHub Actions workflow command: `::error file=…,line=…,col=…,title=…::message`.
    pub fn github_annotation(&self) -> String {
        // https://docs.github.com/actions/reference/workflow-commands-for-github-actions
        let data = |s: &str| {
            s.replace('%', "%25")
                .replace('\r', "%0D")
                .replace('\n', "%0A")
        };
        let property = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
        let command = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "notice",
        };
        let mut at = format!("file={}", property(&self.path));
        if self.line > 0 {
            at.push_str(&format!(",line={},col={}", self.line, self.col));
        }
        format!(
            "::{command} {at},title={}::{}",
            property(self.rule),
            data(&self.message)
        )
    }

    /// What identifies a finding in a baseline, whatever line it moved to.
    fn baseline_key(&self) -> (String, String, String) {
        (
            self.path.clone(),
            self.rule.to_string(),
            self.message.clone(),
        )
    }
}

/// What `ledger verify` found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// Findings, document by document, suppressed ones left out.
    pub findings: Vec<Finding>,
    /// Documents checked.
    pub documents: usize,
    /// References checked.
    pub mentions: usize,
    /// Broken references reported.
    pub broken: usize,
    /// Ambiguous references reported.
    pub ambiguous: usize,
    /// Findings left out: by an inline `ledger-ignore`, a `.ledgerignore`, or the baseline.
    pub suppressed: usize,
    /// Whether the check failed: a reported finding at level error.
    pub failed: bool,
}

impl VerifyReport {
    /// The findings as `format` prints them, a line each (one SARIF log for `sarif`).
    pub fn render(&self, format: VerifyFormat) -> String {
        let lines: Vec<String> = match format {
            VerifyFormat::Text => self.findings.iter().map(Finding::to_string).collect(),
            VerifyFormat::Json => self
                .findings
                .iter()
                .map(|f| f.to_json().to_string())
                .collect(),
            VerifyFormat::Sarif => vec![format!("{:#}", self.sarif())],
            VerifyFormat::Github => self
                .findings
                .iter()
                .map(Finding::github_annotation)
                .collect(),
        };
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// The summary line: documents, references, broken, ambiguous, suppressed.
    pub fn summary(&self) -> String {
        let suppressed = if self.suppressed > 0 {
            format!(" ({} suppressed)", self.suppressed)
        } else {
            String::new()
        };
        format!(
            "{} documents, {} references: {} broken, {} ambiguous{suppressed}",
            self.documents, self.mentions, self.broken, self.ambiguous
        )
    }

    /// The report as one SARIF 2.1.0 log, for code-scanning uploads: a file under the working
    /// folder is a relative, percent-encoded URI against `%SRCROOT%` (the working folder, in
    /// `originalUriBaseIds`), any other an absolute `file://` URI; both RFC 3986 whatever the
    /// file's name holds (spaces, commas, line breaks).
    pub fn sarif(&self) -> serde_json::Value {
        let cwd = std::env::current_dir().unwrap_or_default();
        let rules: Vec<serde_json::Value> = RULES
            .iter()
            .map(|(id, text)| serde_json::json!({ "id": id, "shortDescription": { "text": text } }))
            .collect();
        let results: Vec<serde_json::Value> = self
            .findings
            .iter()
            .map(|f| {
                let path = cwd.join(&f.path);
                let under_cwd = path.strip_prefix(&cwd).ok().filter(|rel| {
                    rel.components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)))
                });
                let artifact = match under_cwd {
                    Some(rel) => serde_json::json!({ "uri": uri_path(rel), "uriBaseId": SRCROOT }),
                    None => serde_json::json!({ "uri": file_uri(&path) }),
                };
                let mut location = serde_json::json!({ "artifactLocation": artifact });
                if f.line > 0 {
                    location["region"] =
                        serde_json::json!({ "startLine": f.line, "startColumn": f.col.max(1) });
                }
                serde_json::json!({
                    "ruleId": f.rule,
                    "level": f.level.as_str(),
                    "message": { "text": f.message },
                    "locations": [ { "physicalLocation": location } ],
                })
            })
            .collect();
        let root = format!("{}/", file_uri(&cwd).trim_end_matches('/'));
        serde_json::json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [ {
                "tool": { "driver": {
                    "name": "ledger",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                } },
                "originalUriBaseIds": { SRCROOT: { "uri": root } },
                "results": results,
            } ],
        })
    }
}

/// The base of relative SARIF URIs: the working folder, as code-scanning tools name it.
const SRCROOT: &str = "%SRCROOT%";

/// `path`'s components, each percent-encoded (all but RFC 3986's unreserved characters), joined
/// by `/`.
fn uri_path(path: &Path) -> String {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
    const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    path.components()
        .filter_map(|c| match c {
            std::path::Component::Normal(name) => Some(name.to_string_lossy()),
            std::path::Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .map(|name| utf8_percent_encode(&name, COMPONENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// `file:///abs/path`, percent-encoded.
fn file_uri(path: &Path) -> String {
    format!("file:///{}", uri_path(path))
}

/// Where findings already known come from: the JSON lines `ledger verify --format json` wrote.
pub fn read_baseline(path: &Path) -> Result<HashSet<(String, String, String)>> {
    let text = std::fs::read_to_string(path).map_err(crate::io(|| {
        format!("reading the baseline {}", path.display())
    }))?;
    let mut known = HashSet::new();
    for (k, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            Error::Invalid(format!(
                "{}:{}: not a finding of `ledger verify --format json`: {e}",
                path.display(),
                k + 1
            ))
        })?;
        let field = |name: &str| v[name].as_str().unwrap_or_default().to_string();
        known.insert((field("file"), field("rule"), field("message")));
    }
    Ok(known)
}

/// `ledger verify PATH...`: every broken and ambiguous reference, every document that cannot be
/// read and (when `config.show_diagnostics`) every other diagnostic, less the suppressed ones
/// and those in `baseline`.
pub fn verify(
    paths: &[PathBuf],
    index: &IndexConfig,
    config: &VerifyConfig,
    baseline: &HashSet<(String, String, String)>,
) -> Result<VerifyReport> {
    let mut index = index.clone();
    index.count_tokens = false;
    // An input that is not there is a usage error, as for `index`; not a finding.
    let (sources, input_diagnostics) = discover_inputs(paths, &index)?;
    // One document at a time, as `index` does: of each, what references from the others need
    // (`Offer`) and what its findings need (the mentions it did not resolve itself, the
    // diagnostics shown), so that memory grows with the findings, not with the corpus.
    let read = parse_map(&sources, &index, &crate::Quiet, |mut doc| {
        let offer = CorpusIndex::offer(&doc);
        let mentions = doc.mentions.len();
        doc.mentions.retain(|m| {
            !matches!(
                m.resolution,
                Resolution::Resolved { .. } | Resolution::External { .. }
            )
        });
        doc.diagnostics
            .retain(|d| config.show_diagnostics || d.severity == Severity::Error);
        doc.units = Vec::new();
        doc.inputs = Vec::new();
        (offer, mentions, doc)
    })?;
    let mut targets = CorpusIndex::default();
    let mut mentions = 0;
    let mut docs = Vec::with_capacity(read.len());
    for (offer, n, doc) in read {
        targets.add_offer(offer);
        mentions += n;
        docs.push(doc);
    }
    for doc in &mut docs {
        targets.resolve(doc);
    }
    let mut findings = Vec::new();
    let diagnostic = |d: &Diagnostic| Finding {
        path: d.path.clone(),
        line: d.line,
        col: d.col.max(1),
        rule: if d.severity == Severity::Error {
            "unreadable-document"
        } else {
            "source-warning"
        },
        level: match d.severity {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
            Severity::Info => Level::Note,
        },
        message: d.message.clone(),
    };
    let ambiguous_level = if config.fail_on_ambiguous {
        Level::Error
    } else {
        Level::Warning
    };
    for doc in &docs {
        // One finding per span: a range ("Sections 2 through 7") names several numbers at one
        // place, and its missing ones are one finding with every reason.
        let mut spans: Vec<(&ledger_core::Mention, bool, Vec<&str>)> = Vec::new();
        let mut at: HashMap<(usize, usize, usize, bool), usize> = HashMap::new();
        for m in &doc.mentions {
            let (is_broken, reason) = match &m.resolution {
                Resolution::Resolved { .. } | Resolution::External { .. } => continue,
                Resolution::Broken { reason } => (true, reason.as_str()),
                Resolution::Pending => (true, "not resolved"),
                Resolution::Ambiguous { reason } => (false, reason.as_str()),
            };
            let key = (m.file, m.start_byte, m.end_byte, is_broken);
            match at.get(&key) {
                Some(&k) if !spans[k].2.contains(&reason) => spans[k].2.push(reason),
                Some(_) => {}
                None => {
                    at.insert(key, spans.len());
                    spans.push((m, is_broken, vec![reason]));
                }
            }
        }
        for (m, is_broken, reasons) in spans {
            let reasons = reasons.join("; ");
            let (rule, level, what) = if is_broken {
                ("broken-reference", Level::Error, "broken")
            } else {
                ("ambiguous-reference", ambiguous_level, "ambiguous")
            };
            findings.push(Finding {
                path: doc.files.get(m.file).cloned().unwrap_or_default(),
                line: m.line,
                col: m.col,
                rule,
                level,
                message: format!("{what} reference `{}`: {reasons}", m.text),
            });
        }
        // A document's own errors (unreadable, binary) fail the check and are always shown.
        findings.extend(doc.diagnostics.iter().map(diagnostic));
    }
    findings.extend(input_diagnostics.iter().map(diagnostic));
    let unfinished: std::collections::BTreeSet<PathBuf> = paths
        .iter()
        .filter_map(|p| ledger_edit::unfinished_edit(p))
        .collect();
    findings.extend(unfinished.into_iter().map(|record| Finding {
        path: record.display().to_string(),
        line: 0,
        col: 1,
        rule: "unfinished-edit",
        level: Level::Warning,
        message: format!(
            "an edit stopped between writing two of its files: they are part old, part new; \
             `ledger undo {}` restores them",
            record
                .parent()
                .and_then(Path::parent)
                .unwrap_or(&record)
                .display()
        ),
    }));
    let mut suppress = Suppressions::default();
    let before = findings.len();
    findings.retain(|f| !suppress.ignores(f) && !baseline.contains(&f.baseline_key()));
    let count = |rule: &str| findings.iter().filter(|f| f.rule == rule).count();
    Ok(VerifyReport {
        documents: docs.len(),
        mentions,
        failed: findings.iter().any(|f| f.level == Level::Error),
        broken: count("broken-reference"),
        ambiguous: count("ambiguous-reference"),
        suppressed: before - findings.len(),
        findings,
    })
}

/// The marker of an inline suppression, in a LaTeX comment (`% ledger-ignore: broken-reference`)
/// or an HTML comment in Markdown (`<!-- ledger-ignore -->`); without rules it silences every
/// rule.
const MARKER: &str = "ledger-ignore";

/// Inline comments and `.ledgerignore` files, read once per file and folder.
#[derive(Default)]
struct Suppressions {
    /// File → its lines that silence something, by index (none when it cannot be read): each
    /// file read once however many findings it has, and only those few lines kept.
    files: HashMap<String, HashMap<usize, Line>>,
    /// Folder → the globs of its `.ledgerignore` (relative to it), if it has one.
    ignores: HashMap<PathBuf, Option<globset::GlobSet>>,
}

impl Suppressions {
    /// Whether `f` is suppressed by a comment on its line or alone on the line before, or by a
    /// `.ledgerignore` in its folder or a folder above.
    fn ignores(&mut self, f: &Finding) -> bool {
        self.by_comment(f) || self.by_ignore_file(f)
    }

    fn by_comment(&mut self, f: &Finding) -> bool {
        if f.line == 0 {
            return false;
        }
        let lines = self.files.entry(f.path.clone()).or_insert_with(|| {
            std::fs::read(&f.path)
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .lines()
                        .enumerate()
                        .filter_map(|(k, l)| Some((k, Line::of(l)?)))
                        .collect()
                })
                .unwrap_or_default()
        });
        let on = |k: usize| lines.get(&k).is_some_and(|l| l.silenced.covers(f.rule));
        // The line before counts when it is a comment alone.
        let comment_line = |k: usize| lines.get(&k).is_some_and(|l| l.comment_alone);
        on(f.line - 1) || (f.line >= 2 && comment_line(f.line - 2) && on(f.line - 2))
    }

    fn by_ignore_file(&mut self, f: &Finding) -> bool {
        let Ok(file) = std::fs::canonicalize(&f.path) else {
            return false;
        };
        let mut dir = file.parent();
        while let Some(d) = dir {
            let globs = self
                .ignores
                .entry(d.to_path_buf())
                .or_insert_with(|| ignore_file(&d.join(".ledgerignore")));
            if let Some(set) = globs
                && let Ok(rel) = file.strip_prefix(d)
                && set.is_match(rel)
            {
                return true;
            }
            dir = d.parent();
        }
        false
    }
}

/// What one line of a source says about suppressions.
struct Line {
    /// The rules its comments silence.
    silenced: Silenced,
    /// Whether it is a comment alone (then it also silences the line after it).
    comment_alone: bool,
}

impl Line {
    /// What `line` silences; `None` when nothing.
    fn of(line: &str) -> Option<Line> {
        let silenced = silenced(line);
        if !silenced.all && silenced.rules.is_empty() {
            return None;
        }
        let l = line.trim_start();
        Some(Line {
            silenced,
            comment_alone: l.starts_with('%') || l.starts_with("<!--"),
        })
    }
}

/// The rules a line's suppression comments silence.
#[derive(Debug, Default)]
struct Silenced {
    /// A marker without rules: every rule.
    all: bool,
    /// The rules named after markers.
    rules: Vec<String>,
}

impl Silenced {
    fn covers(&self, rule: &str) -> bool {
        self.all || self.rules.iter().any(|r| r == rule)
    }
}

/// What the comments of `line` silence: each marker in a comment, alone (every rule) or followed
/// by `:` and the rules it names.
fn silenced(line: &str) -> Silenced {
    let in_comment = |at: usize| {
        let before = line[..at].trim_end();
        before.ends_with('%') && !before.ends_with("\\%") || before.ends_with("<!--")
    };
    let mut out = Silenced::default();
    for (at, _) in line.match_indices(MARKER).filter(|(at, _)| in_comment(*at)) {
        let rest = line[at + MARKER.len()..]
            .trim_end()
            .trim_end_matches("-->")
            .trim();
        match rest.strip_prefix(':') {
            None => out.all |= rest.is_empty(),
            Some(rules) => out.rules.extend(
                rules
                    .split([',', ' '])
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string),
            ),
        }
    }
    out
}

/// The globs of a `.ledgerignore` (one per line, `#` comments), or `None` without one. A bad
/// glob is skipped with a warning.
fn ignore_file(path: &Path) -> Option<globset::GlobSet> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut set = globset::GlobSetBuilder::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // `docs/` means everything under it.
        let pattern = match line.strip_suffix('/') {
            Some(dir) => format!("{dir}/**"),
            None => line.to_string(),
        };
        match globset::GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
        {
            Ok(g) => {
                set.add(g);
            }
            Err(e) => tracing::warn!("{}:{}: {e}; line skipped", path.display(), k + 1),
        }
    }
    set.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn silences(line: &str, rule: &str) -> bool {
        silenced(line).covers(rule)
    }

    #[test]
    fn inline_comments_silence_their_rules() {
        assert!(silences(
            "See \\ref{x}. % ledger-ignore",
            "broken-reference"
        ));
        assert!(silences(
            "% ledger-ignore: broken-reference, ambiguous-reference",
            "broken-reference"
        ));
        assert!(!silences(
            "% ledger-ignore: ambiguous-reference",
            "broken-reference"
        ));
        assert!(silences(
            "<!-- ledger-ignore: broken-reference -->",
            "broken-reference"
        ));
        assert!(!silences(
            "the ledger-ignore marker in prose",
            "broken-reference"
        ));
        assert!(!silences("50\\% ledger-ignore", "broken-reference"));
    }

    #[test]
    fn annotations_escape_what_github_reads_as_syntax() {
        let f = Finding {
            path: "a,b:c.md".into(),
            line: 3,
            col: 7,
            rule: "broken-reference",
            level: Level::Error,
            message: "100% broken\nreally".into(),
        };
        assert_eq!(
            f.github_annotation(),
            "::error file=a%2Cb%3Ac.md,line=3,col=7,title=broken-reference::100%25 broken%0Areally"
        );
    }
}
