//! Configuration: built-in defaults (`configs/default.toml`), then a file, then
//! `LEDGER_<SECTION>_<KEY>` environment variables, then command-line flags.

use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::Path;

/// The built-in defaults, the same text as `configs/default.toml`.
pub const DEFAULT_TOML: &str = include_str!("../../../configs/default.toml");

/// All settings.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `ledger index`.
    pub index: IndexConfig,
    /// `ledger verify`.
    pub verify: VerifyConfig,
    /// `ledger sql`.
    pub sql: SqlConfig,
    /// DEPENDS edges.
    pub depends: DependsConfig,
    /// RELATED edges.
    pub related: RelatedConfig,
    /// Summaries and embeddings.
    pub embed: EmbedConfig,
    /// The chat endpoint.
    pub llm: LlmConfig,
    /// The distributed mode's broker.
    pub queue: QueueConfig,
    /// Where graphs keep their parts.
    pub store: StoreConfig,
    /// Retrieval for edits.
    pub retrieve: RetrieveConfig,
}

/// Settings of retrieval (`ledger context`) and impact sets (`ledger impact`).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieveConfig {
    /// Default token budget of a context.
    pub budget: usize,
    /// Weight of REFERENCES edges in the walk.
    pub weight_references: f64,
    /// Weight of DEPENDS edges.
    pub weight_depends: f64,
    /// Weight of CONTAINS edges.
    pub weight_contains: f64,
    /// Weight of RELATED edges.
    pub weight_related: f64,
    /// Weight of the link between a proof and the statement it proves.
    pub weight_proof: f64,
    /// Probability of the walk returning to the targets at each step.
    pub restart: f64,
    /// Share of the walk in a unit's score.
    pub mix_graph: f64,
    /// Share of BM25 against the instruction and the targets' text.
    pub mix_lexical: f64,
    /// Share of the embedding cosine with the instruction.
    pub mix_dense: f64,
    /// Share of nearness to the targets in document order.
    pub mix_locality: f64,
    /// Units in document order at which nearness has halved.
    pub locality_span: f64,
    /// Share of sharing a section with a target.
    pub mix_section: f64,
    /// Share of a direct REFERENCES or DEPENDS edge with a target.
    pub mix_linked: f64,
    /// Hops of `ledger impact`.
    pub impact_depth: usize,
    /// Targets taken by embedding similarity when an instruction names no unit.
    pub similar_targets: usize,
}

impl RetrieveConfig {
    /// The context ranking these settings describe.
    pub fn ranking(&self) -> ledger_retrieve::Ranking {
        ledger_retrieve::Ranking {
            weights: ledger_retrieve::Weights {
                references: self.weight_references,
                depends: self.weight_depends,
                contains: self.weight_contains,
                related: self.weight_related,
            },
            proof: self.weight_proof,
            restart: self.restart,
            graph: self.mix_graph,
            lexical: self.mix_lexical,
            dense: self.mix_dense,
            locality: self.mix_locality,
            span: self.locality_span,
            section: self.mix_section,
            linked: self.mix_linked,
        }
    }
}

/// Settings of the store.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Where document parts live: "" = the graph's `parts/` folder, else a folder or an
    /// `s3://bucket/prefix` URL.
    pub parts: String,
}

impl StoreConfig {
    /// The part store of the graph at `out`.
    pub fn parts(&self, out: &Path) -> Result<ledger_store::PartStore> {
        if self.parts.is_empty() {
            Ok(ledger_store::PartStore::of_graph(out))
        } else {
            ledger_store::PartStore::open(&self.parts).context("store.parts")
        }
    }
}

/// Settings of the distributed mode.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// RabbitMQ URL.
    pub amqp: String,
    /// The durable job queue (its dead-letter queue is `<jobs>.dead`).
    pub jobs: String,
    /// Unacknowledged jobs per worker.
    pub prefetch: u16,
    /// Attempts per document before the dead-letter queue.
    pub max_attempts: u32,
    /// RabbitMQ's acknowledgement timeout on the job queue, in seconds.
    pub consumer_timeout_secs: u64,
}

/// Settings of DEPENDS edges.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct DependsConfig {
    /// Judge DEPENDS edges at all.
    pub enabled: bool,
    /// `auto`, `offline` or `llm`.
    pub judge: String,
    /// Preceding units per candidate window.
    pub window: usize,
}

/// Settings of summaries and embedders.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    /// `auto`, `hash`, `minilm` or `openai`.
    pub embedder: String,
    /// MiniLM weights folder; empty = the default location.
    pub model_dir: String,
    /// `extractive` or `llm`.
    pub summarizer: String,
    /// Embeddings endpoint base URL.
    pub url: String,
    /// Embeddings model name.
    pub model: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Texts per request.
    pub batch: usize,
    /// Requests in flight.
    pub concurrency: usize,
    /// Seconds per attempt.
    pub timeout_secs: u64,
    /// Retries after the first attempt.
    pub max_retries: u32,
}

/// Settings of the chat endpoint.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL; empty = none.
    pub url: String,
    /// Model name.
    pub model: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Requests in flight.
    pub concurrency: usize,
    /// Seconds per attempt.
    pub timeout_secs: u64,
    /// Retries after the first attempt.
    pub max_retries: u32,
}

/// Settings of the semantic layer (RELATED edges).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RelatedConfig {
    /// Compute RELATED edges at all.
    pub enabled: bool,
    /// Cosine threshold.
    pub theta: f64,
    /// `document` or `corpus`.
    pub scope: String,
    /// Neighbours asked per unit.
    pub k: usize,
}

/// Settings of `ledger index`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Parser threads; 0 = one per core.
    pub jobs: usize,
    /// Count cl100k tokens per unit.
    pub count_tokens: bool,
    /// Show a progress bar on a terminal.
    pub progress: bool,
}

/// Settings of `ledger verify`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// Exit 1 on ambiguous references too.
    pub fail_on_ambiguous: bool,
    /// Print diagnostics as well as references.
    pub show_diagnostics: bool,
}

/// Settings of `ledger sql`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlConfig {
    /// `table`, `csv` or `json`.
    pub format: String,
}

impl Config {
    /// Loads the defaults, merges `file` (if any), then the environment.
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
    fn defaults_parse() {
        let c = Config::load(None).expect("defaults load");
        assert_eq!(c.sql.format, "table");
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
