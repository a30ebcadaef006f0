//! The configuration's types: every section of `configs/default.toml`, with closed choices as
//! enums, so that a misspelt judge or scope is refused when the configuration is read, before any
//! work starts. Reading the layers (file, environment, flags) is the binary's business.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The built-in defaults, the same text as `configs/default.toml`.
pub const DEFAULT_TOML: &str = include_str!("../../../configs/default.toml");

/// Declares a closed choice of the configuration: serde and `FromStr` by its lower-case names (and
/// a former name after `|`, still read), `Display` printing the name.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal $(| $alias:literal)?),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text $(, alias = $alias)?)] $variant),+
        }

        impl $name {
            /// Every name this choice accepts.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// Its name in the configuration.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s {
                    $($text $(| $alias)? => Ok($name::$variant),)+
                    other => Err(format!("{other:?}: expected {}", one_of(Self::NAMES))),
                }
            }
        }
    };
}

/// "a, b or c".
fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => format!("\"{one}\""),
        [init @ .., last] => format!(
            "{} or \"{last}\"",
            init.iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

choice! {
    /// The DEPENDS judge (`depends.judge`).
    JudgeKind {
        /// `llm` when `[llm]` names an endpoint, else `learned`.
        Auto = "auto",
        /// The learned judge: a logistic regression trained on blueprints' `\uses`; no download.
        /// Its judgments are named `learned:<model>` (`@<threshold>` when not the model's own);
        /// `offline`, its name before, still reads as it.
        Learned = "learned" | "offline",
        /// The hand-written rules alone (definitions, notation, results named).
        Rules = "rules",
        /// The `[llm]` chat endpoint, one request per unit.
        Llm = "llm",
    }
}

choice! {
    /// The embedder of summaries (`embed.embedder`).
    EmbedderKind {
        /// MiniLM when its weights are installed, else `hash`.
        Auto = "auto",
        /// The offline hashing embedder.
        Hash = "hash",
        /// all-MiniLM-L6-v2 in-process.
        Minilm = "minilm",
        /// The `[embed]` OpenAI-compatible endpoint.
        Openai = "openai",
    }
}

choice! {
    /// The summarizer of units (`embed.summarizer`).
    SummarizerKind {
        /// Offline, extractive.
        Extractive = "extractive",
        /// The `[llm]` chat endpoint.
        Llm = "llm",
    }
}

choice! {
    /// Where RELATED pairs are looked for (`related.scope`).
    RelatedScope {
        /// Inside each document.
        Document = "document",
        /// Across the corpus.
        Corpus = "corpus",
    }
}

choice! {
    /// Output format of `ledger verify --format`.
    VerifyFormat {
        /// `file:line:col: level: message`, like a compiler.
        Text = "text",
        /// One JSON object per finding and line.
        Json = "json",
        /// One SARIF 2.1.0 log.
        Sarif = "sarif",
        /// GitHub Actions workflow annotations.
        Github = "github",
    }
}

choice! {
    /// Output format of `ledger sql` (`sql.format`).
    SqlFormat {
        /// An aligned table.
        Table = "table",
        /// CSV with a header.
        Csv = "csv",
        /// A JSON array of objects.
        Json = "json",
    }
}

/// All settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// Certificates for `https://` endpoints and `amqps://` brokers.
    pub tls: TlsConfig,
}

/// Certificates trusted for `https://` endpoints and `amqps://` brokers.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// A PEM file of root certificates trusted besides the system's; empty = the system's only.
    pub ca_file: String,
}

impl TlsConfig {
    /// The PEM text of `ca_file` (`None` when it is empty), checked to hold a certificate.
    pub fn extra_roots(&self) -> Result<Option<String>> {
        if self.ca_file.is_empty() {
            return Ok(None);
        }
        let pem = std::fs::read_to_string(&self.ca_file)
            .map_err(|e| Error::Invalid(format!("tls.ca_file {}: {e}", self.ca_file)))?;
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(Error::Invalid(format!(
                "tls.ca_file {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
                self.ca_file
            )));
        }
        Ok(Some(pem))
    }
}

/// Settings of retrieval (`ledger context`) and impact sets (`ledger impact`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieveConfig {
    /// Default token budget of a context.
    pub budget: usize,
    /// Weight of each kind of edge in the walk (`[retrieve.weights]`, keyed by the kind's name).
    pub weights: ledger_retrieve::Weights,
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
            weights: self.weights,
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
            ledger_store::PartStore::open(&self.parts).map_err(|source| Error::Store {
                context: "store.parts".into(),
                source,
            })
        }
    }
}

/// Settings of the distributed mode.
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// Folders (and `s3://bucket/prefix` URLs) a worker may read sources from and write parts to.
    pub worker_roots: Vec<String>,
}

/// Settings of DEPENDS edges.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DependsConfig {
    /// Judge DEPENDS edges at all.
    pub enabled: bool,
    /// The DEPENDS judge.
    pub judge: JudgeKind,
    /// Preceding units per candidate window.
    pub window: usize,
    /// The learned judge's operating point: a probability in (0, 1]; 0 = the shipped model's own.
    pub threshold: f64,
}

/// Settings of summaries and embedders.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    /// The embedder of summaries.
    pub embedder: EmbedderKind,
    /// MiniLM weights folder; empty = the default location.
    pub model_dir: String,
    /// The summarizer.
    pub summarizer: SummarizerKind,
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RelatedConfig {
    /// Compute RELATED edges at all.
    pub enabled: bool,
    /// Cosine threshold.
    pub theta: f64,
    /// Pairs inside each document, or across the corpus.
    pub scope: RelatedScope,
    /// At most this many RELATED edges per unit, the strongest (0 is taken as 1).
    pub k: usize,
}

/// Settings of `ledger index`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Parser threads; 0 = one per core.
    pub jobs: usize,
    /// Count cl100k tokens per unit.
    pub count_tokens: bool,
    /// Show a progress bar on a terminal.
    pub progress: bool,
    /// Let documents read files outside their input root (see [`ledger_parse::Source::root`]).
    pub allow_outside_root: bool,
    /// Globs of files and folders under the input folders to leave out (as in `.gitignore`,
    /// which is honoured too).
    pub exclude: Vec<String>,
    /// When another process is writing the graph, wait for it (else stop at once).
    pub wait_for_lock: bool,
    /// Exit 0 when the graph was committed although some DEPENDS judgments or summaries failed
    /// (else exit 3).
    pub allow_partial: bool,
}

/// Settings of `ledger verify`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// Exit 1 on ambiguous references too.
    pub fail_on_ambiguous: bool,
    /// Print diagnostics as well as references.
    pub show_diagnostics: bool,
}

/// Settings of `ledger sql`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlConfig {
    /// Output format.
    pub format: SqlFormat,
    /// Memory one statement may use: bytes (`512MiB`, `2G`, `1000000`) or a share of the
    /// machine's memory (`25%`).
    pub memory_limit: String,
    /// Seconds one statement may run.
    pub timeout_secs: u64,
    /// Steps a recursive CTE may take.
    pub max_recursion: usize,
}

impl SqlConfig {
    /// The limits of one statement, the memory limit read against `machine` bytes.
    pub fn limits(&self, machine: usize) -> Result<ledger_store::SqlLimits> {
        let memory = parse_size(&self.memory_limit, machine).ok_or_else(|| {
            Error::Invalid(format!(
                "sql.memory_limit = {:?}: expected bytes (512MiB, 2G, 1000000) or a share of the machine's memory (25%)",
                self.memory_limit
            ))
        })?;
        if self.timeout_secs == 0 || self.max_recursion == 0 {
            return Err(Error::Invalid(
                "sql.timeout_secs and sql.max_recursion must be above 0".into(),
            ));
        }
        Ok(ledger_store::SqlLimits {
            memory,
            timeout: std::time::Duration::from_secs(self.timeout_secs),
            recursion: self.max_recursion,
        })
    }
}

/// `512MiB`, `2 G`, `1.5GB`, `1000000` as bytes (K, M, G, T in powers of 1024, with or without
/// `B`/`iB`), or `25%` of `machine`; `None` for anything else or for 0.
pub fn parse_size(text: &str, machine: usize) -> Option<usize> {
    let text = text.trim();
    if let Some(share) = text.strip_suffix('%') {
        let share: f64 = share.trim().parse().ok()?;
        return ((0.0..=100.0).contains(&share) && share > 0.0)
            .then(|| (machine as f64 * share / 100.0) as usize);
    }
    let digits = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: f64 = number.parse().ok()?;
    let unit = unit.trim().to_ascii_uppercase();
    let power = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        _ => return None,
    };
    let bytes = number * 1024f64.powi(power);
    (bytes >= 1.0 && bytes < usize::MAX as f64).then_some(bytes as usize)
}

impl Config {
    /// The built-in defaults.
    pub fn defaults() -> Config {
        toml::from_str(DEFAULT_TOML).expect("configs/default.toml matches Config (unit-tested)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        let gib = 1usize << 30;
        assert_eq!(parse_size("512MiB", 0), Some(512 << 20));
        assert_eq!(parse_size("2G", 0), Some(2 * gib));
        assert_eq!(parse_size("1.5 GB", 0), Some(3 * gib / 2));
        assert_eq!(parse_size("1000", 0), Some(1000));
        assert_eq!(parse_size("25%", 8 * gib), Some(2 * gib));
        for bad in ["", "0", "-1G", "12 parsecs", "150%", "0%"] {
            assert_eq!(parse_size(bad, 8 * gib), None, "{bad}");
        }
    }

    #[test]
    fn defaults_parse() {
        assert_eq!(Config::defaults().sql.format, SqlFormat::Table);
    }

    #[test]
    fn the_ranking_of_the_default_configuration_is_the_retrieval_default() {
        // configs/default.toml shows the user the ranking `ledger-retrieve` defaults to: the same,
        // every edge kind's weight included.
        assert_eq!(
            Config::defaults().retrieve.ranking(),
            ledger_retrieve::Ranking::default()
        );
    }

    #[test]
    fn choices_are_checked_when_read() {
        let text = DEFAULT_TOML.replace("scope = \"document\"", "scope = \"everything\"");
        let err = toml::from_str::<Config>(&text).expect_err("unknown scope");
        assert!(err.to_string().contains("everything"), "{err}");
        assert_eq!("corpus".parse(), Ok(RelatedScope::Corpus));
        assert_eq!(
            "x".parse::<JudgeKind>(),
            Err("\"x\": expected \"auto\", \"learned\", \"rules\" or \"llm\"".to_string())
        );
        // The learned judge's former name is still read, in a file as on a flag.
        assert_eq!("offline".parse(), Ok(JudgeKind::Learned));
        let text = DEFAULT_TOML.replace("judge = \"auto\"", "judge = \"offline\"");
        let config = toml::from_str::<Config>(&text).expect("offline is read");
        assert_eq!(config.depends.judge, JudgeKind::Learned);
    }
}
