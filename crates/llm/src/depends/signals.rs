//! What the learned judge reads of a document, computed once per document: statement groups,
//! words, TF-IDF and notation vectors, sections, popularity, ranks, anaphors.

use super::terms::Introductions;
use super::text::{is_ancestor, judge_text, judgeable};
use ledger_core::{Document, UnitKind};
// Fast hashing: the judge looks words up once per candidate pair (SipHash showed in profiles).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::LazyLock;

/// Environments whose unit defines what it names (shared with the rules judge).
pub(super) fn is_definition(env: &str) -> bool {
    super::terms::DEFINING_ENVS.contains(&env)
}

/// Theorem-like environments that state results.
pub(super) fn is_result(env: &str) -> bool {
    matches!(
        env,
        "theorem"
            | "thm"
            | "lemma"
            | "lem"
            | "proposition"
            | "prop"
            | "corollary"
            | "cor"
            | "claim"
            | "conjecture"
            | "hypothesis"
            | "assumption"
    )
}

/// Words of a label that describe its unit: `def:good-set` → `good`, `set`; `lem:bayesRisk_le`
/// → `bayes`, `risk` (the prefix that names the kind, and words under three letters, dropped;
/// camel case split).
pub(super) fn label_words(label: &str) -> Vec<String> {
    let rest = label.split_once(':').map_or(label, |(_, r)| r);
    let mut words = Vec::new();
    for part in rest.split(|c: char| !c.is_alphanumeric()) {
        let mut word = String::new();
        let mut previous_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && previous_lower {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        words.push(word);
    }
    words.retain(|w| w.len() >= 3);
    words.dedup();
    words
}

/// Notation in a text's math: commands with the letter they decorate (`\mathcal R`, `\hat y`)
/// and letters with their sub- and superscripts (`R^P`, `r_\theta`), for a second TF-IDF.
pub(super) fn math_atoms(text: &str) -> Vec<String> {
    static MATH: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?s)\$\$(.+?)\$\$|\$(.+?)\$|\\\[(.+?)\\\]|\\begin\{(?:equation|align|gather|multline)\*?\}(.+?)\\end").expect("valid")
    });
    static ATOM: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"\\(?:mathcal|mathbb|mathfrak|mathscr|mathrm|mathsf|mathbf|operatorname|hat|tilde|bar|overline|widetilde|widehat|check)\s*\{?\s*\\?([A-Za-z]+)|\\([A-Za-z]{2,})|([A-Za-z])\s*([_^])\s*\{?\s*(\\?[A-Za-z0-9]+)").expect("valid")
    });
    let mut out = Vec::new();
    for m in MATH.captures_iter(text) {
        let Some(body) = m.iter().skip(1).flatten().next() else {
            continue;
        };
        for a in ATOM.captures_iter(body.as_str()) {
            let atom = if let Some(x) = a.get(1) {
                format!(
                    "{} {}",
                    a[0].split(['{', ' ']).next().unwrap_or(""),
                    x.as_str()
                )
            } else if let Some(x) = a.get(2) {
                format!("\\{}", x.as_str())
            } else {
                format!("{}{}{}", &a[3], &a[4], &a[5])
            };
            if !STOP_SET.contains(atom.as_str()) {
                out.push(atom);
            }
        }
    }
    out
}

/// Tokens of a text for TF-IDF and word matching: lower-case words of three letters or more,
/// and LaTeX command names (notation: `\Lp`, `\dens`) kept with their backslash. What the
/// regex `\\[A-Za-z]+|[A-Za-z][A-Za-z0-9]{2,}` finds, scanned by hand (the regex showed in the
/// learned judge's profile): in a run of ASCII letters and digits, the word starts at its first
/// letter and takes the rest of the run.
pub(super) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each of [`tokens`] in turn, without allocating one string per token.
fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut lower = String::new();
    let mut emit = |token: &str| {
        if !STOP_SET.contains(token) {
            f(token);
        }
    };
    let mut p = 0;
    while p < bytes.len() {
        let b = bytes[p];
        if b == b'\\' && bytes.get(p + 1).is_some_and(u8::is_ascii_alphabetic) {
            let end = (p + 1..bytes.len())
                .find(|&k| !bytes[k].is_ascii_alphabetic())
                .unwrap_or(bytes.len());
            emit(&text[p..end]);
            p = end;
        } else if b.is_ascii_alphanumeric() {
            let end = (p..bytes.len())
                .find(|&k| !bytes[k].is_ascii_alphanumeric())
                .unwrap_or(bytes.len());
            if let Some(first) = (p..end).find(|&k| bytes[k].is_ascii_alphabetic())
                && end - first >= 3
            {
                lower.clear();
                lower.push_str(&text[first..end]);
                lower.make_ascii_lowercase();
                emit(&lower);
            }
            p = end;
        } else {
            p += 1;
        }
    }
}

/// [`STOP`], for looking up.
static STOP_SET: LazyLock<HashSet<&'static str>> = LazyLock::new(|| STOP.iter().copied().collect());

/// Digit runs of a text: numbers that name a unit (`Equation 387`, `\Equaref{387}`, `eq387`).
pub(super) fn numbers(text: &str) -> impl Iterator<Item = String> + '_ {
    static NUMBER: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"[0-9]+").expect("valid"));
    NUMBER.find_iter(text).map(|m| m.as_str().to_string())
}

/// Words and commands too common to carry a dependency.
pub(super) const STOP: &[&str] = &[
    "the",
    "and",
    "for",
    "that",
    "this",
    "with",
    "are",
    "let",
    "then",
    "there",
    "from",
    "such",
    "which",
    "any",
    "all",
    "have",
    "has",
    "not",
    "its",
    "can",
    "also",
    "where",
    "each",
    "one",
    "two",
    "some",
    "by",
    "be",
    "is",
    "if",
    "we",
    "of",
    "on",
    "in",
    "to",
    "as",
    "an",
    "it",
    "or",
    "\\begin",
    "\\end",
    "\\label",
    "\\ref",
    "\\cref",
    "\\eqref",
    "\\in",
    "\\le",
    "\\leq",
    "\\ge",
    "\\geq",
    "\\to",
    "\\cdot",
    "\\left",
    "\\right",
    "\\mathbb",
    "\\mathcal",
    "\\text",
    "\\emph",
    "\\frac",
    "\\sum",
    "\\int",
    "\\colon",
    "\\quad",
    "\\item",
    "\\subset",
    "\\subseteq",
    "\\inf",
    "\\sup",
    "\\lim",
    "\\max",
    "\\min",
    "\\log",
    "\\exp",
];

/// What the learned judge reads of a document, computed once. A statement is judged with its
/// proof: the units of a proof belong to the statement it proves (their *group*), and the
/// statement, the group's head, is judged for all of them.
pub struct Signals {
    /// Per unit: the head of its group (a proof, and what is inside it, belong to the statement
    /// it proves; any other unit is its own head).
    pub group: Vec<usize>,
    /// Per head: the units of its group, the head first.
    pub(super) members: Vec<Vec<usize>>,
    /// Per head: the token set of its group's text; per other unit: its own ([`Vocabulary`]
    /// ids, as every word below).
    pub(super) words: Vec<HashSet<u32>>,
    /// Per unit: the TF-IDF vector of its own text, unit length, sorted by token id.
    pub(super) tfidf: Vec<Vec<(u32, f32)>>,
    /// Per head: the TF-IDF vector of its group's text.
    pub(super) group_tfidf: Vec<Vec<(u32, f32)>>,
    /// The same over the notation of their math ([`math_atoms`]).
    pub(super) math: Vec<Vec<(u32, f32)>>,
    /// Per head: the notation vector of its group.
    pub(super) group_math: Vec<Vec<(u32, f32)>>,
    /// Per unit: the words of its labels.
    pub(super) label_words: Vec<Vec<u32>>,
    /// Per unit: the words of its title.
    pub(super) title_words: Vec<Vec<u32>>,
    /// Per unit: the words and numbers of its title (what names it), each with its weight: its
    /// inverse document frequency over the judgeable units' text (rare words name more).
    pub(super) title_names: Vec<Vec<(u32, f64)>>,
    /// Per unit: the words and numbers of its labels, weighted alike.
    pub(super) label_names: Vec<Vec<(u32, f64)>>,
    /// Per head: the numbers of its group's text; per other unit: its own.
    pub(super) numbers: Vec<HashSet<u32>>,
    /// Per unit: the nearest enclosing section, and the topmost one.
    pub(super) section: Vec<(Option<usize>, Option<usize>)>,
    /// Per unit: how many units name it or use what it introduces.
    pub(super) popularity: Vec<usize>,
    /// Per unit: its rank among the judgeable units in document order.
    pub(super) rank: Vec<usize>,
    /// Per unit: the number of theorem-like units before it.
    pub(super) statements_before: Vec<usize>,
    /// Per unit: the antecedent of an anaphor that opens it.
    pub(super) antecedent: Vec<Option<usize>>,
    /// Per unit: the nearest earlier theorem-like unit of another group, not its ancestor.
    pub(super) previous: Vec<Option<usize>>,
    /// Per text term id, then per notation term id: the theorem-like units whose own vector holds
    /// it, with its weight there, in document order (an inverted index: a head is compared
    /// with the statements that share a term, not with every earlier one).
    pub(super) statement_postings: [Vec<Vec<(u32, f32)>>; 2],
    /// Per word or number id: the theorem-like units whose label or title holds it, in document
    /// order (an inverted index: a head is checked against the statements whose names it
    /// shares a word with, not against every earlier one).
    name_postings: Vec<Vec<u32>>,
    /// How the document cites: the share of its statements (theorem-like heads) whose group
    /// names an earlier unit of another group.
    pub(super) citing: f64,
}

/// A sparse vector: (token id, weight), sorted by token id.
type Sparse = Vec<(u32, f32)>;

/// TF-IDF vectors of texts given as term ids (dense from 0, as [`Vocabulary`] gives them):
/// `(1 + ln tf) · ln(N / df)`, unit length, sorted by term id; per unit its own text's, per group
/// of more than one unit the group's (empty for the others).
pub(super) fn tfidf_vectors(
    texts: &[Vec<u32>],
    groups: &[Vec<usize>],
) -> (Vec<Sparse>, Vec<Sparse>) {
    let df = document_frequency(texts.iter().map(|t| t.iter().copied()));
    let docs = texts.iter().filter(|t| !t.is_empty()).count().max(1) as f32;
    let vector = |ids: &mut dyn Iterator<Item = u32>| {
        let mut ids: Vec<u32> = ids.collect();
        ids.sort_unstable();
        // Each run of one id is its term frequency; the sums below go in id order.
        let mut v: Sparse = ids
            .chunk_by(|a, b| a == b)
            .map(|run| {
                let (id, tf) = (run[0], run.len() as f32);
                (id, (1.0 + tf.ln()) * (docs / df[id as usize] as f32).ln())
            })
            .filter(|(_, x)| *x > 0.0)
            .collect();
        let norm = v.iter().map(|(_, x)| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|(_, x)| *x /= norm);
        }
        v
    };
    let own = texts
        .iter()
        .map(|t| vector(&mut t.iter().copied()))
        .collect();
    let grouped = groups
        .iter()
        .map(|m| {
            if m.len() <= 1 {
                Vec::new()
            } else {
                vector(&mut m.iter().flat_map(|&k| texts[k].iter().copied()))
            }
        })
        .collect();
    (own, grouped)
}

/// Per term id: how many of `texts` hold it (up to the highest id any holds).
fn document_frequency(texts: impl Iterator<Item = impl Iterator<Item = u32>>) -> Vec<u32> {
    let (mut df, mut last_text): (Vec<u32>, Vec<usize>) = (Vec::new(), Vec::new());
    for (k, t) in texts.enumerate() {
        for w in t {
            let w = w as usize;
            if df.len() <= w {
                df.resize(w + 1, 0);
                last_text.resize(w + 1, usize::MAX);
            }
            if last_text[w] != k {
                last_text[w] = k;
                df[w] += 1;
            }
        }
    }
    df
}

/// The words and numbers of one document, each given an id once, so that the judge compares
/// integers per candidate pair rather than strings.
#[derive(Default)]
pub(super) struct Vocabulary(HashMap<String, u32>);

impl Vocabulary {
    /// The id of `word`: the next free one, from 0, the first time it is seen.
    pub(super) fn id(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.0.get(word) {
            return id;
        }
        let next = u32::try_from(self.0.len()).unwrap_or(u32::MAX);
        self.0.insert(word.to_string(), next);
        next
    }

    pub(super) fn ids<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> Vec<u32> {
        words.into_iter().map(|w| self.id(w.as_ref())).collect()
    }
}

pub(super) fn cosine(a: &[(u32, f32)], b: &[(u32, f32)]) -> f64 {
    let (mut x, mut y, mut dot) = (0, 0, 0.0f32);
    while x < a.len() && y < b.len() {
        match a[x].0.cmp(&b[y].0) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => {
                dot += a[x].1 * b[y].1;
                x += 1;
                y += 1;
            }
        }
    }
    f64::from(dot)
}

impl Signals {
    /// Computes the signals of `doc`, given what its units introduce and name (see
    /// [`DocContext`](super::DocContext)).
    pub fn of(doc: &Document, intro: &Introductions, cited: &[Vec<(usize, String)>]) -> Signals {
        let n = doc.units.len();
        let group = statements(doc);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, &g) in group.iter().enumerate() {
            if judgeable(&doc.units[i]) || i == g {
                members[g].push(i);
            }
        }
        for (g, m) in members.iter_mut().enumerate() {
            m.sort_by_key(|&k| (k != g, k));
        }
        // Each judgeable unit's words and its math's notation, from what the judge sees of it.
        // The texts' words take the first ids, so that they are dense for the TF-IDF vectors;
        // the notation has its own.
        let mut vocabulary = Vocabulary::default();
        let (mut text_ids, mut atoms, mut own_numbers) = (Vec::new(), Vec::new(), Vec::new());
        for u in &doc.units {
            let seen = if judgeable(u) {
                judge_text(&u.text)
            } else {
                String::new()
            };
            let mut ids = Vec::new();
            for_each_token(&seen, |t| ids.push(vocabulary.id(t)));
            text_ids.push(ids);
            atoms.push(math_atoms(&seen));
            own_numbers.push(numbers(&seen).collect::<Vec<String>>());
        }
        let mut notation = Vocabulary::default();
        let atom_ids: Vec<Vec<u32>> = atoms.iter().map(|t| notation.ids(t)).collect();
        let (tfidf, group_tfidf) = tfidf_vectors(&text_ids, &members);
        let (math, group_math) = tfidf_vectors(&atom_ids, &members);
        let number_ids: Vec<Vec<u32>> = own_numbers.iter().map(|t| vocabulary.ids(t)).collect();
        // Per head, what its group's units hold; per other unit, what it holds itself.
        let of_groups = |per_unit: &[Vec<u32>]| -> Vec<HashSet<u32>> {
            (0..n)
                .map(|i| {
                    let of = if group[i] == i {
                        &members[i][..]
                    } else {
                        std::slice::from_ref(&i)
                    };
                    of.iter()
                        .flat_map(|&k| per_unit[k].iter().copied())
                        .collect()
                })
                .collect()
        };
        let words = of_groups(&text_ids);
        let numbers_of_groups = of_groups(&number_ids);
        let label_words: Vec<Vec<u32>> = doc
            .units
            .iter()
            .map(|u| vocabulary.ids(u.labels.iter().flat_map(|(l, _)| label_words(l))))
            .collect();
        let title_words: Vec<Vec<u32>> = doc
            .units
            .iter()
            .map(|u| vocabulary.ids(u.title.as_deref().map(tokens).unwrap_or_default()))
            .collect();
        // Document frequency by id; a word no text holds (ids past them) weighs the most.
        let df = document_frequency(
            text_ids
                .iter()
                .zip(&number_ids)
                .map(|(t, m)| t.iter().chain(m).copied()),
        );
        let judged_units = doc.units.iter().filter(|u| judgeable(u)).count().max(1) as f64;
        let unseen_idf = judged_units.ln() + 0.1;
        let idf = |w: u32| match df.get(w as usize) {
            Some(&d) if d > 0 => (judged_units / d as f64).ln().max(0.0) + 0.1,
            _ => unseen_idf,
        };
        let mut weighted = |names: Vec<String>| -> Vec<(u32, f64)> {
            let mut names = names;
            names.sort();
            names.dedup();
            names
                .into_iter()
                .map(|w| {
                    let id = vocabulary.id(&w);
                    (id, idf(id))
                })
                .collect()
        };
        let title_names: Vec<Vec<(u32, f64)>> = doc
            .units
            .iter()
            .map(|u| {
                let t = u.title.as_deref().unwrap_or_default();
                weighted(tokens(t).into_iter().chain(numbers(t)).collect())
            })
            .collect();
        let label_names: Vec<Vec<(u32, f64)>> = doc
            .units
            .iter()
            .map(|u| {
                weighted(
                    u.labels
                        .iter()
                        .flat_map(|(l, _)| self::label_words(l).into_iter().chain(numbers(l)))
                        .collect(),
                )
            })
            .collect();
        let section = (0..n)
            .map(|i| {
                let (mut nearest, mut top) = (None, None);
                let mut p = doc.units[i].parent;
                while let Some(x) = p {
                    if doc.units[x].kind == UnitKind::Section {
                        nearest = nearest.or(Some(x));
                        top = Some(x);
                    }
                    p = doc.units[x].parent;
                }
                (nearest, top)
            })
            .collect();
        let mut popularity = vec![0; n];
        for (i, cited) in cited.iter().enumerate() {
            for &(j, _) in cited {
                popularity[j] += 1;
            }
            for j in intro.introducers_used_by(i) {
                popularity[j] += 1;
            }
        }
        let (mut rank, mut statements_before) = (vec![0; n], vec![0; n]);
        let (mut r, mut t) = (0, 0);
        for (i, u) in doc.units.iter().enumerate() {
            rank[i] = r;
            statements_before[i] = t;
            r += usize::from(judgeable(u));
            t += usize::from(u.kind == UnitKind::Theorem);
        }
        let antecedent = (0..n)
            .map(|i| {
                judgeable(&doc.units[i])
                    .then(|| super::terms::antecedent(doc, i).map(|(a, _)| a))
                    .flatten()
            })
            .collect();
        let mut previous = vec![None; n];
        let mut last: Vec<usize> = Vec::new();
        for i in 0..n {
            previous[i] = last
                .iter()
                .rev()
                .find(|&&k| group[k] != group[i] && !is_ancestor(doc, k, i))
                .copied();
            if doc.units[i].kind == UnitKind::Theorem {
                last.push(i);
                if last.len() > 8 {
                    last.remove(0);
                }
            }
        }
        let statements: Vec<usize> = (0..n)
            .filter(|&i| group[i] == i && doc.units[i].kind == UnitKind::Theorem)
            .collect();
        let citing_statements = statements
            .iter()
            .filter(|&&i| {
                members[i]
                    .iter()
                    .any(|&m| cited[m].iter().any(|&(j, _)| group[j] != i))
            })
            .count();
        let citing = citing_statements as f64 / statements.len().max(1) as f64;
        let postings = |vectors: &[Vec<(u32, f32)>]| {
            let mut out: Vec<Vec<(u32, f32)>> = Vec::new();
            for (j, v) in vectors.iter().enumerate() {
                if doc.units[j].kind != UnitKind::Theorem {
                    continue;
                }
                for &(t, w) in v {
                    let t = t as usize;
                    if out.len() <= t {
                        out.resize_with(t + 1, Vec::new);
                    }
                    out[t].push((j as u32, w));
                }
            }
            out
        };
        let statement_postings = [postings(&tfidf), postings(&math)];
        let mut name_postings: Vec<Vec<u32>> = Vec::new();
        for j in (0..n).filter(|&j| doc.units[j].kind == UnitKind::Theorem) {
            let named = (label_words[j].iter().chain(&title_words[j]).copied()).chain(
                title_names[j]
                    .iter()
                    .chain(&label_names[j])
                    .map(|&(w, _)| w),
            );
            for w in named {
                let w = w as usize;
                if name_postings.len() <= w {
                    name_postings.resize_with(w + 1, Vec::new);
                }
                if name_postings[w].last() != Some(&(j as u32)) {
                    name_postings[w].push(j as u32);
                }
            }
        }
        Signals {
            name_postings,
            statement_postings,
            citing,
            group,
            members,
            words,
            tfidf,
            group_tfidf,
            math,
            group_math,
            label_words,
            title_words,
            title_names,
            label_names,
            numbers: numbers_of_groups,
            section,
            popularity,
            rank,
            statements_before,
            antecedent,
            previous,
        }
    }

    /// Whether unit `i` is judged: the head of its group.
    pub fn judged(&self, i: usize) -> bool {
        self.group[i] == i
    }

    /// Cosine of the TF-IDF vectors of head `i`'s group and unit `j`.
    pub(super) fn cosine(&self, i: usize, j: usize) -> f64 {
        cosine(self.head_text(i), &self.tfidf[j])
    }

    /// Head `i`'s TF-IDF vector: its group's, or its own when it is alone.
    fn head_text(&self, i: usize) -> &[(u32, f32)] {
        if self.group_tfidf[i].is_empty() {
            &self.tfidf[i]
        } else {
            &self.group_tfidf[i]
        }
    }

    /// Head `i`'s notation vector: its group's, or its own when it is alone.
    fn head_math(&self, i: usize) -> &[(u32, f32)] {
        if self.group_math[i].is_empty() {
            &self.math[i]
        } else {
            &self.group_math[i]
        }
    }

    /// The theorem-like units before `end` whose text ([`Signals::cosine`]) or notation
    /// ([`Signals::notation`]) is at least `floor` close to head `i`'s group, in document order.
    /// The same sums as those two, in the same order (the head's terms by id), so the same bits.
    pub(super) fn similar_statements(&self, i: usize, end: usize, floor: f64) -> Vec<usize> {
        let mut close: Vec<usize> = Vec::new();
        let heads = [self.head_text(i), self.head_math(i)];
        let mut dot: HashMap<u32, f32> = HashMap::default();
        for (head, postings) in heads.into_iter().zip(&self.statement_postings) {
            dot.clear();
            for &(t, a) in head {
                for &(j, b) in postings.get(t as usize).map_or(&[][..], Vec::as_slice) {
                    if (j as usize) < end {
                        *dot.entry(j).or_insert(0.0) += a * b;
                    }
                }
            }
            close.extend(
                dot.iter()
                    .filter(|&(_, &d)| f64::from(d) >= floor)
                    .map(|(&j, _)| j as usize),
            );
        }
        close.sort_unstable();
        close.dedup();
        close
    }

    /// The theorem-like units before `end` whose label or title holds a word or number of head
    /// `i`'s group, in document order: the only ones [`Signals::share`] or [`Signals::named`] of
    /// their names can find anything of in `i`.
    pub(super) fn statements_sharing_a_name(&self, i: usize, end: usize) -> Vec<usize> {
        let mut out: Vec<usize> = (self.words[i].iter().chain(&self.numbers[i]))
            .filter_map(|&w| self.name_postings.get(w as usize))
            .flat_map(|js| js.iter().map(|&j| j as usize).take_while(|&j| j < end))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Cosine of the notation vectors of head `i`'s group and unit `j`.
    pub(super) fn notation(&self, i: usize, j: usize) -> f64 {
        cosine(self.head_math(i), &self.math[j])
    }

    /// Share of the weight of `names` (each word or number with its inverse document frequency)
    /// that head `i`'s group contains: rare words and numbers count more than common ones.
    pub(super) fn named(&self, names: &[(u32, f64)], i: usize) -> f64 {
        let (mut found, mut all) = (0.0, 0.0);
        for &(w, weight) in names {
            all += weight;
            if self.words[i].contains(&w) || self.numbers[i].contains(&w) {
                found += weight;
            }
        }
        if all > 0.0 { found / all } else { 0.0 }
    }

    /// Share of `words` that head `i`'s group contains.
    pub(super) fn share(&self, words: &[u32], i: usize) -> f64 {
        if words.is_empty() {
            return 0.0;
        }
        let found = words.iter().filter(|w| self.words[i].contains(w)).count();
        found as f64 / words.len() as f64
    }
}

/// The statement each unit belongs to: a proof (or a part of one) belongs to the statement it
/// proves ([`Document::proofs`]); any other unit is its own.
pub fn statements(doc: &Document) -> Vec<usize> {
    let proved: HashMap<usize, usize> = doc.proofs().into_iter().collect();
    (0..doc.units.len())
        .map(|i| {
            let mut p = Some(i);
            while let Some(x) = p {
                if doc.units[x].kind == UnitKind::Proof {
                    return proved.get(&x).copied().unwrap_or(x);
                }
                p = doc.units[x].parent;
            }
            i
        })
        .collect()
}
