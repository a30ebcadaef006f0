//! The flags several commands share (edits, terms, the document stage) and the parsers of
//! their values.

use ledger_parse::regions::RegionKind;
use ledger_pipeline::config::Config;
use ledger_pipeline::{EmbedderKind, JudgeKind, RelatedScope, Settings, SummarizerKind};
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
#[derive(clap::Args, Default)]
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
    /// DEPENDS judge (llm: the [llm] endpoint; auto: llm when one is set, else offline).
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
    /// The configuration with these flags applied: the document stage's settings (parsing,
    /// judging, embeddings, RELATED).
    pub(crate) fn apply(self, config: &Config) -> Settings {
        let mut r = config.related.clone();
        r.enabled &= !self.no_related;
        r.theta = self.theta.unwrap_or(r.theta);
        r.scope = self.related_scope.unwrap_or(r.scope);
        r.k = self.related_k.unwrap_or(r.k);
        let mut c = config.index.clone();
        if let Some(j) = self.jobs {
            c.jobs = j;
        }
        c.count_tokens &= !self.no_tokens;
        c.progress &= !self.no_progress;
        c.allow_outside_root |= self.allow_outside_root;
        c.exclude.extend(self.exclude);
        c.wait_for_lock &= !self.no_wait;
        c.allow_partial |= self.allow_partial;
        let mut e = config.embed.clone();
        e.embedder = self.embedder.unwrap_or(e.embedder);
        e.summarizer = self.summarizer.unwrap_or(e.summarizer);
        let mut d = config.depends.clone();
        d.enabled &= !self.no_depends;
        d.judge = self.judge.unwrap_or(d.judge);
        d.window = self.window.unwrap_or(d.window);
        Settings {
            index: c,
            depends: d,
            related: r,
            embed: e,
            llm: config.llm.clone(),
            tls: config.tls.clone(),
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
