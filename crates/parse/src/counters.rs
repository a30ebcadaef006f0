//! LaTeX counters: values, reset lists (`[section]`, `\numberwithin`), aliases
//! (`\newaliascnt`, `\let\c@a\c@b`) and the printed form (`\thesection`).

// Fx hashing: keys are short strings and indices from our own parse, not attacker-chosen.
use rustc_hash::FxHashMap as HashMap;

/// How a counter prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Arabic,
    Roman,
    Alph,
}

#[derive(Debug, Clone)]
struct Counter {
    value: i64,
    within: Option<String>,
    style: Style,
}

/// The counters of one LaTeX document.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    counters: HashMap<String, Counter>,
    aliases: HashMap<String, String>,
    /// `\renewcommand{\thesection}{S\arabic{section}}`: the printed form as a template.
    templates: HashMap<String, String>,
    /// `\p@subsection`: what `\ref` prints before `\thesubsection` (REVTeX: `\thesection`).
    ref_prefixes: HashMap<String, String>,
}

impl Counters {
    /// The standard counters of a class with chapters (`book`, `report`) or without (`article`, `amsart`).
    pub fn for_class(with_chapters: bool) -> Self {
        let mut c = Counters::default();
        c.define("part", None);
        c.set_style("part", Style::Roman);
        if with_chapters {
            c.define("chapter", None);
            c.define("section", Some("chapter"));
        } else {
            c.define("section", None);
        }
        c.define("subsection", Some("section"));
        c.define("subsubsection", Some("subsection"));
        c.define("paragraph", Some("subsubsection"));
        c.define("subparagraph", Some("paragraph"));
        let float_within = with_chapters.then_some("chapter");
        for name in ["figure", "table", "equation"] {
            c.define(name, float_within);
        }
        c.define("lstlisting", float_within);
        c.define("listing", float_within);
        c.define("algorithm", None);
        c.define("footnote", float_within);
        c.define("enumi", None);
        c.define("enumii", Some("enumi"));
        c.define("enumiii", Some("enumii"));
        c.define("enumiv", Some("enumiii"));
        c.set_style("enumii", Style::Alph);
        c.templates.insert("enumii".into(), "\\alph{enumii}".into());
        c.set_style("enumiii", Style::Roman);
        c.set_style("enumiv", Style::Alph);
        c
    }

    /// `\renewcommand{\thename}{template}`: how the counter prints from now on.
    pub fn set_template(&mut self, name: &str, template: &str) {
        if self.counters.contains_key(name) || self.aliases.contains_key(name) {
            self.templates
                .insert(name.to_string(), template.to_string());
        }
    }

    /// `\p@name`: what a reference to the counter prints before its `\the…` form.
    pub fn set_ref_prefix(&mut self, name: &str, template: &str) {
        self.ref_prefixes
            .insert(name.to_string(), template.to_string());
    }

    /// Formats a counter value like `\arabic`, `\roman`, `\alph` (`style` is the command name).
    pub fn format(&self, value: i64, style: &str) -> String {
        match style {
            "roman" => roman(value).to_lowercase(),
            "Roman" => roman(value),
            "alph" => format_value(value, Style::Alph).to_lowercase(),
            "Alph" => format_value(value, Style::Alph),
            _ => value.to_string(),
        }
    }

    /// Defines (or redefines) a counter, reset by `within` when given.
    pub fn define(&mut self, name: &str, within: Option<&str>) {
        self.aliases.remove(name);
        self.counters.insert(
            name.into(),
            Counter {
                value: 0,
                within: within.map(Into::into),
                style: Style::Arabic,
            },
        );
    }

    pub fn exists(&self, name: &str) -> bool {
        self.counters.contains_key(self.canonical(name))
    }

    /// Makes `name` share `target`'s value (and printed form).
    pub fn alias(&mut self, name: &str, target: &str) {
        let target = self.canonical(target).to_string();
        if target != name {
            self.counters.remove(name);
            self.aliases.insert(name.into(), target);
        }
    }

    /// Changes the counter that resets `name` and prints before it (`\numberwithin`,
    /// `\counterwithin`; `None` for `\counterwithout`); a template the class gave it is dropped,
    /// as those commands redefine `\the…`.
    pub fn set_within(&mut self, name: &str, within: Option<&str>) {
        let key = self.canonical(name).to_string();
        self.templates.remove(&key);
        if let Some(c) = self.counters.get_mut(&key) {
            c.within = within.map(Into::into);
        } else {
            self.define(&key, within);
        }
    }

    pub fn set_style(&mut self, name: &str, style: Style) {
        let key = self.canonical(name).to_string();
        if let Some(c) = self.counters.get_mut(&key) {
            c.style = style;
        }
    }

    pub fn set_value(&mut self, name: &str, value: i64) {
        let key = self.canonical(name).to_string();
        if let Some(c) = self.counters.get_mut(&key) {
            c.value = value;
        }
    }

    fn canonical<'a>(&'a self, name: &'a str) -> &'a str {
        let mut n = name;
        for _ in 0..16 {
            match self.aliases.get(n) {
                Some(t) => n = t,
                None => break,
            }
        }
        n
    }

    /// `\refstepcounter`: increments and resets every counter numbered within it, transitively.
    pub fn step(&mut self, name: &str) {
        let key = self.canonical(name).to_string();
        if !self.counters.contains_key(&key) {
            self.define(&key, None);
        }
        if let Some(c) = self.counters.get_mut(&key) {
            c.value += 1;
        }
        let mut queue = vec![key];
        let mut seen = 0;
        while let Some(parent) = queue.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            for (name, c) in self.counters.iter_mut() {
                if c.within.as_deref() == Some(parent.as_str()) && name != &parent {
                    c.value = 0;
                    queue.push(name.clone());
                }
            }
        }
    }

    /// `\thename`: the printed form, prefixed by the printed form of the counter it is numbered within.
    pub fn the(&self, name: &str) -> String {
        self.the_inner(self.canonical(name), 0)
    }

    /// What `\ref` prints for a label set after the counter stepped: `\p@name\thename`.
    pub fn reference(&self, name: &str) -> String {
        let key = self.canonical(name);
        let the = self.the_inner(key, 0);
        match self.ref_prefixes.get(key) {
            Some(p) => format!("{}{the}", self.expand(p, 1)),
            None => the,
        }
    }

    fn the_inner(&self, name: &str, depth: usize) -> String {
        if let Some(t) = self.templates.get(name).filter(|_| depth < 8) {
            return self.expand(t, depth + 1);
        }
        let Some(c) = self.counters.get(name) else {
            return String::new();
        };
        let own = format_value(c.value, c.style);
        match &c.within {
            Some(w) if depth < 8 => {
                let prefix = self.the_inner(self.canonical(w), depth + 1);
                if prefix.is_empty() {
                    own
                } else {
                    format!("{prefix}.{own}")
                }
            }
            _ => own,
        }
    }
}

impl Counters {
    /// Expands `\arabic{c}`, `\roman{c}`, `\alph{c}`, `\thec` … in a template; other commands and braces are dropped.
    fn expand(&self, template: &str, depth: usize) -> String {
        static CMD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"\\(arabic|roman|Roman|alph|Alph)\s*\{([A-Za-z@]+)\}|\\the([A-Za-z@]+)|\\[A-Za-z@]+\s*|[{}~]").expect("valid")
        });
        CMD.replace_all(template, |c: &regex::Captures| {
            if let (Some(style), Some(counter)) = (c.get(1), c.get(2)) {
                self.format(self.value(counter.as_str()), style.as_str())
            } else if let Some(counter) = c.get(3) {
                if self.exists(counter.as_str()) {
                    self.the_inner(self.canonical(counter.as_str()), depth)
                } else {
                    String::new()
                }
            } else {
                String::new()
            }
        })
        .trim()
        .to_string()
    }

    /// The current value of a counter.
    pub fn value(&self, name: &str) -> i64 {
        self.counters
            .get(self.canonical(name))
            .map_or(0, |c| c.value)
    }
}

fn format_value(v: i64, style: Style) -> String {
    match style {
        Style::Arabic => v.to_string(),
        Style::Alph => {
            if (1..=26).contains(&v) {
                ((b'A' + (v - 1) as u8) as char).to_string()
            } else {
                v.to_string()
            }
        }
        Style::Roman => roman(v),
    }
}

fn roman(mut v: i64) -> String {
    if v <= 0 || v > 3999 {
        return v.to_string();
    }
    let table = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut s = String::new();
    for (n, r) in table {
        while v >= n {
            s.push_str(r);
            v -= n;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn book_numbering_and_resets() {
        let mut c = Counters::for_class(true);
        c.define("thm", Some("section"));
        c.alias("lem", "thm");
        c.alias("equation", "thm");
        c.set_within("equation", Some("section"));
        c.step("chapter");
        c.step("section");
        c.step("thm");
        c.step("lem");
        assert_eq!(c.the("lem"), "1.1.2");
        c.step("equation");
        assert_eq!(c.the("equation"), "1.1.3");
        c.step("chapter");
        c.step("section");
        c.step("thm");
        assert_eq!(c.the("thm"), "2.1.1");
        assert_eq!(c.the("figure"), "2.0");
    }

    #[test]
    fn appendix_and_roman() {
        let mut c = Counters::for_class(false);
        c.step("part");
        c.step("part");
        c.step("part");
        c.step("part");
        assert_eq!(c.the("part"), "IV");
        c.set_value("section", 0);
        c.set_style("section", Style::Alph);
        c.step("section");
        c.step("subsection");
        assert_eq!(c.the("subsection"), "A.1");
    }

    #[test]
    fn templates() {
        let mut c = Counters::for_class(false);
        c.set_template("section", "S\\arabic{section}");
        c.set_template("subsection", "\\thesection.\\arabic{subsection}");
        c.set_template("enumi", "(\\roman{enumi})");
        c.step("section");
        c.step("subsection");
        c.step("enumi");
        c.step("enumi");
        assert_eq!(c.the("section"), "S1");
        assert_eq!(c.the("subsection"), "S1.1");
        assert_eq!(c.the("enumi"), "(ii)");
    }
}
