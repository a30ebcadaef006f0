//! The pipeline in process: typed settings refused before work, the document and corpus stages
//! through `index`, incremental reuse on a rerun and after a one-paragraph edit, the graph a
//! rerun updates, and the edit plans the commands write.

use ledger_pipeline::config::Config;
use ledger_pipeline::index::{built_with, index};
use ledger_pipeline::{
    EmbedderKind, IndexJob, IndexReport, JudgeKind, Quiet, RelatedScope, Settings, Stage,
};
use std::path::{Path, PathBuf};

/// A generated LaTeX document of about 5K tokens, bundled in `datasets/`.
fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/generated/gen-5k-1/main.tex")
}

/// A copy of the sample in a fresh folder: (folder, its main file).
fn copy_of_sample() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let main = dir.path().join("doc").join("main.tex");
    std::fs::create_dir_all(main.parent().expect("parent")).expect("mkdir");
    std::fs::copy(sample(), &main).expect("copy");
    (dir, main)
}

/// The defaults with the offline judge and the hashing embedder, no tokens counted.
fn settings(config: &Config) -> Settings {
    let mut s = Settings {
        index: config.index.clone(),
        depends: config.depends.clone(),
        related: config.related.clone(),
        embed: config.embed.clone(),
        llm: config.llm.clone(),
        tls: config.tls.clone(),
    };
    s.index.count_tokens = false;
    s.depends.judge = JudgeKind::Learned;
    s.embed.embedder = EmbedderKind::Hash;
    s
}

fn run_index(stage: &Stage, config: &Config, input: &Path, graph: &Path) -> IndexReport {
    let parts = config.store.parts(graph).expect("part store");
    let paths = [input.to_path_buf()];
    let job = IndexJob {
        paths: &paths,
        out: graph,
        parts: &parts,
        command: "test",
    };
    index(&job, stage, &Quiet).expect("index")
}

#[test]
fn settings_that_cannot_work_are_refused_before_any_work() {
    let config = Config::defaults();
    let mut s = settings(&config);
    s.depends.judge = JudgeKind::Llm;
    let err = Stage::new(s).err().expect("no endpoint for the LLM judge");
    assert!(err.to_string().contains("needs a chat endpoint"), "{err}");
    let text = ledger_pipeline::config::DEFAULT_TOML
        .replace("scope = \"document\"", "scope = \"everything\"");
    assert!(toml::from_str::<Config>(&text).is_err());
    assert_eq!("corpus".parse(), Ok(RelatedScope::Corpus));
}

#[test]
fn index_reuses_unchanged_parts_and_recomputes_only_an_edited_paragraph() {
    let config = Config::defaults();
    let stage = Stage::new(settings(&config)).expect("stage");
    let (dir, main) = copy_of_sample();
    let graph = dir.path().join("graph");

    let first = run_index(&stage, &config, &main, &graph);
    assert_eq!(first.commit.version, 1);
    assert_eq!(first.commit.summary.as_ref().map(|s| s.documents), Some(1));
    let first_docs = documents(&config, &graph, &first);
    assert_eq!(first_docs.len(), 1);
    let units = first_docs[0].units.len();
    assert!(units > 50, "{units} units");
    let embedded = first.embeddings.0;
    assert!(embedded > 0);
    assert_eq!(first.stage.semantic.vectors_computed, embedded);
    assert!(first.stage.depends.units > 0);
    assert_eq!(first.stage.depends.reused, 0);
    assert!(first.related.is_some() && first.judge.is_some());
    // What the report prints is what `ledger index` prints.
    let text = first.to_string();
    assert!(text.starts_with("documents: 1 ("), "{text}");
    assert!(
        text.contains("graph: ") && text.contains("(version 1)"),
        "{text}"
    );
    // The document stage ran in this process: its CPU time is measured, and is printed with the
    // corpus stage's.
    let cpu = first
        .stage_cpu_seconds
        .expect("embedded: the stage's CPU time");
    assert!(cpu > 0.0, "{cpu}");
    assert!(first.corpus_cpu_seconds.is_some());
    assert!(text.contains("\ncpu: document stage "), "{text}");
    assert!(text.contains(" cores busy), corpus stage "), "{text}");

    assert_eq!(first.parsed, 1);
    assert!(first.commit.written);

    // Unchanged: not parsed, the part reused whole, nothing written.
    let again = run_index(&stage, &config, &main, &graph);
    assert_eq!(again.parsed, 0);
    assert!(!again.commit.written);
    assert_eq!(again.commit.version, 1);
    assert_eq!(again.parts, first.parts);
    assert_eq!(documents(&config, &graph, &again), first_docs);
    assert_eq!(again.stage.semantic.vectors_computed, 0);
    assert_eq!(again.stage.semantic.vectors_reused, embedded);
    assert_eq!(again.stage.depends.reused, again.stage.depends.units);
    assert_eq!(again.related_edges, None);
    assert!(again.to_string().contains("unchanged"), "{again}");
    assert_eq!(current_version(&graph), "000001");

    // One paragraph edited: only what it changed is summarised and embedded again.
    let text = std::fs::read_to_string(&main).expect("read");
    let start = text.find("\\begin{lemma}").expect("a lemma");
    let edited = format!(
        "{}\nA new remark on the bounds above, with no label.\n\n{}",
        &text[..start],
        &text[start..]
    );
    std::fs::write(&main, edited).expect("write");
    let third = run_index(&stage, &config, &main, &graph);
    assert_eq!((third.parsed, third.commit.version), (1, 2));
    let computed = third.stage.semantic.vectors_computed;
    assert!(computed >= 1, "the new paragraph is embedded");
    assert!(
        computed < embedded / 4,
        "{computed} of {embedded} vectors computed again"
    );
    // The offline judge reads the whole document, so it judges every unit again (cheaper than a
    // lookup); an LLM judge's verdicts would be reused.
    assert_eq!(third.stage.depends.reused, 0);

    // The graph says what built it, so an update after an edit computes the same things.
    let built = built_with(&graph).expect("built with");
    assert_eq!(built.judge, Some(JudgeKind::Learned));
    assert_eq!(built.embedder, Some(EmbedderKind::Hash));
}

/// The files of every table of a graph's current version but `runs`: (table/file, bytes).
fn table_files(graph: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for table in ledger_store::TABLES.iter().filter(|t| **t != "runs") {
        let dir = graph.join("current").join(table);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("table folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let bytes = std::fs::read(dir.join(&name)).expect("table file");
            out.push((format!("{table}/{name}"), bytes));
        }
    }
    out
}

#[test]
fn a_run_after_one_document_changed_writes_one_segment_and_equals_a_cold_run() {
    let config = Config::defaults();
    let stage = Stage::new(settings(&config)).expect("stage");
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(&corpus).expect("mkdir");
    // 48 manuals, each linking to the next one's heading: references across documents.
    let page = |i: usize, extra: &str| {
        format!(
            "# Manual {i}\n\nThe cache of manual {i} keeps every build step.{extra}\n\n## Setup {i}\n\nSee [the next manual](doc-{:02}.md#manual-{}) and [setup](#setup-{i}).\n",
            i + 1,
            i + 1
        )
    };
    for i in 0..48 {
        std::fs::write(corpus.join(format!("doc-{i:02}.md")), page(i, "")).expect("write");
    }
    let graph = dir.path().join("graph");
    run_index(&stage, &config, &corpus, &graph);
    let manifest = |graph: &Path| {
        ledger_store::Manifest::read(&graph.join("current").canonicalize().expect("current"))
            .expect("manifest")
    };
    let first = manifest(&graph);
    assert!(first.segments.len() >= 2, "{:?}", first.segments);
    assert_eq!(first.shared_segments, 0);

    std::fs::write(
        corpus.join("doc-20.md"),
        page(20, " It also keeps the test logs."),
    )
    .expect("edit");
    let report = run_index(&stage, &config, &corpus, &graph);
    assert_eq!((report.parsed, report.commit.version), (1, 2));
    let second = manifest(&graph);
    assert_eq!(second.segments.len(), first.segments.len());
    assert_eq!(second.shared_segments, second.segments.len() - 1);

    // The same tables as a cold run over the changed corpus, file for file, byte for byte.
    let cold = dir.path().join("cold");
    run_index(&stage, &config, &corpus, &cold);
    assert_eq!(manifest(&cold).segments, second.segments);
    let (warm, fresh) = (table_files(&graph), table_files(&cold));
    assert_eq!(
        warm.iter().map(|f| &f.0).collect::<Vec<_>>(),
        fresh.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, a), (_, b)) in warm.iter().zip(&fresh) {
        assert!(a == b, "{name} differs from the cold run's");
    }
}

#[test]
fn the_document_stage_finds_related_edges_in_document_scope_and_the_graph_takes_them_from_the_part()
{
    let config = Config::defaults();
    let stage = Stage::new(settings(&config)).expect("stage");
    let (dir, main) = copy_of_sample();
    let graph = dir.path().join("graph");
    let report = run_index(&stage, &config, &main, &graph);
    let parts = config.store.parts(&graph).expect("part store");
    let key = report.parts.values().next().expect("one part");
    let part = ledger_pipeline::Part::read(&parts, key).expect("part");
    let mut in_part = part.semantic.related.clone();
    assert!(!in_part.is_empty(), "the sample has RELATED pairs");
    let mut in_graph: Vec<ledger_core::Edge> = ledger_store::read_edges(&graph)
        .expect("edges")
        .into_iter()
        .filter(|e| e.kind == ledger_core::EdgeKind::Related)
        .collect();
    let order = |e: &ledger_core::Edge| (e.src_unit.clone(), e.dst_unit.clone());
    in_part.sort_by_key(order);
    in_graph.sort_by_key(order);
    assert_eq!(in_part, in_graph);
    assert_eq!(report.related_edges, Some(in_graph.len()));
}

/// The documents of an index run, read back from their parts.
fn documents(config: &Config, graph: &Path, report: &IndexReport) -> Vec<ledger_core::Document> {
    let parts = config.store.parts(graph).expect("part store");
    ledger_pipeline::corpus::read_documents(&parts, &report.parts).expect("documents")
}

/// What `f` returns, run on a thread of its own; fails the test when it takes longer than
/// `seconds` (a guard against a hang, not the measure).
fn within<T: Send + 'static>(seconds: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(seconds))
        .unwrap_or_else(|_| panic!("no result within {seconds} s"))
}

/// The version `GRAPH/current` points to.
fn current_version(graph: &Path) -> String {
    std::fs::read_link(graph.join("current"))
        .expect("current")
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_rerun_parses_only_documents_whose_inputs_changed() {
    let config = Config::defaults();
    let mut s = settings(&config);
    s.depends.enabled = false;
    s.related.enabled = false;
    let stage = Stage::new(s).expect("stage");
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    let book = corpus.join("book");
    std::fs::create_dir_all(&book).expect("mkdir");
    let write = |path: &Path, text: &str| std::fs::write(path, text).expect("write");
    write(
        &book.join("main.tex"),
        "\\documentclass{book}\n\\begin{document}\n\\input{intro}\n\\input{extra}\n\\end{document}\n",
    );
    write(
        &book.join("intro.tex"),
        "\\section{Intro}\\label{sec:intro}\nText.\n",
    );
    write(
        &corpus.join("notes.md"),
        "# Notes\n\nSee [the guide](guide.md).\n",
    );
    let graph = dir.path().join("graph");
    let first = run_index(&stage, &config, &corpus, &graph);
    assert_eq!((first.parsed, first.commit.version), (2, 1));
    let book_doc = documents(&config, &graph, &first)
        .into_iter()
        .find(|d| d.id.ends_with("main.tex"))
        .expect("book");
    // The missing `extra` was looked for under both names, and recorded so.
    let absent: Vec<&str> = book_doc
        .inputs
        .iter()
        .filter(|i| i.seen == ledger_core::Seen::Absent)
        .map(|i| i.path.as_str())
        .collect();
    assert!(
        absent.iter().any(|p| p.ends_with("extra.tex")),
        "{absent:?}"
    );

    // Nothing changed (a file touched but rewritten with the same bytes counts as unchanged).
    write(
        &book.join("intro.tex"),
        "\\section{Intro}\\label{sec:intro}\nText.\n",
    );
    let again = run_index(&stage, &config, &corpus, &graph);
    assert_eq!(
        (again.parsed, again.commit.version, again.commit.written),
        (0, 1, false)
    );

    // An included file changed: its document is parsed again, the other is not.
    write(
        &book.join("intro.tex"),
        "\\section{Introduction}\\label{sec:intro}\nText.\n",
    );
    let third = run_index(&stage, &config, &corpus, &graph);
    assert_eq!((third.parsed, third.commit.version), (1, 2));
    let book_doc = documents(&config, &graph, &third)
        .into_iter()
        .find(|d| d.id.ends_with("main.tex"))
        .expect("book");
    assert!(
        book_doc
            .units
            .iter()
            .any(|u| u.title.as_deref() == Some("Introduction"))
    );

    // A file the document looked for and did not find now exists: parsed again.
    write(&book.join("extra.tex"), "\\section{Extra}\nMore.\n");
    let fourth = run_index(&stage, &config, &corpus, &graph);
    assert_eq!((fourth.parsed, fourth.commit.version), (1, 3));
    assert!(
        documents(&config, &graph, &fourth)
            .iter()
            .any(|d| d.units.iter().any(|u| u.title.as_deref() == Some("Extra")))
    );

    // A new document: only it is parsed; a removed one leaves the graph.
    write(&corpus.join("guide.md"), "# Guide\n\nHow to.\n");
    let fifth = run_index(&stage, &config, &corpus, &graph);
    assert_eq!((fifth.parsed, fifth.documents), (1, 3));
    std::fs::remove_file(corpus.join("guide.md")).expect("rm");
    let sixth = run_index(&stage, &config, &corpus, &graph);
    assert_eq!((sixth.parsed, sixth.documents), (0, 2));
    assert!(sixth.commit.written, "a removed document changes the graph");

    // RELATED settings while RELATED is off: nothing parsed, but a new version written (the
    // corpus key holds them).
    let mut other = settings(&config);
    other.depends.enabled = false;
    other.related.enabled = false;
    other.related.theta = 0.9;
    let seventh = run_index(&Stage::new(other).expect("stage"), &config, &corpus, &graph);
    assert_eq!(seventh.parsed, 0);
    assert!(seventh.commit.written);

    // RELATED on, then another θ: in document scope the document stage finds RELATED edges, so
    // every document goes through it again, with its previous part as cache.
    let mut on = settings(&config);
    on.depends.enabled = false;
    let eighth = run_index(
        &Stage::new(on.clone()).expect("stage"),
        &config,
        &corpus,
        &graph,
    );
    assert_eq!(eighth.parsed, 2);
    on.related.theta = 0.9;
    let ninth = run_index(&Stage::new(on).expect("stage"), &config, &corpus, &graph);
    assert_eq!(ninth.parsed, 2);
    assert!(ninth.commit.written);
    assert_eq!(ninth.stage.semantic.vectors_computed, 0);
    assert!(ninth.related_edges <= eighth.related_edges);
    let related = ledger_store::read_edges(&graph).expect("edges");
    assert!(
        related
            .iter()
            .filter(|e| e.kind == ledger_core::EdgeKind::Related)
            .all(|e| e.score > 0.9)
    );
}

#[test]
fn an_edit_plan_writes_nothing_until_verified_and_committed() {
    let (_dir, main) = copy_of_sample();
    let inputs = [main.parent().expect("folder").to_path_buf()];
    let before = std::fs::read_to_string(&main).expect("read");
    let sources = ledger_edit::Sources::read(&inputs).expect("sources");
    let (checked, replacements) =
        ledger_edit::plan_relabel(&sources, "lem:1", "lem:first").expect("plan");
    assert!(replacements >= 2, "the label and its references");
    assert!(checked.findings.is_empty(), "{:?}", checked.findings);
    assert!(
        checked
            .diff(&sources)
            .contains("+\\begin{lemma}\\label{lem:first}")
    );
    assert_eq!(std::fs::read_to_string(&main).expect("read"), before);

    let dry = ledger_edit::write_checked(&sources, checked, true, &[]).expect("dry run");
    assert_eq!(dry, ledger_edit::Written::DryRun);
    assert_eq!(std::fs::read_to_string(&main).expect("read"), before);

    let (checked, _) = ledger_edit::plan_relabel(&sources, "lem:1", "lem:first").expect("plan");
    let written = ledger_edit::write_checked(&sources, checked, false, &[]).expect("write");
    assert!(
        matches!(written, ledger_edit::Written::Committed(_)),
        "{written:?}"
    );
    let after = std::fs::read_to_string(&main).expect("read");
    assert!(after.contains("\\label{lem:first}") && !after.contains("{lem:1}"));

    let restored = ledger_edit::undo_last(&inputs[0]).expect("undo");
    assert_eq!(restored.len(), 1);
    assert_eq!(std::fs::read_to_string(&main).expect("read"), before);
}

#[test]
fn a_refused_edit_is_reported_and_not_written() {
    let (_dir, main) = copy_of_sample();
    let inputs = [main.parent().expect("folder").to_path_buf()];
    let before = std::fs::read_to_string(&main).expect("read");
    let sources = ledger_edit::Sources::read(&inputs).expect("sources");
    // Delete a referenced lemma: its references break, so verification refuses it.
    let at = ledger_edit::find_unit(&sources.docs, None, "lem:1").expect("lemma");
    let plan = ledger_edit::plan_structural(&sources, &ledger_edit::Op::Delete { unit: at })
        .expect("plan");
    assert!(
        plan.checked
            .findings
            .iter()
            .any(|f| f.kind == ledger_edit::FindingKind::DeletedTarget),
        "{:?}",
        plan.checked.findings
    );
    let written = ledger_edit::write_checked(&sources, plan.checked, false, &[]).expect("write");
    assert!(written.refused());
    assert_eq!(std::fs::read_to_string(&main).expect("read"), before);
}

#[test]
fn summaries_of_a_document_with_many_sections_cost_linear_time() {
    // Each section's summary reads its first paragraphs: once a scan of the whole document per
    // section (quadratic), now an index built once. The timeout guards against a hang only.
    let case = ledger_parse::throughput::Pathological::ManySections;
    let sections = case.size();
    let (_, text) = case.document(sections);
    let dir = tempfile::tempdir().expect("tempdir");
    let main = dir.path().join("main.tex");
    std::fs::write(&main, text).expect("write");
    let config = Config::defaults();
    let mut s = settings(&config);
    s.depends.enabled = false;
    let part = within(300, move || {
        let stage = Stage::new(s).expect("stage");
        let source = ledger_parse::Source {
            id: "main".into(),
            path: main,
            format: ledger_core::Format::Latex,
            root: None,
        };
        let doc = stage.parse(&source);
        stage
            .process(doc, None, &ledger_pipeline::Quiet)
            .map(|(part, _)| part)
    })
    .expect("the document stage succeeds");
    let summaries = part
        .semantic
        .embeddings
        .iter()
        .filter(|e| e.unit_id.starts_with("sec-") && !e.unit_id.contains('/'))
        .count();
    assert_eq!(summaries, sections);
    drop(dir);
}

#[test]
fn similar_headings_get_at_most_k_related_edges_each() {
    // 10,000 headings alike, each with a paragraph alike: once every pair above θ (50 million
    // edges; the kernel killed the run at 24 GB), now at most k per unit. The timeout guards
    // against a hang only.
    let case = ledger_parse::throughput::Pathological::SimilarHeadings;
    let n = case.size();
    let (name, text) = case.document(n);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("manual");
    std::fs::create_dir_all(&input).expect("mkdir");
    std::fs::write(input.join(name), text).expect("write");
    let config = Config::defaults();
    let k = config.related.k;
    let mut s = settings(&config);
    s.depends.enabled = false;
    let graph = dir.path().join("graph");
    let report = within(600, move || {
        let stage = Stage::new(s).expect("stage");
        run_index(&stage, &config, &input, &graph)
    });
    let edges = report.related_edges.expect("RELATED computed");
    let units = report.embeddings.0;
    assert!(units >= 2 * n, "{units} embedded units");
    // Alike units have k neighbours above θ each: most units end with k edges.
    assert!(
        edges > units * k / 4,
        "{edges} RELATED edges for {units} units"
    );
    assert!(
        edges <= units * k / 2,
        "{edges} RELATED edges for {units} units"
    );
    let graph = dir.path().join("graph");
    let mut degree = std::collections::HashMap::<String, usize>::new();
    for e in ledger_store::read_edges(&graph).expect("edges") {
        if e.kind == ledger_core::EdgeKind::Related {
            *degree.entry(e.src_unit).or_default() += 1;
            *degree.entry(e.dst_unit).or_default() += 1;
        }
    }
    let most = degree.values().max().copied().unwrap_or(0);
    assert!(most <= k, "a unit has {most} RELATED edges (k = {k})");
}

/// The DEPENDS edges of the graph at `graph`, with their scores.
fn depends_edges(graph: &Path) -> Vec<(String, String, String)> {
    ledger_store::read_edges(graph)
        .expect("edges")
        .into_iter()
        .filter(|e| e.kind == ledger_core::EdgeKind::Depends)
        .map(|e| (e.src_unit, e.dst_unit, format!("{:.6}", e.score)))
        .collect()
}

#[test]
fn the_judge_and_its_threshold_travel_with_the_edges() {
    let (dir, main) = copy_of_sample();
    let config = Config::defaults();
    let graph = dir.path().join("graph");
    let own = Stage::new(settings(&config)).expect("stage");
    run_index(&own, &config, &main, &graph);
    assert_eq!(
        built_with(&graph).expect("built").threshold,
        Some(0.0),
        "the model's own"
    );

    // A rerun at another threshold reuses no part: its edges are a cold run's at that threshold.
    let mut strict = settings(&config);
    strict.depends.threshold = 0.9;
    let strict = Stage::new(strict).expect("stage");
    assert_ne!(own.fingerprint(), strict.fingerprint());
    let rerun = run_index(&strict, &config, &main, &graph);
    assert_eq!(rerun.parsed, 1, "the document is judged again");
    let cold = dir.path().join("cold");
    run_index(&strict, &config, &main, &cold);
    assert_eq!(depends_edges(&graph), depends_edges(&cold));
    let built = built_with(&graph).expect("built");
    assert_eq!(
        (built.judge, built.threshold),
        (Some(JudgeKind::Learned), Some(0.9))
    );
    let judges: std::collections::BTreeSet<String> = ledger_store::read_judgments(&graph)
        .expect("judgments")
        .into_iter()
        .map(|(_, j)| j.judge)
        .collect();
    assert_eq!(judges.len(), 1, "{judges:?}");
    assert!(judges.iter().all(|j| j.ends_with("@0.9")), "{judges:?}");

    // The rules judge is named so in the graph, and read back as itself.
    let mut rules = settings(&config);
    rules.depends.judge = JudgeKind::Rules;
    let rules_graph = dir.path().join("rules");
    run_index(
        &Stage::new(rules).expect("stage"),
        &config,
        &main,
        &rules_graph,
    );
    assert_eq!(
        built_with(&rules_graph).expect("built").judge,
        Some(JudgeKind::Rules)
    );
}

#[test]
fn verify_one_document_at_a_time_finds_what_the_whole_corpus_resolves() {
    // Two Markdown files and two LaTeX documents linked across: `verify` holds one document at a
    // time and what references need of the others, and must find what resolving the whole
    // corpus at once finds.
    let dir = tempfile::tempdir().expect("tempdir");
    let write =
        |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write(
        "a.md",
        "# A\n\nSee [part two](b.md#part-two), [nothing](b.md#nope) and [gone](c.md).\n",
    );
    write("b.md", "# B\n\n## Part two\n\nBack to [A](a.md#a).\n");
    write(
        "main.tex",
        "\\documentclass{article}\n\\usepackage{xr}\n\\externaldocument[O-]{other}\n\\begin{document}\n\\section{M}\\label{sec:m}\nSee \\ref{O-sec:o}, \\ref{O-sec:none} and \\ref{sec:m}.\n\\end{document}\n",
    );
    write(
        "other.tex",
        "\\documentclass{article}\n\\begin{document}\n\\section{O}\\label{sec:o}\nText.\n\\end{document}\n",
    );
    let config = Config::defaults();
    let paths = [dir.path().to_path_buf()];
    let mut whole = ledger_pipeline::index::load(&paths, &config.index, &Quiet).expect("load");
    ledger_parse::resolve_corpus(&mut whole.docs);
    let mut expected: Vec<(String, usize, usize)> = whole
        .docs
        .iter()
        .flat_map(|d| {
            d.mentions
                .iter()
                .filter(|m| matches!(m.resolution, ledger_core::Resolution::Broken { .. }))
                .map(|m| (d.files[m.file].clone(), m.line, m.col))
        })
        .collect();
    let report =
        ledger_pipeline::verify::verify(&paths, &config.index, &config.verify, &Default::default())
            .expect("verify");
    let mut found: Vec<(String, usize, usize)> = report
        .findings
        .iter()
        .filter(|f| f.rule == "broken-reference")
        .map(|f| (f.path.clone(), f.line, f.col))
        .collect();
    expected.sort();
    found.sort();
    assert_eq!(found, expected);
    let messages: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(report.broken, 3, "{messages:?}");
    for broken in ["b.md#nope", "c.md", "O-sec:none"] {
        assert!(
            messages.iter().any(|m| m.contains(broken)),
            "{broken}: {messages:?}"
        );
    }
    for resolved in ["part-two", "O-sec:o", "a.md#a"] {
        assert!(
            !messages.iter().any(|m| m.contains(resolved)),
            "{resolved}: {messages:?}"
        );
    }
    assert_eq!(report.documents, whole.docs.len());
    assert_eq!(
        report.mentions,
        whole.docs.iter().map(|d| d.mentions.len()).sum::<usize>()
    );
}

/// RELATED pairs (θ = 0.7, at most 10 per unit, as `[related]`'s defaults) over `vectors`.
fn related_pairs(vectors: &[Vec<f32>]) -> std::collections::HashSet<(usize, usize)> {
    let near = ledger_embed::exact_neighbours(vectors, 0.7, 10, &ledger_embed::skip_none);
    ledger_embed::bounded_pairs(&near, 10)
        .into_iter()
        .map(|(i, j, _)| (i, j))
        .collect()
}

/// Vectors are stored as int8 with a scale per vector and RELATED is found over them, as a
/// rerun reads them back: on the units of two bundled corpora (a book and a paper, by other
/// authors), with the hashing embedder and with MiniLM where installed (CI requires it), RELATED
/// over the stored vectors must find the same pairs as over full precision for at least 0.99 of
/// the pairs either finds.
#[test]
fn related_over_stored_vectors_keeps_the_pairs_of_full_precision() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let (sources, _) = ledger_parse::discover(&[
        root.join("hott-book"),
        root.join("paper-equational-theories"),
    ]);
    let texts: Vec<String> = sources
        .iter()
        .flat_map(|s| ledger_parse::parse(s, None).units)
        .filter(|u| u.kind != ledger_core::UnitKind::Document && !u.text.trim().is_empty())
        .map(|u| u.text)
        .collect();
    assert!(texts.len() > 2000, "{} units", texts.len());
    // Each embedder with how many units it embeds and how many bytes of each: MiniLM in a debug
    // build embeds some ten units a second, so it gets the first 1,200, each cut to its first
    // 400 bytes (a summary's length).
    let mut embedders: Vec<(Box<dyn ledger_embed::Embedder>, usize, usize)> = vec![(
        Box::new(ledger_embed::HashingEmbedder),
        texts.len(),
        usize::MAX,
    )];
    let minilm = ledger_embed::minilm::default_dir();
    if ledger_embed::minilm::is_installed(&minilm) {
        let model = ledger_embed::MiniLm::load(&minilm).expect("MiniLM loads");
        embedders.push((Box::new(model), 1200, 400));
    } else {
        assert!(
            std::env::var("LEDGER_REQUIRE_MINILM").as_deref() != Ok("1"),
            "LEDGER_REQUIRE_MINILM=1 but {} lacks the weights",
            minilm.display()
        );
    }
    for (embedder, units, bytes) in &embedders {
        let texts: Vec<&str> = texts
            .iter()
            .take(*units)
            .map(|t| &t[..t.floor_char_boundary(*bytes)])
            .collect();
        let full = embedder.embed(&texts).expect("embeds");
        let stored: Vec<Vec<f32>> = full
            .iter()
            .map(|v| ledger_core::quantize::as_stored(v))
            .collect();
        let (a, b) = (related_pairs(&full), related_pairs(&stored));
        let same = a.intersection(&b).count();
        let either = a.union(&b).count();
        assert!(either >= 200, "{}: {either} pairs", embedder.model());
        let agreement = same as f64 / either as f64;
        eprintln!(
            "{}: {} units, {either} RELATED pairs, {same} found by both: {agreement:.4}",
            embedder.model(),
            texts.len()
        );
        assert!(agreement >= 0.99, "{}: {agreement}", embedder.model());
    }
}
