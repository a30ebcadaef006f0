//! Loading the configuration: built-in defaults (`configs/default.toml`), then the project's
//! `ledger.toml` (found upward from the inputs), then a file (`--config`), then
//! `LEDGER_<SECTION>_<KEY>` environment variables (command-line flags come last, per command).
//! The types, with their closed choices, are `ledger_pipeline::config`'s.

use anyhow::{Context, Result};
use ledger_pipeline::config::{Config, DEFAULT_TOML};
use std::path::Path;

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

/// The `ledger.toml` in `start`'s folder (or `start`, a folder) or the nearest folder above.
pub fn find_project(start: &Path) -> Option<std::path::PathBuf> {
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

/// Loads the defaults, merges the project's `ledger.toml` found from `start` (if any), then
/// `file` (if any), then the environment; a setting of the wrong type or outside its choices is
/// an error here, before any work.
pub fn load(file: Option<&Path>, start: &Path) -> Result<Config> {
    let mut value: toml::Table = DEFAULT_TOML
        .parse()
        .context("built-in configs/default.toml")?;
    if let Some(project) = find_project(start) {
        let user = read_table(&project)?;
        for (section, entries) in &user {
            let keys: Vec<String> = match entries {
                toml::Value::Table(t) => t.keys().map(|k| format!("{section}.{k}")).collect(),
                _ => vec![format!("{section}.")],
            };
            if let Some(key) = keys.iter().find(|k| {
                NOT_FROM_A_PROJECT
                    .iter()
                    .any(|n| k.starts_with(n) && (n.ends_with('.') || k == n))
            }) {
                anyhow::bail!(
                    "{}: {key} cannot be set by a project's {PROJECT_FILE} (it travels with the documents); set it with --config, LEDGER_* variables or flags",
                    project.display()
                );
            }
        }
        tracing::debug!(config = %project.display(), "project configuration");
        merge(&mut value, user, &project)?;
    }
    if let Some(path) = file {
        merge(&mut value, read_table(path)?, path)?;
    }
    apply_env(&mut value, |k| std::env::var(k).ok())?;
    toml::Value::Table(value)
        .try_into()
        .context("invalid configuration")
}

/// The TOML table in the file at `path`.
fn read_table(path: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config {}", path.display()))?;
    text.parse()
        .with_context(|| format!("parsing config {}", path.display()))
}

/// Merges `user` into `base`; unknown sections or keys are errors, so typos do not pass silently.
fn merge(base: &mut toml::Table, user: toml::Table, path: &Path) -> Result<()> {
    for (section, v) in user {
        let Some(toml::Value::Table(target)) = base.get_mut(&section) else {
            anyhow::bail!("{}: unknown section [{section}]", path.display());
        };
        let toml::Value::Table(entries) = v else {
            anyhow::bail!("{}: [{section}] must be a table", path.display());
        };
        for (k, v) in entries {
            if !target.contains_key(&k) {
                anyhow::bail!("{}: unknown setting {section}.{k}", path.display());
            }
            target.insert(k, v);
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
        for (key, current) in entries.iter_mut() {
            let var = format!("LEDGER_{}_{}", section.to_uppercase(), key.to_uppercase());
            let Some(raw) = get(&var) else { continue };
            *current = match current {
                toml::Value::Boolean(_) => {
                    toml::Value::Boolean(match raw.to_lowercase().as_str() {
                        "1" | "true" | "yes" | "on" => true,
                        "0" | "false" | "no" | "off" => false,
                        _ => anyhow::bail!("{var}={raw}: expected true or false"),
                    })
                }
                toml::Value::Integer(_) => toml::Value::Integer(
                    raw.parse()
                        .with_context(|| format!("{var}={raw}: expected an integer"))?,
                ),
                toml::Value::Float(_) => toml::Value::Float(
                    raw.parse()
                        .with_context(|| format!("{var}={raw}: expected a number"))?,
                ),
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

    #[test]
    fn defaults_load() {
        let c = load(None, Path::new("/")).expect("defaults load");
        assert_eq!(c.sql.format, ledger_pipeline::SqlFormat::Table);
    }

    #[test]
    fn env_overrides_typed() {
        let mut v: toml::Table = DEFAULT_TOML.parse().expect("toml");
        apply_env(&mut v, |k| match k {
            "LEDGER_INDEX_JOBS" => Some("3".into()),
            "LEDGER_VERIFY_FAIL_ON_AMBIGUOUS" => Some("yes".into()),
            _ => None,
        })
        .expect("env applies");
        let c: Config = toml::Value::Table(v).try_into().expect("valid");
        assert_eq!(c.index.jobs, 3);
        assert!(c.verify.fail_on_ambiguous);
        let mut v: toml::Table = DEFAULT_TOML.parse().expect("toml");
        assert!(
            apply_env(&mut v, |k| (k == "LEDGER_INDEX_JOBS")
                .then(|| "many".into()))
            .is_err()
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
        let c = load(None, &docs).expect("loads");
        assert_eq!(c.index.exclude, vec!["drafts/".to_string()]);
        assert_eq!(c.sql.format, ledger_pipeline::SqlFormat::Csv);
        // --config comes after it.
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, "[sql]\nformat = \"json\"\n").expect("write");
        let c = load(Some(&file), &docs).expect("loads");
        assert_eq!(c.sql.format, ledger_pipeline::SqlFormat::Json);
        // Endpoints are not the documents' to choose.
        std::fs::write(&project, "[llm]\nurl = \"http://attacker.example/v1\"\n").expect("write");
        let err = load(None, &docs).expect_err("refused");
        assert!(err.to_string().contains("llm.url cannot be set"), "{err}");
        std::fs::write(&project, "[queue]\njobs = \"x\"\n").expect("write");
        assert!(load(None, &docs).is_err());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let mut base: toml::Table = DEFAULT_TOML.parse().expect("toml");
        let user: toml::Table = "[index]\njobz = 2\n".parse().expect("toml");
        let err = merge(&mut base, user, Path::new("x.toml")).expect_err("typo is rejected");
        assert!(err.to_string().contains("index.jobz"));
    }
}
