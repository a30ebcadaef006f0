//! Settings resolved once: built-in defaults (`configs/default.toml`), then the project's
//! `ledger.toml` (found upward from the inputs), then a file (`--config`), then
//! `LEDGER_<SECTION>_<KEY>` environment variables, then a command's flags ([`Overrides`]).
//! [`resolve`] is the one place where these layers become a typed [`Config`].

use crate::config::{
    Config, DEFAULT_TOML, EmbedderKind, JudgeKind, RelatedScope, SqlFormat, SummarizerKind,
};
use crate::index::BuiltWith;
use crate::stage::Settings;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// The project configuration's file name.
pub const PROJECT_FILE: &str = "ledger.toml";

/// Settings a project's `ledger.toml` may not make: it travels with the documents, which must
/// not choose endpoints, credentials, trusted certificates, brokers, storage or reads outside
/// their folders. They come from `--config`, the environment or flags.
const NOT_FROM_A_PROJECT: [&str; 9] = [
    "index.allow_outside_root",
    "embed.url",
    "embed.api_key_env",
    "embed.model_dir",
    "llm.url",
    "llm.api_key_env",
    "queue.",
    "store.",
    "tls.",
];

/// Resource settings a project's `ledger.toml` may ask for only up to a bound: a larger value is
/// capped, with a warning, so that documents cannot make a nightly job exhaust its machine or
/// flood an endpoint. `--config`, the environment and flags may set more.
const PROJECT_BOUNDS: [(&str, Bound); 12] = [
    ("index.jobs", Bound::Cores),
    ("related.k", Bound::At(100)),
    ("depends.window", Bound::At(64)),
    ("embed.batch", Bound::At(256)),
    ("embed.concurrency", Bound::At(8)),
    ("embed.timeout_secs", Bound::At(600)),
    ("embed.max_retries", Bound::At(10)),
    ("llm.concurrency", Bound::At(8)),
    ("llm.timeout_secs", Bound::At(600)),
    ("llm.max_retries", Bound::At(10)),
    ("sql.timeout_secs", Bound::Default),
    ("sql.max_recursion", Bound::Default),
];

/// The most a project file may ask of a setting.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// This number.
    At(i64),
    /// The machine's cores.
    Cores,
    /// The built-in default (`configs/default.toml`): a project may lower it, not raise it.
    Default,
}

/// What a command's flags say, over the configuration: `None`, `false` and empty leave the
/// setting as configured.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Errors only: no progress bar.
    pub quiet: bool,
    /// `index.jobs`.
    pub jobs: Option<usize>,
    /// `index.count_tokens` off.
    pub no_tokens: bool,
    /// `index.progress` off.
    pub no_progress: bool,
    /// `index.allow_outside_root` on.
    pub allow_outside_root: bool,
    /// Added to `index.exclude`.
    pub exclude: Vec<String>,
    /// `index.wait_for_lock` off.
    pub no_wait: bool,
    /// `index.allow_partial` on.
    pub allow_partial: bool,
    /// `related.enabled` off.
    pub no_related: bool,
    /// `depends.enabled` off.
    pub no_depends: bool,
    /// `depends.judge`.
    pub judge: Option<JudgeKind>,
    /// `depends.threshold`.
    pub threshold: Option<f64>,
    /// `depends.window`.
    pub window: Option<usize>,
    /// `embed.embedder`.
    pub embedder: Option<EmbedderKind>,
    /// `embed.summarizer`.
    pub summarizer: Option<SummarizerKind>,
    /// `related.theta`.
    pub theta: Option<f64>,
    /// `related.scope`.
    pub related_scope: Option<RelatedScope>,
    /// `related.k`.
    pub related_k: Option<usize>,
    /// `queue.amqp`.
    pub amqp: Option<String>,
    /// `queue.max_attempts`.
    pub max_attempts: Option<u32>,
    /// `queue.prefetch`.
    pub prefetch: Option<u16>,
    /// Added to `queue.worker_roots`.
    pub worker_roots: Vec<String>,
    /// `sql.format`.
    pub sql_format: Option<SqlFormat>,
    /// `sql.memory_limit`.
    pub sql_memory_limit: Option<String>,
    /// `sql.timeout_secs`.
    pub sql_timeout_secs: Option<u64>,
    /// `sql.max_recursion`.
    pub sql_max_recursion: Option<usize>,
    /// `retrieve.budget`.
    pub budget: Option<usize>,
    /// `retrieve.impact_depth`.
    pub impact_depth: Option<usize>,
    /// `verify.fail_on_ambiguous` on.
    pub fail_on_ambiguous: bool,
    /// `verify.show_diagnostics` off.
    pub no_diagnostics: bool,
}

impl Overrides {
    /// "As the graph was built": its judge, summarizer and embedder (none where it has no
    /// DEPENDS or RELATED edges), without a progress bar. A written edit updates the graph so.
    pub fn as_built(built: &BuiltWith) -> Overrides {
        Overrides {
            no_progress: true,
            no_depends: built.judge.is_none(),
            no_related: built.embedder.is_none(),
            judge: built.judge,
            threshold: built.threshold,
            embedder: built.embedder,
            summarizer: built.summarizer,
            ..Overrides::default()
        }
    }

    /// `config` with these flags applied.
    pub fn apply(&self, mut config: Config) -> Config {
        let c = &mut config;
        c.index.progress &= !(self.quiet || self.no_progress);
        c.index.jobs = self.jobs.unwrap_or(c.index.jobs);
        c.index.count_tokens &= !self.no_tokens;
        c.index.allow_outside_root |= self.allow_outside_root;
        c.index.exclude.extend(self.exclude.iter().cloned());
        c.index.wait_for_lock &= !self.no_wait;
        c.index.allow_partial |= self.allow_partial;
        c.related.enabled &= !self.no_related;
        c.related.theta = self.theta.unwrap_or(c.related.theta);
        c.related.scope = self.related_scope.unwrap_or(c.related.scope);
        c.related.k = self.related_k.unwrap_or(c.related.k);
        c.depends.enabled &= !self.no_depends;
        c.depends.judge = self.judge.unwrap_or(c.depends.judge);
        c.depends.threshold = self.threshold.unwrap_or(c.depends.threshold);
        c.depends.window = self.window.unwrap_or(c.depends.window);
        c.embed.embedder = self.embedder.unwrap_or(c.embed.embedder);
        c.embed.summarizer = self.summarizer.unwrap_or(c.embed.summarizer);
        if let Some(amqp) = &self.amqp {
            c.queue.amqp.clone_from(amqp);
        }
        c.queue.max_attempts = self.max_attempts.unwrap_or(c.queue.max_attempts);
        c.queue.prefetch = self.prefetch.unwrap_or(c.queue.prefetch);
        c.queue
            .worker_roots
            .extend(self.worker_roots.iter().cloned());
        c.sql.format = self.sql_format.unwrap_or(c.sql.format);
        if let Some(limit) = &self.sql_memory_limit {
            c.sql.memory_limit.clone_from(limit);
        }
        c.sql.timeout_secs = self.sql_timeout_secs.unwrap_or(c.sql.timeout_secs);
        c.sql.max_recursion = self.sql_max_recursion.unwrap_or(c.sql.max_recursion);
        c.retrieve.budget = self.budget.unwrap_or(c.retrieve.budget);
        c.retrieve.impact_depth = self.impact_depth.unwrap_or(c.retrieve.impact_depth);
        c.verify.fail_on_ambiguous |= self.fail_on_ambiguous;
        c.verify.show_diagnostics &= !self.no_diagnostics;
        config
    }
}

impl Settings {
    /// The document stage's settings of a resolved configuration.
    pub fn of(config: &Config) -> Settings {
        Settings {
            index: config.index.clone(),
            depends: config.depends.clone(),
            related: config.related.clone(),
            embed: config.embed.clone(),
            llm: config.llm.clone(),
            tls: config.tls.clone(),
        }
    }
}

/// The configuration in effect: the defaults, the project's `ledger.toml` found from `start`
/// (if any), `file` (if any), the environment, then `flags`. A setting of the wrong type or
/// outside its choices is an error here, before any work.
pub fn resolve(file: Option<&Path>, start: &Path, flags: &Overrides) -> Result<Config> {
    let env = |k: &str| std::env::var(k).ok();
    Ok(flags.apply(load(file, start, env)?))
}

/// The `ledger.toml` in `start`'s folder (or `start`, a folder) or the nearest folder above.
pub fn find_project(start: &Path) -> Option<PathBuf> {
    let start = std::fs::canonicalize(start).ok()?;
    let first = if start.is_dir() {
        Some(start.as_path())
    } else {
        start.parent()
    };
    first?
        .ancestors()
        .map(|d| d.join(PROJECT_FILE))
        .find(|f| f.is_file())
}

/// Every layer but the flags.
fn load(file: Option<&Path>, start: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Config> {
    let mut value: toml::Table = DEFAULT_TOML
        .parse()
        .map_err(|e| invalid(format!("built-in configs/default.toml: {e}")))?;
    if let Some(project) = find_project(start) {
        let mut user = read_table(&project)?;
        refuse_what_a_project_may_not_set(&user, &project)?;
        for note in cap_resources(&mut user, &value, &project) {
            tracing::warn!("{note}");
        }
        tracing::debug!(config = %project.display(), "project configuration");
        merge(&mut value, user, &project)?;
    }
    if let Some(path) = file {
        merge(&mut value, read_table(path)?, path)?;
    }
    apply_env(&mut value, env)?;
    toml::Value::Table(value)
        .try_into()
        .map_err(|e| invalid(format!("invalid configuration: {e}")))
}

fn invalid(message: String) -> Error {
    Error::Invalid(message)
}

/// An error when the project file `project` sets a key of [`NOT_FROM_A_PROJECT`].
fn refuse_what_a_project_may_not_set(user: &toml::Table, project: &Path) -> Result<()> {
    for (section, entries) in user {
        let keys: Vec<String> = match entries {
            toml::Value::Table(t) => t.keys().map(|k| format!("{section}.{k}")).collect(),
            _ => vec![format!("{section}.")],
        };
        if let Some(key) = keys.iter().find(|k| {
            NOT_FROM_A_PROJECT
                .iter()
                .any(|n| k.starts_with(n) && (n.ends_with('.') || k == n))
        }) {
            return Err(invalid(format!(
                "{}: {key} cannot be set by a project's {PROJECT_FILE} (it travels with the documents); set it with --config, LEDGER_* variables or flags",
                project.display()
            )));
        }
    }
    Ok(())
}

/// Caps in a project file's table `user` each setting of [`PROJECT_BOUNDS`] (and
/// `sql.memory_limit`, at the default's share of memory) that asks for more than its bound;
/// a note for each. `defaults` holds the built-in values.
fn cap_resources(user: &mut toml::Table, defaults: &toml::Table, project: &Path) -> Vec<String> {
    let default_of = |section: &str, key: &str| defaults.get(section)?.get(key).cloned();
    let mut notes = Vec::new();
    let mut cap = |key: &str, asked: String, most: toml::Value, why: &str| {
        notes.push(format!(
            "{}: {key} = {asked} is more than a project's {PROJECT_FILE} may ask; using {most} ({why}); set more with --config, a LEDGER_* variable or a flag",
            project.display()
        ));
        most
    };
    for (name, bound) in PROJECT_BOUNDS {
        let (section, key) = name.split_once('.').expect("section.key");
        let Some(toml::Value::Table(entries)) = user.get_mut(section) else {
            continue;
        };
        let Some(toml::Value::Integer(asked)) = entries.get(key).cloned() else {
            continue;
        };
        let (most, why) = match bound {
            Bound::At(n) => (n, "the documented bound".to_string()),
            Bound::Cores => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                (cores as i64, format!("the {cores} cores of this machine"))
            }
            Bound::Default => match default_of(section, key) {
                Some(toml::Value::Integer(n)) => (n, "the built-in default".to_string()),
                _ => continue,
            },
        };
        if asked > most {
            let capped = cap(name, asked.to_string(), toml::Value::Integer(most), &why);
            entries.insert(key.to_string(), capped);
        }
    }
    let memory = |v: Option<&toml::Value>| {
        let text = v?.as_str()?;
        crate::config::parse_size(text, ledger_store::machine_memory())
    };
    if let Some(toml::Value::Table(sql)) = user.get_mut("sql") {
        let default = default_of("sql", "memory_limit");
        if let (Some(asked), Some(most)) =
            (memory(sql.get("memory_limit")), memory(default.as_ref()))
            && asked > most
        {
            let shown = format!("{:?}", sql["memory_limit"].as_str().unwrap_or_default());
            let capped = cap(
                "sql.memory_limit",
                shown,
                default.expect("read above"),
                "the built-in default",
            );
            sql.insert("memory_limit".into(), capped);
        }
    }
    notes
}

/// The TOML table in the file at `path`.
fn read_table(path: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .map_err(crate::io(|| format!("reading config {}", path.display())))?;
    text.parse()
        .map_err(|e| invalid(format!("parsing config {}: {e}", path.display())))
}

/// Merges `user` into `base`; unknown sections or keys are errors, so typos do not pass silently.
fn merge(base: &mut toml::Table, user: toml::Table, path: &Path) -> Result<()> {
    for (section, v) in user {
        let Some(toml::Value::Table(target)) = base.get_mut(&section) else {
            return Err(invalid(format!(
                "{}: unknown section [{section}]",
                path.display()
            )));
        };
        let toml::Value::Table(entries) = v else {
            return Err(invalid(format!(
                "{}: [{section}] must be a table",
                path.display()
            )));
        };
        for (k, v) in entries {
            match (target.get_mut(&k), v) {
                (None, _) => {
                    return Err(invalid(format!(
                        "{}: unknown setting {section}.{k}",
                        path.display()
                    )));
                }
                // A table of settings ([retrieve.weights]) keeps the entries the file leaves out.
                (Some(toml::Value::Table(inner)), toml::Value::Table(given)) => {
                    for (kk, vv) in given {
                        if !inner.contains_key(&kk) {
                            return Err(invalid(format!(
                                "{}: unknown setting {section}.{k}.{kk}",
                                path.display()
                            )));
                        }
                        inner.insert(kk, vv);
                    }
                }
                (Some(current), v) => *current = v,
            }
        }
    }
    Ok(())
}

/// Overrides each `section.key` from `LEDGER_SECTION_KEY` when set, parsed as the default's type.
fn apply_env(value: &mut toml::Table, get: impl Fn(&str) -> Option<String>) -> Result<()> {
    for (section, v) in value.iter_mut() {
        let toml::Value::Table(entries) = v else {
            continue;
        };
        // A table of settings ([retrieve.weights]) is set entry by entry:
        // LEDGER_RETRIEVE_WEIGHTS_DEPENDS.
        let mut settings: Vec<(String, &mut toml::Value)> = Vec::new();
        for (key, current) in entries.iter_mut() {
            match current {
                toml::Value::Table(inner) => {
                    settings.extend(inner.iter_mut().map(|(k, v)| (format!("{key}_{k}"), v)))
                }
                other => settings.push((key.clone(), other)),
            }
        }
        for (key, current) in settings {
            let var = format!("LEDGER_{}_{}", section.to_uppercase(), key.to_uppercase());
            let Some(raw) = get(&var) else { continue };
            let expected = |what: &str| invalid(format!("{var}={raw}: expected {what}"));
            *current = match current {
                toml::Value::Boolean(_) => {
                    toml::Value::Boolean(match raw.to_lowercase().as_str() {
                        "1" | "true" | "yes" | "on" => true,
                        "0" | "false" | "no" | "off" => false,
                        _ => return Err(expected("true or false")),
                    })
                }
                toml::Value::Integer(_) => {
                    toml::Value::Integer(raw.parse().map_err(|_| expected("an integer"))?)
                }
                toml::Value::Float(_) => {
                    toml::Value::Float(raw.parse().map_err(|_| expected("a number"))?)
                }
                toml::Value::Array(_) => toml::Value::Array(
                    raw.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| toml::Value::String(s.to_string()))
                        .collect(),
                ),
                _ => toml::Value::String(raw),
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_load() {
        let c = load(None, Path::new("/"), no_env).expect("defaults load");
        assert_eq!(c.sql.format, SqlFormat::Table);
    }

    #[test]
    fn env_overrides_typed() {
        let env = |k: &str| match k {
            "LEDGER_INDEX_JOBS" => Some("3".into()),
            "LEDGER_VERIFY_FAIL_ON_AMBIGUOUS" => Some("yes".into()),
            _ => None,
        };
        let c = load(None, Path::new("/"), env).expect("env applies");
        assert_eq!(c.index.jobs, 3);
        assert!(c.verify.fail_on_ambiguous);
        let bad = |k: &str| (k == "LEDGER_INDEX_JOBS").then(|| "many".into());
        let err = load(None, Path::new("/"), bad).expect_err("not an integer");
        assert!(err.to_string().contains("LEDGER_INDEX_JOBS=many"), "{err}");
    }

    #[test]
    fn flags_come_last_and_as_built_is_a_value() {
        let flags = Overrides {
            jobs: Some(5),
            no_related: true,
            exclude: vec!["drafts/".into()],
            ..Overrides::default()
        };
        let env = |k: &str| (k == "LEDGER_INDEX_JOBS").then(|| "3".into());
        let c = flags.apply(load(None, Path::new("/"), env).expect("loads"));
        assert_eq!(c.index.jobs, 5);
        assert!(!c.related.enabled);
        assert!(c.index.exclude.contains(&"drafts/".to_string()));
        let built = BuiltWith {
            judge: None,
            threshold: None,
            embedder: Some(EmbedderKind::Hash),
            summarizer: Some(SummarizerKind::Extractive),
        };
        let s = Settings::of(&Overrides::as_built(&built).apply(Config::defaults()));
        assert!(!s.depends.enabled && s.related.enabled && !s.index.progress);
        assert_eq!(s.embed.embedder, EmbedderKind::Hash);
        // A graph judged at another threshold is updated at that threshold.
        let built = BuiltWith {
            judge: Some(JudgeKind::Learned),
            threshold: Some(0.5),
            ..built
        };
        let s = Settings::of(&Overrides::as_built(&built).apply(Config::defaults()));
        assert_eq!(
            (s.depends.judge, s.depends.threshold),
            (JudgeKind::Learned, 0.5)
        );
    }

    #[test]
    fn a_project_config_is_found_upward_and_may_not_choose_endpoints() {
        let dir = tempfile::tempdir().expect("tempdir");
        let docs = dir.path().join("book/src");
        std::fs::create_dir_all(&docs).expect("mkdir");
        std::fs::write(docs.join("intro.md"), "# Intro\n").expect("write");
        let project = dir.path().join("book").join(PROJECT_FILE);
        std::fs::write(
            &project,
            "[index]\nexclude = [\"drafts/\"]\n[sql]\nformat = \"csv\"\n",
        )
        .expect("write");
        assert_eq!(
            find_project(&docs.join("intro.md")),
            std::fs::canonicalize(&project).ok()
        );
        let c = load(None, &docs, no_env).expect("loads");
        assert_eq!(c.index.exclude, vec!["drafts/".to_string()]);
        assert_eq!(c.sql.format, SqlFormat::Csv);
        // --config comes after it.
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, "[sql]\nformat = \"json\"\n").expect("write");
        let c = load(Some(&file), &docs, no_env).expect("loads");
        assert_eq!(c.sql.format, SqlFormat::Json);
        // Endpoints are not the documents' to choose.
        std::fs::write(&project, "[llm]\nurl = \"http://attacker.example/v1\"\n").expect("write");
        let err = load(None, &docs, no_env).expect_err("refused");
        assert!(err.to_string().contains("llm.url cannot be set"), "{err}");
        std::fs::write(&project, "[queue]\njobs = \"x\"\n").expect("write");
        assert!(load(None, &docs, no_env).is_err());
    }

    #[test]
    fn a_project_config_is_capped_in_what_it_may_ask() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = dir.path().join(PROJECT_FILE);
        std::fs::write(
            &project,
            "[index]\njobs = 100000\n[related]\nk = 5000\n[depends]\nwindow = 12\n\
             [sql]\ntimeout_secs = 86400\nmemory_limit = \"100%\"\n",
        )
        .expect("write");
        let c = load(None, dir.path(), no_env).expect("loads, capped");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(c.index.jobs, cores);
        assert_eq!(c.related.k, 100);
        assert_eq!(c.depends.window, 12, "within its bound: kept");
        assert_eq!(c.sql.timeout_secs, 300);
        assert_eq!(c.sql.memory_limit, "25%");
        let mut user: toml::Table = std::fs::read_to_string(&project)
            .expect("read")
            .parse()
            .expect("toml");
        let defaults: toml::Table = DEFAULT_TOML.parse().expect("toml");
        let notes = cap_resources(&mut user, &defaults, &project);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(notes[0].contains("index.jobs = 100000") && notes[0].contains("cores"));
        // The user's own configuration may ask for more.
        let mine = dir.path().join("mine.toml");
        std::fs::write(&mine, "[index]\njobs = 64\n").expect("write");
        assert_eq!(
            load(Some(&mine), dir.path(), no_env)
                .expect("loads")
                .index
                .jobs,
            64
        );
    }

    #[test]
    fn an_edge_kind_weight_is_set_alone() {
        use ledger_core::EdgeKind;
        let dir = tempfile::tempdir().expect("tempdir");
        let mine = dir.path().join("mine.toml");
        std::fs::write(&mine, "[retrieve.weights]\nRELATED = 7.0\n").expect("write");
        let env = |k: &str| (k == "LEDGER_RETRIEVE_WEIGHTS_DEPENDS").then(|| "9".into());
        let weights = load(Some(&mine), dir.path(), env)
            .expect("loads")
            .retrieve
            .weights;
        assert_eq!(weights.of(EdgeKind::Related), 7.0);
        assert_eq!(weights.of(EdgeKind::Depends), 9.0);
        let defaults = load(None, dir.path(), no_env)
            .expect("loads")
            .retrieve
            .weights;
        assert_eq!(
            weights.of(EdgeKind::References),
            defaults.of(EdgeKind::References)
        );
        std::fs::write(&mine, "[retrieve.weights]\nCITES = 1.0\n").expect("write");
        let err = load(Some(&mine), dir.path(), no_env).expect_err("no such kind");
        assert!(err.to_string().contains("retrieve.weights.CITES"), "{err}");
    }

    #[test]
    fn unknown_keys_are_errors() {
        let mut base: toml::Table = DEFAULT_TOML.parse().expect("toml");
        let user: toml::Table = "[index]\njobz = 2\n".parse().expect("toml");
        let err = merge(&mut base, user, Path::new("x.toml")).expect_err("typo is rejected");
        assert!(err.to_string().contains("index.jobz"));
    }
}
