//! What a document class decides about numbering before the preamble is read: chapters or not,
//! `secnumdepth`, how counters print (`\thesection`) and how `\ref` prefixes them (`\p@subsection`),
//! which counters reset which, the theorem-like environments the class defines, and what
//! `\appendix` changes.
//!
//! Each entry was checked against the `.aux` pdflatex wrote for a small document of our own in
//! that class (`datasets/latex-features/classes/`, TeX Live 2022), except `svjour3`, which TeX Live
//! does not ship: it follows `llncs`, whose theorem code it shares.

/// A theorem-like environment a class defines: (environment, printed name, counter it shares
/// (`None`: its own), counter it is numbered within).
type Theorem = (
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
);

/// The numbering of one family of classes.
pub(crate) struct Class {
    /// The class names (`\documentclass{name}`).
    pub names: &'static [&'static str],
    /// Chapters exist: sections, equations, floats number within them.
    pub chapters: bool,
    /// Deeper sectioning levels are not numbered (section is 1).
    pub secnumdepth: i32,
    /// `\the<counter>` templates.
    pub templates: &'static [(&'static str, &'static str)],
    /// `\p@<counter>`: what `\ref` prints before `\the<counter>`.
    pub ref_prefixes: &'static [(&'static str, &'static str)],
    /// Counters whose reset differs from the standard classes': (counter, reset by).
    pub within: &'static [(&'static str, Option<&'static str>)],
    /// Theorem-like environments the class defines.
    pub theorems: &'static [Theorem],
    /// What `\appendix` changes besides lettering the top level: templates and resets.
    pub appendix_templates: &'static [(&'static str, &'static str)],
    pub appendix_within: &'static [(&'static str, Option<&'static str>)],
}

const NONE: Class = Class {
    names: &[],
    chapters: false,
    secnumdepth: 3,
    templates: &[],
    ref_prefixes: &[],
    within: &[],
    theorems: &[],
    appendix_templates: &[],
    appendix_within: &[],
};

/// REVTeX: sections I, A, 1; `\ref` to a subsection prints `IA`; tables in Roman; in the
/// appendix equations are `A1` and subsections `A1`.
const REVTEX: Class = Class {
    names: &["revtex4", "revtex4-1", "revtex4-2"],
    templates: &[
        ("section", "\\Roman{section}"),
        ("subsection", "\\Alph{subsection}"),
        ("subsubsection", "\\arabic{subsubsection}"),
        ("table", "\\Roman{table}"),
    ],
    ref_prefixes: &[
        ("subsection", "\\thesection"),
        ("subsubsection", "\\thesection\\thesubsection"),
    ],
    appendix_templates: &[
        ("equation", "\\thesection\\arabic{equation}"),
        ("subsection", "\\arabic{subsection}"),
    ],
    appendix_within: &[("equation", Some("section"))],
    ..NONE
};

/// The LNCS theorem-likes (Springer's `\spnewtheorem`), each with its own counter.
const SPRINGER_THEOREMS: &[Theorem] = &[
    ("theorem", "Theorem", None, None),
    ("case", "Case", None, None),
    ("conjecture", "Conjecture", None, None),
    ("corollary", "Corollary", None, None),
    ("definition", "Definition", None, None),
    ("example", "Example", None, None),
    ("exercise", "Exercise", None, None),
    ("lemma", "Lemma", None, None),
    ("note", "Note", None, None),
    ("problem", "Problem", None, None),
    ("property", "Property", None, None),
    ("proposition", "Proposition", None, None),
    ("question", "Question", None, None),
    ("solution", "Solution", None, None),
    ("remark", "Remark", None, None),
];

/// The classes LEDGER knows; a class not listed numbers like `article`.
const CLASSES: &[Class] = &[
    Class {
        names: &[
            "book",
            "report",
            "scrbook",
            "scrreprt",
            "tufte-book",
            "ctexbook",
        ],
        chapters: true,
        secnumdepth: 2,
        ..NONE
    },
    Class {
        names: &["memoir"],
        chapters: true,
        secnumdepth: 1,
        ..NONE
    },
    // Sections print without the chapter; equations run on through the book; floats restart
    // in each chapter but print without it.
    Class {
        names: &["amsbook"],
        chapters: true,
        secnumdepth: 3,
        templates: &[
            ("section", "\\arabic{section}"),
            ("figure", "\\arabic{figure}"),
            ("table", "\\arabic{table}"),
        ],
        within: &[("equation", None)],
        ..NONE
    },
    REVTEX,
    // IEEE: sections I, I-A, I-A1; tables in Roman; appendix subsections A.
    Class {
        names: &["IEEEtran"],
        templates: &[
            ("section", "\\Roman{section}"),
            ("subsection", "\\thesection-\\Alph{subsection}"),
            ("subsubsection", "\\thesubsection\\arabic{subsubsection}"),
            ("table", "\\Roman{table}"),
        ],
        appendix_templates: &[("subsection", "\\Alph{subsection}")],
        ..NONE
    },
    Class {
        names: &["mnras"],
        appendix_templates: &[
            ("equation", "\\thesection\\arabic{equation}"),
            ("subsection", "\\thesection\\arabic{subsection}"),
        ],
        appendix_within: &[("equation", Some("section"))],
        ..NONE
    },
    Class {
        names: &[
            "aastex",
            "aastex6",
            "aastex61",
            "aastex62",
            "aastex63",
            "aastex631",
            "aastex7",
        ],
        appendix_templates: &[("equation", "\\thesection\\arabic{equation}")],
        appendix_within: &[("equation", Some("section"))],
        ..NONE
    },
    Class {
        names: &["elsarticle"],
        appendix_templates: &[("equation", "\\thesection.\\arabic{equation}")],
        appendix_within: &[("equation", Some("section"))],
        ..NONE
    },
    Class {
        names: &["acmart"],
        theorems: &[
            ("theorem", "Theorem", None, Some("section")),
            ("conjecture", "Conjecture", Some("theorem"), None),
            ("proposition", "Proposition", Some("theorem"), None),
            ("lemma", "Lemma", Some("theorem"), None),
            ("corollary", "Corollary", Some("theorem"), None),
            ("example", "Example", Some("theorem"), None),
            ("definition", "Definition", Some("theorem"), None),
        ],
        ..NONE
    },
    Class {
        names: &["llncs", "svjour3", "svjour2", "svmult", "svmono"],
        secnumdepth: 2,
        theorems: SPRINGER_THEOREMS,
        ..NONE
    },
];

/// The entry for `class` (`None`: number as `article` does).
pub(crate) fn lookup(class: &str) -> Option<&'static Class> {
    CLASSES.iter().find(|c| c.names.contains(&class))
}

/// The Springer classes' options that change theorem numbering: `envcountsame` (every
/// theorem-like shares the theorem counter) and `envcountsect` (numbered within sections).
pub(crate) fn springer_theorem(options: &[&str], theorem: Theorem) -> Theorem {
    let (env, display, mut shared, mut within) = theorem;
    if options.contains(&"envcountsect") {
        within = Some("section");
    }
    if options.contains(&"envcountsame") && env != "theorem" {
        shared = Some("theorem");
        within = None;
    }
    (env, display, shared, within)
}

/// `secnumdepth` of `class` with `options`: REVTeX's `prl` (Physical Review Letters) numbers no
/// section.
pub(crate) fn secnumdepth(class: &Class, options: &[&str]) -> i32 {
    if class.names.contains(&"revtex4-2") && options.contains(&"prl") {
        return -1;
    }
    class.secnumdepth
}

/// Whether `class` is one of the Springer classes (its options shape theorem numbering).
pub(crate) fn is_springer(class: &Class) -> bool {
    class.names.contains(&"llncs")
}
