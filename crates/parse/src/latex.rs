//! LaTeX: a main file and everything it `\input`s or `\include`s → units, labels, mentions.
//!
//! This is a scanner, not a TeX engine: it follows the commands that shape a
//! document's structure and numbering (sectioning, theorem-like environments,
//! floats, display math, `\newtheorem`, `\numberwithin`, `\appendix`, counter
//! aliases) and the reference commands, including user macros that wrap them.
//! Everything it cannot follow becomes a diagnostic, never an error.

mod classes;
pub(crate) mod lex;

use crate::builder::{Builder, Span};
use crate::counters::Counters;
use crate::source_file::Reading;
use ledger_core::{Format, MentionKind, Severity, TargetKey, UnitKind};
use lex::{
    arg, capitalise, clean_title, find_from, is_cite, key_arg, keyvals, math_env, non_text_args,
    opt, skip_opt, split_keys, verbatim_env,
};
use regex::Regex;
// Fx hashing: keys are short strings and indices from our own parse, not attacker-chosen.
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// What a document-defined verbatim-like environment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VerbatimKind {
    /// Code or text shown verbatim: a listing unit.
    Listing,
    /// Text left out (the `comment` package): skipped, no unit.
    Comment,
}

/// Unclosed braces whose place is kept: a warning names the outermost.
const MAX_OPEN_BRACES: usize = 4096;

/// Where an environment begun before `from` and never closed ends: at the start of the line of
/// the next sectioning command of level `level` or higher (`\part` -1 … `\subsubsection` 3),
/// or of `\end{document}`, else at the end of `text`.
fn recovery_point(text: &str, from: usize, level: i32) -> usize {
    static RESUME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?m)^[ \t]*\\(part|chapter|addchap|section|addsec|subsection|subsubsection)\b|^[ \t]*\\end\{document\}",
        )
        .expect("valid")
    });
    RESUME
        .captures_iter(&text[from..])
        .find(|c| {
            let command_level = match c.get(1).map(|m| m.as_str()) {
                None => i32::MIN,
                Some("part") => -1,
                Some("chapter" | "addchap") => 0,
                Some("section" | "addsec") => 1,
                Some("subsection") => 2,
                Some(_) => 3,
            };
            command_level <= level
        })
        .and_then(|c| c.get(0))
        .map_or(text.len(), |m| from + m.start())
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at.min(text.len())]).count() + 1
}

/// Commands that start a verbatim-like environment inside another one's begin code.
const VERBATIM_STARTS: [&str; 8] = [
    "\\verbatim",
    "\\Verbatim",
    "\\BVerbatim",
    "\\LVerbatim",
    "\\VerbatimEnvironment",
    "\\lstlisting",
    "\\minted",
    "\\comment",
];

/// Markers of example documents looked at per file, and enclosing `\begin`s per marker.
const MAX_EXAMPLE_MARKERS: usize = 64;

/// Whether byte `at` of `text` is inside a `%` comment (a `%` earlier on its line, not `\%`).
/// Only the 4 KiB before `at` are looked at, so that many questions on one long line cost
/// linear time.
fn in_comment(text: &str, at: usize) -> bool {
    let before = &text.as_bytes()[at.saturating_sub(4096)..at];
    let line = memchr::memrchr(b'\n', before).map_or(before, |k| &before[k + 1..]);
    line.iter()
        .enumerate()
        .any(|(k, &c)| c == b'%' && (k == 0 || line[k - 1] != b'\\'))
}

/// Deepest `\input` nesting followed.
const MAX_INCLUDE_DEPTH: usize = 32;

/// A command (or environment) of file `file` that starts at byte `start` of `text`, its
/// arguments from byte `after`: what the scanner's handlers are called with.
#[derive(Clone, Copy)]
struct At<'t> {
    file: usize,
    text: &'t str,
    start: usize,
    after: usize,
}

impl<'t> At<'t> {
    fn new(file: usize, text: &'t str, start: usize, after: usize) -> Self {
        At {
            file,
            text,
            start,
            after,
        }
    }
}

/// A theorem-like environment being defined (`\newtheorem`, `\declaretheorem`): its name, the
/// name it prints, the counter it shares or the one it is numbered within, unnumbered if starred.
struct NewTheorem<'a> {
    env: &'a str,
    display: &'a str,
    shared: Option<&'a str>,
    within: Option<&'a str>,
    starred: bool,
}

/// A theorem-like environment defined by `\newtheorem` or known by its common name.
#[derive(Debug, Clone)]
struct TheoremDef {
    /// The printed name (`Lemma`).
    display: String,
    /// The counter it shares or its own (`None`: unnumbered).
    counter: Option<String>,
}

/// A user macro whose body holds a reference command or a `\newtheorem`.
#[derive(Debug, Clone)]
struct Macro {
    /// Number of parameters.
    params: usize,
    /// Default of the first parameter, when it is optional (`\newcommand{\x}[2][d]{…}`).
    optional: Option<String>,
    /// The replacement text, with `#1`… for the parameters.
    body: String,
}

/// One line of a display-math environment (up to `\\`).
#[derive(Debug, Clone)]
struct MathLine {
    /// Its `\tag{…}`.
    tag: Option<String>,
    /// `\notag` / `\nonumber`: no number.
    notag: bool,
    /// Labels on the line, with their byte offsets.
    labels: Vec<(String, usize)>,
}

/// A display-math environment being read.
#[derive(Debug, Clone)]
struct MathState {
    /// Numbers lines one by one (`align`, `gather`) rather than once (`equation`, `multline`).
    per_line: bool,
    /// Starred: no numbers except `\tag`.
    starred: bool,
    /// Brace depth at which it opened (a `\\` inside braces does not end a line).
    depth: i32,
    /// The line being read.
    line: MathLine,
    /// The numbers given so far, one per numbered line.
    numbers: Vec<String>,
    /// Labels with the number of their line, and their byte offsets.
    labels: Vec<(String, Option<String>, usize)>,
}

/// An environment between its `\begin` and `\end`.
#[derive(Debug)]
struct OpenEnv {
    /// Its name (`lemma`, `align*`, `itemize`).
    name: String,
    /// The unit it opened (a theorem-like, float, equation, proof, listing), if any.
    unit: Option<usize>,
    /// The file and byte where it began.
    file: usize,
    /// Byte offset of its `\begin`.
    start: usize,
    /// Display-math state, for math environments.
    math: Option<MathState>,
    /// Float counter stepped by `\caption` inside this environment.
    float_counter: Option<&'static str>,
    /// For `enumerate`: its nesting level (1–4), items seen, and the enumitem `ref`/`label` template.
    list: Option<(usize, u32, Option<String>)>,
    /// What the stack up to and including this environment holds, kept as it is pushed so that
    /// the scanner's questions cost the same at any nesting depth: see [`Latex::push_env`].
    below: Below,
}

/// A sub-float being read: labels in it, up to `end` of `file`, print `number` (`1a`).
#[derive(Debug, Clone)]
struct SubFloat {
    file: usize,
    end: usize,
    number: Option<String>,
}

/// Facts about an environment and every environment under it on the stack.
#[derive(Debug, Clone, Copy, Default)]
struct Below {
    /// Stack index of the innermost environment with a unit.
    unit_env: Option<usize>,
    /// Stack index of the innermost display-math environment.
    math_env: Option<usize>,
    /// `enumerate` environments open.
    lists: usize,
    /// An environment with a listing unit is open.
    in_listing: bool,
    /// A `sub…` environment (sub-figure) is open inside the innermost unit environment.
    sub_inside_unit: bool,
}

impl OpenEnv {
    /// An environment with no math, float counter or list state.
    fn new(name: String, unit: Option<usize>, file: usize, start: usize) -> Self {
        OpenEnv {
            name,
            unit,
            file,
            start,
            math: None,
            float_counter: None,
            list: None,
            below: Below::default(),
        }
    }
}

/// The paragraph being read: its unit and file.
struct Paragraph {
    /// The paragraph unit.
    unit: usize,
    /// Its file.
    file: usize,
}

/// Parses the LaTeX document whose main file is `main`.
pub(crate) fn parse(
    main: &Path,
    doc_id: &str,
    root: Option<&Path>,
    tokenizer: Option<&crate::tokens::Tokenizer>,
) -> ledger_core::Document {
    let mut p = Latex::new(main, doc_id, root);
    match p.b.inputs.read(main, Reading::Latex(None)) {
        Ok(source) => {
            p.encoding = source.declared;
            let file = p.b.add_source(&main.display().to_string(), source);
            let standalone = !p.b.texts[file].contains("\\begin{document}");
            p.in_body = standalone;
            p.include_stack.push(canonical(main));
            p.scan(file);
            p.finish_scan();
        }
        Err(e) => {
            p.b.doc.diagnostics.push(ledger_core::Diagnostic {
                path: main.display().to_string(),
                line: 0,
                col: 0,
                severity: Severity::Error,
                message: e,
            });
        }
    }
    p.b.finish(tokenizer)
}

/// `p` resolved (symlinks, `..`), or as given when it cannot be.
fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The scanner's state while it walks a document's files.
struct Latex {
    /// The document under construction: files, units, labels, mentions, diagnostics.
    b: Builder,
    /// The main file's folder, where `\input` paths are looked up.
    dir: PathBuf,
    /// LaTeX's counters, with reset lists, aliases and `\the…` templates.
    counters: Counters,
    /// The class has chapters (`book`, `report`, or a `\chapter` was seen): sections number
    /// within them.
    with_chapters: bool,
    /// `secnumdepth`: deeper sectioning levels are not numbered.
    secnumdepth: i32,
    /// Theorem-like environments by name (`\newtheorem`, `\declaretheorem`, common names).
    theorems: HashMap<String, TheoremDef>,
    /// Verbatim-like environments the document defines (`\newenvironment` around `\verbatim`,
    /// fancyvrb's `\DefineVerbatimEnvironment`, `\lstnewenvironment`, `\newminted`,
    /// `\newtcblisting`, comment's `\excludecomment`); `comment`-like ones are skipped without
    /// a listing unit.
    verbatim: HashMap<String, VerbatimKind>,
    /// User macros that wrap references, labels or `\newtheorem`, by name.
    macros: HashMap<String, Macro>,
    /// The open sections, outermost first: (level, unit).
    sections: Vec<(i32, usize)>,
    /// The open environments, outermost first.
    envs: Vec<OpenEnv>,
    /// The paragraph being read, if any.
    para: Option<Paragraph>,
    /// After `\begin{document}` (or a file without one): text is content, not preamble.
    in_body: bool,
    /// After `\end{document}`: nothing more is read.
    done: bool,
    /// Chapters are numbered (`\mainmatter`), not front or back matter.
    numbered_chapters: bool,
    /// Brace depth in the current file (math lines count `\\` only at their own depth).
    depth: i32,
    /// The braces the scanner opened and has not seen closed, outermost first, as (file, byte):
    /// the first [`MAX_OPEN_BRACES`] of them, the rest only counted.
    open_braces: Vec<(usize, usize)>,
    /// Open braces beyond those kept.
    open_braces_beyond: usize,
    /// The files being read, outermost first: an `\input` of one of them is a cycle.
    include_stack: Vec<PathBuf>,
    /// `\bibliography`/`\addbibresource` files, read after the scan for entries.
    bib_files: Vec<PathBuf>,
    /// Byte ranges per file whose text is not prose (comments, verbatim): blanked for prose mentions.
    skipped: Vec<Vec<(usize, usize)>>,
    /// `\externaldocument[prefix]{file}` pairs.
    externals: Vec<(String, String)>,
    /// Inside `subequations`: the parent equation number and the last letter given.
    subequation: Option<(String, u32)>,
    /// Inside a `\footnote{…}` argument: where it ends and the footnote's number.
    footnote: Option<(usize, usize, String)>,
    /// Environments found holding a whole example document (see
    /// [`Latex::find_example_documents`]): verbatim unless the document defines them.
    example_envs: std::collections::BTreeSet<String>,
    /// Inside a sub-float (`subfigure` environment, `\subfloat{…}`): where it ends and, once its
    /// counter has been stepped, what `\ref` prints for a label in it.
    subfloat: Option<SubFloat>,
    /// A float numbered by its first sub-float (the caption package steps the float's counter
    /// then): its own `\caption`, below the sub-floats, does not step it again.
    float_numbered_early: Option<usize>,
    /// The document class's numbering, when LEDGER knows the class.
    class: Option<&'static classes::Class>,
    /// The encoding the main file declares (`inputenc`): the one its included files are read in.
    encoding: Option<crate::encoding::Encoding>,
    /// `\label`s given to the open `subequations` itself, with its number, for the first display
    /// inside it: (label, number, file, byte).
    subequation_labels: Vec<(String, String, usize, usize)>,
    /// The number of the last numbered sectioning command: what a label in an unnumbered unit
    /// prints.
    section_label: Option<String>,
}

impl Latex {
    /// A scanner for the document `doc_id` whose main file is `main`, with the common
    /// theorem-like environments known.
    fn new(main: &Path, doc_id: &str, root: Option<&Path>) -> Self {
        let mut theorems = HashMap::default();
        for (env, display) in [
            ("theorem", "Theorem"),
            ("lemma", "Lemma"),
            ("corollary", "Corollary"),
            ("proposition", "Proposition"),
            ("definition", "Definition"),
            ("remark", "Remark"),
            ("example", "Example"),
            ("conjecture", "Conjecture"),
            ("claim", "Claim"),
            ("axiom", "Axiom"),
            ("assumption", "Assumption"),
            ("exercise", "Exercise"),
            ("problem", "Problem"),
            ("notation", "Notation"),
            ("hypothesis", "Hypothesis"),
            ("fact", "Fact"),
            ("observation", "Observation"),
        ] {
            theorems.insert(
                env.to_string(),
                TheoremDef {
                    display: display.into(),
                    counter: Some(env.into()),
                },
            );
        }
        Latex {
            b: Builder::new(doc_id, &main.display().to_string(), Format::Latex, root),
            dir: main.parent().map(Path::to_path_buf).unwrap_or_default(),
            counters: Counters::for_class(false),
            with_chapters: false,
            secnumdepth: 3,
            theorems,
            macros: HashMap::default(),
            sections: vec![],
            envs: vec![],
            para: None,
            in_body: false,
            done: false,
            numbered_chapters: true,
            depth: 0,
            open_braces: vec![],
            open_braces_beyond: 0,
            include_stack: vec![],
            bib_files: vec![],
            skipped: vec![],
            externals: vec![],
            verbatim: HashMap::default(),
            subequation: None,
            footnote: None,
            example_envs: Default::default(),
            subfloat: None,
            float_numbered_early: None,
            class: None,
            encoding: None,
            subequation_labels: vec![],
            section_label: None,
        }
    }

    // ---------- the scanner ----------

    /// Walks one file byte by byte: comments, braces, math shifts and paragraph breaks here,
    /// control sequences through [`Latex::command`]; `\input` files are scanned recursively.
    fn scan(&mut self, file: usize) {
        let text = std::sync::Arc::clone(&self.b.texts[file]);
        self.find_example_documents(file, &text);
        while self.skipped.len() <= file {
            self.skipped.push(vec![]);
        }
        let bytes = text.as_bytes();
        let n = bytes.len();
        let mut i = 0;
        while i < n && !self.done {
            match bytes[i] {
                b'%' => {
                    let end = memchr::memchr(b'\n', &bytes[i..]).map_or(n, |k| i + k);
                    self.skipped[file].push((i, end));
                    i = end;
                }
                b'\\' => i = self.command(file, &text, i),
                b'{' => {
                    self.depth += 1;
                    if self.open_braces.len() < MAX_OPEN_BRACES {
                        self.open_braces.push((file, i));
                    } else {
                        self.open_braces_beyond += 1;
                    }
                    self.mark_text(file, i);
                    i += 1;
                }
                b'}' => {
                    self.depth -= 1;
                    if self.open_braces_beyond > 0 {
                        self.open_braces_beyond -= 1;
                    } else {
                        self.open_braces.pop();
                    }
                    i += 1;
                }
                b'\n' => {
                    let mut j = i + 1;
                    while j < n && (bytes[j] == b' ' || bytes[j] == b'\t' || bytes[j] == b'\r') {
                        j += 1;
                    }
                    if j >= n || bytes[j] == b'\n' {
                        self.close_paragraph();
                    }
                    i += 1;
                }
                b'$' if bytes.get(i + 1) == Some(&b'$') => {
                    self.mark_text(file, i);
                    let end = find_from(&text, i + 2, "$$").map_or(n, |k| k + 2);
                    self.scan_refs_in(file, &text, i + 2, end.saturating_sub(2).max(i + 2));
                    self.extend_text(end);
                    i = end;
                }
                b'&' => {
                    i += 1;
                }
                b' ' | b'\t' | b'\r' => i += 1,
                _ => {
                    // A run of plain text up to the next byte the scanner must look at.
                    let mut k = i + 1;
                    while k < n
                        && !matches!(bytes[k], b'%' | b'\\' | b'{' | b'}' | b'\n' | b'$' | b'&')
                    {
                        k += 1;
                    }
                    let mut end = k;
                    while end > i + 1 && matches!(bytes[end - 1], b' ' | b'\t' | b'\r') {
                        end -= 1;
                    }
                    self.mark_text(file, i);
                    self.extend_text(end);
                    i = k;
                }
            }
        }
    }

    /// Environments of `text` that hold a whole example document (`\documentclass`,
    /// `\begin{document}` or an `\end{document}` other than the main file's own inside them, and
    /// their own `\end` after it) are read as verbatim, as LaTeX reads them through a definition
    /// LEDGER cannot see: a class manual's example environment defined in a style file that did
    /// not travel with it. A warning names each. At most [`MAX_EXAMPLE_MARKERS`] markers are
    /// looked at, each against at most as many enclosing `\begin`s, so the cost stays linear.
    fn find_example_documents(&mut self, file: usize, text: &str) {
        static MARKER: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\\documentclass\b|\\(begin|end)[ \t]*\{document\}").expect("valid")
        });
        static BEGIN: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\\begin[ \t]*\{([^{}\\]+)\}").expect("valid"));
        let markers: Vec<(usize, Option<&str>)> = MARKER
            .captures_iter(text)
            .filter_map(|c| {
                let at = c.get(0)?.start();
                (!in_comment(text, at)).then(|| (at, c.get(1).map(|m| m.as_str())))
            })
            .collect();
        // The main file's own `\documentclass`, `\begin{document}` and last `\end{document}`.
        let main = file == 0;
        let first_begin = markers.iter().position(|m| m.1 == Some("begin"));
        let last_end = markers.iter().rposition(|m| m.1 == Some("end"));
        let own = |k: usize, kind: Option<&str>| {
            main && (Some(k) == first_begin
                || Some(k) == last_end
                || (kind.is_none() && first_begin.is_none_or(|f| k < f)))
        };
        if markers.iter().enumerate().all(|(k, m)| own(k, m.1)) {
            return;
        }
        let begins: Vec<(usize, usize, &str)> = BEGIN
            .captures_iter(text)
            .filter_map(|c| {
                let all = c.get(0)?;
                let name = c.get(1)?.as_str().trim();
                (name != "document" && !in_comment(text, all.start())).then_some((
                    all.start(),
                    all.end(),
                    name,
                ))
            })
            .collect();
        // Where each environment's `\end`s are, found once (not searched for per question).
        static END: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\\end[ \t]*\{([^{}\\]+)\}").expect("valid"));
        let mut ends: HashMap<&str, Vec<usize>> = HashMap::default();
        for c in END.captures_iter(text) {
            if let (Some(all), Some(name)) = (c.get(0), c.get(1)) {
                ends.entry(name.as_str().trim())
                    .or_default()
                    .push(all.start());
            }
        }
        let mut read_until = 0;
        let inner = markers
            .iter()
            .enumerate()
            .filter(|&(k, m)| !own(k, m.1))
            .take(MAX_EXAMPLE_MARKERS);
        for (_, &(at, _)) in inner {
            if at < read_until {
                continue;
            }
            let open_before = begins.partition_point(|b| b.0 < at);
            let enclosing = begins[..open_before]
                .iter()
                .rev()
                .take(MAX_EXAMPLE_MARKERS)
                .find_map(|&(_, after, name)| {
                    let ends = ends.get(name)?;
                    let end = *ends.get(ends.partition_point(|&e| e < after))?;
                    (end > at).then_some((end, name))
                });
            let Some((end, name)) = enclosing else {
                continue;
            };
            read_until = end;
            self.example_envs
                .insert(name.trim_end_matches('*').to_string());
        }
    }

    /// Whether `\begin{base}` at `i` opens an environment [`Latex::find_example_documents`] found
    /// holding a whole document, which no definition read since makes verbatim: from now on it
    /// is verbatim, said once in a warning.
    fn holds_example_document(&mut self, file: usize, i: usize, base: &str) -> bool {
        if self.is_verbatim(base) || !self.example_envs.remove(base) {
            return false;
        }
        self.verbatim
            .insert(base.to_string(), VerbatimKind::Listing);
        self.b.diag(
            file,
            i,
            Severity::Warning,
            format!(
                "\\begin{{{base}}} holds a whole document (\\documentclass, \\begin{{document}} or \\end{{document}} inside it): read as verbatim, as its definition (not found here) must make it"
            ),
        );
        true
    }

    /// Opens an environment: pushes it with what the stack under it holds.
    fn push_env(&mut self, mut env: OpenEnv) {
        let under = self.envs.last().map(|e| e.below).unwrap_or_default();
        let k = self.envs.len();
        let is_listing = env
            .unit
            .is_some_and(|u| self.b.doc.units[u].kind == UnitKind::Listing);
        env.below = Below {
            unit_env: if env.unit.is_some() {
                Some(k)
            } else {
                under.unit_env
            },
            math_env: if env.math.is_some() {
                Some(k)
            } else {
                under.math_env
            },
            lists: under.lists + usize::from(env.list.is_some()),
            in_listing: under.in_listing || is_listing,
            sub_inside_unit: env.unit.is_none()
                && (under.sub_inside_unit || env.name.starts_with("sub")),
        };
        self.envs.push(env);
    }

    /// What the open environments hold.
    fn below(&self) -> Below {
        self.envs.last().map(|e| e.below).unwrap_or_default()
    }

    /// The unit of the innermost environment that has one.
    fn innermost_unit_env(&self) -> Option<usize> {
        self.below().unit_env.and_then(|k| self.envs[k].unit)
    }

    /// The innermost open display-math environment's state.
    fn innermost_math(&mut self) -> Option<&mut MathState> {
        let k = self.below().math_env?;
        self.envs[k].math.as_mut()
    }

    /// The innermost unit a mention or label belongs to.
    fn current_unit(&self) -> usize {
        if let Some(p) = &self.para {
            return p.unit;
        }
        if let Some(u) = self.innermost_unit_env() {
            return u;
        }
        self.sections.last().map_or(0, |s| s.1)
    }

    /// The unit new children attach to: the innermost unit environment, else the current section.
    fn container(&self) -> usize {
        if let Some(u) = self.innermost_unit_env() {
            return u;
        }
        self.sections.last().map_or(0, |s| s.1)
    }

    /// Prose at byte `i` of `file`: extends the open paragraph, or opens one in the current
    /// container.
    fn mark_text(&mut self, file: usize, i: usize) {
        if !self.in_body {
            return;
        }
        if let Some(p) = &self.para {
            if p.file == file {
                let u = p.unit;
                self.b.doc.units[u].end_byte = self.b.doc.units[u].end_byte.max(i + 1);
                return;
            }
            self.close_paragraph();
        }
        if self.innermost_unit_env().is_some() {
            return;
        }
        let parent = self.container();
        let unit = self
            .b
            .unit(UnitKind::Paragraph, "paragraph", 0, parent, file, i, i + 1);
        self.para = Some(Paragraph { unit, file });
    }

    /// Extends the open paragraph to `end`.
    fn extend_text(&mut self, end: usize) {
        if let Some(p) = &self.para {
            let u = p.unit;
            self.b.doc.units[u].end_byte = self.b.doc.units[u].end_byte.max(end);
        }
    }

    /// Ends the open paragraph (a blank line, a new unit, an environment boundary).
    fn close_paragraph(&mut self) {
        self.para = None;
    }

    /// Handles the control sequence at `i`; returns where scanning goes on.
    fn command(&mut self, file: usize, text: &str, i: usize) -> usize {
        let bytes = text.as_bytes();
        let n = bytes.len();
        if i + 1 >= n {
            return n;
        }
        let c = bytes[i + 1];
        if !c.is_ascii_alphabetic() && c != b'@' {
            return self.control_symbol(file, text, i, c);
        }
        let mut j = i + 1;
        while j < n && (bytes[j].is_ascii_alphabetic() || bytes[j] == b'@') {
            j += 1;
        }
        let name = &text[i + 1..j];
        let starred = bytes.get(j) == Some(&b'*');
        let after_star = if starred { j + 1 } else { j };
        match name {
            "begin" => self.begin(file, text, i, j),
            "end" => self.end(file, text, i, j),
            "input" | "include" | "subfile" | "InputIfFileExists" | "import" | "subimport"
            | "includefrom" | "inputfrom" => self.input(At::new(file, text, i, j), name),
            "part" | "chapter" | "section" | "subsection" | "subsubsection" | "paragraph"
            | "subparagraph" | "addchap" | "addsec" => {
                let run_in = matches!(name, "paragraph" | "subparagraph")
                    && self.innermost_unit_env().is_some();
                if run_in {
                    // "\paragraph{Step 1.}" inside a proof is a run-in heading, part of the proof's text.
                    self.mark_text(file, i);
                    after_star
                } else if self.in_body {
                    self.section(At::new(file, text, i, after_star), name, starred)
                } else {
                    after_star
                }
            }
            // IEEEtran's `\appendices` (several appendices) letters sections like `\appendix`.
            "appendix" | "appendices" => {
                self.appendix();
                j
            }
            "frontmatter" => {
                self.numbered_chapters = false;
                j
            }
            "mainmatter" => {
                self.numbered_chapters = true;
                j
            }
            "backmatter" => {
                self.numbered_chapters = false;
                j
            }
            "label" => self.label(file, text, i, j),
            "ref" | "autoref" | "Autoref" | "pageref" | "nameref" | "Nameref" | "vref" | "Vref"
            | "vpageref" | "hyperref" | "fref" | "Fref" => {
                self.reference(At::new(file, text, i, after_star), MentionKind::Ref, false)
            }
            "eqref" => self.reference(
                At::new(file, text, i, after_star),
                MentionKind::Eqref,
                false,
            ),
            "cref" | "Cref" | "cpageref" | "Cpageref" | "labelcref" | "namecref" | "nameCref"
            | "lcnamecref" | "crefrange" | "Crefrange" | "cpagerefrange" | "Cpagerefrange" => {
                self.reference(At::new(file, text, i, after_star), MentionKind::Cref, true)
            }
            "uses" => self.reference(At::new(file, text, i, after_star), MentionKind::Uses, true),
            "caption" | "captionof" => {
                self.caption(At::new(file, text, i, after_star), name == "captionof")
            }
            "subfloat" | "subfigure" | "subtable" | "subcaptionbox" => {
                self.subfloat_command(file, text, after_star, name)
            }
            "newtheorem" => self.newtheorem(At::new(file, text, i, after_star), starred),
            "declaretheorem" => self.declaretheorem(text, after_star),
            "let" => self.let_counter(text, j),
            "newaliascnt" | "numberwithin" | "counterwithin" | "counterwithout" | "setcounter"
            | "newcounter" => self.counter_command(text, name, j, after_star),
            "documentclass"
            | "externaldocument"
            | "externalcitedocument"
            | "bibliography"
            | "addbibresource"
            | "addglobalbib" => self.preamble_command(text, name, j),
            "newcommand"
            | "renewcommand"
            | "providecommand"
            | "DeclareRobustCommand"
            | "newrobustcmd"
            | "renewrobustcmd" => self.newcommand(file, text, i, after_star),
            "def" | "gdef" | "edef" | "xdef" => self.def(file, text, i, j),
            "newenvironment" | "renewenvironment" | "lstnewenvironment" => {
                self.newenvironment(text, name, after_star)
            }
            "usepackage" | "RequirePackage" if !self.in_body => self.usepackage(text, after_star),
            "DefineVerbatimEnvironment"
            | "newminted"
            | "newtcblisting"
            | "renewtcblisting"
            | "DeclareTCBListing"
            | "NewTCBListing"
            | "excludecomment" => self.verbatim_definition(text, name, after_star),
            "bibitem" => self.bibitem(file, text, i, j),
            "tag" => {
                if let Some((t, e)) = arg(text, after_star) {
                    // In `subequations`, `\theparentequation` is the group's number (23 in 23x).
                    let mut tag = t.trim().to_string();
                    if let Some((parent, _)) = &self.subequation {
                        tag = tag.replace("\\theparentequation", parent);
                    }
                    if let Some(m) = self.innermost_math() {
                        m.line.tag = Some(tag);
                    }
                    // "\tag{by \cref{x}}" references x.
                    self.scan_refs_in(file, text, after_star, e);
                    return e;
                }
                j
            }
            "notag" | "nonumber" => {
                if let Some(m) = self.innermost_math() {
                    m.line.notag = true;
                }
                j
            }
            "verb" | "lstinline" | "mintinline" | "Verb" => self.verb(file, text, i, after_star),
            _ if non_text_args(name).is_some() => {
                let mut k = skip_opt(text, after_star);
                for _ in 0..non_text_args(name).unwrap_or(0) {
                    k = arg(text, k).map_or(k, |a| a.1);
                }
                k
            }
            _ if is_cite(name) => self.cite(file, text, i, after_star),
            _ if self.macros.contains_key(name) => {
                self.expand_macro(At::new(file, text, i, j), name)
            }
            "item" => {
                self.mark_text(file, i);
                let (custom, _) = opt(text, j);
                if custom.is_none() {
                    self.step_item();
                }
                j
            }
            "footnote" => {
                self.mark_text(file, i);
                let k = skip_opt(text, j);
                if let Some((_, end)) = arg(text, k) {
                    self.counters.step("footnote");
                    self.footnote = Some((file, end, self.counters.the("footnote")));
                }
                j
            }
            _ => {
                self.mark_text(file, i);
                j
            }
        }
    }

    /// A control symbol (`\\`, `\[`, `\%`, `\ ` …) at `i`, `c` being its character; returns
    /// where scanning goes on.
    fn control_symbol(&mut self, file: usize, text: &str, i: usize, c: u8) -> usize {
        match c {
            b'\\' => {
                self.math_line_break(i);
                i + 2
            }
            b'[' => {
                // Unnumbered display math: prose of the paragraph.
                self.mark_text(file, i);
                let end = find_from(text, i + 2, "\\]").map_or(text.len(), |k| k + 2);
                self.scan_refs_in(file, text, i + 2, end.saturating_sub(2));
                self.extend_text(end);
                end
            }
            b'\n' | b' ' | b'\t' => i + 1,
            _ => {
                self.mark_text(file, i);
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                i + 1 + len
            }
        }
    }

    /// The counter commands (`\\newcounter`, `\\setcounter`, `\\numberwithin`, `\\counterwithout`,
    /// `\\newaliascnt`) named `name` (`j` after the name, `after_star` after a star); returns where
    /// scanning goes on.
    fn counter_command(&mut self, text: &str, name: &str, j: usize, after_star: usize) -> usize {
        match name {
            "newaliascnt" => {
                if let (Some((a, e1)), true) = (arg(text, j), true)
                    && let Some((bname, e2)) = arg(text, e1)
                {
                    self.counters.alias(a.trim(), bname.trim());
                    return e2;
                }
                j
            }
            "numberwithin" | "counterwithin" => {
                let o = skip_opt(text, after_star);
                if let Some((a, e1)) = arg(text, o)
                    && let Some((w, e2)) = arg(text, e1)
                {
                    self.counters.set_within(a.trim(), Some(w.trim()));
                    return e2;
                }
                j
            }
            "counterwithout" => {
                let o = skip_opt(text, after_star);
                if let Some((a, e1)) = arg(text, o)
                    && let Some((_, e2)) = arg(text, e1)
                {
                    self.counters.set_within(a.trim(), None);
                    return e2;
                }
                j
            }
            "setcounter" => {
                if let Some((a, e1)) = arg(text, j)
                    && let Some((v, e2)) = arg(text, e1)
                {
                    if let Ok(v) = v.trim().parse::<i64>() {
                        if a.trim() == "secnumdepth" {
                            self.secnumdepth = v as i32;
                        } else {
                            self.counters.set_value(a.trim(), v);
                        }
                    }
                    return e2;
                }
                j
            }
            "newcounter" => match arg(text, j) {
                Some((c, e1)) => {
                    let (w, e2) = opt(text, e1);
                    self.counters.define(c.trim(), w.as_deref().map(str::trim));
                    e2
                }
                None => j,
            },
            _ => j,
        }
    }

    /// The preamble commands that shape numbering and resolution (`\\documentclass`,
    /// `\\externaldocument`, `\\bibliography`) named `name` (`j` after the name); returns where
    /// scanning goes on.
    fn preamble_command(&mut self, text: &str, name: &str, j: usize) -> usize {
        match name {
            "documentclass" => {
                let (options, o) = opt(text, j);
                if let Some((cls, e)) = arg(text, o) {
                    self.apply_class(cls.trim(), options.as_deref().unwrap_or(""));
                    return e;
                }
                j
            }
            "externaldocument" | "externalcitedocument" => {
                let (prefix, o) = opt(text, j);
                if let Some((f, e)) = arg(text, o) {
                    self.externals
                        .push((prefix.unwrap_or_default(), f.trim().to_string()));
                    return e;
                }
                j
            }
            "bibliography" | "addbibresource" | "addglobalbib" => {
                let o = skip_opt(text, j);
                if let Some((files, e)) = arg(text, o) {
                    for f in files.split(',') {
                        let f = f.trim();
                        if f.is_empty() {
                            continue;
                        }
                        let mut p = self.dir.join(f);
                        if p.extension().is_none() {
                            p.set_extension("bib");
                        }
                        if !self.bib_files.contains(&p) {
                            self.bib_files.push(p);
                        }
                    }
                    return e;
                }
                j
            }
            _ => j,
        }
    }

    // ---------- structure ----------

    /// A sectioning command (`\part` … `\subparagraph`, starred or not) at `i`: closes the
    /// sections at its level or deeper, numbers it and opens its unit; returns where scanning
    /// goes on.
    fn section(&mut self, at: At, name: &str, starred: bool) -> usize {
        let At {
            file,
            text,
            start: i,
            after,
        } = at;
        self.close_paragraph();
        let (level, env) = match name {
            "part" => (-1, "part"),
            "chapter" | "addchap" => (0, "chapter"),
            "section" | "addsec" => (1, "section"),
            "subsection" => (2, "subsection"),
            "subsubsection" => (3, "subsubsection"),
            "paragraph" => (4, "paragraph"),
            _ => (5, "subparagraph"),
        };
        let o = skip_opt(text, after);
        let (title, end) = match arg(text, o) {
            Some((t, e)) => (Some(clean_title(t)), e),
            None => {
                self.b.diag(
                    file,
                    i,
                    Severity::Warning,
                    format!("\\{name} without a title argument"),
                );
                (None, after)
            }
        };
        // Close open sections at this level or deeper; a unit environment left open is an error of the input.
        self.close_unit_envs(file, i);
        while let Some(&(l, u)) = self.sections.last() {
            if l >= level {
                self.close_unit_at(u, file, i);
                self.sections.pop();
            } else {
                break;
            }
        }
        // In a book's front and back matter only chapters go unnumbered (as LaTeX's \@mainmatterfalse).
        let numbered = !starred
            && !matches!(name, "addchap" | "addsec")
            && level <= self.secnumdepth
            && (level != 0 || self.numbered_chapters);
        let parent = self.sections.last().map_or(0, |s| s.1);
        let unit = self
            .b
            .unit(UnitKind::Section, env, level, parent, file, i, end);
        self.b.set_prefix(
            unit,
            match level {
                -1 => "part",
                0 => "ch",
                _ => "sec",
            },
        );
        if numbered {
            self.counters.step(env);
            let number = self.counters.reference(env);
            self.section_label = Some(number.clone());
            self.b.doc.units[unit].numbers = vec![number.clone()];
            self.b.doc.units[unit].number = Some(number);
        }
        self.b.doc.units[unit].title = title;
        self.sections.push((level, unit));
        // References inside the title (rare, but real) belong to the section.
        self.scan_refs_in(file, text, o, end);
        end
    }

    /// `\item`: steps the innermost `enumerate` counter (an item of `itemize` or `description`
    /// is not numbered).
    fn step_item(&mut self) {
        let Some(env) = self
            .envs
            .iter_mut()
            .rev()
            .find(|e| e.list.is_some() || matches!(e.name.as_str(), "itemize" | "description"))
        else {
            return;
        };
        if let Some((level, count, _)) = env.list.as_mut() {
            *count += 1;
            if let Some(c) = ENUM_COUNTERS.get(*level - 1) {
                self.counters.step(c);
            }
        }
    }

    /// The printed reference of the current `enumerate` item, when a label would name it.
    fn item_ref(&self) -> Option<String> {
        let env = self.envs.last()?;
        let (level, count, template) = env.list.as_ref()?;
        if *count == 0 {
            return None;
        }
        let counter = ENUM_COUNTERS.get(*level - 1)?;
        Some(match template {
            Some(t) => {
                static STAR: LazyLock<Regex> = LazyLock::new(|| {
                    Regex::new(r"\\(arabic|roman|Roman|alph|Alph)\*|\\[A-Za-z@]+\s*|[{}~]")
                        .expect("valid")
                });
                STAR.replace_all(t, |c: &regex::Captures| {
                    c.get(1).map_or(String::new(), |s| {
                        self.counters.format(i64::from(*count), s.as_str())
                    })
                })
                .trim()
                .to_string()
            }
            None if *level == 1 => self.counters.the(counter),
            None => {
                let parent = ENUM_COUNTERS
                    .get(*level - 2)
                    .map(|p| self.counters.the(p))
                    .unwrap_or_default();
                format!("{parent}{}", self.counters.the(counter))
            }
        })
    }

    /// Whether a `\tag` comes before `\end{name}` (from `after`, within 64 KB, so that many
    /// unclosed displays stay linear): a starred display with one is numbered by it.
    fn tags_before_end(&self, text: &str, after: usize, name: &str) -> bool {
        let mut limit = (after + 64 * 1024).min(text.len());
        while !text.is_char_boundary(limit) {
            limit -= 1;
        }
        let window = &text[after..limit];
        let end = window
            .find(&format!("\\end{{{name}}}"))
            .unwrap_or(window.len());
        window[..end].contains("\\tag")
    }

    /// `\appendix`: chapters (or sections) restart and print as letters; the class may change
    /// more (REVTeX numbers equations `A1`).
    fn appendix(&mut self) {
        let top = if self.with_chapters {
            "chapter"
        } else {
            "section"
        };
        self.counters.set_value(top, 0);
        self.counters.set_template(top, &format!("\\Alph{{{top}}}"));
        self.numbered_chapters = true;
        // Where sections are not numbered (REVTeX for PRL) the class's appendix numbering of
        // equations and subsections does not apply either.
        if let Some(class) = self.class.filter(|_| self.secnumdepth >= 1) {
            for (counter, within) in class.appendix_within {
                self.counters.set_within(counter, *within);
            }
            for (counter, template) in class.appendix_templates {
                self.counters.set_template(counter, template);
            }
        }
    }

    /// `\documentclass[options]{class}`: the numbering the class decides (see [`classes`]).
    fn apply_class(&mut self, class: &str, options: &str) {
        let known = classes::lookup(class);
        self.class = known;
        let Some(c) = known else {
            return;
        };
        if c.chapters {
            self.with_chapters = true;
            self.counters = Counters::for_class(true);
        }
        let options: Vec<&str> = options.split(',').map(str::trim).collect();
        self.secnumdepth = classes::secnumdepth(c, &options);
        for (counter, within) in c.within {
            self.counters.set_within(counter, *within);
        }
        for (counter, template) in c.templates {
            self.counters.set_template(counter, template);
        }
        for (counter, prefix) in c.ref_prefixes {
            self.counters.set_ref_prefix(counter, prefix);
        }
        for &theorem in c.theorems {
            let (env, display, shared, within) = if classes::is_springer(c) {
                classes::springer_theorem(&options, theorem)
            } else {
                theorem
            };
            let counter = shared.unwrap_or(env);
            if shared.is_none() {
                self.counters.define(env, within);
            }
            self.theorems.insert(
                env.to_string(),
                TheoremDef {
                    display: display.into(),
                    counter: Some(counter.into()),
                },
            );
        }
    }

    /// Closes a unit at a position (sections and environments spanning files end at their file's end).
    fn close_unit_at(&mut self, unit: usize, file: usize, at: usize) {
        let u = &mut self.b.doc.units[unit];
        u.end_byte = if u.file == file {
            at.max(u.start_byte)
        } else {
            self.b.texts[u.file].len()
        };
    }

    /// A section command while a unit environment is open: the environment was never closed.
    fn close_unit_envs(&mut self, file: usize, at: usize) {
        while let Some(pos) = self.below().unit_env {
            let env = self.envs.remove(pos);
            let (ef, es) = (env.file, env.start);
            self.b.diag(
                ef,
                es,
                Severity::Error,
                format!(
                    "\\begin{{{}}} is not closed before the next section",
                    env.name
                ),
            );
            if let Some(u) = env.unit {
                self.close_unit_at(u, file, at);
            }
            self.envs.truncate(pos);
        }
    }

    /// `\newenvironment{name}[n][default]{begin}{end}` (or `\renewenvironment`,
    /// `\lstnewenvironment`) from `k`: none of it is prose. An environment whose begin code
    /// starts a verbatim-like environment (`\verbatim`, `\Verbatim`, `\lstlisting`,
    /// `\minted`, `\comment`, or fancyvrb's `\VerbatimEnvironment`), and every
    /// `\lstnewenvironment`, is verbatim-like itself. Returns where scanning goes on.
    fn newenvironment(&mut self, text: &str, command: &str, mut k: usize) -> usize {
        let Some((name, after)) = arg(text, k) else {
            return k;
        };
        k = skip_opt(text, skip_opt(text, after));
        let begin = arg(text, k);
        k = begin.as_ref().map_or(k, |a| a.1);
        k = arg(text, k).map_or(k, |a| a.1);
        let name = name.trim().trim_start_matches('\\').to_string();
        let code = begin.map(|b| b.0).unwrap_or_default();
        let verbatim = command == "lstnewenvironment"
            || VERBATIM_STARTS.iter().any(|start| {
                code.match_indices(start).any(|(at, _)| {
                    !code[at + start.len()..].starts_with(|c: char| c.is_ascii_alphabetic())
                })
            });
        if verbatim && !name.is_empty() {
            let kind = if code.contains("\\comment") {
                VerbatimKind::Comment
            } else {
                VerbatimKind::Listing
            };
            self.verbatim.insert(name, kind);
        } else {
            self.verbatim.remove(&name);
        }
        k
    }

    /// The other definitions of verbatim-like environments, from `k` after the command `name`:
    /// `\DefineVerbatimEnvironment{name}{Verbatim}{options}`, `\newminted[name]{lang}{options}`
    /// (`<lang>code` without a name), `\newtcblisting[init]{name}…`, `\excludecomment{name}`.
    fn verbatim_definition(&mut self, text: &str, command: &str, k: usize) -> usize {
        let (given, k) = opt(text, k);
        let Some((first, after)) = arg(text, k) else {
            return k;
        };
        let first = first.trim().to_string();
        let (name, kind, rest) = match command {
            "DefineVerbatimEnvironment" => (first, VerbatimKind::Listing, 2),
            "newminted" => (
                given.map_or_else(|| format!("{first}code"), |g| g.trim().to_string()),
                VerbatimKind::Listing,
                1,
            ),
            "excludecomment" => (first, VerbatimKind::Comment, 0),
            // tcolorbox listings: [init]{name}[n][default]{options}
            _ => (first, VerbatimKind::Listing, 1),
        };
        let mut k = skip_opt(text, skip_opt(text, after));
        for _ in 0..rest {
            k = arg(text, k).map_or(k, |a| a.1);
        }
        if !name.is_empty() {
            self.verbatim.insert(name, kind);
        }
        k
    }

    /// `\usepackage[options]{a,b}[date]` from `k`: a package that is a `.sty` file beside the
    /// main file (where LaTeX looks first) is read for the verbatim-like environments it
    /// defines. Returns where scanning goes on.
    fn usepackage(&mut self, text: &str, k: usize) -> usize {
        let k = skip_opt(text, k);
        let Some((names, end)) = arg(text, k) else {
            return k;
        };
        for name in names.split(',').map(str::trim) {
            if name.is_empty() || name.contains(['\\', '#', '/']) {
                continue;
            }
            let path = self.dir.join(format!("{name}.sty"));
            if self.b.inputs.is_file(&path)
                && let Ok(sty) = self.b.inputs.read(&path, Reading::Latex(self.encoding))
            {
                self.verbatim_definitions_in(&sty.decoded.text);
            }
        }
        skip_opt(text, end)
    }

    /// The verbatim-like environments a package's text defines.
    fn verbatim_definitions_in(&mut self, text: &str) {
        static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"\\(newenvironment|renewenvironment|lstnewenvironment|DefineVerbatimEnvironment|newminted|newtcblisting|renewtcblisting|DeclareTCBListing|NewTCBListing|excludecomment)\*?",
            )
            .expect("valid")
        });
        for m in DEFINITION.captures_iter(text) {
            let (Some(all), Some(command)) = (m.get(0), m.get(1)) else {
                continue;
            };
            if text[all.end()..].starts_with(|c: char| c.is_ascii_alphabetic()) {
                continue;
            }
            let command = command.as_str();
            if command.ends_with("environment") {
                self.newenvironment(text, command, all.end());
            } else {
                self.verbatim_definition(text, command, all.end());
            }
        }
    }

    /// Whether environment `base` is verbatim-like: built in, or defined so by the document.
    fn is_verbatim(&self, base: &str) -> bool {
        verbatim_env(base) || self.verbatim.contains_key(base)
    }

    /// `\begin{env}` at `i` (`j` after the command name): opens the environment, and its unit for
    /// theorem-likes, proofs, floats, display math, algorithms and listings; verbatim-like
    /// environments are skipped whole. Returns where scanning goes on.
    fn begin(&mut self, file: usize, text: &str, i: usize, j: usize) -> usize {
        let Some((name, after)) = arg(text, j) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                "\\begin without an environment name".into(),
            );
            return j;
        };
        let name = name.trim().to_string();
        let base = name.trim_end_matches('*');
        let starred = name.ends_with('*');
        if name == "document" {
            self.in_body = true;
            self.push_env(OpenEnv::new(name, None, file, i));
            return after;
        }
        if !self.in_body {
            // Environments in the preamble hold no units.
            return after;
        }
        if self.holds_example_document(file, i, base) || self.is_verbatim(base) {
            return self.begin_verbatim(At::new(file, text, i, after), &name);
        }
        // subcaption's sub-float environments: labels in one print its number once its caption
        // has stepped the counter.
        if matches!(base, "subfigure" | "subtable") && self.below().unit_env.is_some() {
            let close = format!("\\end{{{name}}}");
            let end = find_from(text, after, &close).unwrap_or(text.len());
            self.subfloat = Some(SubFloat {
                file,
                end,
                number: None,
            });
        }
        let kind_and_counter: Option<(UnitKind, &str, Option<&'static str>)> = match base {
            "figure" | "wrapfigure" | "SCfigure" | "sidewaysfigure" | "figwindow" => {
                Some((UnitKind::Figure, base, Some("figure")))
            }
            "table" | "wraptable" | "sidewaystable" | "SCtable" | "tabwindow" | "longtable"
            | "supertabular" | "xltabular" => Some((UnitKind::Table, base, Some("table"))),
            "algorithm" | "algorithm2e" => Some((UnitKind::Algorithm, base, Some("algorithm"))),
            "listing" => Some((UnitKind::Listing, base, Some("listing"))),
            "proof" => Some((UnitKind::Proof, "proof", None)),
            "thebibliography" => Some((UnitKind::Section, "bibliography", None)),
            _ => None,
        };
        if let Some((kind, env, float_counter)) = kind_and_counter {
            self.close_paragraph();
            let parent = if kind == UnitKind::Section {
                self.sections.last().map_or(0, |s| s.1)
            } else {
                self.container()
            };
            let unit = self.b.unit(kind, env, 0, parent, file, i, after);
            let mut end = after;
            if kind == UnitKind::Proof {
                let (title, e) = opt(text, after);
                self.b.doc.units[unit].title = title.map(|t| clean_title(&t));
                end = e;
            }
            if kind == UnitKind::Section {
                self.b.doc.units[unit].title = Some("References".into());
                end = arg(text, after).map_or(after, |a| a.1);
            }
            self.push_env(OpenEnv {
                float_counter,
                ..OpenEnv::new(name, Some(unit), file, i)
            });
            // "\begin{proof}[Proof of \cref{x}]" references x.
            self.scan_refs_in(file, text, after, end);
            return end;
        }
        if let Some((per_line, numbered_env)) = math_env(base) {
            if starred && !numbered_env {
                return after;
            }
            // An unnumbered display stays in the paragraph's text, unless a `\tag` numbers it.
            if starred && !self.tags_before_end(text, after, &name) {
                self.mark_text(file, i);
                return after;
            }
            self.close_paragraph();
            let parent = self.container();
            let unit = self
                .b
                .unit(UnitKind::Equation, base, 0, parent, file, i, after);
            // A `\label` given to the `subequations` around it names this display.
            for (l, number, f, at) in std::mem::take(&mut self.subequation_labels) {
                self.b.add_label(unit, &l, Some(number), Span::at(f, at));
            }
            let after = if base == "alignat" {
                arg(text, after).map_or(after, |a| a.1)
            } else {
                after
            };
            let math = MathState {
                per_line,
                starred,
                depth: self.depth,
                line: MathLine {
                    tag: None,
                    notag: false,
                    labels: vec![],
                },
                numbers: vec![],
                labels: vec![],
            };
            self.push_env(OpenEnv {
                math: Some(math),
                ..OpenEnv::new(name, Some(unit), file, i)
            });
            return after;
        }
        if base == "subequations" {
            self.counters.step("equation");
            self.subequation = Some((self.counters.reference("equation"), 0));
            self.push_env(OpenEnv::new(name, None, file, i));
            return after;
        }
        if self.theorems.contains_key(base) {
            return self.begin_theorem(At::new(file, text, i, after), name);
        }
        // Any other environment (lists, center, tabular …) is part of the surrounding text.
        let mut list = None;
        let mut after = after;
        if base == "enumerate" {
            let level = 1 + self.below().lists;
            let (opts, e) = opt(text, after);
            after = e;
            let kv = keyvals(opts.as_deref().unwrap_or(""));
            let template = kv.get("ref").or(kv.get("label")).cloned();
            if let Some(c) = ENUM_COUNTERS.get(level - 1) {
                self.counters.set_value(c, 0);
            }
            list = Some((level, 0, template));
        }
        self.push_env(OpenEnv {
            list,
            ..OpenEnv::new(name, None, file, i)
        });
        after
    }

    /// A verbatim-like environment (`lstlisting`, `minted`, `verbatim` …) `name` begun at `i`, its
    /// content from `after`: raw text up to the matching `\end`, a listing unit unless it is a
    /// comment or inside a listing float; returns the index after its `\end`.
    fn begin_verbatim(&mut self, at: At, name: &str) -> usize {
        let At {
            file,
            text,
            start: i,
            after,
        } = at;
        let base = name.trim_end_matches('*');
        let close = format!("\\end{{{name}}}");
        let end = match find_from(text, after, &close) {
            Some(k) => k + close.len(),
            None => {
                // As LaTeX's own error recovery lets a reader see the rest: the environment ends
                // before the next sectioning command of its section's level or higher, or
                // `\end{document}`.
                let level = self.sections.last().map_or(i32::MAX, |s| s.0);
                let end = recovery_point(text, after, level);
                let resumed = if end < text.len() {
                    format!("; read on from line {}", line_of(text, end))
                } else {
                    String::new()
                };
                self.b.diag(
                    file,
                    i,
                    Severity::Error,
                    format!("\\begin{{{name}}} is never closed{resumed}"),
                );
                end
            }
        };
        self.skipped[file].push((after, end));
        let comment = self.verbatim.get(base) == Some(&VerbatimKind::Comment);
        if base == "comment" || base == "filecontents" || comment {
            return end;
        }
        let in_float = self.below().in_listing;
        if in_float {
            return end;
        }
        self.close_paragraph();
        let parent = self.container();
        let unit = self
            .b
            .unit(UnitKind::Listing, base, 0, parent, file, i, end);
        if base == "lstlisting" {
            let (opts, _) = opt(text, after);
            if let Some(opts) = opts {
                let kv = keyvals(&opts);
                if let Some(c) = kv.get("caption") {
                    self.counters.step("lstlisting");
                    let number = self.counters.reference("lstlisting");
                    let u = &mut self.b.doc.units[unit];
                    u.title = Some(clean_title(c));
                    u.numbers = vec![number.clone()];
                    u.number = Some(number.clone());
                }
                if let Some(l) = kv.get("label") {
                    let number = self.b.doc.units[unit].number.clone();
                    self.b.add_label(unit, l.trim(), number, Span::at(file, i));
                }
            }
        }
        end
    }

    /// A theorem-like environment `name` begun at `i`, its optional title at `after`: a theorem
    /// unit, numbered unless starred; returns where scanning goes on.
    fn begin_theorem(&mut self, at: At, name: String) -> usize {
        let At {
            file,
            text,
            start: i,
            after,
        } = at;
        let starred = name.ends_with('*');
        let Some(def) = self.theorems.get(name.trim_end_matches('*')).cloned() else {
            return after;
        };
        self.close_paragraph();
        let parent = self.container();
        let display = def.display.clone();
        let unit = self.b.unit(
            UnitKind::Theorem,
            &display.to_lowercase(),
            0,
            parent,
            file,
            i,
            after,
        );
        self.b.set_prefix(unit, &theorem_prefix(&display));
        let (title, end) = opt(text, after);
        if let (Some(counter), false) = (&def.counter, starred) {
            self.counters.step(counter);
            let number = self.counters.reference(counter);
            let u = &mut self.b.doc.units[unit];
            u.numbers = vec![number.clone()];
            u.number = Some(number);
        }
        self.b.doc.units[unit].title = title.map(|t| clean_title(&t));
        self.push_env(OpenEnv::new(name, Some(unit), file, i));
        self.scan_refs_in(file, text, after, end);
        end
    }

    /// `\end{env}` at `i`: closes the environment (and the ones left open inside it, with a
    /// diagnostic), numbers the lines of display math, ends its unit. Returns where scanning
    /// goes on.
    fn end(&mut self, file: usize, text: &str, i: usize, j: usize) -> usize {
        let Some((name, after)) = arg(text, j) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                "\\end without an environment name".into(),
            );
            return j;
        };
        let name = name.trim();
        if name == "document" {
            self.close_paragraph();
            self.done = true;
            self.envs.retain(|e| e.name != "document");
            return after;
        }
        if !self.in_body {
            return after;
        }
        let Some(pos) = self.envs.iter().rposition(|e| e.name == name) else {
            if math_env(name.trim_end_matches('*')).is_some() && name.ends_with('*') {
                return after;
            }
            self.b.diag(
                file,
                i,
                Severity::Warning,
                format!("\\end{{{name}}} without a matching \\begin"),
            );
            return after;
        };
        while self.envs.len() > pos + 1 {
            let inner = self.envs.pop().expect("stack is longer than pos");
            self.b.diag(
                inner.file,
                inner.start,
                Severity::Warning,
                format!("\\begin{{{}}} is closed by \\end{{{name}}}", inner.name),
            );
            if let Some(u) = inner.unit {
                self.close_unit_at(u, file, i);
            }
        }
        let mut env = self.envs.pop().expect("pos is in the stack");
        if name == "subequations" {
            self.subequation = None;
            let unit = self.container();
            for (l, number, f, at) in std::mem::take(&mut self.subequation_labels) {
                self.b.add_label(unit, &l, Some(number), Span::at(f, at));
            }
        }
        if let Some(unit) = env.unit {
            if let Some(math) = env.math.as_mut() {
                finish_math_line(math, &mut self.counters, &mut self.subequation);
                let numbers = std::mem::take(&mut math.numbers);
                let labels = std::mem::take(&mut math.labels);
                for (l, number, at) in labels {
                    self.b.add_label(unit, &l, number, Span::at(file, at));
                }
                let u = &mut self.b.doc.units[unit];
                u.number = match numbers.as_slice() {
                    [] => None,
                    [one] => Some(one.clone()),
                    [first, .., last] => Some(format!("{first}–{last}")),
                };
                u.numbers = numbers;
            }
            self.close_unit_at(unit, file, after);
            if self.b.doc.units[unit].kind != UnitKind::Section {
                self.close_paragraph();
            }
        }
        after
    }

    /// `\\` inside display math at the environment's own depth: the line ends and is numbered
    /// (unless `\notag` or unnumbered).
    fn math_line_break(&mut self, _i: usize) {
        let depth = self.depth;
        let Some(env) = self.envs.last_mut() else {
            return;
        };
        let Some(math) = env.math.as_mut() else {
            return;
        };
        if math.depth != depth || !math.per_line {
            return;
        }
        finish_math_line(math, &mut self.counters, &mut self.subequation);
    }

    /// `\input`, `\include` or `\subfile` at `i`: reads and scans the named file in place (a
    /// missing file or a cycle is a diagnostic). Returns where scanning goes on.
    fn input(&mut self, at: At, name: &str) -> usize {
        let At {
            file,
            text,
            start: i,
            after: j,
        } = at;
        let (target, end) = match name {
            "import" | "subimport" | "includefrom" | "inputfrom" => {
                let Some((d, e1)) = arg(text, j) else {
                    return j;
                };
                let Some((f, e2)) = arg(text, e1) else {
                    return e1;
                };
                (
                    format!("{}/{}", d.trim().trim_end_matches('/'), f.trim()),
                    e2,
                )
            }
            _ => match arg(text, j) {
                Some((f, e)) => (f.trim().to_string(), e),
                None => {
                    // `\input file` without braces.
                    let rest = &text[j..];
                    let start = j + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
                    let stop = text[start..]
                        .find(|c: char| c.is_whitespace() || c == '}' || c == '%')
                        .map_or(text.len(), |k| start + k);
                    if stop == start {
                        return j;
                    }
                    (text[start..stop].to_string(), stop)
                }
            },
        };
        let end = if name == "InputIfFileExists" {
            arg(text, end).map_or(end, |a| a.1)
        } else {
            end
        };
        if target.contains('#') || target.contains('\\') {
            // A macro argument or computed name: nothing to follow.
            return end;
        }
        let Some(path) = self.find_input(&target) else {
            if self.in_body || name != "InputIfFileExists" {
                self.b.diag(
                    file,
                    i,
                    Severity::Warning,
                    format!("\\{name}{{{target}}}: file not found"),
                );
            }
            return end;
        };
        let canon = canonical(&path);
        if self.include_stack.contains(&canon) {
            self.b.diag(
                file,
                i,
                Severity::Error,
                format!(
                    "\\{name}{{{target}}}: include cycle ({} is already being read)",
                    path.display()
                ),
            );
            return end;
        }
        if self.include_stack.len() >= MAX_INCLUDE_DEPTH {
            self.b.diag(
                file,
                i,
                Severity::Error,
                format!("\\{name}{{{target}}}: includes nested deeper than {MAX_INCLUDE_DEPTH}"),
            );
            return end;
        }
        match self.b.inputs.read(&path, Reading::Latex(self.encoding)) {
            Ok(t) => {
                self.close_paragraph();
                let f = self.b.add_source(&path.display().to_string(), t);
                self.include_stack.push(canon);
                self.scan(f);
                self.include_stack.pop();
                self.close_paragraph();
            }
            Err(e) => self.b.diag(
                file,
                i,
                Severity::Error,
                format!("\\{name}{{{target}}}: {}: {e}", path.display()),
            ),
        }
        end
    }

    /// The file an `\input{target}` names, with or without `.tex`, relative to the main file's
    /// folder.
    fn find_input(&mut self, target: &str) -> Option<PathBuf> {
        let base = self.dir.join(target);
        let mut candidates = vec![base.clone()];
        if base.extension().is_none_or(|e| e != "tex") {
            let mut p = base.clone().into_os_string();
            p.push(".tex");
            candidates.insert(0, PathBuf::from(p));
        }
        candidates.into_iter().find(|p| self.b.inputs.is_file(p))
    }

    /// `\label{key}` at `i`: attached to what it labels (see [`Latex::attach_label`]). Returns
    /// where scanning goes on.
    fn label(&mut self, file: usize, text: &str, i: usize, j: usize) -> usize {
        let Some((l, end)) = key_arg(text, j) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                "\\label without an argument".into(),
            );
            return j;
        };
        self.attach_label(file, i, l.trim());
        end
    }

    /// Gives `l` to the unit a `\label` at `i` names: the display-math line, the innermost unit
    /// environment, else the current section.
    fn attach_label(&mut self, file: usize, i: usize, l: &str) {
        let l = l.to_string();
        if !self.in_body || l.contains('#') || l.is_empty() {
            return;
        }
        if let Some((f, end, number)) = self.footnote.clone() {
            if f == file && i < end {
                let unit = self.current_unit();
                self.b.add_label(unit, &l, Some(number), Span::at(file, i));
                return;
            }
            self.footnote = None;
        }
        if let Some(number) = self.item_ref() {
            let unit = self.current_unit();
            self.b.add_label(unit, &l, Some(number), Span::at(file, i));
            return;
        }
        // In display math, the label names the current line.
        if let Some(math) = self.innermost_math() {
            math.line.labels.push((l, i));
            return;
        }
        if let (Some(env), Some((number, _))) = (self.envs.last(), &self.subequation)
            && env.name == "subequations"
        {
            let number = number.clone();
            self.subequation_labels.push((l, number, file, i));
            return;
        }
        if let Some(sub) = &self.subfloat {
            if sub.file == file && i < sub.end {
                if let Some(number) = sub.number.clone() {
                    let unit = self.container();
                    self.b.add_label(unit, &l, Some(number), Span::at(file, i));
                    return;
                }
            } else {
                self.subfloat = None;
            }
        }
        let unit = self.container();
        if unit == 0 {
            self.b.diag(
                file,
                i,
                Severity::Info,
                format!("\\label{{{l}}} before the first numbered unit names the document"),
            );
        }
        // An unnumbered unit's label prints what LaTeX's `\@currentlabel` holds there: the
        // number of the last numbered sectioning command (environments restore it when they end).
        let number = self.b.doc.units[unit]
            .number
            .clone()
            .or_else(|| self.section_label.clone());
        self.b.add_label(unit, &l, number, Span::at(file, i));
    }

    /// Steps the sub-float counter (`subfigure`, `subtable`) of the float around, numbering the
    /// float first when its caption is still to come (the caption package steps it at the first
    /// sub-float); what `\ref` prints for a label in the sub-float: the float's number and the
    /// letter (`1a`, as subcaption and subfig print it). `None` outside a numbered float.
    fn step_subfloat(&mut self) -> Option<String> {
        let pos = self.below().unit_env?;
        let unit = self.envs[pos].unit?;
        let counter = self.envs[pos].float_counter?;
        if self.b.doc.units[unit].number.is_none() {
            self.counters.step(counter);
            let number = self.counters.reference(counter);
            let u = &mut self.b.doc.units[unit];
            u.number = Some(number.clone());
            u.numbers.push(number);
            self.float_numbered_early = Some(unit);
        }
        let sub = format!("sub{counter}");
        if !self.counters.exists(&sub) {
            self.counters.define(&sub, Some(counter));
        }
        self.counters.step(&sub);
        let float = self.b.doc.units[unit].number.clone()?;
        let letter = self.counters.format(self.counters.value(&sub), "alph");
        Some(format!("{float}{letter}"))
    }

    /// A sub-float command at `i` (`j` after its name): subfig's `\subfloat[caption][entry]{body}`,
    /// the subfigure package's `\subfigure[caption]{body}`, subcaption's
    /// `\subcaptionbox[entry]{caption}[width][pos]{body}`. Each steps the sub-float counter (an
    /// empty or missing caption too, as subfig does); labels in it print the sub-float's number.
    /// Returns `j`: its caption and body are read as the float's text.
    fn subfloat_command(&mut self, file: usize, text: &str, j: usize, name: &str) -> usize {
        if self.below().unit_env.is_none() {
            return j;
        }
        let end = if name == "subcaptionbox" {
            let k = arg(text, skip_opt(text, j)).map_or(j, |a| a.1);
            arg(text, skip_opt(text, skip_opt(text, k))).map_or(k, |a| a.1)
        } else {
            arg(text, skip_opt(text, skip_opt(text, j))).map_or(j, |a| a.1)
        };
        let number = self.step_subfloat();
        self.subfloat = Some(SubFloat { file, end, number });
        j
    }

    /// `\caption` at `i`: steps the float's counter and gives its unit a number and a title.
    /// Returns where scanning goes on.
    fn caption(&mut self, at: At, captionof: bool) -> usize {
        let At {
            file,
            text,
            start: i,
            after,
        } = at;
        let mut k = after;
        let mut counter: Option<&'static str> = None;
        if captionof {
            let Some((c, e)) = arg(text, k) else { return k };
            counter = match c.trim() {
                "figure" => Some("figure"),
                "table" => Some("table"),
                "algorithm" => Some("algorithm"),
                _ => None,
            };
            k = e;
        }
        let k = skip_opt(text, k);
        let Some((cap, end)) = arg(text, k) else {
            return k;
        };
        // A caption inside a sub-figure environment numbers the sub-figure, not the float.
        if self.below().sub_inside_unit {
            if let Some(sub) = &self.subfloat
                && sub.file == file
                && i < sub.end
                && sub.number.is_none()
            {
                let number = self.step_subfloat();
                if let Some(sub) = &mut self.subfloat {
                    sub.number = number;
                }
            }
            self.scan_refs_in(file, text, k, end);
            return end;
        }
        let Some(pos) = self.below().unit_env else {
            self.scan_refs_in(file, text, k, end);
            return end;
        };
        let unit = self.envs[pos].unit.unwrap_or(0);
        let counter = counter.or(self.envs[pos].float_counter);
        if self.float_numbered_early == Some(unit) {
            // Its sub-floats stepped the counter already (as the caption package does).
            self.float_numbered_early = None;
        } else if let Some(c) = counter {
            self.counters.step(c);
            let number = self.counters.reference(c);
            let u = &mut self.b.doc.units[unit];
            if u.number.is_none() {
                u.number = Some(number.clone());
            }
            u.numbers.push(number);
        }
        let u = &mut self.b.doc.units[unit];
        if u.title.is_none() {
            u.title = Some(clean_title(cap));
        }
        self.scan_refs_in(file, text, k, end);
        let _ = i;
        end
    }

    /// `\bibitem{key}` at `i`: a bibliography-entry unit. Returns where scanning goes on.
    fn bibitem(&mut self, file: usize, text: &str, i: usize, j: usize) -> usize {
        let o = skip_opt(text, j);
        let Some((key, end)) = arg(text, o) else {
            return j;
        };
        self.close_paragraph();
        let Some(pos) = self.envs.iter().rposition(|e| e.name == "thebibliography") else {
            return end;
        };
        // The previous item ends where this one starts.
        let bib_section = self.envs[pos].unit.unwrap_or(0);
        if let Some(prev) = self.envs.get(pos + 1).and_then(|e| e.unit) {
            self.close_unit_at(prev, file, i);
            self.envs.truncate(pos + 1);
        }
        let unit = self
            .b
            .unit(UnitKind::Bibitem, "bibitem", 0, bib_section, file, i, end);
        let key = key.trim().to_string();
        let u = &mut self.b.doc.units[unit];
        u.id = format!("bib:{key}");
        u.label = Some(key);
        self.push_env(OpenEnv::new("bibitem".into(), Some(unit), file, i));
        end
    }

    // ---------- definitions ----------

    /// `\newtheorem{env}[shared]{Display}[within]` at `i` (starred: unnumbered). Returns where
    /// scanning goes on.
    fn newtheorem(&mut self, at: At, starred: bool) -> usize {
        let At {
            file,
            text,
            start: i,
            after,
        } = at;
        let Some((env, e1)) = arg(text, after) else {
            return after;
        };
        let (shared, e2) = opt(text, e1);
        let Some((display, e3)) = arg(text, e2) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                "\\newtheorem without a display name".into(),
            );
            return e2;
        };
        let (within, e4) = opt(text, e3);
        self.define_theorem(NewTheorem {
            env: env.trim(),
            display: &clean_title(display),
            shared: shared.as_deref(),
            within: within.as_deref(),
            starred,
        });
        e4
    }

    /// Records a theorem-like environment and its counter (its own, shared, or reset within
    /// another).
    fn define_theorem(&mut self, t: NewTheorem) {
        let NewTheorem {
            env,
            display,
            shared,
            within,
            starred,
        } = t;
        if env.contains('#') {
            return;
        }
        let counter = if starred {
            None
        } else if let Some(s) = shared.map(str::trim).filter(|s| !s.is_empty()) {
            if s != env && !self.counters.exists(s) {
                self.counters.define(s, None);
            }
            if s != env && !self.counters.exists(env) {
                self.counters.alias(env, s);
            }
            Some(s.to_string())
        } else {
            self.counters
                .define(env, within.map(str::trim).filter(|w| !w.is_empty()));
            Some(env.to_string())
        };
        self.theorems.insert(
            env.to_string(),
            TheoremDef {
                display: display.to_string(),
                counter,
            },
        );
    }

    /// thmtools' `\declaretheorem[opts]{env}` after its name. Returns where scanning goes on.
    fn declaretheorem(&mut self, text: &str, after: usize) -> usize {
        let (opts, o) = opt(text, after);
        let Some((env, mut end)) = arg(text, o) else {
            return o;
        };
        if opts.is_none() {
            let (o2, e) = opt(text, end);
            end = e;
            return self.declaretheorem_with(env, o2, end);
        }
        self.declaretheorem_with(env, opts, end)
    }

    /// Defines `env` from `\declaretheorem`'s options (`name`, `numberlike`, `sibling`,
    /// `numberwithin`, `style`, `numbered`). Returns `end`.
    fn declaretheorem_with(&mut self, env: &str, opts: Option<String>, end: usize) -> usize {
        let kv = keyvals(opts.as_deref().unwrap_or(""));
        let env = env.trim();
        let display = kv.get("name").cloned().unwrap_or_else(|| capitalise(env));
        let shared = kv
            .get("sibling")
            .or(kv.get("numberlike"))
            .or(kv.get("sharenumber"))
            .cloned();
        let within = kv.get("numberwithin").or(kv.get("parent")).cloned();
        let starred = kv.get("numbered").is_some_and(|v| v == "no");
        self.define_theorem(NewTheorem {
            env,
            display: &display,
            shared: shared.as_deref(),
            within: within.as_deref(),
            starred,
        });
        end
    }

    /// `\let\c@a\c@b`: counter `a` becomes an alias of `b`. Returns where scanning goes on.
    fn let_counter(&mut self, text: &str, j: usize) -> usize {
        static LET: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"^\s*\\c@([A-Za-z]+)\s*=?\s*\\c@([A-Za-z]+)").expect("valid")
        });
        if let Some(c) = LET.captures(&text[j..]) {
            self.counters.alias(&c[1], &c[2]);
            return j + c.get(0).map_or(0, |m| m.end());
        }
        j
    }

    /// `\newcommand`/`\renewcommand`/`\providecommand` at `i`: `\the…` templates go to the
    /// counters, macros wrapping references are remembered. Returns where scanning goes on.
    fn newcommand(&mut self, file: usize, text: &str, i: usize, after: usize) -> usize {
        // \newcommand{\name}[n][default]{body} or \newcommand\name[n]{body}
        let (name, k) = match arg(text, after) {
            Some((n, e)) => (n.trim().trim_start_matches('\\').to_string(), e),
            None => {
                let rest = &text[after..];
                let t = rest.trim_start();
                let off = after + rest.len() - t.len();
                if !t.starts_with('\\') {
                    return after;
                }
                let len = t[1..]
                    .find(|c: char| !c.is_ascii_alphabetic() && c != '@')
                    .unwrap_or(t.len() - 1);
                (t[1..1 + len].to_string(), off + 1 + len)
            }
        };
        let (params, k) = opt(text, k);
        let (optional, k) = opt(text, k);
        let Some((body, end)) = arg(text, k) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                format!("\\newcommand{{\\{name}}}: body not found (unbalanced braces?)"),
            );
            return k;
        };
        let params = params.and_then(|p| p.trim().parse().ok()).unwrap_or(0);
        if let Some(counter) = name.strip_prefix("the") {
            self.counters.set_template(counter, body);
        } else if let Some(counter) = name.strip_prefix("p@") {
            self.counters.set_ref_prefix(counter, body);
        }
        self.remember_macro(&name, params, optional, body);
        end
    }

    /// `\def\name#1#2{body}` at `i`: remembered like [`Latex::newcommand`]. Returns where
    /// scanning goes on.
    fn def(&mut self, file: usize, text: &str, i: usize, j: usize) -> usize {
        // \def\name#1#2{body}
        let rest = &text[j..];
        let t = rest.trim_start();
        let off = j + rest.len() - t.len();
        if !t.starts_with('\\') {
            return j;
        }
        let len = t[1..]
            .find(|c: char| !c.is_ascii_alphabetic() && c != '@')
            .unwrap_or(t.len() - 1);
        let name = t[1..1 + len].to_string();
        let k = off + 1 + len;
        let Some(brace) = text[k..].find('{').map(|b| k + b) else {
            return k;
        };
        let spec = &text[k..brace];
        if spec.len() > 40 || spec.contains('\n') && spec.trim().is_empty() && spec.len() > 2 {
            return k;
        }
        let params = spec.matches('#').count();
        let Some((body, end)) = arg(text, brace) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                format!("\\def\\{name}: body not found (unbalanced braces?)"),
            );
            return k;
        };
        if params == 0 {
            if let Some(counter) = name.strip_prefix("the") {
                self.counters.set_template(counter, body);
            } else if let Some(counter) = name.strip_prefix("p@") {
                self.counters.set_ref_prefix(counter, body);
            }
        }
        self.remember_macro(&name, params, None, body);
        end
    }

    /// Keeps a user macro whose body holds a reference, a label or `\newtheorem` (the rest are
    /// not followed).
    fn remember_macro(&mut self, name: &str, params: usize, optional: Option<String>, body: &str) {
        static INTERESTING: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\\(?:ref|eqref|autoref|cref|Cref|pageref|nameref|cite[a-zA-Z]*|newtheorem|newaliascnt|uses|label)(?-u:\b)").expect("valid")
        });
        if INTERESTING.is_match(body) && params <= 9 {
            self.macros.insert(
                name.to_string(),
                Macro {
                    params,
                    optional,
                    body: body.to_string(),
                },
            );
        } else {
            self.macros.remove(name);
        }
    }

    /// A call of a remembered macro at `i`: its arguments substituted into the body, whose
    /// references become mentions at the call and whose `\newtheorem`s are defined. Returns where
    /// scanning goes on.
    fn expand_macro(&mut self, at: At, name: &str) -> usize {
        let At {
            file,
            text,
            start: i,
            after: j,
        } = at;
        let Some(m) = self.macros.get(name).cloned() else {
            return j;
        };
        let mut args: Vec<String> = Vec::new();
        let mut k = j;
        for p in 0..m.params {
            if p == 0
                && let Some(default) = &m.optional
            {
                let (o, e) = opt(text, k);
                args.push(o.unwrap_or_else(|| default.clone()));
                k = e;
                continue;
            }
            match arg(text, k) {
                Some((a, e)) => {
                    args.push(a.to_string());
                    k = e;
                }
                None => break,
            }
        }
        let mut body = m.body.clone();
        for (n, a) in args.iter().enumerate().rev() {
            body = body.replace(&format!("#{}", n + 1), a);
        }
        // Theorem-defining macros (`\defthm{lem}{Lemma}{Lemmas}`) run in the preamble.
        static NEWTHM: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\\newtheorem(\*?)\{([^}]*)\}(?:\[([^\]]*)\])?\{([^}]*)\}(?:\[([^\]]*)\])?")
                .expect("valid")
        });
        static ALIAS: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\\newaliascnt\{([^}]*)\}\{([^}]*)\}").expect("valid"));
        for c in ALIAS.captures_iter(&body) {
            self.counters.alias(&c[1], &c[2]);
        }
        for c in NEWTHM.captures_iter(&body) {
            let starred = !c[1].is_empty();
            let display = clean_title(&c[4]);
            self.define_theorem(NewTheorem {
                env: c[2].trim(),
                display: &display,
                shared: c.get(3).map(|m| m.as_str()),
                within: c.get(5).map(|m| m.as_str()),
                starred,
            });
        }
        static LABEL: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\\label\{([^}]*)\}").expect("valid"));
        let labels: Vec<String> = LABEL
            .captures_iter(&body)
            .map(|c| c[1].trim().to_string())
            .collect();
        for l in labels {
            self.attach_label(file, i, &l);
        }
        let refs = refs_in(&body);
        if self.in_body && !refs.is_empty() {
            self.mark_text(file, i);
            let unit = self.current_unit();
            for (kind, key) in refs {
                self.b.mention(
                    unit,
                    Span::new(file, i, k),
                    if kind == MentionKind::Cite {
                        kind
                    } else {
                        MentionKind::Macro
                    },
                    key,
                );
            }
        }
        k
    }

    // ---------- references ----------

    /// A reference command (`\ref`, `\eqref`, `\cref` lists, `\uses` …) at `i`: one mention per
    /// key, at the key's own bytes. Returns where scanning goes on.
    fn reference(&mut self, at: At, kind: MentionKind, list: bool) -> usize {
        let At {
            file,
            text,
            start: i,
            after,
        } = at;
        let o = skip_opt(text, after);
        let Some((keys, end)) = key_arg(text, o) else {
            self.b.diag(
                file,
                i,
                Severity::Warning,
                format!("\\{} without an argument", &text[i + 1..after]),
            );
            return after;
        };
        // \crefrange{a}{b} takes two labels.
        let mut end = end;
        let mut all = vec![(keys.to_string(), o)];
        if text[i..after].contains("range")
            && let Some((k2, e2)) = key_arg(text, end)
        {
            all.push((k2.to_string(), end));
            end = e2;
        }
        if !self.in_body {
            return end;
        }
        if kind != MentionKind::Uses {
            self.mark_text(file, i);
        }
        let unit = self.current_unit();
        let single = all.len() == 1 && (!list || !keys.contains(','));
        for (keys, group_start) in all {
            let content_start = text[group_start..]
                .find('{')
                .map_or(group_start, |b| group_start + b + 1);
            for (s, e, key) in split_keys(&keys, list) {
                let key = key.trim();
                if key.is_empty() || key.contains('#') {
                    continue;
                }
                // A single key takes the whole command as its span; keys of a list take their own bytes.
                let (ms, me) = if single {
                    (i, end)
                } else {
                    (content_start + s, content_start + e)
                };
                self.b.mention(
                    unit,
                    Span::new(file, ms, me),
                    kind,
                    TargetKey::Label(key.to_string()),
                );
            }
        }
        end
    }

    /// A citation command at `i`: one mention per key. Returns where scanning goes on.
    fn cite(&mut self, file: usize, text: &str, i: usize, after: usize) -> usize {
        let mut k = skip_opt(text, after);
        k = skip_opt(text, k);
        // "\cite[Lemma 2.12]{x}" locates inside another work: not a prose mention of ours.
        if let Some(skips) = self.skipped.get_mut(file) {
            skips.push((after, k));
        }
        let Some((keys, end)) = key_arg(text, k) else {
            return after;
        };
        if !self.in_body {
            return end;
        }
        self.mark_text(file, i);
        let unit = self.current_unit();
        let content_start = text[k..].find('{').map_or(k, |b| k + b + 1);
        let parts = split_keys(keys, true);
        let single = parts.len() == 1;
        for (s, e, key) in parts {
            let key = key.trim();
            if key.is_empty() || key == "*" || key.contains('#') {
                continue;
            }
            let (ms, me) = if single {
                (i, end)
            } else {
                (content_start + s, content_start + e)
            };
            self.b.mention(
                unit,
                Span::new(file, ms, me),
                MentionKind::Cite,
                TargetKey::Citation(key.to_string()),
            );
        }
        end
    }

    /// Reference commands inside an argument already consumed (titles, captions, `\[ \]`).
    fn scan_refs_in(&mut self, file: usize, text: &str, start: usize, end: usize) {
        if !self.in_body || start >= end || text.get(start..end).is_none() {
            return;
        }
        static CMD: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\\(ref|eqref|autoref|cref|Cref|pageref|nameref|cite[a-zA-Z]*|citep|citet|label|uses)(?-u:\b)\*?").expect("valid")
        });
        let slice = &text[start..end];
        let found: Vec<(usize, usize, String)> = CMD
            .captures_iter(slice)
            .map(|c| {
                (
                    start + c.get(0).map_or(0, |m| m.start()),
                    start + c.get(0).map_or(0, |m| m.end()),
                    c[1].to_string(),
                )
            })
            .collect();
        for (s, e, name) in found {
            let _ = match name.as_str() {
                "label" => self.label(file, text, s, e),
                "eqref" => self.reference(At::new(file, text, s, e), MentionKind::Eqref, false),
                "cref" | "Cref" | "uses" => self.reference(
                    At::new(file, text, s, e),
                    if name == "uses" {
                        MentionKind::Uses
                    } else {
                        MentionKind::Cref
                    },
                    true,
                ),
                n if is_cite(n) => self.cite(file, text, s, e),
                _ => self.reference(At::new(file, text, s, e), MentionKind::Ref, false),
            };
        }
    }

    /// `\verb|…|` (or `\lstinline`) at `i`: skipped as code. Returns where scanning goes on.
    fn verb(&mut self, file: usize, text: &str, i: usize, after: usize) -> usize {
        self.mark_text(file, i);
        let k = skip_opt(text, after);
        let Some(delim) = text[k..].chars().next() else {
            return text.len();
        };
        if delim == '{' {
            let end = arg(text, k).map_or(text.len(), |a| a.1);
            self.skipped[file].push((k, end));
            self.extend_text(end);
            return end;
        }
        let start = k + delim.len_utf8();
        let end = text[start..].find(delim).map_or_else(
            || text[start..].find('\n').map_or(text.len(), |e| start + e),
            |e| start + e + delim.len_utf8(),
        );
        self.skipped[file].push((k, end));
        self.extend_text(end);
        end
    }

    // ---------- end of input ----------

    /// After the last file: environments left open are diagnostics, open units end at the end
    /// of their file, bibliographies are read.
    fn finish_scan(&mut self) {
        self.close_paragraph();
        if let Some(&(file, at)) = self.open_braces.first() {
            let open = self.open_braces.len() + self.open_braces_beyond;
            let others = match open - 1 {
                0 => String::new(),
                n => format!(" ({n} more opened after it are not closed either)"),
            };
            self.b.diag(
                file,
                at,
                Severity::Warning,
                format!("this `{{` is never closed{others}"),
            );
        }
        for env in std::mem::take(&mut self.envs) {
            if env.name != "document" {
                self.b.diag(
                    env.file,
                    env.start,
                    Severity::Error,
                    format!("\\begin{{{}}} is never closed", env.name),
                );
            }
            if let Some(u) = env.unit {
                let f = self.b.doc.units[u].file;
                let len = self.b.texts[f].len();
                self.b.doc.units[u].end_byte = len;
            }
        }
        for (_, u) in std::mem::take(&mut self.sections) {
            let f = self.b.doc.units[u].file;
            let len = self.b.texts[f].len();
            self.b.doc.units[u].end_byte = self.b.doc.units[u].end_byte.max(len);
        }
        self.read_bibliographies();
        let skipped = std::mem::take(&mut self.skipped);
        self.b.prose_mentions(&skipped);
        self.b.doc.externals = std::mem::take(&mut self.externals);
        let mut verbatim: Vec<String> = self.verbatim.keys().cloned().collect();
        verbatim.sort();
        self.b.doc.verbatim_envs = verbatim;
    }

    /// Entries of the `.bib` files named by `\bibliography` or `\addbibresource`, as
    /// bibliography-entry units.
    fn read_bibliographies(&mut self) {
        static TITLE: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r#"(?i)(?-u:\b)title\s*=\s*[{"]"#).expect("valid"));
        let files = std::mem::take(&mut self.bib_files);
        if files.is_empty() {
            return;
        }
        let section = self
            .b
            .unit(UnitKind::Section, "bibliography", 1, 0, 0, 0, 0);
        self.b.doc.units[section].title = Some("References".into());
        self.b.set_prefix(section, "bibliography");
        for path in files {
            let source = match self.b.inputs.read(&path, Reading::Latex(self.encoding)) {
                Ok(t) => t,
                Err(e) => {
                    self.b.diag(
                        0,
                        0,
                        Severity::Warning,
                        format!("bibliography {}: {e}", path.display()),
                    );
                    continue;
                }
            };
            let text = source.decoded.text.clone();
            let file = self.b.add_source(&path.display().to_string(), source);
            for (start, open, kind, key) in bib_entries(&text) {
                if matches!(kind.as_str(), "comment" | "string" | "preamble") {
                    continue;
                }
                let whole = start..open + 1;
                let end = arg(&text, open).map_or(whole.end, |a| a.1);
                let unit =
                    self.b
                        .unit(UnitKind::Bibitem, &kind, 0, section, file, whole.start, end);
                let entry = &text[whole.start..end];
                let title = TITLE.find(entry).and_then(|m| {
                    let at = m.end() - 1;
                    if entry.as_bytes()[at] == b'{' {
                        arg(entry, at).map(|a| clean_title(a.0))
                    } else {
                        entry[at + 1..]
                            .find('"')
                            .map(|e| clean_title(&entry[at + 1..at + 1 + e]))
                    }
                });
                let u = &mut self.b.doc.units[unit];
                u.id = format!("bib:{key}");
                u.label = Some(key);
                u.title = title;
            }
        }
    }
}

fn finish_math_line(
    math: &mut MathState,
    counters: &mut Counters,
    sub: &mut Option<(String, u32)>,
) {
    let line = std::mem::replace(
        &mut math.line,
        MathLine {
            tag: None,
            notag: false,
            labels: vec![],
        },
    );
    let number = if let Some(t) = line.tag {
        Some(t)
    } else if line.notag || math.starred || (!math.per_line && !math.numbers.is_empty()) {
        None
    } else if let Some((base, n)) = sub.as_mut() {
        *n += 1;
        Some(format!("{base}{}", (b'a' + ((*n - 1) % 26) as u8) as char))
    } else {
        counters.step("equation");
        Some(counters.reference("equation"))
    };
    if let Some(n) = &number {
        math.numbers.push(n.clone());
    }
    for (l, at) in line.labels {
        math.labels.push((
            l,
            number.clone().or_else(|| math.numbers.last().cloned()),
            at,
        ));
    }
}

/// `(start of @, position of the opening brace, lower-case type, key)` of each `@type{key,` entry of a `.bib` file.
fn bib_entries(text: &str) -> Vec<(usize, usize, String, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset + (line.len() - line.trim_start_matches([' ', '\t']).len());
        offset += line.len();
        let Some(rest) = text[start..].strip_prefix('@') else {
            continue;
        };
        let kind_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let after_kind = start + 1 + kind_len;
        let Some(open) = text[after_kind..]
            .find(|c: char| !c.is_whitespace())
            .map(|k| after_kind + k)
        else {
            continue;
        };
        if !matches!(text.as_bytes()[open], b'{' | b'(') || kind_len == 0 {
            continue;
        }
        let body = &text[open + 1..];
        let key_start = body.len() - body.trim_start().len();
        let key_len = body[key_start..]
            .find(|c: char| c == ',' || c.is_whitespace() || "{}()".contains(c))
            .unwrap_or(0);
        let key = &body[key_start..key_start + key_len];
        if key.is_empty() || !body[key_start + key_len..].trim_start().starts_with(',') {
            continue;
        }
        out.push((
            start,
            open,
            rest[..kind_len].to_ascii_lowercase(),
            key.to_string(),
        ));
    }
    out
}

/// The counters of `enumerate` levels 1–4.
const ENUM_COUNTERS: [&str; 4] = ["enumi", "enumii", "enumiii", "enumiv"];

fn theorem_prefix(display: &str) -> String {
    match display.to_lowercase().as_str() {
        "theorem" => "thm".into(),
        "lemma" => "lem".into(),
        "corollary" => "cor".into(),
        "proposition" => "prop".into(),
        "definition" => "def".into(),
        "remark" => "rem".into(),
        "example" => "ex".into(),
        "exercise" => "exer".into(),
        "conjecture" => "conj".into(),
        "axiom" => "ax".into(),
        other => ledger_core::slug(other),
    }
}

/// The reference commands in a macro expansion, with the label each names.
fn refs_in(body: &str) -> Vec<(MentionKind, TargetKey)> {
    static REF: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\\(ref|eqref|autoref|cref|Cref|pageref|nameref|uses|cite[a-zA-Z]*)\*?(?:\[[^\]]*\])*\{([^}]*)\}").expect("valid")
    });
    let mut out = Vec::new();
    for c in REF.captures_iter(body) {
        for key in c[2].split(',') {
            let key = key.trim();
            if key.is_empty() || key.contains('#') {
                continue;
            }
            if c[1].starts_with("cite") {
                out.push((MentionKind::Cite, TargetKey::Citation(key.into())));
            } else {
                out.push((MentionKind::Macro, TargetKey::Label(key.into())));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bib_entries_find_type_and_key() {
        let bib = "@article{knuth84,\n title={Literate}}\n  @Book( b2 ,\n}\n@comment{x}\n@misc{\n  spaced,\n}\n@string{s = \"v\"}\n";
        let got: Vec<(String, String)> = bib_entries(bib)
            .into_iter()
            .map(|(_, _, k, key)| (k, key))
            .collect();
        assert_eq!(
            got,
            [
                ("article".to_string(), "knuth84".to_string()),
                ("book".into(), "b2".into()),
                ("misc".into(), "spaced".into())
            ]
        );
    }
}
