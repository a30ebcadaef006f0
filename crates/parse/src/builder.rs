//! The document under construction, shared by the LaTeX and Markdown parsers:
//! files, the unit tree, mentions, diagnostics, and id assignment at the end.

use ledger_core::{
    Diagnostic, Document, Format, Mention, MentionKind, Resolution, Severity, TargetKey, Unit,
    UnitKind, slug,
};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// Bytes `start..end` of source file `file` (an index into the document's files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// The file.
    pub file: usize,
    /// First byte.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
}

impl Span {
    /// Bytes `start..end` of `file`.
    pub fn new(file: usize, start: usize, end: usize) -> Span {
        Span { file, start, end }
    }

    /// The position `byte` of `file` (an empty span).
    pub fn at(file: usize, byte: usize) -> Span {
        Span::new(file, byte, byte)
    }
}

/// A document being built. Units refer to each other by index until [`Builder::finish`].
pub(crate) struct Builder {
    pub doc: Document,
    /// The text of every file, by file index (kept for line numbers).
    pub texts: Vec<std::sync::Arc<String>>,
    /// Byte offset of every line start, by file index.
    line_starts: Vec<Vec<usize>>,
    /// For files not in plain UTF-8, how text offsets map to the file's bytes, by file index.
    decoded: Vec<Option<crate::encoding::Decoded>>,
    /// Per file, the last column computed: (line, byte, column). Mentions come mostly in byte
    /// order, so a column is counted from the previous one on the same line, not from the
    /// line's start (a long line with many mentions stays linear).
    last_col: Vec<Option<(usize, usize, usize)>>,
    hasher: blake3::Hasher,
    /// What the parse looked at on disk (becomes `Document::inputs`).
    pub inputs: crate::inputs::Recorder,
    /// Preferred id stem per unit (env-specific prefix), set by the parser.
    prefixes: HashMap<usize, String>,
    /// Which unit carries each label so far.
    label_owner: HashMap<String, usize>,
}

impl Builder {
    /// A document `id` read from `path`; files outside `input_root` are not read (see
    /// [`crate::Source::root`]).
    pub fn new(id: &str, path: &str, format: Format, input_root: Option<&std::path::Path>) -> Self {
        let root = Unit {
            id: "doc".into(),
            kind: UnitKind::Document,
            env: format.as_str().into(),
            level: -3,
            label: None,
            labels: vec![],
            number: None,
            numbers: vec![],
            title: None,
            parent: None,
            ordinal: 0,
            file: 0,
            start_byte: 0,
            line: 0,
            end_byte: 0,
            text: String::new(),
            tokens: 0,
            content_hash: String::new(),
        };
        Builder {
            doc: Document {
                id: id.into(),
                path: path.into(),
                format: Some(format),
                units: vec![root],
                ..Default::default()
            },
            texts: vec![],
            line_starts: vec![],
            decoded: vec![],
            last_col: vec![],
            hasher: blake3::Hasher::new(),
            inputs: crate::inputs::Recorder::confined_to(input_root),
            prefixes: HashMap::default(),
            label_owner: HashMap::default(),
        }
    }

    /// Registers a file's text; returns its index.
    fn add_file(&mut self, path: &str, text: String) -> usize {
        self.hasher.update(path.as_bytes());
        self.hasher.update(&[0]);
        self.hasher.update(text.as_bytes());
        self.doc.bytes += text.len() as u64;
        self.doc.files.push(path.into());
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|k| k + 1));
        self.line_starts.push(starts);
        self.last_col.push(None);
        self.texts.push(std::sync::Arc::new(text));
        self.decoded.push(None);
        self.texts.len() - 1
    }

    /// Registers a file read from disk (see [`crate::source_file::read_source`]): a file not in plain UTF-8 keeps
    /// how its offsets map to its bytes, and every byte its encoding does not define is a
    /// warning at its line (the first few of each file). Returns its index.
    pub fn add_source(&mut self, path: &str, source: crate::source_file::SourceFile) -> usize {
        let crate::source_file::SourceFile {
            decoded, unknown, ..
        } = source;
        let plain = decoded.identical() && decoded.encoding == crate::encoding::Encoding::UTF8;
        let invalid = decoded.invalid.clone();
        let encoding = decoded.encoding;
        let (text, decoded) = if plain {
            (decoded.into_text(), None)
        } else {
            let mut d = decoded;
            (std::mem::take(&mut d.text), Some(d))
        };
        let text_len = text.len() as u64;
        let file = self.add_file(path, text);
        if !plain {
            let file_len = decoded.as_ref().map_or(text_len, |d| d.file_len() as u64);
            self.doc.bytes = self.doc.bytes - text_len + file_len;
            self.doc.encodings.push((file, encoding.name().to_string()));
            self.decoded[file] = decoded;
        }
        if let Some(name) = unknown {
            self.diag(
                file,
                0,
                Severity::Warning,
                format!(
                    "input encoding `{name}` is not one LEDGER decodes; read as windows-1252 (every byte kept)"
                ),
            );
        }
        const SHOWN: usize = 5;
        for &at in invalid.iter().take(SHOWN) {
            self.diag(
                file,
                at,
                Severity::Warning,
                format!(
                    "invalid {} here; read as U+FFFD (edits will not write this file)",
                    encoding.name()
                ),
            );
        }
        if invalid.len() > SHOWN {
            let last = invalid[invalid.len() - 1];
            self.diag(
                file,
                last,
                Severity::Warning,
                format!(
                    "invalid {} in {} more places, the last here",
                    encoding.name(),
                    invalid.len() - SHOWN
                ),
            );
        }
        file
    }

    /// Adds a unit; returns its index.
    // What every unit has from the start (kind, environment, level, parent, file and bytes),
    // called from every parser's handler; a struct would be built at each of those calls.
    #[allow(clippy::too_many_arguments)]
    pub fn unit(
        &mut self,
        kind: UnitKind,
        env: &str,
        level: i32,
        parent: usize,
        file: usize,
        start: usize,
        end: usize,
    ) -> usize {
        let ordinal = self.doc.units.len();
        self.doc.units.push(Unit {
            id: String::new(),
            kind,
            env: env.into(),
            level,
            label: None,
            labels: vec![],
            number: None,
            numbers: vec![],
            title: None,
            parent: Some(parent),
            ordinal,
            file,
            start_byte: start,
            line: 0,
            end_byte: end.max(start),
            text: String::new(),
            tokens: 0,
            content_hash: String::new(),
        });
        ordinal
    }

    /// Sets the id stem used when the unit has no label (`lem` for a lemma).
    pub fn set_prefix(&mut self, unit: usize, prefix: &str) {
        self.prefixes.insert(unit, prefix.to_string());
    }

    /// Adds a label (with the number printed for it) to a unit; warns on a duplicate in the same document.
    pub fn add_label(&mut self, unit: usize, label: &str, number: Option<String>, at: Span) {
        let Span {
            file, start: byte, ..
        } = at;
        if let Some(&other) = self.label_owner.get(label) {
            if other != unit {
                self.diag(
                    file,
                    byte,
                    Severity::Warning,
                    format!("label `{label}` defined more than once; the first definition is kept"),
                );
            }
            return;
        }
        self.label_owner.insert(label.to_string(), unit);
        self.doc.units[unit]
            .labels
            .push((label.to_string(), number));
    }

    /// Whether some unit already carries `label`.
    pub fn has_label(&self, label: &str) -> bool {
        self.label_owner.contains_key(label)
    }

    pub fn mention(&mut self, unit: usize, span: Span, kind: MentionKind, key: TargetKey) {
        let Span { file, start, end } = span;
        let src = &self.texts[file];
        let text = src.get(start..end).unwrap_or_default().to_string();
        let (line, col) = self.line_col(file, start);
        self.doc.mentions.push(Mention {
            unit,
            file,
            start_byte: start,
            end_byte: end,
            line,
            col,
            text,
            kind,
            key,
            resolution: Resolution::Pending,
        });
    }

    /// The 1-based line and column (in characters) of `byte` in `file`.
    fn line_col(&mut self, file: usize, byte: usize) -> (usize, usize) {
        let text = &self.texts[file];
        let (line, at) = line_of(text, &self.line_starts[file], byte);
        // Counted from the last column asked for on the same line, either way: diagnostics of a
        // long line may come last first.
        let col = match self.last_col[file] {
            Some((l, b, c)) if l == line && b <= at => c + text[b..at].chars().count(),
            Some((l, b, c)) if l == line => c - text[at..b].chars().count(),
            _ => text[self.line_starts[file][line - 1]..at].chars().count() + 1,
        };
        self.last_col[file] = Some((line, at, col));
        (line, col)
    }

    /// A diagnostic at `byte` of `file`, located by its line and column.
    pub fn diag(&mut self, file: usize, byte: usize, severity: Severity, message: String) {
        let (path, line, col) = match self.texts.get(file) {
            Some(_) => {
                let (line, col) = self.line_col(file, byte);
                (self.doc.files[file].clone(), line, col)
            }
            None => (self.doc.path.clone(), 0, 0),
        };
        self.doc.diagnostics.push(Diagnostic {
            path,
            line,
            col,
            severity,
            message,
        });
    }

    /// Assigns ids and texts, counts tokens, resolves mentions inside the document.
    pub fn finish(mut self, tokenizer: Option<&crate::tokens::Tokenizer>) -> Document {
        for u in &mut self.doc.units {
            if let Some(t) = self.texts.get(u.file) {
                u.line = line_of(t, &self.line_starts[u.file], u.start_byte).0;
            }
            if u.kind != UnitKind::Document
                && u.kind != UnitKind::Section
                && u.text.is_empty()
                && let Some(t) = self.texts.get(u.file)
            {
                u.text = t
                    .get(u.start_byte..u.end_byte)
                    .unwrap_or_default()
                    .to_string();
            }
            if u.kind == UnitKind::Section && u.text.is_empty() {
                u.text = u.title.clone().unwrap_or_default();
            }
            if u.label.is_none() {
                u.label = u.labels.first().map(|(l, _)| l.clone());
            }
        }
        self.assign_ids();
        if let Some(t) = tokenizer {
            // Units of one large document are counted in parallel (documents already are).
            use rayon::prelude::*;
            self.doc
                .units
                .par_iter_mut()
                .for_each(|u| u.tokens = t.count(&u.text));
        }
        for u in &mut self.doc.units {
            let mut h = blake3::Hasher::new();
            for part in [
                u.kind.as_str(),
                u.number.as_deref().unwrap_or(""),
                u.title.as_deref().unwrap_or(""),
                &u.text,
            ] {
                h.update(part.as_bytes());
                h.update(&[0]);
            }
            u.content_hash = h.finalize().to_hex().to_string();
        }
        self.offsets_into_files();
        self.doc.content_hash = self.hasher.finalize().to_hex().to_string();
        self.doc.inputs = self.inputs.into_inputs();
        crate::resolve::resolve_local(&mut self.doc);
        self.doc
    }

    /// Offsets of units and mentions in files not in plain UTF-8 become offsets into the
    /// files' own bytes (everything sliced from the text has been by now).
    fn offsets_into_files(&mut self) {
        if self.decoded.iter().all(Option::is_none) {
            return;
        }
        let map = |file: usize, at: usize| match self.decoded.get(file) {
            Some(Some(d)) => d.file_offset(at),
            _ => at,
        };
        for u in &mut self.doc.units {
            u.start_byte = map(u.file, u.start_byte);
            u.end_byte = map(u.file, u.end_byte);
        }
        for m in &mut self.doc.mentions {
            m.start_byte = map(m.file, m.start_byte);
            m.end_byte = map(m.file, m.end_byte);
        }
    }

    fn assign_ids(&mut self) {
        let mut taken: BTreeMap<String, usize> = BTreeMap::new();
        taken.insert("doc".into(), 0);
        // Ids the parser fixed (bibliography entries: `bib:KEY`) first, then labels, so a generated id never steals either.
        for i in 1..self.doc.units.len() {
            let id = &self.doc.units[i].id;
            if !id.is_empty() && taken.insert(id.clone(), i).is_some() {
                let dup = format!("{id}~{i}");
                self.doc.units[i].id = dup.clone();
                taken.insert(dup, i);
            }
        }
        for i in 1..self.doc.units.len() {
            if !self.doc.units[i].id.is_empty() {
                continue;
            }
            if let Some(l) = self.doc.units[i].label.clone()
                && !taken.contains_key(&l)
            {
                taken.insert(l.clone(), i);
                self.doc.units[i].id = l;
            }
        }
        let mut child_counts: HashMap<(usize, &'static str), usize> = HashMap::default();
        for i in 1..self.doc.units.len() {
            if !self.doc.units[i].id.is_empty() {
                continue;
            }
            let u = &self.doc.units[i];
            let prefix = self
                .prefixes
                .get(&i)
                .cloned()
                .unwrap_or_else(|| u.kind.id_prefix().to_string());
            let stem = match (&u.number, &u.title) {
                (Some(n), _) if u.kind != UnitKind::Paragraph => format!("{prefix}-{}", slug(n)),
                (None, Some(t)) if u.kind == UnitKind::Section && !slug(t).is_empty() => {
                    format!("{prefix}-{}", slug(t))
                }
                _ => {
                    let parent = u.parent.unwrap_or(0);
                    let n = child_counts
                        .entry((parent, u.kind.id_prefix()))
                        .or_insert(0);
                    *n += 1;
                    let pid = &self.doc.units[parent].id;
                    if parent == 0 {
                        format!("{}{}", u.kind.id_prefix(), n)
                    } else {
                        format!("{pid}/{}{}", u.kind.id_prefix(), n)
                    }
                }
            };
            let mut id = stem.clone();
            let mut k = 2;
            while taken.contains_key(&id) {
                id = format!("{stem}~{k}");
                k += 1;
            }
            taken.insert(id.clone(), i);
            self.doc.units[i].id = id;
        }
    }
}

impl Builder {
    /// Prose mentions ("Section 3.2", "Theorem 2") in each unit's own text, with the `skipped`
    /// byte ranges of each file (comments, verbatim, code spans) blanked first.
    pub fn prose_mentions(&mut self, skipped: &[Vec<(usize, usize)>]) {
        let masked: Vec<Option<String>> = (0..self.texts.len())
            .map(|file| {
                if self.doc.files[file].ends_with(".bib") {
                    return None;
                }
                let mut masked = self.texts[file].as_bytes().to_vec();
                for &(s, e) in skipped.get(file).map_or(&[][..], |v| v.as_slice()) {
                    let e = e.min(masked.len());
                    for b in &mut masked[s.min(e)..e] {
                        if *b != b'\n' {
                            *b = b' ';
                        }
                    }
                }
                // Blanking every byte of a multi-byte character keeps the text valid UTF-8.
                String::from_utf8(masked).ok()
            })
            .collect();
        // Works the document cites by name ("the blueprint \cite{x}"), in any of its files.
        let mut works: Vec<String> = masked
            .iter()
            .flatten()
            .flat_map(|t| crate::prose::cited_works(t))
            .collect();
        works.sort();
        works.dedup();
        for (file, masked) in masked.iter().enumerate() {
            let Some(masked) = masked else {
                continue;
            };
            for (unit, start, end) in own_ranges(&self.doc.units, file) {
                if matches!(
                    self.doc.units[unit].kind,
                    UnitKind::Listing | UnitKind::Equation
                ) {
                    continue;
                }
                let Some(slice) = masked.get(start..end) else {
                    continue;
                };
                for m in crate::prose::find(slice, &works) {
                    let key = TargetKey::Number {
                        family: m.family,
                        number: m.number,
                    };
                    let span = Span::new(file, start + m.start, start + m.end);
                    self.mention(unit, span, MentionKind::Prose, key);
                    if let (Some(reason), Some(added)) = (m.external, self.doc.mentions.last_mut())
                    {
                        added.resolution = Resolution::External {
                            reason: format!("names a unit of another work: {reason}"),
                        };
                    }
                }
            }
        }
        // Mentions in document order: by unit, then position.
        self.doc
            .mentions
            .sort_by_key(|m| (m.unit, m.file, m.start_byte));
    }
}

/// 1-based line and column (in characters) of a byte offset.
/// The 1-based line of `byte` (moved back to a character boundary), and that boundary.
fn line_of(text: &str, line_starts: &[usize], byte: usize) -> (usize, usize) {
    let mut at = byte.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    (line_starts.partition_point(|&s| s <= at).max(1), at)
}

/// For the units that start in `file`, the byte ranges that are theirs alone (their range minus their children's).
pub(crate) fn own_ranges(units: &[Unit], file: usize) -> Vec<(usize, usize, usize)> {
    let mut children: HashMap<usize, Vec<(usize, usize)>> = HashMap::default();
    for u in units {
        if let Some(p) = u.parent
            && u.file == file
            && units[p].file == file
        {
            children
                .entry(p)
                .or_default()
                .push((u.start_byte, u.end_byte));
        }
    }
    let mut out = Vec::new();
    for (idx, u) in units.iter().enumerate() {
        if u.file != file || u.kind == UnitKind::Document || u.kind == UnitKind::Bibitem {
            continue;
        }
        let mut cursor = u.start_byte;
        let mut kids = children.remove(&idx).unwrap_or_default();
        kids.sort_unstable();
        for (s, e) in kids {
            if s > cursor {
                out.push((idx, cursor, s.min(u.end_byte)));
            }
            cursor = cursor.max(e);
        }
        if cursor < u.end_byte {
            out.push((idx, cursor, u.end_byte));
        }
    }
    out
}
