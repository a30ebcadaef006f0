//! LEDGER's data model: documents, units, edges, mentions and diagnostics.
//!
//! This crate holds plain data and the rules that do not depend on any input
//! format (edge priority, content hashing, id sanitising). It does no IO, no
//! async and carries no heavy dependency; every other crate speaks in its types.

pub mod progress;
pub mod quantize;

use serde::{Deserialize, Serialize};
use std::fmt;

/// The format a document was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A LaTeX main file with everything it `\input`s or `\include`s.
    Latex,
    /// A single Markdown file.
    Markdown,
    /// An mdBook-style folder with a `SUMMARY.md`.
    MarkdownBook,
}

impl Format {
    /// The name stored in the `documents.format` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Latex => "latex",
            Format::Markdown => "markdown",
            Format::MarkdownBook => "mdbook",
        }
    }
}

/// The coarse kind of a unit; the `env` field of [`Unit`] holds the fine one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitKind {
    /// The root of a document's tree.
    Document,
    /// A part, chapter, section, subsection … or Markdown heading.
    Section,
    /// A paragraph of prose (lists and quotes included).
    Paragraph,
    /// A figure (float or captioned image).
    Figure,
    /// A table (float or Markdown table).
    Table,
    /// A display equation (numbered or not).
    Equation,
    /// A theorem-like environment: theorem, lemma, definition, corollary, remark …
    Theorem,
    /// A proof.
    Proof,
    /// An algorithm float or pseudo-code block.
    Algorithm,
    /// A code listing or fenced code block.
    Listing,
    /// A bibliography entry.
    Bibitem,
}

impl UnitKind {
    /// The name stored in the `units.kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            UnitKind::Document => "document",
            UnitKind::Section => "section",
            UnitKind::Paragraph => "paragraph",
            UnitKind::Figure => "figure",
            UnitKind::Table => "table",
            UnitKind::Equation => "equation",
            UnitKind::Theorem => "theorem",
            UnitKind::Proof => "proof",
            UnitKind::Algorithm => "algorithm",
            UnitKind::Listing => "listing",
            UnitKind::Bibitem => "bibitem",
        }
    }

    /// The short prefix of generated ids (`sec-3-2`, `thm-2`, `eq-3` …).
    pub fn id_prefix(self) -> &'static str {
        match self {
            UnitKind::Document => "doc",
            UnitKind::Section => "sec",
            UnitKind::Paragraph => "p",
            UnitKind::Figure => "fig",
            UnitKind::Table => "tab",
            UnitKind::Equation => "eq",
            UnitKind::Theorem => "thm",
            UnitKind::Proof => "proof",
            UnitKind::Algorithm => "alg",
            UnitKind::Listing => "lst",
            UnitKind::Bibitem => "bib",
        }
    }
}

impl UnitKind {
    /// Every kind, in declaration order.
    pub const ALL: [UnitKind; 11] = [
        UnitKind::Document,
        UnitKind::Section,
        UnitKind::Paragraph,
        UnitKind::Figure,
        UnitKind::Table,
        UnitKind::Equation,
        UnitKind::Theorem,
        UnitKind::Proof,
        UnitKind::Algorithm,
        UnitKind::Listing,
        UnitKind::Bibitem,
    ];

    /// The kind named by [`UnitKind::as_str`].
    pub fn parse(name: &str) -> Option<UnitKind> {
        UnitKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One unit of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Stable id, unique within the document: the label or anchor when there is one,
    /// else kind and printed number (`sec-3-2`), else a position under the parent (`sec-3-2/p4`).
    pub id: String,
    /// Coarse kind.
    pub kind: UnitKind,
    /// Fine kind: the environment or heading level (`lemma`, `subsection`, `align`, `h2`).
    pub env: String,
    /// Nesting depth of a section (part = -1, chapter = 0, section = 1 … in LaTeX; heading level in Markdown); 0 elsewhere.
    pub level: i32,
    /// The primary label or anchor, if any.
    pub label: Option<String>,
    /// Every label or anchor that names this unit (the primary one first), with the number printed for it.
    pub labels: Vec<(String, Option<String>)>,
    /// The printed number as a reader sees it ("3.2", "2.1", "7-3"; "3.1–3.3" for a multi-line display), if numbered.
    pub number: Option<String>,
    /// Every number printed for this unit (each numbered line of an `align`), for prose resolution.
    pub numbers: Vec<String>,
    /// Title of a section, caption of a float, optional name of a theorem.
    pub title: Option<String>,
    /// Index of the parent unit in [`Document::units`]; `None` only for the root.
    pub parent: Option<usize>,
    /// Position in document order (0 = root).
    pub ordinal: usize,
    /// Index into [`Document::files`] of the file the unit starts in.
    pub file: usize,
    /// Start of the byte range in that file.
    pub start_byte: usize,
    /// 1-based line of `start_byte`.
    pub line: usize,
    /// End of the byte range (exclusive).
    pub end_byte: usize,
    /// The unit's own text (for containers: the heading only).
    pub text: String,
    /// cl100k token count of `text`.
    pub tokens: usize,
    /// blake3 of kind, number, title and text: changes whenever what a reader sees changes.
    pub content_hash: String,
}

/// How a mention names its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MentionKind {
    /// `\ref`, `\autoref`, `\pageref`, `\nameref`.
    Ref,
    /// `\eqref`.
    Eqref,
    /// `\cref`, `\Cref`, `\crefrange` … (one mention per key).
    Cref,
    /// `\cite` family (one mention per key).
    Cite,
    /// A user macro that wraps a reference (`\thmref{x}`).
    Macro,
    /// `\uses{…}` of blueprints (author-written dependencies).
    Uses,
    /// Prose such as "Section 3.2", "Figure 5", "Eq. (3)", "Listing 7-3".
    Prose,
    /// A Markdown link to an anchor or page.
    Link,
}

impl MentionKind {
    /// The name stored in the `mentions.mention_kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            MentionKind::Ref => "ref",
            MentionKind::Eqref => "eqref",
            MentionKind::Cref => "cref",
            MentionKind::Cite => "cite",
            MentionKind::Macro => "macro",
            MentionKind::Uses => "uses",
            MentionKind::Prose => "prose",
            MentionKind::Link => "link",
        }
    }
}

/// Whether a mention found its target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Resolved to exactly one unit.
    Resolved {
        /// Document of the target.
        doc: String,
        /// Unit id of the target.
        unit: String,
    },
    /// No unit carries this key.
    Broken {
        /// Why it did not resolve.
        reason: String,
    },
    /// Several units could be meant.
    Ambiguous {
        /// The candidates, `doc:unit`.
        reason: String,
    },
    /// Names a unit of another work ("Sections 5 and 6 of the blueprint \cite{x}"): never
    /// resolved in this corpus, never renumbered, not broken.
    External {
        /// What makes it external.
        reason: String,
    },
    /// Not yet resolved (only before the resolution pass).
    Pending,
}

impl Resolution {
    /// The name stored in the `mentions.status` column.
    pub fn status(&self) -> &'static str {
        match self {
            Resolution::Resolved { .. } => "resolved",
            Resolution::Broken { .. } => "broken",
            Resolution::Ambiguous { .. } => "ambiguous",
            Resolution::External { .. } => "external",
            Resolution::Pending => "pending",
        }
    }
}

/// What a mention points at, before resolution.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TargetKey {
    /// A LaTeX label.
    Label(String),
    /// A bibliography key.
    Citation(String),
    /// A printed number of a unit kind: ("theorem-like or env family", "3.2").
    Number {
        /// The family named in prose: `section`, `figure`, `table`, `equation`, `theorem`, `listing`, `algorithm`, `appendix`, `chapter`, `part`, or an env name such as `lemma`.
        family: String,
        /// The number as printed ("3.2", "7-3", "A").
        number: String,
    },
    /// A Markdown link target: file (relative to the document root; empty = same file) and anchor.
    Anchor {
        /// Target file relative to the document root, `/`-separated; empty for the same file.
        file: String,
        /// Anchor without `#`; empty for the file itself.
        anchor: String,
    },
}

impl fmt::Display for TargetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetKey::Label(l) | TargetKey::Citation(l) => write!(f, "{l}"),
            TargetKey::Number { family, number } => write!(f, "{family} {number}"),
            TargetKey::Anchor { file, anchor } if anchor.is_empty() => write!(f, "{file}"),
            TargetKey::Anchor { file, anchor } => write!(f, "{file}#{anchor}"),
        }
    }
}

/// One explicit mention of another unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mention {
    /// Index of the unit the mention occurs in.
    pub unit: usize,
    /// File index of the span.
    pub file: usize,
    /// Minimal span: start byte in the file.
    pub start_byte: usize,
    /// Minimal span: end byte (exclusive).
    pub end_byte: usize,
    /// 1-based line of `start_byte`.
    pub line: usize,
    /// 1-based column (in characters) of `start_byte`.
    pub col: usize,
    /// The span's text.
    pub text: String,
    /// How the target is named.
    pub kind: MentionKind,
    /// What is named.
    pub key: TargetKey,
    /// The outcome of resolution.
    pub resolution: Resolution,
}

/// Severity of a diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing, nothing lost.
    Info,
    /// Something was skipped or guessed.
    Warning,
    /// Input that could not be read or understood.
    Error,
}

impl Severity {
    /// The name stored in the `diagnostics.severity` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A problem found in the input, with the file and line it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Path of the file, as given to the indexer.
    pub path: String,
    /// 1-based line; 0 when the whole file is meant.
    pub line: usize,
    /// 1-based column, in characters; 0 when a whole line or file is meant.
    #[serde(default)]
    pub col: usize,
    /// How bad it is.
    pub severity: Severity,
    /// What happened.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.path,
            self.line,
            self.severity.as_str(),
            self.message
        )
    }
}

/// The kind of an edge. Priority order: REFERENCES > DEPENDS > CONTAINS > RELATED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EdgeKind {
    /// Explicit mention, referrer → referenced.
    References,
    /// Implicit prerequisite, dependent → prerequisite.
    Depends,
    /// Hierarchy, parent → child.
    Contains,
    /// Semantic similarity, stored once per pair.
    Related,
}

impl EdgeKind {
    /// Every kind, in priority order.
    pub const ALL: [EdgeKind; 4] = [
        EdgeKind::References,
        EdgeKind::Depends,
        EdgeKind::Contains,
        EdgeKind::Related,
    ];

    /// The kind named by [`EdgeKind::as_str`].
    pub fn parse(name: &str) -> Option<EdgeKind> {
        EdgeKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The name stored in the `edges.kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::References => "REFERENCES",
            EdgeKind::Depends => "DEPENDS",
            EdgeKind::Contains => "CONTAINS",
            EdgeKind::Related => "RELATED",
        }
    }

    /// Rank in the priority order (0 is highest).
    pub fn priority(self) -> u8 {
        match self {
            EdgeKind::References => 0,
            EdgeKind::Depends => 1,
            EdgeKind::Contains => 2,
            EdgeKind::Related => 3,
        }
    }
}

/// A typed edge between two units, possibly in two documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// Source document id.
    pub src_doc: String,
    /// Source unit id.
    pub src_unit: String,
    /// Destination document id.
    pub dst_doc: String,
    /// Destination unit id.
    pub dst_unit: String,
    /// Edge kind.
    pub kind: EdgeKind,
    /// Weight or similarity; 1.0 for structural and explicit edges.
    pub score: f64,
    /// Why the edge exists (mention kinds and texts, judge name …).
    pub evidence: String,
}

/// The embedding of one unit's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitEmbedding {
    /// Document id.
    pub doc_id: String,
    /// Unit id.
    pub unit_id: String,
    /// blake3 of what the summarizer read (kind, title, text, context): with the summarizer's
    /// name, the cache key of the summary.
    pub input_hash: String,
    /// The text that was embedded (the unit's type-specific summary).
    pub summary: String,
    /// blake3 of the summary: with the model name, the cache key of the vector.
    pub summary_hash: String,
    /// The L2-normalised vector, as the graph stores it ([`quantize::as_stored`]: int8 with a
    /// scale per vector).
    pub vector: Vec<f32>,
}

/// The semantic layer of a graph: one model's embeddings and the RELATED edges found with them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Semantic {
    /// The embedding model (a graph never mixes models).
    pub model: String,
    /// Vector length.
    pub dim: usize,
    /// The summarizer that wrote the summaries (`extractive-v1`, or an LLM's model name).
    pub summarizer: String,
    /// One embedding per embedded unit.
    pub embeddings: Vec<UnitEmbedding>,
    /// RELATED edges, one per unordered pair, `score` = cosine.
    pub related: Vec<Edge>,
}

/// What a part holds, in a few bytes: enough to reuse the part whole without decoding it (an
/// unchanged document of a rerun costs a footer read, not a decompressed document and its vectors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartSummary {
    /// The document's id.
    pub doc_id: String,
    /// Its DEPENDS judgments.
    pub judgments: usize,
    /// Its DEPENDS edges.
    pub depends: usize,
    /// Its embeddings.
    pub embeddings: usize,
    /// Whether nothing in it failed: a failed judgment or summary is to be tried again by the
    /// next run, so an incomplete part is a cache, never reused whole.
    pub complete: bool,
    /// The document's own errors ([`Document::errors`]).
    pub errors: Vec<String>,
}

impl PartSummary {
    /// The summary of the part of `doc` with `semantic`.
    pub fn of(doc: &Document, semantic: &Semantic) -> PartSummary {
        let judged = doc
            .judgments
            .iter()
            .all(|j| matches!(j.outcome, JudgmentOutcome::Verdicts(_)));
        let summarised = semantic.embeddings.iter().all(|e| !e.input_hash.is_empty());
        PartSummary {
            doc_id: doc.id.clone(),
            judgments: doc.judgments.len(),
            depends: doc.depends.len(),
            embeddings: semantic.embeddings.len(),
            complete: judged && summarised,
            errors: doc.errors().collect(),
        }
    }
}

/// What parsing a document found at one path: with every such observation of a document, a
/// later run can tell without parsing again whether a new parse would read the same bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Seen {
    /// A file read, with the blake3 of its bytes.
    Read(String),
    /// A file whose existence was checked (its content not read).
    Exists,
    /// A path looked for that was not a file (an `\input` candidate, a missing chapter).
    Absent,
    /// A folder whose Markdown files were listed, with the blake3 of the sorted list.
    Listing(String),
}

impl Seen {
    /// Its name in the `inputs` table.
    pub fn kind(&self) -> &'static str {
        match self {
            Seen::Read(_) => "read",
            Seen::Exists => "exists",
            Seen::Absent => "absent",
            Seen::Listing(_) => "listing",
        }
    }

    /// The hash it holds (empty for `exists` and `absent`).
    pub fn hash(&self) -> &str {
        match self {
            Seen::Read(h) | Seen::Listing(h) => h,
            Seen::Exists | Seen::Absent => "",
        }
    }

    /// The observation from its table form; `None` for an unknown kind.
    pub fn from_parts(kind: &str, hash: &str) -> Option<Seen> {
        Some(match kind {
            "read" => Seen::Read(hash.into()),
            "exists" => Seen::Exists,
            "absent" => Seen::Absent,
            "listing" => Seen::Listing(hash.into()),
            _ => return None,
        })
    }
}

/// One path a document's parse looked at, and what it found there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Input {
    /// The path, as the parser used it.
    pub path: String,
    /// What was found.
    pub seen: Seen,
}

/// One parsed document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Stable id: the main file's (or book folder's) path relative to the indexed root.
    pub id: String,
    /// The main file or book folder as given.
    pub path: String,
    /// The format (`None` only for a document that could not be read at all).
    pub format: Option<Format>,
    /// Files that make up the document, main file first, as given.
    pub files: Vec<String>,
    /// Units in document order; index 0 is the root.
    pub units: Vec<Unit>,
    /// Explicit mentions in document order.
    pub mentions: Vec<Mention>,
    /// Everything noticed while parsing.
    pub diagnostics: Vec<Diagnostic>,
    /// Total bytes read.
    pub bytes: u64,
    /// blake3 of all bytes read, in file order.
    pub content_hash: String,
    /// Every path the parse looked at and what it found, sorted: unchanged inputs give the same
    /// document (what lets a rerun skip parsing it).
    #[serde(default)]
    pub inputs: Vec<Input>,
    /// Other documents whose labels this one may name, as `(label prefix, path)` (LaTeX `\externaldocument`).
    pub externals: Vec<(String, String)>,
    /// Verbatim-like environments the document defines (LaTeX `\newenvironment` around
    /// `\verbatim`, `\DefineVerbatimEnvironment`, `\lstnewenvironment` …), sorted: their
    /// content is code, not prose, wherever the document's files are read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbatim_envs: Vec<String>,
    /// Files not read as plain UTF-8, as `(file index, encoding)`: the encoding they declare or
    /// inherit (`windows-1252` for `\usepackage[latin1]{inputenc}`), or `UTF-8` for a UTF-8 file
    /// with invalid bytes. Byte offsets are always the file's own; edits write these files back
    /// in their encoding (and refuse to write one whose bytes did not decode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encodings: Vec<(usize, String)>,
    /// DEPENDS edges judged for this document (dependent → prerequisite), empty until judged.
    pub depends: Vec<Edge>,
    /// The DEPENDS judgments behind them, one per judged unit, empty until judged.
    pub judgments: Vec<Judgment>,
}

/// A unit as a graph's `units` table holds it: what retrieval and impact analysis read back.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitRecord {
    /// The document.
    pub doc_id: String,
    /// The unit's id in it.
    pub unit_id: String,
    /// Coarse kind.
    pub kind: UnitKind,
    /// Environment or heading level.
    pub env: String,
    /// Primary label or anchor.
    pub label: Option<String>,
    /// Printed number.
    pub number: Option<String>,
    /// Title or caption.
    pub title: Option<String>,
    /// The parent unit's id.
    pub parent_id: Option<String>,
    /// Position in document order.
    pub ordinal: usize,
    /// The file it starts in.
    pub source_path: String,
    /// 1-based line.
    pub line: usize,
    /// cl100k tokens of its text.
    pub tokens: usize,
    /// Its own text.
    pub text: String,
}

/// One unit's DEPENDS judgment: which candidates a judge was shown and what it answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgment {
    /// The judged (dependent) unit.
    pub unit_id: String,
    /// The judge: `offline`, or `llm:<model>:p<prompt version>`.
    pub judge: String,
    /// blake3 of (judge, the unit's content hash, the candidates' content hashes, in order): the
    /// cache key under which a later run reuses this judgment.
    pub cache_key: String,
    /// The candidate (prerequisite) unit ids, in document order.
    pub candidates: Vec<String>,
    /// The answer, or why there is none.
    pub outcome: JudgmentOutcome,
    /// HTTP requests it took (retries included; 0 for the offline judge).
    pub requests: u32,
    /// Prompt tokens the endpoint reported.
    pub prompt_tokens: u64,
    /// Completion tokens the endpoint reported.
    pub completion_tokens: u64,
    /// Taken from the previous graph version instead of being judged again.
    pub reused: bool,
}

/// What a judgment came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgmentOutcome {
    /// One verdict per candidate, in the same order.
    Verdicts(Vec<CandidateVerdict>),
    /// No usable answer (endpoint down, malformed answers); the unit is judged again next run.
    Failed(String),
}

/// The verdict on one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateVerdict {
    /// Whether the unit depends on the candidate.
    pub depends: bool,
    /// What it needs from it (terms, symbols, results applied); empty when it does not depend.
    pub elements: Vec<String>,
    /// The judge's probability that it depends; absent for a yes/no judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
}

impl Document {
    /// Its own errors (an unreadable file, a bad encoding): the document is still stored or
    /// edited, and these are what a user must be told.
    pub fn errors(&self) -> impl Iterator<Item = String> + '_ {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ToString::to_string)
    }

    /// Unit id → index in `units`.
    pub fn unit_indices(&self) -> std::collections::HashMap<&str, usize> {
        self.units
            .iter()
            .enumerate()
            .map(|(i, u)| (u.id.as_str(), i))
            .collect()
    }

    /// The units as a graph's `units` table holds them.
    pub fn unit_records(&self) -> Vec<UnitRecord> {
        self.units
            .iter()
            .map(|u| UnitRecord {
                doc_id: self.id.clone(),
                unit_id: u.id.clone(),
                kind: u.kind,
                env: u.env.clone(),
                label: u.label.clone(),
                number: u.number.clone(),
                title: u.title.clone(),
                parent_id: u.parent.map(|p| self.units[p].id.clone()),
                ordinal: u.ordinal,
                source_path: if u.kind == UnitKind::Document {
                    self.path.clone()
                } else {
                    self.files.get(u.file).cloned().unwrap_or_default()
                },
                line: u.line,
                tokens: u.tokens,
                text: u.text.clone(),
            })
            .collect()
    }

    /// Total tokens over the units' own texts.
    pub fn tokens(&self) -> usize {
        self.units.iter().map(|u| u.tokens).sum()
    }

    /// CONTAINS edges parent → child, in document order.
    pub fn contains_edges(&self) -> Vec<Edge> {
        self.units
            .iter()
            .filter_map(|u| {
                let parent = &self.units[u.parent?];
                Some(Edge {
                    src_doc: self.id.clone(),
                    src_unit: parent.id.clone(),
                    dst_doc: self.id.clone(),
                    dst_unit: u.id.clone(),
                    kind: EdgeKind::Contains,
                    score: 1.0,
                    evidence: String::new(),
                })
            })
            .collect()
    }

    /// The statement each proof proves, as (proof, statement) unit indices in document order: the
    /// theorem-like unit a reference on the proof's first line names ("\begin{proof}[Proof of
    /// Lemma~\ref{x}]"), else the nearest earlier sibling that is not a proof, when that is a
    /// theorem-like unit (a proof right after its statement, or a second proof of it). Proofs
    /// that follow anything else prove nothing known.
    pub fn proofs(&self) -> Vec<(usize, usize)> {
        let index = self.unit_indices();
        let mut named: std::collections::HashMap<usize, usize> = Default::default();
        for m in &self.mentions {
            let u = &self.units[m.unit];
            if u.kind != UnitKind::Proof || m.line != u.line || named.contains_key(&m.unit) {
                continue;
            }
            if let Resolution::Resolved { doc, unit } = &m.resolution
                && doc == &self.id
                && let Some(&s) = index.get(unit.as_str())
                && self.units[s].kind == UnitKind::Theorem
            {
                named.insert(m.unit, s);
            }
        }
        (0..self.units.len())
            .filter(|&p| self.units[p].kind == UnitKind::Proof)
            .filter_map(|p| {
                let statement = named.get(&p).copied().or_else(|| {
                    let parent = self.units[p].parent;
                    (0..p)
                        .rev()
                        .find(|&k| {
                            self.units[k].parent == parent && self.units[k].kind != UnitKind::Proof
                        })
                        .filter(|&k| self.units[k].kind == UnitKind::Theorem)
                })?;
                Some((p, statement))
            })
            .collect()
    }

    /// The DEPENDS edge of each proof to the statement it proves ([`Document::proofs`]), with
    /// [`PROOF_OF`] as evidence: fixing a statement means fixing its proof, and the other way
    /// round. Pairs that a REFERENCES edge already links keep that edge alone.
    pub fn proof_edges(&self) -> Vec<Edge> {
        let referenced: std::collections::HashSet<(&str, &str)> = self
            .mentions
            .iter()
            .filter_map(|m| match &m.resolution {
                Resolution::Resolved { doc, unit } if doc == &self.id => {
                    Some((self.units[m.unit].id.as_str(), unit.as_str()))
                }
                _ => None,
            })
            .collect();
        self.proofs()
            .into_iter()
            .filter(|&(p, s)| {
                !referenced.contains(&(self.units[p].id.as_str(), self.units[s].id.as_str()))
            })
            .map(|(p, s)| Edge {
                src_doc: self.id.clone(),
                src_unit: self.units[p].id.clone(),
                dst_doc: self.id.clone(),
                dst_unit: self.units[s].id.clone(),
                kind: EdgeKind::Depends,
                score: 1.0,
                evidence: PROOF_OF.to_string(),
            })
            .collect()
    }

    /// The edges the parse alone gives: CONTAINS, REFERENCES and the proofs' DEPENDS links.
    pub fn parsed_edges(&self) -> Vec<Edge> {
        let mut edges = self.contains_edges();
        edges.extend(self.reference_edges());
        edges.extend(self.proof_edges());
        edges
    }

    /// REFERENCES edges referrer → referenced, one per (source, target) pair,
    /// with the mention kinds and texts that support it as evidence.
    pub fn reference_edges(&self) -> Vec<Edge> {
        let mut out: Vec<Edge> = Vec::new();
        let mut index: std::collections::BTreeMap<(usize, String, String), usize> =
            Default::default();
        for m in &self.mentions {
            let Resolution::Resolved { doc, unit } = &m.resolution else {
                continue;
            };
            let src = &self.units[m.unit].id;
            if doc == &self.id && unit == src {
                continue;
            }
            let evidence = format!("{}:{}", m.kind.as_str(), m.text);
            match index.entry((m.unit, doc.clone(), unit.clone())) {
                std::collections::btree_map::Entry::Occupied(e) => {
                    let edge = &mut out[*e.get()];
                    if !edge.evidence.split(" | ").any(|x| x == evidence) {
                        edge.evidence.push_str(" | ");
                        edge.evidence.push_str(&evidence);
                    }
                }
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(out.len());
                    out.push(Edge {
                        src_doc: self.id.clone(),
                        src_unit: src.clone(),
                        dst_doc: doc.clone(),
                        dst_unit: unit.clone(),
                        kind: EdgeKind::References,
                        score: 1.0,
                        evidence,
                    });
                }
            }
        }
        out
    }
}

/// The evidence of the DEPENDS edge from a proof to the statement it proves.
pub const PROOF_OF: &str = "proof-of";

/// blake3 hex digest of some bytes: the content hash used everywhere.
pub fn content_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Turns arbitrary text into an id fragment: lowercase ASCII letters, digits and `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
            dash = false;
        } else if !dash && !out.is_empty() {
            out.push('-');
            dash = true;
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// `text` with the credentials of every URL in it removed (`amqp://user:secret@host/vhost` →
/// `amqp://host/vhost`), for anything stored or printed: logs, the `runs` table, error messages.
pub fn redact_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the path, query, fragment or whitespace; its userinfo at its last `@`.
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        out.push_str(
            authority
                .rfind('@')
                .map_or(authority, |a| &authority[a + 1..]),
        );
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_with_a_failed_judgment_is_not_complete_and_its_errors_are_kept() {
        let diagnostic = |severity, message: &str| Diagnostic {
            path: "a.tex".into(),
            line: 3,
            col: 0,
            severity,
            message: message.into(),
        };
        let judgment = |outcome| Judgment {
            unit_id: "p1".into(),
            judge: "j".into(),
            cache_key: "k".into(),
            candidates: vec!["d1".into()],
            outcome,
            requests: 1,
            prompt_tokens: 0,
            completion_tokens: 0,
            reused: false,
        };
        let mut doc = Document {
            id: "a.tex".into(),
            diagnostics: vec![
                diagnostic(Severity::Warning, "a warning"),
                diagnostic(Severity::Error, "not UTF-8"),
            ],
            judgments: vec![judgment(JudgmentOutcome::Verdicts(Vec::new()))],
            ..Document::default()
        };
        let summary = PartSummary::of(&doc, &Semantic::default());
        assert!(summary.complete);
        assert_eq!((summary.doc_id.as_str(), summary.judgments), ("a.tex", 1));
        assert_eq!(summary.errors, vec![doc.diagnostics[1].to_string()]);
        doc.judgments
            .push(judgment(JudgmentOutcome::Failed("endpoint down".into())));
        assert!(!PartSummary::of(&doc, &Semantic::default()).complete);
    }

    #[test]
    fn credentials_are_removed_from_every_url() {
        assert_eq!(
            redact_credentials("amqp://guest:secret@10.0.0.1:5672/%2f"),
            "amqp://10.0.0.1:5672/%2f"
        );
        assert_eq!(
            redact_credentials("amqp://127.0.0.1:5672"),
            "amqp://127.0.0.1:5672"
        );
        assert_eq!(
            redact_credentials(
                "ledger worker --broker=amqp://u:p%40ss@h:5672 --llm-url https://k:v@api.example/v1?x=a@b"
            ),
            "ledger worker --broker=amqp://h:5672 --llm-url https://api.example/v1?x=a@b"
        );
        assert_eq!(redact_credentials("no url: a@b"), "no url: a@b");
        assert_eq!(redact_credentials("x://@"), "x://");
    }

    #[test]
    fn slug_folds_punctuation() {
        assert_eq!(slug("Hello, World!"), "hello-world");
        assert_eq!(slug("  3.2 Results "), "3-2-results");
    }

    #[test]
    fn edge_priority_order() {
        let mut kinds = [
            EdgeKind::Related,
            EdgeKind::Contains,
            EdgeKind::References,
            EdgeKind::Depends,
        ];
        kinds.sort_by_key(|k| k.priority());
        assert_eq!(
            kinds,
            [
                EdgeKind::References,
                EdgeKind::Depends,
                EdgeKind::Contains,
                EdgeKind::Related
            ]
        );
    }
}
