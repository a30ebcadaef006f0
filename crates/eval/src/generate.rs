//! Seeded LaTeX and Markdown documents with ground truth, and edit cases over them.
//!
//! A document is a run of sections, each on one topic (its vocabulary makes topic clusters):
//! definitions of new terms, a notation equation, lemmas and theorems that use earlier terms
//! and symbols (gold DEPENDS) and cite each other by `\ref` or by printed number (gold
//! REFERENCES), a figure, table or algorithm named in prose, paragraphs with anaphora ("This
//! construction …", gold DEPENDS on the paragraph before) and paragraphs that restate an earlier
//! one (gold RELATED). The generator numbers everything as LaTeX would and records where each unit
//! starts, so that parsed units can be matched to gold ones by byte offset.
//!
//! The Markdown rendering has the same units and ground truth: headings with `{#sec-N}`,
//! theorem-likes and float captions as paragraphs named by an inline `<a id>`, display math, and
//! every explicit reference a link to its anchor (Markdown prints no numbers of its own).

use ledger_core::{Format, UnitKind};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeSet;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Spec {
    /// Seed: the same spec gives the same document and cases.
    pub seed: u64,
    /// Approximate size in cl100k tokens.
    pub tokens: usize,
    /// LaTeX or Markdown (a single file).
    pub format: Format,
}

/// A unit of a generated document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoldUnit {
    /// Gold id: the label, or `p<n>` for a paragraph.
    pub id: String,
    /// Kind.
    pub kind: UnitKind,
    /// Byte offset in the source where the unit starts.
    pub start: usize,
    /// The topic of its section (the topic clusters RELATED edges should stay within).
    pub topic: usize,
}

/// The seven categories of edit cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// Revise a result and its dependents ("tighten the bound in Theorem 2").
    ReviseResult,
    /// Rename a term everywhere it is used.
    RenameTerm,
    /// Change a definition; the results that use it must follow.
    ChangeDefinition,
    /// Change notation introduced by an equation.
    ChangeNotation,
    /// Insert, move or delete a section (printed numbers shift).
    Restructure,
    /// Update a figure, table or algorithm and what describes it.
    UpdateFloat,
    /// Refine one paragraph locally.
    LocalRefinement,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 7] = [
        Category::ReviseResult,
        Category::RenameTerm,
        Category::ChangeDefinition,
        Category::ChangeNotation,
        Category::Restructure,
        Category::UpdateFloat,
        Category::LocalRefinement,
    ];

    /// The name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::ReviseResult => "revise-result",
            Category::RenameTerm => "rename-term",
            Category::ChangeDefinition => "change-definition",
            Category::ChangeNotation => "change-notation",
            Category::Restructure => "restructure",
            Category::UpdateFloat => "update-float",
            Category::LocalRefinement => "local-refinement",
        }
    }
}

/// One edit case: the instruction, its targets, the units that must change and some that must
/// not (indices into [`Generated::units`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Case {
    /// `<document>/<category>/<n>`.
    pub id: String,
    /// Category.
    pub category: Category,
    /// The instruction as a user would write it.
    pub instruction: String,
    /// The units the instruction is about.
    pub targets: Vec<usize>,
    /// The units an edit must change (targets included).
    pub must_change: Vec<usize>,
    /// Units an edit must leave alone.
    pub must_not_change: Vec<usize>,
    /// The edit a tool makes without a model, when the case has one.
    pub edit: Option<DeterministicEdit>,
}

/// An edit of a case that needs no model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum DeterministicEdit {
    /// Rename a term everywhere (`ledger rename-term`); the plurals as the document writes them.
    RenameTerm {
        /// The term.
        old: String,
        /// Its new name.
        new: String,
        /// The plural of the term in the document.
        old_plural: String,
        /// The plural the new name takes.
        new_plural: String,
    },
    /// Insert a section before a section (`ledger insert`): later sections' numbers shift.
    InsertSection {
        /// The section it goes before (index into [`Generated::units`]).
        before: usize,
        /// The source inserted (it names no unit).
        text: String,
    },
}

fn starts_with_vowel(word: &str) -> bool {
    word.starts_with(['a', 'e', 'i', 'o', 'u'])
}

/// "a" or "an" before `word`.
fn article(word: &str) -> &'static str {
    if starts_with_vowel(word) { "an" } else { "a" }
}

/// The plural of a term as the generator writes it.
pub fn plural(name: &str) -> String {
    if name.ends_with('s') || name.ends_with('x') || name.ends_with("ch") {
        format!("{name}es")
    } else if name.ends_with('y') && !name.ends_with("ey") {
        format!("{}ies", &name[..name.len() - 1])
    } else {
        format!("{name}s")
    }
}

/// A generated document with its ground truth and cases.
#[derive(Debug, Clone, Serialize)]
pub struct Generated {
    /// Name (`gen-5k-s1`).
    pub name: String,
    /// LaTeX or Markdown.
    pub format: Format,
    /// The source (one file; not in the gold JSON, which sits beside it).
    #[serde(skip_serializing)]
    pub source: String,
    /// Its units in document order (sections, paragraphs, floats, equations, theorem-likes).
    pub units: Vec<GoldUnit>,
    /// Gold explicit references (from, to), one per referring unit and target.
    pub references: BTreeSet<(usize, usize)>,
    /// Gold dependencies (dependent, prerequisite), prerequisite earlier.
    pub depends: BTreeSet<(usize, usize)>,
    /// Gold related pairs: restatements of an earlier paragraph (earlier, later), with no
    /// reference or dependency between them. A RELATED edge between units of one topic
    /// ([`GoldUnit::topic`]) is not wrong either; precision is measured against topics.
    pub related: BTreeSet<(usize, usize)>,
    /// Edit cases.
    pub cases: Vec<Case>,
}

impl Generated {
    /// The name of its file in the folder it is written to: `main.tex` or `main.md`.
    pub fn file_name(&self) -> &'static str {
        match self.format {
            Format::Latex => "main.tex",
            _ => "main.md",
        }
    }

    /// Each unit's byte range in the source: from its start to the next unit's start (the last
    /// one to `\end{document}`); a section's range is its heading.
    pub fn spans(&self) -> Vec<(usize, usize)> {
        let end = self
            .source
            .rfind("\\end{document}")
            .filter(|_| self.format == Format::Latex)
            .unwrap_or(self.source.len());
        self.units
            .iter()
            .enumerate()
            .map(|(k, u)| (u.start, self.units.get(k + 1).map_or(end, |n| n.start)))
            .collect()
    }
}

const TOPICS: [(&str, [&str; 12]); 8] = [
    (
        "Graph structure",
        [
            "vertex",
            "edge",
            "path",
            "cycle",
            "degree",
            "matching",
            "cut",
            "tree",
            "component",
            "clique",
            "walk",
            "coloring",
        ],
    ),
    (
        "Probabilistic bounds",
        [
            "event",
            "variance",
            "expectation",
            "tail",
            "martingale",
            "sample",
            "deviation",
            "moment",
            "coupling",
            "density",
            "estimator",
            "union",
        ],
    ),
    (
        "Optimization",
        [
            "objective",
            "gradient",
            "constraint",
            "step",
            "convexity",
            "iterate",
            "multiplier",
            "relaxation",
            "descent",
            "optimum",
            "penalty",
            "feasibility",
        ],
    ),
    (
        "Storage engines",
        [
            "page",
            "buffer",
            "log",
            "index",
            "compaction",
            "segment",
            "checkpoint",
            "replica",
            "snapshot",
            "cache",
            "block",
            "journal",
        ],
    ),
    (
        "Type systems",
        [
            "judgment",
            "context",
            "substitution",
            "term",
            "kind",
            "inference",
            "polymorphism",
            "constructor",
            "unification",
            "binding",
            "signature",
            "rule",
        ],
    ),
    (
        "Signal processing",
        [
            "filter",
            "spectrum",
            "frequency",
            "kernel",
            "window",
            "sampling",
            "phase",
            "amplitude",
            "convolution",
            "noise",
            "transform",
            "aliasing",
        ],
    ),
    (
        "Distributed protocols",
        [
            "message",
            "quorum",
            "leader",
            "epoch",
            "ballot",
            "acknowledgement",
            "partition",
            "timeout",
            "vote",
            "lease",
            "heartbeat",
            "commit",
        ],
    ),
    (
        "Geometry of lattices",
        [
            "lattice",
            "basis",
            "volume",
            "shortest",
            "reduction",
            "determinant",
            "covering",
            "packing",
            "norm",
            "projection",
            "dual",
            "sublattice",
        ],
    ),
];

const ADJECTIVES: [&str; 24] = [
    "balanced",
    "sparse",
    "stable",
    "monotone",
    "bounded",
    "admissible",
    "regular",
    "compact",
    "minimal",
    "dominant",
    "coherent",
    "layered",
    "uniform",
    "acyclic",
    "saturated",
    "weighted",
    "canonical",
    "residual",
    "adaptive",
    "robust",
    "strict",
    "dense",
    "nested",
    "local",
];

const FILLER: [&str; 10] = [
    "We keep the presentation self-contained and recall each notion where it is first needed.",
    "The argument is constructive and translates directly into an implementation.",
    "Throughout, constants are absolute unless stated otherwise.",
    "Several of these observations were made independently in earlier work.",
    "The reader interested only in the main result may skip the technical details.",
    "We state the claims in the generality needed later and no more.",
    "Each step can be checked mechanically, which we did for the small cases.",
    "The same reasoning applies with minor changes to the weighted setting.",
    "None of the bounds below depends on the size of the alphabet.",
    "We return to the limitations of this approach at the end of the paper.",
];

/// A term defined in the document.
struct Term {
    name: String,
    plural: String,
    def: usize,
    topic: usize,
}

/// A notation symbol introduced by an equation.
struct Symbol {
    tex: String,
    eq: usize,
    term: usize,
}

/// The generator's state while it writes.
struct Writer {
    rng: ChaCha8Rng,
    /// Markdown instead of LaTeX.
    md: bool,
    /// Topic of the section being written.
    topic: usize,
    src: String,
    units: Vec<GoldUnit>,
    references: BTreeSet<(usize, usize)>,
    depends: BTreeSet<(usize, usize)>,
    related: BTreeSet<(usize, usize)>,
    terms: Vec<Term>,
    symbols: Vec<Symbol>,
    /// Printed numbers: sections, definitions, lemmas, theorems, equations, figures, tables, algorithms.
    counters: [usize; 8],
    /// Per unit: its printed number (if numbered) and the terms and symbols it uses.
    numbers: Vec<Option<String>>,
    uses_term: Vec<Vec<usize>>,
    uses_symbol: Vec<Vec<usize>>,
    /// Paragraphs that state a fact (unit, topic, sentence) for later restatement.
    facts: Vec<(usize, usize, String)>,
    /// Per section: its unit and its units.
    sections: Vec<(usize, Vec<usize>)>,
    /// Units that mention a section by printed number (unit, section unit).
    section_mentions: Vec<(usize, usize)>,
    lemmas: Vec<usize>,
    theorems: Vec<usize>,
    floats: Vec<usize>,
    paragraphs: Vec<usize>,
}

impl Writer {
    fn unit(&mut self, id: String, kind: UnitKind) -> usize {
        self.units.push(GoldUnit {
            id,
            kind,
            start: self.src.len(),
            topic: self.topic,
        });
        self.numbers.push(None);
        self.uses_term.push(Vec::new());
        self.uses_symbol.push(Vec::new());
        if let Some((_, list)) = self.sections.last_mut() {
            list.push(self.units.len() - 1);
        }
        self.units.len() - 1
    }

    fn next(&mut self, counter: usize) -> String {
        self.counters[counter] += 1;
        self.counters[counter].to_string()
    }

    /// The label of a numbered unit: `sec:3` in LaTeX, the anchor `sec-3` in Markdown.
    fn label(&self, prefix: &str, number: &str) -> String {
        if self.md {
            format!("{prefix}-{number}")
        } else {
            format!("{prefix}:{number}")
        }
    }

    /// A reference by printed number ("Lemma 2", "Eq. (3)"); in Markdown a link to the anchor.
    fn by_number(&self, printed: &str, label: &str) -> String {
        if self.md {
            format!("[{printed}](#{label})")
        } else {
            printed.to_string()
        }
    }

    /// A theorem-like block: a LaTeX environment, or a Markdown paragraph named by its anchor.
    fn block(&mut self, env: &str, label: &str, number: &str, body: &str) {
        let text = if self.md {
            let mut word = env.to_string();
            word[..1].make_ascii_uppercase();
            format!("<a id=\"{label}\"></a>**{word} {number}.** {body}\n\n")
        } else {
            format!("\\begin{{{env}}}\\label{{{label}}}\n{body}\n\\end{{{env}}}\n\n")
        };
        self.src.push_str(&text);
    }

    fn words(&mut self, topic: usize, n: usize) -> String {
        let list = &TOPICS[topic].1;
        (0..n)
            .map(|_| *list.choose(&mut self.rng).unwrap_or(&"thing"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A term of `topic` (or any) defined before, if there is one.
    fn earlier_term(&mut self, topic: Option<usize>) -> Option<usize> {
        let pool: Vec<usize> = (0..self.terms.len())
            .filter(|&t| topic.is_none_or(|tp| self.terms[t].topic == tp))
            .collect();
        pool.choose(&mut self.rng).copied()
    }

    /// Records that `unit` uses term `t` (gold DEPENDS on its definition).
    fn use_term(&mut self, unit: usize, t: usize) -> String {
        self.depends.insert((unit, self.terms[t].def));
        self.uses_term[unit].push(t);
        self.terms[t].name.clone()
    }

    fn refer(&mut self, unit: usize, target: usize) {
        self.references.insert((unit, target));
        self.depends.remove(&(unit, target));
    }

    fn section(&mut self, topic: usize) {
        self.topic = topic;
        let number = self.next(0);
        let label = self.label("sec", &number);
        let s = self.unit(label.clone(), UnitKind::Section);
        self.numbers[s] = Some(number.clone());
        self.sections.push((s, Vec::new()));
        let title = TOPICS[topic].0;
        self.src.push_str(&if self.md {
            format!("## {title} {number} {{#{label}}}\n\n")
        } else {
            format!("\\section{{{title} {number}}}\\label{{{label}}}\n\n")
        });
        // Intro paragraph; from the third section on it names an earlier section by number.
        let p = self.paragraph_start();
        let mut text = format!(
            "This section studies {} in the setting of {}.",
            self.words(topic, 3),
            title.to_lowercase()
        );
        if self.sections.len() > 2 {
            let k = self.rng.random_range(0..self.sections.len() - 1);
            let (target, _) = self.sections[k];
            let n = self.numbers[target].clone().unwrap_or_default();
            let named = self.by_number(&format!("Section {n}"), &self.units[target].id);
            text.push_str(&format!(" It builds on {named}."));
            self.refer(p, target);
            self.section_mentions.push((p, target));
        }
        text.push(' ');
        text.push_str(FILLER.choose(&mut self.rng).unwrap_or(&""));
        self.src.push_str(&text);
        self.src.push_str("\n\n");
        // Definitions.
        for _ in 0..self.rng.random_range(1..=2) {
            self.definition(topic);
        }
        self.equation(topic);
        self.lemma(topic);
        self.theorem(topic);
        self.float(topic);
        for _ in 0..self.rng.random_range(1..=3) {
            self.prose(topic);
        }
    }

    fn paragraph_start(&mut self) -> usize {
        let n = self.paragraphs.len() + 1;
        let p = self.unit(format!("p{n}"), UnitKind::Paragraph);
        self.paragraphs.push(p);
        p
    }

    fn definition(&mut self, topic: usize) {
        let number = self.next(1);
        let label = self.label("def", &number);
        let d = self.unit(label.clone(), UnitKind::Theorem);
        self.numbers[d] = Some(number.clone());
        // A new term: adjective + topic noun, unique in the document.
        let name = loop {
            let a = ADJECTIVES.choose(&mut self.rng).unwrap_or(&"new");
            let n = TOPICS[topic].1.choose(&mut self.rng).unwrap_or(&"thing");
            let name = format!("{a} {n}");
            if !self.terms.iter().any(|t| t.name == name) {
                break name;
            }
        };
        let plural = plural(&name);
        let emph = if self.md {
            format!("*{name}*")
        } else {
            format!("\\emph{{{name}}}")
        };
        let mut body = format!(
            "{} {emph} is a {} whose {} is controlled by its {}",
            if starts_with_vowel(&name) { "An" } else { "A" },
            self.words(topic, 1),
            self.words(topic, 1),
            self.words(topic, 1)
        );
        if let Some(t) = self.earlier_term(None) {
            let used = self.use_term(d, t);
            body.push_str(&format!(" and by every {used} it contains"));
        }
        body.push('.');
        self.terms.push(Term {
            name,
            plural,
            def: d,
            topic,
        });
        self.block("definition", &label, &number, &body);
    }

    fn equation(&mut self, topic: usize) {
        let Some(t) = self.earlier_term(Some(topic)) else {
            return;
        };
        // The sentence before the display belongs to a paragraph that introduces it.
        let p = self.paragraph_start();
        let term = self.use_term(p, t);
        let k = self.symbols.len() + 1;
        let tex = format!("\\sigma_{{{k}}}");
        let measure = self.words(topic, 1);
        self.src.push_str(&format!(
            "For {} {term} $x$ we measure its {measure} by\n",
            article(&term)
        ));
        if self.md {
            self.src.push('\n');
        }
        let number = self.next(4);
        let label = self.label("eq", &number);
        let e = self.unit(label.clone(), UnitKind::Equation);
        self.numbers[e] = Some(number);
        // The display depends on the term's definition without naming it.
        self.depends.insert((e, self.terms[t].def));
        self.src.push_str(&if self.md {
            format!("$${tex}(x) = \\sum_{{y \\in x}} w(y).$$ <a id=\"{label}\"></a>\n\n")
        } else {
            format!(
                "\\begin{{equation}}\\label{{{label}}}\n{tex}(x) = \\sum_{{y \\in x}} w(y).\n\\end{{equation}}\n\n"
            )
        });
        self.symbols.push(Symbol {
            tex,
            eq: e,
            term: t,
        });
    }

    fn lemma(&mut self, topic: usize) {
        let number = self.next(2);
        let label = self.label("lem", &number);
        let l = self.unit(label.clone(), UnitKind::Theorem);
        self.numbers[l] = Some(number.clone());
        let mut body = String::from("Every ");
        match self.earlier_term(Some(topic)) {
            Some(t) => body.push_str(&self.use_term(l, t)),
            None => body.push_str(&self.words(topic, 1)),
        }
        let noun = self.words(topic, 1);
        body.push_str(&format!(" has {} {noun} of size at most", article(&noun)));
        if let Some(s) = self
            .symbols
            .iter()
            .rposition(|s| self.terms[s.term].topic == topic)
        {
            let (tex, eq) = (self.symbols[s].tex.clone(), self.symbols[s].eq);
            body.push_str(&format!(" ${tex}(x)$"));
            if self.md {
                // Markdown names the equation by link (the LaTeX leaves it implicit).
                let n = self.numbers[eq].clone().unwrap_or_default();
                let named = self.by_number(&format!("Eq. ({n})"), &self.units[eq].id);
                body.push_str(&format!(" as in {named}"));
                self.refer(l, eq);
            }
            self.depends.insert((l, eq));
            self.uses_symbol[l].push(s);
        } else {
            body.push_str(" $O(\\log n)$");
        }
        body.push('.');
        self.lemmas.push(l);
        self.block("lemma", &label, &number, &body);
    }

    fn theorem(&mut self, topic: usize) {
        let number = self.next(3);
        let label = self.label("thm", &number);
        let t = self.unit(label.clone(), UnitKind::Theorem);
        self.numbers[t] = Some(number.clone());
        let mut body = String::new();
        // It rests on the latest lemma, named by \ref or by number.
        if let Some(&l) = self.lemmas.last() {
            self.refer(t, l);
            if !self.md && self.rng.random_bool(0.5) {
                body.push_str(&format!("By Lemma~\\ref{{{}}}, every ", self.units[l].id));
            } else {
                let n = self.numbers[l].clone().unwrap_or_default();
                let named = self.by_number(&format!("Lemma {n}"), &self.units[l].id);
                body.push_str(&format!("By {named}, every "));
            }
        } else {
            body.push_str("Every ");
        }
        match self.earlier_term(None) {
            Some(x) => body.push_str(&self.use_term(t, x)),
            None => body.push_str(&self.words(topic, 1)),
        }
        body.push_str(" can be found in time $O(n \\log n)$.");
        self.theorems.push(t);
        self.block("theorem", &label, &number, &body);
    }

    fn float(&mut self, topic: usize) {
        let which = self.rng.random_range(0..3);
        let (env, counter, prefix, kind, word) = match which {
            0 => ("figure", 5, "fig", UnitKind::Figure, "Figure"),
            1 => ("table", 6, "tab", UnitKind::Table, "Table"),
            _ => ("algorithm", 7, "alg", UnitKind::Algorithm, "Algorithm"),
        };
        let number = self.next(counter);
        let label = self.label(prefix, &number);
        let f = self.unit(label.clone(), kind);
        self.numbers[f] = Some(number.clone());
        let caption = format!(
            "The {} of each {}.",
            self.words(topic, 1),
            self.words(topic, 1)
        );
        if self.md {
            // The caption paragraph carries the anchor; the content follows it.
            let content = match env {
                "figure" => "![plot](plot.png)\n",
                "table" => "| size | time |\n|---|---|\n| 10 | 3 |\n",
                _ => "```text\nscan the input\n```\n",
            };
            self.src.push_str(&format!(
                "<a id=\"{label}\"></a>**{word} {number}.** {caption}\n\n{content}\n"
            ));
        } else {
            let body = match env {
                "figure" => "\\centering\n\\includegraphics{plot.png}\n".to_string(),
                "table" => "\\centering\n\\begin{tabular}{ll}\nsize & time \\\\\n\\end{tabular}\n"
                    .to_string(),
                _ => {
                    "\\begin{algorithmic}\n\\State scan the input\n\\end{algorithmic}\n".to_string()
                }
            };
            self.src.push_str(&format!(
                "\\begin{{{env}}}\n{body}\\caption{{{caption}}}\\label{{{label}}}\n\\end{{{env}}}\n\n"
            ));
        }
        self.floats.push(f);
        // A paragraph that describes it, by number.
        let p = self.paragraph_start();
        self.refer(p, f);
        let named = self.by_number(&format!("{word} {number}"), &label);
        let mut text = format!(
            "{named} shows the {} for growing inputs",
            self.words(topic, 2)
        );
        if let Some(t) = self.earlier_term(Some(topic)) {
            let name = self.use_term(p, t);
            text.push_str(&format!("; every {name} is drawn separately"));
        }
        text.push_str(".\n\n");
        self.src.push_str(&text);
    }

    fn prose(&mut self, topic: usize) {
        let previous = self.paragraphs.last().copied();
        let p = self.paragraph_start();
        let mut text = String::new();
        let roll = self.rng.random_range(0..4);
        if roll == 0
            && let Some(prev) = previous
        {
            // Anaphora: "This construction" needs the paragraph before.
            text.push_str("This construction also bounds the ");
            text.push_str(&self.words(topic, 1));
            text.push_str(". ");
            self.depends.insert((p, prev));
        } else if roll == 1 && !self.facts.is_empty() {
            // A restatement of an earlier fact (gold RELATED).
            let (q, _, fact) = self.facts[self.rng.random_range(0..self.facts.len())].clone();
            text.push_str(&format!("Recall that {fact} "));
            self.related.insert((q, p));
        }
        let fact = format!(
            "the {} of a {} never exceeds the {} of its {}.",
            self.words(topic, 1),
            self.words(topic, 1),
            self.words(topic, 1),
            self.words(topic, 1)
        );
        text.push_str(&format!("In practice {fact} "));
        if let Some(t) = self.earlier_term(Some(topic)) {
            let plural = self.terms[t].plural.clone();
            self.use_term(p, t);
            text.push_str(&format!("This holds for all {plural} as well. "));
        }
        if let Some(&th) = self.theorems.last()
            && self.rng.random_bool(0.4)
        {
            let n = self.numbers[th].clone().unwrap_or_default();
            let named = self.by_number(&format!("Theorem {n}"), &self.units[th].id);
            text.push_str(&format!("{named} makes this precise. "));
            self.refer(p, th);
        }
        text.push_str(FILLER.choose(&mut self.rng).unwrap_or(&""));
        self.facts.push((p, topic, fact));
        self.src.push_str(&text);
        self.src.push_str("\n\n");
    }
}

/// Generates one document and its cases.
pub fn generate(name: &str, spec: Spec) -> Generated {
    let md = spec.format != Format::Latex;
    let mut w = Writer {
        rng: ChaCha8Rng::seed_from_u64(spec.seed),
        md,
        topic: 0,
        src: String::new(),
        units: Vec::new(),
        references: BTreeSet::new(),
        depends: BTreeSet::new(),
        related: BTreeSet::new(),
        terms: Vec::new(),
        symbols: Vec::new(),
        counters: [0; 8],
        numbers: Vec::new(),
        uses_term: Vec::new(),
        uses_symbol: Vec::new(),
        facts: Vec::new(),
        sections: Vec::new(),
        section_mentions: Vec::new(),
        lemmas: Vec::new(),
        theorems: Vec::new(),
        floats: Vec::new(),
        paragraphs: Vec::new(),
    };
    if md {
        w.src.push_str("# Generated manual\n\n");
    } else {
        w.src.push_str(
        "\\documentclass{article}\n\\usepackage{amsmath,amsthm,graphicx,algorithm,algpseudocode}\n\
         \\newtheorem{theorem}{Theorem}\n\\newtheorem{lemma}{Lemma}\n\\newtheorem{definition}{Definition}\n\
         \\begin{document}\n\n",
        );
    }
    // About 4 characters per token.
    let mut topic = (spec.seed as usize) % TOPICS.len();
    while w.src.len() < spec.tokens * 4 {
        w.section(topic);
        if w.rng.random_bool(0.6) {
            topic = w.rng.random_range(0..TOPICS.len());
        }
    }
    if !md {
        w.src.push_str("\\end{document}\n");
    }
    // Related pairs that also reference or depend are not RELATED edges.
    let linked: BTreeSet<(usize, usize)> = w
        .references
        .iter()
        .chain(&w.depends)
        .flat_map(|&(a, b)| [(a.min(b), a.max(b))])
        .collect();
    w.related.retain(|p| !linked.contains(p));
    let cases = cases(&mut w, name);
    Generated {
        name: name.to_string(),
        format: if md { Format::Markdown } else { Format::Latex },
        source: w.src,
        units: w.units,
        references: w.references,
        depends: w.depends,
        related: w.related,
        cases,
    }
}

/// Units that reference or depend on `target`, directly.
fn dependents(w: &Writer, target: usize) -> Vec<usize> {
    w.references
        .iter()
        .chain(&w.depends)
        .filter(|(_, b)| *b == target)
        .map(|(a, _)| *a)
        .collect()
}

/// Up to `n` units with no link to any of `near`, chosen at random.
fn unrelated(w: &mut Writer, near: &[usize], n: usize) -> Vec<usize> {
    let linked: BTreeSet<usize> = w
        .references
        .iter()
        .chain(&w.depends)
        .chain(&w.related)
        .filter(|(a, b)| near.contains(a) || near.contains(b))
        .flat_map(|&(a, b)| [a, b])
        .chain(near.iter().copied())
        .collect();
    let pool: Vec<usize> = (0..w.units.len())
        .filter(|u| !linked.contains(u) && w.units[*u].kind != UnitKind::Section)
        .collect();
    pool.choose_multiple(&mut w.rng, n).copied().collect()
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v.dedup();
    v
}

fn cases(w: &mut Writer, name: &str) -> Vec<Case> {
    let mut out = Vec::new();
    let mut push = |w: &mut Writer,
                    category: Category,
                    instruction: String,
                    targets: Vec<usize>,
                    must: Vec<usize>,
                    edit: Option<DeterministicEdit>| {
        let must_change = sorted(targets.iter().copied().chain(must).collect());
        let must_not_change = unrelated(w, &must_change, 5);
        let n = out
            .iter()
            .filter(|c: &&Case| c.category == category)
            .count()
            + 1;
        out.push(Case {
            id: format!("{name}/{}/{n}", category.as_str()),
            category,
            instruction,
            targets,
            must_change,
            must_not_change,
            edit,
        });
    };
    for &t in &w.theorems.clone() {
        let n = w.numbers[t].clone().unwrap_or_default();
        let deps = dependents(w, t);
        push(
            w,
            Category::ReviseResult,
            format!(
                "Tighten the bound in Theorem {n} from O(n log n) to O(n) and update what relies on it."
            ),
            vec![t],
            deps,
            None,
        );
    }
    for k in 0..w.terms.len() {
        let (name_k, def) = (w.terms[k].name.clone(), w.terms[k].def);
        let rename = DeterministicEdit::RenameTerm {
            old: name_k.clone(),
            new: format!("{name_k} family"),
            old_plural: w.terms[k].plural.clone(),
            new_plural: plural(&format!("{name_k} family")),
        };
        let users: Vec<usize> = (0..w.units.len())
            .filter(|&u| w.uses_term[u].contains(&k))
            .collect();
        push(
            w,
            Category::RenameTerm,
            format!("Rename the term \"{name_k}\" to \"{name_k} family\" everywhere."),
            vec![def],
            users,
            Some(rename),
        );
        let number = w.numbers[def].clone().unwrap_or_default();
        let deps = dependents(w, def);
        push(
            w,
            Category::ChangeDefinition,
            format!(
                "Change Definition {number} so that a {name_k} must also be finite, and adjust the results that use it."
            ),
            vec![def],
            deps,
            None,
        );
    }
    for s in 0..w.symbols.len() {
        let (tex, eq) = (w.symbols[s].tex.clone(), w.symbols[s].eq);
        let users: Vec<usize> = (0..w.units.len())
            .filter(|&u| w.uses_symbol[u].contains(&s))
            .collect();
        let number = w.numbers[eq].clone().unwrap_or_default();
        push(
            w,
            Category::ChangeNotation,
            format!("Write ${tex}$ as $\\tau$ in Eq. ({number}) and wherever it is used."),
            vec![eq],
            users,
            None,
        );
    }
    // Inserting a section before section k shifts every later section's number: the units
    // naming those sections by number must change.
    for k in 1..w.sections.len() {
        let (sec, _) = w.sections[k];
        let number = w.numbers[sec].clone().unwrap_or_default();
        // Every later section gets a new number: they are all targets of the edit.
        let shifted: Vec<usize> = w.sections[k..].iter().map(|(s, _)| *s).collect();
        // In LaTeX the units naming them by number change; Markdown names them by link.
        let mentions: Vec<usize> = w
            .section_mentions
            .iter()
            .filter(|(_, s)| shifted.contains(s) && !w.md)
            .map(|(u, _)| *u)
            .collect();
        push(
            w,
            Category::Restructure,
            format!("Insert a new section on related work before Section {number}."),
            shifted,
            mentions,
            Some(DeterministicEdit::InsertSection {
                before: sec,
                text: if w.md {
                    "## Related work {#sec-related}\n\nEarlier treatments of these questions are surveyed here.\n"
                } else {
                    "\\section{Related work}\\label{sec:related}\n\nEarlier treatments of these questions are surveyed here.\n"
                }
                .into(),
            }),
        );
    }
    for &f in &w.floats.clone() {
        let word = match w.units[f].kind {
            UnitKind::Figure => "Figure",
            UnitKind::Table => "Table",
            _ => "Algorithm",
        };
        let n = w.numbers[f].clone().unwrap_or_default();
        let deps = dependents(w, f);
        push(
            w,
            Category::UpdateFloat,
            format!(
                "Update {word} {n} to show medians instead of means, and the text describing it."
            ),
            vec![f],
            deps,
            None,
        );
    }
    for &p in &w.paragraphs.clone() {
        if !w.rng.random_bool(0.5) {
            continue;
        }
        push(
            w,
            Category::LocalRefinement,
            format!(
                "Tighten the wording of paragraph {} without changing its meaning.",
                w.units[p].id
            ),
            vec![p],
            Vec::new(),
            None,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_spec_gives_the_same_document_and_sizes_follow_the_spec() {
        let a = generate(
            "a",
            Spec {
                seed: 7,
                tokens: 5_000,
                format: Format::Latex,
            },
        );
        let b = generate(
            "a",
            Spec {
                seed: 7,
                tokens: 5_000,
                format: Format::Latex,
            },
        );
        assert_eq!(a.source, b.source);
        assert_eq!(a.cases, b.cases);
        let big = generate(
            "b",
            Spec {
                seed: 7,
                tokens: 50_000,
                format: Format::Latex,
            },
        );
        assert!(
            big.source.len() > 9 * a.source.len(),
            "{} vs {}",
            big.source.len(),
            a.source.len()
        );
        for g in [&a, &big] {
            for c in Category::ALL {
                assert!(
                    g.cases.iter().any(|x| x.category == c),
                    "{c:?} in {}",
                    g.name
                );
            }
            for &(x, y) in g.depends.iter().chain(&g.references) {
                assert_ne!(x, y);
            }
            for &(x, y) in &g.depends {
                assert!(y < x, "a prerequisite comes earlier");
            }
        }
    }

    #[test]
    fn the_independent_numbering_finds_exactly_the_gold_references() {
        for format in [Format::Latex, Format::Markdown] {
            let g = generate(
                "a",
                Spec {
                    seed: 3,
                    tokens: 20_000,
                    format,
                },
            );
            let spans = g.spans();
            let by_id: std::collections::HashMap<&str, usize> = g
                .units
                .iter()
                .enumerate()
                .map(|(k, u)| (u.id.as_str(), k))
                .collect();
            let found: BTreeSet<(usize, usize)> = crate::check::references(&g.source, g.format)
                .iter()
                .map(|r| {
                    let from = spans
                        .iter()
                        .position(|&(s, e)| s <= r.at && r.at < e)
                        .expect("inside a unit");
                    let to = r.target.as_deref().expect("every reference resolves");
                    (from, by_id[to])
                })
                .collect();
            assert!(g.references.len() > 50);
            assert_eq!(found, g.references, "{format:?}");
        }
    }
}
