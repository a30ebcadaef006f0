//! The flags several commands share (edits, terms, the document stage) and the parsers of
//! their values.

use ledger_pipeline::RegionKind;
use ledger_pipeline::{EmbedderKind, JudgeKind, Overrides, RelatedScope, SummarizerKind};
use std::path::PathBuf;

/// What every edit command takes: the inputs, the graph to update, dry run.
#[derive(clap::Args)]
pub(crate) struct EditArgs {
    /// Files or folders, as for `index`.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// The graph of PATH...: updated afterwards (incrementally, as `ledger index` would);
    /// `ledger edit` also retrieves the context from it.
    #[arg(long)]
    pub(crate) graph: Option<PathBuf>,
    /// Print the diff and verify only; nothing is written.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// What stdout shows of the edit: the unified diff, or one JSON object per replacement
    /// (file, line, column, old, new, the line before and after) for review tools.
    #[arg(long, default_value = "diff", value_parser = ["diff", "json"])]
    pub(crate) format: String,
}

/// How terms are renamed, shared by `rename-term` and `rename-terms`.
#[derive(clap::Args)]
pub(crate) struct TermArgs {
    /// Other regions to rename in too: code, math, urls (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_region)]
    pub(crate) include: Vec<RegionKind>,
    /// A renamed Markdown heading gets a new anchor; by default it keeps its old one too
    /// (`{#old}` added, so links from outside still land). With this, only the links in
    /// PATH... follow the new anchor.
    #[arg(long)]
    pub(crate) no_keep_anchors: bool,
    /// Write the rename even where it puts a word beside the same word ("package index
    /// index"); by default verification refuses it, naming each place.
    #[arg(long)]
    pub(crate) allow_repeats: bool,
}

/// Settings of the document stage, shared by `index` and `coordinator`.
#[derive(clap::Args)]
pub(crate) struct PipelineArgs {
    /// Parser threads (0 = one per core).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Do not count cl100k tokens (faster; `tokens` columns are 0).
    #[arg(long)]
    pub(crate) no_tokens: bool,
    /// Do not show a progress bar.
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// Let documents read files outside the folder they were found in (`\input{/etc/passwd}`,
    /// `../` links in SUMMARY.md, symlinks leaving it); refused by default, with a diagnostic.
    #[arg(long)]
    pub(crate) allow_outside_root: bool,
    /// Leave out files and folders matching GLOB under the input folders (repeatable; adds to
    /// `index.exclude`; `.gitignore` files are honoured too).
    #[arg(long, value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// When another process is writing the graph, stop at once (exit 2) instead of waiting.
    #[arg(long)]
    pub(crate) no_wait: bool,
    /// Exit 0, not 3, when the graph was committed although some DEPENDS judgments or
    /// summaries failed.
    #[arg(long)]
    pub(crate) allow_partial: bool,
    /// Do not compute RELATED edges (summaries, embeddings).
    #[arg(long)]
    pub(crate) no_related: bool,
    /// Do not judge DEPENDS edges.
    #[arg(long)]
    pub(crate) no_depends: bool,
    /// DEPENDS judge (llm: the [llm] endpoint; auto: llm when one is set, else learned).
    #[arg(long, value_parser = choice::<JudgeKind>(JudgeKind::NAMES))]
    pub(crate) judge: Option<JudgeKind>,
    /// Preceding units shown to the DEPENDS judge per unit.
    #[arg(long)]
    pub(crate) window: Option<usize>,
    /// Embedder of summaries (auto: minilm when installed, else hash; openai: [embed] url).
    #[arg(long, value_parser = choice::<EmbedderKind>(EmbedderKind::NAMES))]
    pub(crate) embedder: Option<EmbedderKind>,
    /// Summarizer of units before embedding (llm: the [llm] endpoint).
    #[arg(long, value_parser = choice::<SummarizerKind>(SummarizerKind::NAMES))]
    pub(crate) summarizer: Option<SummarizerKind>,
    /// Cosine threshold θ of RELATED edges.
    #[arg(long)]
    pub(crate) theta: Option<f64>,
    /// RELATED pairs inside each document, or across the corpus.
    #[arg(long, value_parser = choice::<RelatedScope>(RelatedScope::NAMES))]
    pub(crate) related_scope: Option<RelatedScope>,
    /// At most this many RELATED edges per unit, the strongest.
    #[arg(long)]
    pub(crate) related_k: Option<usize>,
}

impl PipelineArgs {
    /// What these flags override in the configuration.
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            jobs: self.jobs,
            no_tokens: self.no_tokens,
            no_progress: self.no_progress,
            allow_outside_root: self.allow_outside_root,
            exclude: self.exclude.clone(),
            no_wait: self.no_wait,
            allow_partial: self.allow_partial,
            no_related: self.no_related,
            no_depends: self.no_depends,
            judge: self.judge,
            window: self.window,
            embedder: self.embedder,
            summarizer: self.summarizer,
            theta: self.theta,
            related_scope: self.related_scope,
            related_k: self.related_k,
            ..Overrides::default()
        }
    }
}

/// A parser of one of a configuration choice's names, listing them in `--help`.
pub(crate) fn choice<T>(
    names: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

/// A region kind named on the command line.
pub(crate) fn parse_region(name: &str) -> Result<RegionKind, String> {
    match RegionKind::parse(name) {
        Some(RegionKind::Label | RegionKind::LinkTarget) => Err(format!(
            "`{name}`: labels and link targets are renamed with `ledger relabel`, which updates their referrers"
        )),
        Some(k) => Ok(k),
        None => Err(format!("`{name}`: expected code, math or urls")),
    }
}
