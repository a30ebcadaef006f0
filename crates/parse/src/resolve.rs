//! Mention resolution: labels, citations, printed numbers and anchors → unit ids,
//! first inside a document, then across the corpus (`\externaldocument`, links between files).

use ledger_core::{Document, Format, Resolution, TargetKey, Unit, UnitKind};
// Fx hashing: keys are short strings and indices from our own parse, not attacker-chosen.
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

/// Labels, citation keys and numbers of one document, for lookups.
struct Index<'a> {
    labels: HashMap<&'a str, usize>,
    citations: HashMap<&'a str, usize>,
    numbers: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(doc: &'a Document) -> Self {
        let mut ix = Index {
            labels: HashMap::default(),
            citations: HashMap::default(),
            numbers: HashMap::default(),
        };
        for (i, u) in doc.units.iter().enumerate() {
            if u.kind == UnitKind::Bibitem {
                if let Some(k) = &u.label {
                    ix.citations.entry(k.as_str()).or_insert(i);
                }
                continue;
            }
            for (l, _) in &u.labels {
                ix.labels.entry(l.as_str()).or_insert(i);
            }
            for n in &u.numbers {
                ix.numbers.entry(n.as_str()).or_default().push(i);
            }
        }
        ix
    }
}

/// Resolves what can be resolved inside the document; mentions that may point into another
/// document (an `\externaldocument` prefix, a link to a file outside it) stay `Pending`.
pub(crate) fn resolve_local(doc: &mut Document) {
    let ix = Index::new(doc);
    let targets = Targets::of(doc);
    let own_files = relative_files(doc);
    let mut results = Vec::with_capacity(doc.mentions.len());
    for m in &doc.mentions {
        if let Resolution::External { .. } = m.resolution {
            results.push(m.resolution.clone());
            continue;
        }
        let r = match &m.key {
            TargetKey::Label(l) => match ix.labels.get(l.as_str()) {
                Some(&u) => resolved(doc, u),
                None if doc
                    .externals
                    .iter()
                    .any(|(p, _)| !p.is_empty() && l.starts_with(p.as_str())) =>
                {
                    Resolution::Pending
                }
                None => Resolution::Broken {
                    reason: format!("no \\label{{{l}}} in this document"),
                },
            },
            TargetKey::Citation(k) => match ix.citations.get(k.as_str()) {
                Some(&u) => resolved(doc, u),
                None => Resolution::Broken {
                    reason: format!("no bibliography entry `{k}`"),
                },
            },
            TargetKey::Number { family, number } => by_number(doc, &ix, family, number),
            TargetKey::Anchor { file, anchor } => {
                if !own_files.iter().any(|f| f == file) {
                    Resolution::Pending
                } else {
                    targets.anchor(file, anchor)
                }
            }
        };
        results.push(r);
    }
    for (m, r) in doc.mentions.iter_mut().zip(results) {
        m.resolution = r;
    }
}

fn resolved(doc: &Document, unit: usize) -> Resolution {
    Resolution::Resolved {
        doc: doc.id.clone(),
        unit: doc.units[unit].id.clone(),
    }
}

/// What links and external references into a document can name: its labels and anchors (as
/// written and lower-cased) and the first unit of each of its files. Owned, so that a corpus index
/// holds these of every document, not the documents.
struct Targets {
    doc: String,
    labels: HashMap<String, String>,
    lower_labels: HashMap<String, String>,
    /// Each file of the document as given, with the id of its first unit (if any).
    files: Vec<(String, Option<String>)>,
}

impl Targets {
    fn of(doc: &Document) -> Targets {
        let mut t = Targets {
            doc: doc.id.clone(),
            labels: HashMap::default(),
            lower_labels: HashMap::default(),
            files: doc.files.iter().map(|f| (f.clone(), None)).collect(),
        };
        for u in &doc.units {
            if u.kind == UnitKind::Document {
                continue;
            }
            if let Some((_, first)) = t.files.get_mut(u.file)
                && first.is_none()
            {
                *first = Some(u.id.clone());
            }
            if u.kind == UnitKind::Bibitem {
                continue;
            }
            for (l, _) in &u.labels {
                t.labels.entry(l.clone()).or_insert_with(|| u.id.clone());
                t.lower_labels
                    .entry(l.to_lowercase())
                    .or_insert_with(|| u.id.clone());
            }
        }
        t
    }

    fn resolved(&self, unit: &str) -> Resolution {
        Resolution::Resolved {
            doc: self.doc.clone(),
            unit: unit.to_string(),
        }
    }

    /// The unit `file#anchor` names (the file's first unit for an empty anchor).
    fn anchor(&self, file: &str, anchor: &str) -> Resolution {
        let key = if anchor.is_empty() {
            file.to_string()
        } else {
            format!("{file}#{anchor}")
        };
        if let Some(u) = self
            .labels
            .get(key.as_str())
            .or_else(|| self.lower_labels.get(&key.to_lowercase()))
        {
            return self.resolved(u);
        }
        if anchor.is_empty() {
            // A file with no heading: the link names the document's part for that file, if any unit is in it.
            if let Some((_, Some(u))) = self.files.iter().find(|(f, _)| f.ends_with(file)) {
                return self.resolved(u);
            }
            return Resolution::Broken {
                reason: format!("no file `{file}` in this document"),
            };
        }
        Resolution::Broken {
            reason: format!("no anchor `#{anchor}` in `{file}`"),
        }
    }
}

/// Units whose printed number is `number` and whose kind fits the word used in prose.
fn by_number(doc: &Document, ix: &Index, family: &str, number: &str) -> Resolution {
    let all: &[usize] = ix.numbers.get(number).map_or(&[], |v| v.as_slice());
    let pick = |f: &dyn Fn(&Unit) -> bool| -> Vec<usize> {
        all.iter().copied().filter(|&i| f(&doc.units[i])).collect()
    };
    let mut candidates = match family {
        "section" => {
            let s = pick(&|u| {
                u.kind == UnitKind::Section && !matches!(u.env.as_str(), "part" | "chapter")
            });
            if s.is_empty() {
                pick(&|u| u.kind == UnitKind::Section && u.env != "part")
            } else {
                s
            }
        }
        "chapter" => pick(&|u| u.kind == UnitKind::Section && u.env == "chapter"),
        "part" => pick(&|u| u.kind == UnitKind::Section && u.env == "part"),
        "appendix" => appendix(doc, number),
        "figure" => pick(&|u| u.kind == UnitKind::Figure),
        "table" => pick(&|u| u.kind == UnitKind::Table),
        "equation" => pick(&|u| u.kind == UnitKind::Equation),
        "algorithm" => pick(&|u| u.kind == UnitKind::Algorithm),
        "listing" => pick(&|u| u.kind == UnitKind::Listing),
        name => {
            let exact = pick(&|u| u.kind == UnitKind::Theorem && u.env == name);
            if exact.is_empty() {
                pick(&|u| u.kind == UnitKind::Theorem)
            } else {
                exact
            }
        }
    };
    candidates.dedup();
    match candidates.as_slice() {
        [one] => resolved(doc, *one),
        [] => Resolution::Broken {
            reason: format!("no {family} numbered {number} in this document"),
        },
        many => Resolution::Ambiguous {
            reason: format!(
                "{family} {number} could be any of: {}",
                many.iter()
                    .map(|&i| doc.units[i].id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

/// "Appendix A": a section numbered A (LaTeX), or a chapter titled "A - …"/"Appendix A: …" (Markdown books).
fn appendix(doc: &Document, number: &str) -> Vec<usize> {
    let numbered: Vec<usize> = doc
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == UnitKind::Section && u.numbers.iter().any(|n| n == number))
        .map(|(i, _)| i)
        .collect();
    if !numbered.is_empty() {
        return numbered;
    }
    doc.units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == UnitKind::Section)
        .filter(|(_, u)| {
            let t = u.title.as_deref().unwrap_or_default();
            let t = t.strip_prefix("Appendix ").unwrap_or(t);
            t.strip_prefix(number).is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.starts_with(['-', ':', '–', '—', '.']) || rest.is_empty()
            })
        })
        .map(|(i, _)| i)
        .collect()
}

/// The document's files relative to its root (the book folder, or the file's folder).
fn relative_files(doc: &Document) -> Vec<String> {
    let root = root_dir(doc);
    doc.files
        .iter()
        .map(|f| crate::paths::normalise(Path::new(f).strip_prefix(&root).unwrap_or(Path::new(f))))
        .collect()
}

fn root_dir(doc: &Document) -> PathBuf {
    match doc.format {
        Some(Format::MarkdownBook) => PathBuf::from(&doc.path),
        _ => Path::new(&doc.path)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    }
}

fn absolute(p: &Path) -> String {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    crate::paths::normalise(&p)
}

/// What references across documents need of every document of a corpus (its labels, anchors and
/// files; see `Targets`), gathered one document at a time: the corpus stage adds every document,
/// then resolves each one's pending mentions, without holding the documents themselves.
#[derive(Default)]
pub struct CorpusIndex {
    /// File (absolute, normalised) → (document, path relative to that document's root).
    files: HashMap<String, (usize, String)>,
    /// LaTeX main file without `.tex` → document.
    mains: HashMap<String, usize>,
    targets: Vec<Targets>,
}

/// What one document offers the others ([`CorpusIndex::offer`]): taken from the document on
/// any thread, added to the index in corpus order ([`CorpusIndex::add_offer`]).
pub struct Offer {
    /// Each file (absolute, normalised) with its path relative to the document's root.
    files: Vec<(String, String)>,
    /// A LaTeX main file without `.tex`.
    main: Option<String>,
    targets: Targets,
}

impl CorpusIndex {
    /// Adds what `doc` offers the other documents (the first document to claim a file keeps it).
    pub fn add(&mut self, doc: &Document) {
        self.add_offer(CorpusIndex::offer(doc));
    }

    /// What `doc` offers the other documents, for [`CorpusIndex::add_offer`].
    pub fn offer(doc: &Document) -> Offer {
        let root = root_dir(doc);
        let files = doc
            .files
            .iter()
            .map(|f| {
                let rel = crate::paths::normalise(
                    Path::new(f).strip_prefix(&root).unwrap_or(Path::new(f)),
                );
                (absolute(Path::new(f)), rel)
            })
            .collect();
        let main = (doc.format == Some(Format::Latex)).then(|| {
            absolute(Path::new(&doc.path))
                .trim_end_matches(".tex")
                .to_string()
        });
        Offer {
            files,
            main,
            targets: Targets::of(doc),
        }
    }

    /// Adds a document's [`Offer`] (the first document to claim a file keeps it).
    pub fn add_offer(&mut self, offer: Offer) {
        let d = self.targets.len();
        for (file, rel) in offer.files {
            self.files.entry(file).or_insert((d, rel));
        }
        if let Some(main) = offer.main {
            self.mains.insert(main, d);
        }
        self.targets.push(offer.targets);
    }

    /// Resolves the mentions of `doc` left `Pending` by its own parse against the documents
    /// added; what still does not resolve becomes a broken reference.
    pub fn resolve(&self, doc: &mut Document) {
        let root = root_dir(doc);
        let mut updates: Vec<(usize, Resolution)> = Vec::new();
        for (mi, m) in doc.mentions.iter().enumerate() {
            if m.resolution != Resolution::Pending {
                continue;
            }
            let r = match &m.key {
                TargetKey::Label(l) => self.external_label(doc, &root, l),
                TargetKey::Anchor { file, anchor } => {
                    let target = absolute(&root.join(file));
                    match self.files.get(&target) {
                        Some(&(t, ref rel)) => self.targets[t].anchor(rel, anchor),
                        None => Resolution::Broken {
                            reason: format!("link target `{file}` is not in the indexed corpus"),
                        },
                    }
                }
                other => Resolution::Broken {
                    reason: format!("`{other}` did not resolve"),
                },
            };
            updates.push((mi, r));
        }
        for (mi, r) in updates {
            doc.mentions[mi].resolution = r;
        }
    }

    /// A label that names another document through an `\externaldocument` prefix.
    fn external_label(&self, doc: &Document, root: &Path, l: &str) -> Resolution {
        let mut r = Resolution::Broken {
            reason: format!("no \\label{{{l}}} in this document or its external documents"),
        };
        for (prefix, path) in &doc.externals {
            let Some(rest) = l.strip_prefix(prefix.as_str()) else {
                continue;
            };
            let target = absolute(&root.join(path));
            let target = target.trim_end_matches(".tex");
            let Some(&t) = self.mains.get(target) else {
                r = Resolution::Broken {
                    reason: format!("external document `{path}` is not in the indexed corpus"),
                };
                continue;
            };
            match self.targets[t].labels.get(rest) {
                Some(u) => return self.targets[t].resolved(u),
                None => {
                    r = Resolution::Broken {
                        reason: format!("no \\label{{{rest}}} in external document `{path}`"),
                    }
                }
            }
        }
        r
    }
}

/// Resolves the mentions left `Pending` by [`resolve_local`] against the other documents of a
/// corpus (a [`CorpusIndex`] of them all); what still does not resolve becomes a broken reference.
pub fn resolve_corpus(docs: &mut [Document]) {
    let mut index = CorpusIndex::default();
    for doc in docs.iter() {
        index.add(doc);
    }
    for doc in docs.iter_mut() {
        index.resolve(doc);
    }
}
