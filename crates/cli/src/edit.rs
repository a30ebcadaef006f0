//! The edit commands: `relabel`, `rename-term`, `insert` / `delete` / `move`, `edit` (LLM) and
//! `undo`. Each plans the edit in memory and verifies it (`ledger-edit`, `ledger-pipeline`),
//! prints the diff and the findings, and writes only a verified edit; then the graph follows.

use crate::args::{EditArgs, TermArgs};
use crate::output::{out, outln};
use anyhow::{Context, Result};
use ledger_pipeline::RegionKind;
use ledger_pipeline::config::Config;
use ledger_pipeline::edit::{self as ledger_edit, Checked, FindingKind, Op, Sources, Written};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Parses the inputs of an edit; the documents' own errors are named on stderr.
fn read_sources(edit: &EditArgs) -> Result<Sources> {
    let sources = Sources::read(&edit.paths)?;
    for e in ledger_pipeline::report::document_errors(&sources.docs) {
        eprintln!("{e}");
    }
    Ok(sources)
}

/// Prints the diff and the findings of a checked edit, writes it unless refused or a dry run,
/// then updates `--graph`; exit 1 when verification refused it.
fn finish(
    sources: &Sources,
    checked: Checked,
    allowed: &[FindingKind],
    edit: &EditArgs,
    config: &Config,
) -> Result<ExitCode> {
    if edit.format == "json" {
        for change in checked.changes(sources)? {
            outln!("{}", serde_json::to_string(&change)?);
        }
    } else {
        out!("{}", checked.diff(sources));
    }
    for f in &checked.findings {
        eprintln!("{f}");
    }
    match ledger_edit::write_checked(sources, checked, edit.dry_run, allowed)? {
        Written::Refused(n) => {
            eprintln!("verification failed ({n} findings): nothing was written");
            return Ok(ExitCode::from(1));
        }
        Written::DryRun => eprintln!("verified; dry run: nothing was written"),
        Written::Unchanged => eprintln!("nothing to change"),
        Written::Committed(record) => {
            eprintln!(
                "verified and written; `ledger undo {}` reverts it (record {})",
                edit.paths[0].display(),
                record.display()
            );
            if let Some(graph) = &edit.graph {
                return crate::index::update_graph(&edit.paths, graph, config);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn files(checked: &Checked) -> usize {
    checked
        .edited
        .keys()
        .map(PathBuf::as_path)
        .collect::<BTreeSet<&Path>>()
        .len()
}

/// `ledger relabel OLD NEW PATH...`.
pub fn relabel(old: &str, new: &str, edit: &EditArgs, config: &Config) -> Result<ExitCode> {
    let sources = read_sources(edit)?;
    let (checked, replacements) = ledger_edit::plan_relabel(&sources, old, new)?;
    eprintln!(
        "relabel {old} -> {new}: {replacements} replacements in {} files",
        files(&checked)
    );
    finish(&sources, checked, &[], edit, config)
}

/// How terms are renamed (`rename-term`, `rename-terms`).
pub struct TermOptions {
    /// Regions searched besides prose.
    pub include: Vec<RegionKind>,
    /// Renamed headings keep their old anchors (see `plan_rename_terms`).
    pub keep_anchors: bool,
    /// Write even where a rename repeats a word.
    pub allow_repeats: bool,
}

/// `ledger rename-term OLD NEW PATH...` and `ledger rename-terms TERMS PATH...`.
pub fn rename_terms(
    terms: &[(String, String)],
    name: &str,
    options: &TermOptions,
    edit: &EditArgs,
    config: &Config,
) -> Result<ExitCode> {
    let sources = read_sources(edit)?;
    let progress = crate::progress::Bar::new(config.index.progress);
    let (include, keep) = (&options.include, options.keep_anchors);
    let plan = ledger_edit::plan_rename_terms(&sources, terms, include, keep, &progress)?;
    eprintln!(
        "{name}: {} occurrences, {} renamed headings keeping their old anchors and {} links to renamed headings, in {} files",
        plan.occurrences,
        plan.anchors_kept,
        plan.links,
        files(&plan.checked)
    );
    for line in plan.left_report() {
        eprintln!("{line}");
    }
    let allowed: &[FindingKind] = if options.allow_repeats {
        &[FindingKind::Repeat]
    } else {
        &[]
    };
    finish(&sources, plan.checked, allowed, edit, config)
}

/// `ledger insert`, `ledger delete`, `ledger move`: references to a deleted unit stop the edit
/// unless `force`.
pub fn structural(
    op: Op<&str>,
    doc: Option<&str>,
    force: bool,
    edit: &EditArgs,
    config: &Config,
) -> Result<ExitCode> {
    let sources = read_sources(edit)?;
    let op = op.find(&sources.docs, doc)?;
    let plan = ledger_edit::plan_structural(&sources, &op)?;
    eprintln!("{} prose numbers rewritten", plan.renumbered);
    let allowed: &[FindingKind] = if force {
        &[FindingKind::DeletedTarget]
    } else {
        &[]
    };
    finish(&sources, plan.checked, allowed, edit, config)
}

/// `ledger edit`'s arguments.
#[derive(clap::Args)]
pub struct LlmEditArgs {
    /// What to change.
    #[arg(long)]
    instruction: String,
    /// A unit id, a label, or prose such as "Theorem 2" (repeatable); else the units the
    /// instruction mentions or is nearest to.
    #[arg(long)]
    target: Vec<String>,
    /// The document, when ids or numbers repeat across documents.
    #[arg(long)]
    doc: Option<String>,
    /// Token budget of the context (default `retrieve.budget`).
    #[arg(long)]
    budget: Option<usize>,
    #[command(flatten)]
    edit: EditArgs,
}

impl LlmEditArgs {
    /// The inputs, graph and dry run.
    pub fn edit(&self) -> &EditArgs {
        &self.edit
    }

    /// `--budget`.
    pub fn budget(&self) -> Option<usize> {
        self.budget
    }
}

/// `ledger edit`: the LLM edit loop, then as every edit.
pub fn llm_edit(args: &LlmEditArgs, config: &Config) -> Result<ExitCode> {
    let edit = &args.edit;
    let graph = edit
        .graph
        .as_deref()
        .context("ledger edit needs --graph GRAPH: the graph of PATH... (from `ledger index`)")?;
    let sources = read_sources(edit)?;
    let ask = ledger_pipeline::LlmEdit {
        graph,
        instruction: &args.instruction,
        targets: &args.target,
        doc: args.doc.as_deref(),
        budget: config.retrieve.budget,
    };
    let plan = ledger_pipeline::llm_edit::plan_llm_edit(config, &sources, &ask)?;
    for line in plan.report() {
        eprintln!("{line}");
    }
    finish(
        &sources,
        plan.checked,
        &ledger_pipeline::llm_edit::LLM_ALLOWED,
        edit,
        config,
    )
}

/// `ledger undo PATH [--graph GRAPH]`: reverts the last edit made under PATH, then updates the
/// graph.
pub fn undo(path: &Path, graph: Option<&Path>, config: &Config) -> Result<ExitCode> {
    let here = std::env::current_dir().unwrap_or_default();
    for p in ledger_edit::undo_last(path)? {
        // Relative to the working folder, as the other commands print paths.
        outln!("restored {}", p.strip_prefix(&here).unwrap_or(&p).display());
    }
    if let Some(graph) = graph {
        return crate::index::update_graph(&[path.to_path_buf()], graph, config);
    }
    Ok(ExitCode::SUCCESS)
}

impl TermArgs {
    pub(crate) fn options(self) -> TermOptions {
        TermOptions {
            include: self.include,
            keep_anchors: !self.no_keep_anchors,
            allow_repeats: self.allow_repeats,
        }
    }
}
