//! Lexing helpers of the LaTeX scanner, shared with `regions`: brace and bracket arguments,
//! key lists and key-value options, and which environments and commands are verbatim, math,
//! citations or carry no prose. Pure functions of the text; no scanner state.

use regex::Regex;
// Fx hashing: keys are short strings from our own parse, not attacker-chosen.
use rustc_hash::FxHashMap as HashMap;
use std::sync::LazyLock;

/// Longest argument (in bytes) the scanner looks through for a closing brace.
const MAX_ARG: usize = 64 * 1024;
/// Deepest brace nesting inside an argument: a scan that goes deeper gives up. With the length
/// bound this keeps unclosed arguments linear: the scans alive at any byte started at unclosed
/// groups nested in each other, so at most this many failed scans look at any byte.
const MAX_DEPTH: usize = 64;
/// Longest list of keys (labels, citations) looked through for a closing brace.
const MAX_KEYS: usize = 4 * 1024;
/// Deepest brace nesting inside a list of keys (keys do not nest; `\ref{\ref{\ref{…` does).
const MAX_KEY_DEPTH: usize = 8;

/// Verbatim-like environments (starred or not): their content is raw, not LaTeX.
pub(crate) fn verbatim_env(name: &str) -> bool {
    matches!(
        name.trim_end_matches('*'),
        "verbatim"
            | "Verbatim"
            | "lstlisting"
            | "minted"
            | "comment"
            | "BVerbatim"
            | "LVerbatim"
            | "alltt"
            | "code"
            | "lean"
            | "filecontents"
    )
}

/// `Some((per_line, numbered))` for display-math environments.
pub(crate) fn math_env(name: &str) -> Option<(bool, bool)> {
    match name {
        "equation" | "multline" | "dmath" => Some((false, true)),
        "align" | "gather" | "flalign" | "alignat" | "eqnarray" | "xalignat" => Some((true, true)),
        "displaymath" | "math" => Some((false, false)),
        _ => None,
    }
}

/// Whether a command is a citation (`\cite`, `\citep`, `\parencite`, `\textcites` …).
pub(crate) fn is_cite(name: &str) -> bool {
    // Most commands are not citations: skip the regex for them.
    if !name.contains("cite") && !name.contains("Cite") {
        return false;
    }
    static CITE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[Cc]ite[a-zA-Z]*|[Pp]arencites?|[Tt]extcites?|[Aa]utocites?|[Ff]ootcites?(?:text)?|[Ss]martcites?|[Ss]upercites?|fullcite|footfullcite)$").expect("valid")
    });
    CITE.is_match(name)
}

/// Commands whose arguments are not prose, with the number of brace arguments each takes
/// (after its optional ones): they open no paragraph and their arguments are skipped.
pub(crate) fn non_text_args(name: &str) -> Option<usize> {
    Some(match name {
        "makeatletter" | "makeatother" | "maketitle" | "tableofcontents" | "listoffigures"
        | "listoftables" | "clearpage" | "cleardoublepage" | "newpage" | "centering"
        | "noindent" | "medskip" | "bigskip" | "smallskip" | "leanok" | "mathlibok"
        | "notready" | "printindex" | "printbibliography" | "newif" => 0,
        "usepackage" | "RequirePackage" | "bibliographystyle" | "vspace" | "hspace"
        | "pagestyle" | "thispagestyle" | "includegraphics" | "theoremstyle" | "newlength"
        | "hypersetup" | "title" | "author" | "date" | "address" | "email" | "keywords"
        | "subjclass" | "thanks" | "graphicspath" | "lstset" | "index" | "nocite"
        | "selectlanguage" | "setdefaultlanguage" | "lean" | "discussion" | "proves"
        | "markright" => 1,
        "setlength"
        | "addtolength"
        | "crefformat"
        | "Crefformat"
        | "DeclareMathOperator"
        | "markboth"
        | "lstdefinestyle"
        | "lstdefinelanguage" => 2,
        "crefname" | "Crefname" | "addcontentsline" | "definecolor" => 3,
        _ => return None,
    })
}

/// Splits `a, b ,c` into trimmed keys with their byte offsets in the argument.
pub(crate) fn split_keys(keys: &str, list: bool) -> Vec<(usize, usize, &str)> {
    if !list {
        let t = keys.trim();
        let s = keys.len() - keys.trim_start().len();
        return vec![(s, s + t.len(), t)];
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for part in keys.split(',') {
        let lead = part.len() - part.trim_start().len();
        let t = part.trim();
        out.push((offset + lead, offset + lead + t.len(), t));
        offset += part.len() + 1;
    }
    out
}

/// The brace group starting at `i` (after optional whitespace): its content and the index after it.
pub(crate) fn arg(text: &str, i: usize) -> Option<(&str, usize)> {
    group(text, i, MAX_ARG, MAX_DEPTH)
}

/// The brace group of keys (`\ref`, `\cite`, `\label`) starting at `i`, as [`arg`] finds it,
/// within the tighter bounds of a key list.
pub(crate) fn key_arg(text: &str, i: usize) -> Option<(&str, usize)> {
    group(text, i, MAX_KEYS, MAX_KEY_DEPTH)
}

/// The brace group starting at `i` (after optional whitespace), at most `max_len` bytes long
/// and `max_depth` braces deep.
fn group(text: &str, i: usize, max_len: usize, max_depth: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    let mut k = i;
    while k < bytes.len() && matches!(bytes[k], b' ' | b'\t' | b'\r' | b'\n') {
        k += 1;
    }
    if k >= bytes.len() || bytes[k] != b'{' {
        return None;
    }
    let start = k + 1;
    let mut depth = 1;
    let mut j = start;
    let limit = (start + max_len).min(bytes.len());
    while j < limit {
        match bytes[j] {
            b'\\' => j += 1,
            b'{' => {
                depth += 1;
                if depth > max_depth {
                    return None;
                }
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&text[start..j], j + 1));
                }
            }
            b'%' => {
                j = memchr::memchr(b'\n', &bytes[j..limit]).map_or(limit, |e| j + e);
            }
            _ => {}
        }
        j += 1;
    }
    None
}

/// The optional `[...]` group at `i` (after optional spaces), and the index after it.
pub(crate) fn opt(text: &str, i: usize) -> (Option<String>, usize) {
    let bytes = text.as_bytes();
    let mut k = i;
    while k < bytes.len() && matches!(bytes[k], b' ' | b'\t') {
        k += 1;
    }
    if k >= bytes.len() || bytes[k] != b'[' {
        return (None, i);
    }
    let mut depth = 0;
    let mut j = k + 1;
    let limit = (k + 1 + MAX_ARG).min(bytes.len());
    while j < limit {
        match bytes[j] {
            b'\\' => j += 1,
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b']' if depth == 0 => return (Some(text[k + 1..j].to_string()), j + 1),
            _ => {}
        }
        j += 1;
    }
    (None, i)
}

/// The index after the optional argument at `i`, if any.
pub(crate) fn skip_opt(text: &str, i: usize) -> usize {
    opt(text, i).1
}

pub(crate) fn find_from(text: &str, from: usize, pat: &str) -> Option<usize> {
    text.get(from..)?.find(pat).map(|k| from + k)
}

/// `key=value, key={value, with commas}` → map.
pub(crate) fn keyvals(opts: &str) -> HashMap<String, String> {
    let mut out = HashMap::default();
    let mut depth = 0;
    let mut start = 0;
    let bytes = opts.as_bytes();
    let mut parts = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b',' if depth == 0 => {
                parts.push(&opts[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&opts[start..]);
    for p in parts {
        if let Some((k, v)) = p.split_once('=') {
            let v = v.trim();
            let v = v
                .strip_prefix('{')
                .and_then(|v| v.strip_suffix('}'))
                .unwrap_or(v);
            out.insert(k.trim().to_string(), v.to_string());
        }
    }
    out
}

/// Collapses whitespace and drops `\label{…}` from a title or caption.
pub(crate) fn clean_title(t: &str) -> String {
    static LABEL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\\label\{[^}]*\}").expect("valid"));
    let t = LABEL.replace_all(t, "");
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
