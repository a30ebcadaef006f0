//! Loading the configuration: built-in defaults (`configs/default.toml`), then a file, then
//! `LEDGER_<SECTION>_<KEY>` environment variables (command-line flags come last, per command).
//! The types, with their closed choices, are `ledger_pipeline::config`'s.

use anyhow::{Context, Result};
use ledger_pipeline::config::{Config, DEFAULT_TOML};
use std::path::Path;

/// Loads the defaults, merges `file` (if any), then the environment; a setting of the wrong
/// type or outside its choices is an error here, before any work.
pub fn load(file: Option<&Path>) -> Result<Config> {
    let mut value: toml::Table = DEFAULT_TOML
        .parse()
        .context("built-in configs/default.toml")?;
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config {}", path.display()))?;
        let user: toml::Table = text
            .parse()
            .with_context(|| format!("parsing config {}", path.display()))?;
        merge(&mut value, user, path)?;
    }
    apply_env(&mut value, |k| std::env::var(k).ok())?;
    toml::Value::Table(value)
        .try_into()
        .context("invalid configuration")
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
        let c = load(None).expect("defaults load");
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
    fn unknown_keys_are_errors() {
        let mut base: toml::Table = DEFAULT_TOML.parse().expect("toml");
        let user: toml::Table = "[index]\njobz = 2\n".parse().expect("toml");
        let err = merge(&mut base, user, Path::new("x.toml")).expect_err("typo is rejected");
        assert!(err.to_string().contains("index.jobz"));
    }
}
