//! End-to-end tests of the `ledger` binary: index, sql, verify, configuration, and the Parquet
//! files read by pyarrow and DuckDB as they are.

mod concurrency;
mod copy_dir;
mod distributed;
mod edits;
mod judge;
mod limits;
mod security;
#[path = "../../../llm/tests/it/server.rs"]
#[allow(dead_code)]
mod server;
#[path = "../../../llm/tests/it/tls.rs"]
#[allow(dead_code)]
mod tls;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `ledger`. Tests use the offline hashing embedder unless they name one with `--embedder`
/// (MiniLM, the default when installed, has its own test).
fn ledger(args: &[&str]) -> Output {
    ledger_in(Path::new("."), args)
}

/// [`ledger`] in the working folder `cwd`.
fn ledger_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args(args)
        .current_dir(cwd)
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_EMBED_EMBEDDER", "hash")
        .output()
        .expect("ledger runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

use copy_dir::copy_dir;

fn corpora() -> PathBuf {
    let dir = std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("datasets"));
    assert!(
        dir.join("README.md").is_file(),
        "real corpora not found at {}",
        dir.display()
    );
    dir
}

/// `dir/graph`: the carleson paper indexed without RELATED edges, the graph the SQL tests query.
fn carleson_graph(dir: &Path) -> PathBuf {
    let graph = dir.join("graph");
    index_into(
        &root().join("datasets/paper-carleson-lean"),
        &graph,
        &["--no-related"],
    );
    graph
}

/// `ledger index INPUT --out OUT EXTRA...`, checked to succeed.
fn index_into(input: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "index",
        input.to_str().expect("utf8"),
        "--out",
        out.to_str().expect("utf8"),
    ];
    args.extend_from_slice(extra);
    let o = ledger(&args);
    assert!(
        o.status.success(),
        "index failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The real corpora bundled in `datasets/` that most tests leave out: indexed whole they take
/// minutes (MiniLM, a debug build); the tests that need them name them.
const BIG_CORPORA: [&str; 5] = [
    "cargo-book",
    "carleson-blueprint",
    "hott-book",
    "paper-sympy",
    "rust-book",
];

/// `datasets/` copied to `to`, without [`BIG_CORPORA`], without what is not a document (git
/// bundles, `.aux` ground truth) and without the folders `skip` names (relative to `datasets/`).
fn copy_datasets(to: &Path, skip: &[&str]) -> PathBuf {
    let from = root().join("datasets");
    let left_out = |rel: &Path| {
        BIG_CORPORA
            .iter()
            .chain(&["edit-history", "ground-truth"])
            .chain(skip)
            .any(|f| rel.starts_with(f))
    };
    let mut dirs = vec![from.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = e.path();
            let rel = path.strip_prefix(&from).expect("under datasets");
            if left_out(rel) {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                let target = to.join(rel);
                std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
                std::fs::copy(&path, &target).expect("copy");
            }
        }
    }
    to.to_path_buf()
}

/// [`copy_datasets`] to `parent/datasets`, so that document ids stay `datasets/…`.
fn small_datasets(parent: &Path) -> PathBuf {
    copy_datasets(&parent.join("datasets"), &[])
}

/// Indexes [`small_datasets`] (copied beside `out`) into `out`.
fn index(out: &Path) -> Output {
    let parent = out.parent().expect("the graph has a parent folder");
    index_into(&small_datasets(parent), out, &[])
}

/// `ledger sql --format json` on a graph; the rows as JSON.
fn sql(graph: &Path, query: &str) -> serde_json::Value {
    let o = ledger(&[
        "sql",
        "--graph",
        graph.to_str().expect("utf8"),
        "--format",
        "json",
        query,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&stdout(&o)).expect("json output")
}

#[test]
fn index_then_sql_on_the_bundled_datasets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    let o = index(&graph);
    let summary = stdout(&o);
    // Two LaTeX papers, two generated documents (LaTeX, Markdown), three verbatim, two
    // sub-float, one display, twenty class, three encoding and five paper fixtures, and the
    // folder's README.md.
    assert!(summary.contains("documents: 39"), "{summary}");
    // The two warnings: the stray byte of the encoding fixture, and the manual whose examples
    // are whole documents in an environment it does not define.
    assert!(summary.contains("diagnostics: 2 warnings"), "{summary}");
    // The summary's edges line counts what the edges table holds, every kind.
    let edges = sql(
        &graph,
        "SELECT kind, COUNT(*) AS n FROM edges GROUP BY kind ORDER BY kind",
    );
    let count = |kind: &str| {
        edges
            .as_array()
            .expect("array")
            .iter()
            .find(|r| r["kind"] == kind)
            .map_or(0, |r| r["n"].as_u64().expect("count"))
    };
    let line = format!(
        "edges: CONTAINS {}, REFERENCES {}, DEPENDS {} (",
        count("CONTAINS"),
        count("REFERENCES"),
        count("DEPENDS")
    );
    assert!(summary.contains(&line), "{line} in {summary}");
    assert!(
        summary.contains(&format!("judged), RELATED {}\n", count("RELATED"))),
        "{summary}"
    );
    let rows = sql(
        &graph,
        "SELECT kind, COUNT(*) AS n FROM units GROUP BY kind ORDER BY kind",
    );
    let theorems = rows
        .as_array()
        .expect("array")
        .iter()
        .find(|r| r["kind"] == "theorem")
        .expect("theorem row");
    assert!(theorems["n"].as_i64().expect("count") >= 34);
    // Broken references are the carleson paper's own (it cites another work's sections) and the
    // one the whole-document manual fixture holds on purpose; the generated documents and the
    // folder's README have none.
    let broken = sql(
        &graph,
        "SELECT doc_id, COUNT(*) AS n FROM broken_references GROUP BY doc_id ORDER BY doc_id",
    );
    let docs: Vec<&str> = broken
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["doc_id"].as_str())
        .collect();
    assert_eq!(
        docs,
        [
            "datasets/latex-features/verbatim-whole-document/main.tex",
            "datasets/paper-carleson-lean/main.tex"
        ],
        "{broken}"
    );
    // The configured output format comes from the environment when no flag is given.
    let o = Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args([
            "sql",
            "--graph",
            graph.to_str().expect("utf8"),
            "SELECT COUNT(*) AS n FROM broken_references",
        ])
        .env("LEDGER_SQL_FORMAT", "csv")
        .output()
        .expect("runs");
    assert!(
        stdout(&o).starts_with("n\n"),
        "csv header expected: {}",
        stdout(&o)
    );
    // Bad SQL: a clear error and exit code 2, no panic.
    let o = ledger(&[
        "sql",
        "--graph",
        graph.to_str().expect("utf8"),
        "SELECT nope FROM units",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("error:"));
}

#[test]
fn verify_reports_broken_references_like_a_linter() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("a.tex"),
        "\\documentclass{article}\n\\begin{document}\n\\section{A}\\label{sec:a}\nSee \\ref{sec:a} and \\ref{sec:missing}.\n\\end{document}\n",
    )
    .expect("write");
    let o = ledger(&["verify", dir.path().to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(1), "broken reference fails the check");
    let out = stdout(&o);
    assert!(
        out.contains("a.tex:4:21: error: broken reference `\\ref{sec:missing}`"),
        "{out}"
    );
    assert!(
        !out.contains("sec:a`"),
        "resolved references are not reported: {out}"
    );
    std::fs::write(dir.path().join("a.tex"), "\\documentclass{article}\n\\begin{document}\n\\section{A}\\label{sec:a}\nSee \\ref{sec:a}.\n\\end{document}\n")
        .expect("write");
    assert_eq!(
        ledger(&["verify", dir.path().to_str().expect("utf8")])
            .status
            .code(),
        Some(0)
    );
    // A document that cannot be read fails the check, even with --no-diagnostics.
    std::fs::write(dir.path().join("b.tex"), b"\\documentclass{article}\0\0").expect("write");
    let o = ledger(&[
        "verify",
        dir.path().to_str().expect("utf8"),
        "--no-diagnostics",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("b.tex:0:1: error: binary file"),
        "{}",
        stdout(&o)
    );
    // A range with a broken end: one finding per place, with every number it misses.
    std::fs::remove_file(dir.path().join("b.tex")).expect("rm");
    std::fs::write(
        dir.path().join("a.tex"),
        "\\documentclass{article}\n\\begin{document}\n\\section{A}\n\\section{B}\n\\section{C}\nSee Sections 2 through 7.\n\\end{document}\n",
    )
    .expect("write");
    let o = ledger(&["verify", dir.path().to_str().expect("utf8")]);
    let out = stdout(&o);
    let range: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("`2 through 7`"))
        .collect();
    assert_eq!(range.len(), 1, "{out}");
    for n in ["4", "5", "6"] {
        assert!(
            range[0].contains(&format!("no section numbered {n} ")),
            "{out}"
        );
    }
    assert_eq!(out.lines().count(), 2, "the range and its end `7`: {out}");
    // An input that is not there is a usage error.
    let o = ledger(&["verify", "/definitely/not/here"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such file or folder"));
}

#[test]
fn verify_speaks_json_sarif_and_github_and_honours_suppressions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("notes")).expect("mkdir");
    let tex = "\\documentclass{article}\n\\begin{document}\n\\section{A}\\label{sec:a}\n\
               See \\ref{sec:gone}.\n\
               % ledger-ignore: broken-reference\n\
               See \\ref{sec:documented}.\n\
               See \\ref{sec:too}. % ledger-ignore\n\
               \\end{document}\n";
    std::fs::write(docs.join("paper.tex"), tex).expect("write");
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\nSee [there](#nowhere).\n\n<!-- ledger-ignore: broken-reference -->\nA link [like this](#anchor) shows the syntax.\n",
    )
    .expect("write");
    std::fs::write(docs.join("notes/draft.md"), "# Draft\n\n[later](#todo)\n").expect("write");
    let d = docs.to_str().expect("utf8");
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", d];
        args.extend_from_slice(extra);
        ledger(&args)
    };
    // Text: the three findings no comment silences.
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 3, "{text}");
    for gone in ["sec:gone", "#nowhere", "#todo"] {
        assert!(text.contains(gone), "{gone}: {text}");
    }
    assert!(String::from_utf8_lossy(&o.stderr).contains("(3 suppressed)"));
    // JSON: one object per finding.
    let o = verify(&["--format", "json"]);
    let json = stdout(&o);
    let rows: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        for key in ["file", "line", "column", "rule", "message", "severity"] {
            assert!(!r[key].is_null(), "{key} in {r}");
        }
        assert_eq!(r["rule"], "broken-reference");
        assert_eq!(r["severity"], "error");
    }
    // SARIF 2.1.0: one run, the rules named, every result located.
    let o = verify(&["--format", "sarif"]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "ledger");
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    for r in results {
        assert!(rules.contains(&r["ruleId"].as_str().expect("ruleId")));
        let at = &r["locations"][0]["physicalLocation"];
        assert!(at["artifactLocation"]["uri"].as_str().is_some());
        assert!(at["region"]["startLine"].as_u64().unwrap_or(0) >= 1, "{r}");
    }
    // GitHub annotations.
    let o = verify(&["--format", "github"]);
    let annotations = stdout(&o);
    assert!(
        annotations
            .lines()
            .all(|l| l.starts_with("::error file=") && l.contains(",line=") && l.contains("::")),
        "{annotations}"
    );
    // A .ledgerignore leaves out a folder; a baseline leaves out what is known.
    std::fs::write(docs.join(".ledgerignore"), "# drafts\nnotes/\n").expect("write");
    let o = verify(&["--format", "json"]);
    assert_eq!(stdout(&o).lines().count(), 2, "{}", stdout(&o));
    let baseline = dir.path().join("baseline.json");
    std::fs::write(&baseline, stdout(&o)).expect("write");
    // The known findings move down a line: still known.
    std::fs::write(docs.join("paper.tex"), format!("% moved\n{tex}")).expect("write");
    let o = verify(&["--baseline", baseline.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(stdout(&o), "");
    // A new one is reported.
    std::fs::write(
        docs.join("paper.tex"),
        tex.replace("\\end{document}", "And \\ref{sec:new}.\n\\end{document}"),
    )
    .expect("write");
    let o = verify(&["--baseline", baseline.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("sec:new") && stdout(&o).lines().count() == 1,
        "{}",
        stdout(&o)
    );
}

#[test]
fn discovery_honours_gitignore_exclude_globs_and_the_project_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("manual");
    for sub in ["build", "drafts", "old"] {
        std::fs::create_dir_all(docs.join(sub)).expect("mkdir");
    }
    for f in [
        "intro.md",
        "build/out.md",
        "drafts/next.md",
        "old/v1.md",
        "notes.draft.md",
    ] {
        std::fs::write(docs.join(f), "# Title\n\nSee [nowhere](#nowhere).\n").expect("write");
    }
    std::fs::write(docs.join(".gitignore"), "build/\n").expect("write");
    let d = docs.to_str().expect("utf8");
    let files = |o: &Output| -> Vec<String> {
        let mut v: Vec<String> = stdout(o)
            .lines()
            .filter_map(|l| l.split(':').next())
            .map(|p| p.trim_start_matches(d).trim_start_matches('/').to_string())
            .collect();
        v.sort();
        v
    };
    // .gitignore is honoured without a git repository.
    let o = ledger(&["verify", d]);
    assert_eq!(
        files(&o),
        ["drafts/next.md", "intro.md", "notes.draft.md", "old/v1.md"]
    );
    let o = ledger(&[
        "verify",
        d,
        "--exclude",
        "drafts/",
        "--exclude",
        "*.draft.md",
    ]);
    assert_eq!(files(&o), ["intro.md", "old/v1.md"]);
    // A project's ledger.toml, found upward from the inputs, adds its own.
    std::fs::write(
        dir.path().join("ledger.toml"),
        "[index]\nexclude = [\"old/\"]\n",
    )
    .expect("write");
    let o = ledger(&["verify", d, "--exclude", "drafts/"]);
    assert_eq!(files(&o), ["intro.md", "notes.draft.md"]);
    // A file named as an input is read whatever excludes it.
    let o = ledger(&["verify", &format!("{d}/build/out.md")]);
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    // Index takes the same flag.
    let graph = dir.path().join("graph");
    index_into(&docs, &graph, &["--exclude", "drafts/"]);
    let n = sql(&graph, "SELECT count(*) AS n FROM documents");
    assert_eq!(n[0]["n"], 2, "intro.md and notes.draft.md");
}

#[test]
fn verify_rust_book_reports_missing_includes_without_failing() {
    let o = ledger(&[
        "verify",
        corpora().join("rust-book").to_str().expect("utf8"),
    ]);
    let out = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let missing = out
        .lines()
        .filter(|l| l.contains(": warning: {{#") && l.contains("not found"))
        .count();
    assert!(missing >= 600, "{missing} missing-include warnings");
}

#[test]
fn parquet_tables_read_as_they_are_in_pyarrow_and_duckdb() {
    let required = std::env::var("LEDGER_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
    let probe = Command::new("python3")
        .args(["-c", "import pyarrow, duckdb"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        assert!(
            !required,
            "LEDGER_REQUIRE_PYTHON=1 but python3 with pyarrow and duckdb is missing"
        );
        eprintln!(
            "skipped: python3 with pyarrow and duckdb not installed (CI installs them and sets LEDGER_REQUIRE_PYTHON=1)"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    index(&graph);
    let o = ledger(&[
        "sql",
        "--graph",
        graph.to_str().expect("utf8"),
        "--format",
        "csv",
        "SELECT COUNT(*) AS n FROM units",
    ]);
    let expected: i64 = stdout(&o)
        .lines()
        .nth(1)
        .expect("a row")
        .trim()
        .parse()
        .expect("a count");
    let script = r#"
import sys, pyarrow.parquet as pq, duckdb
g = sys.argv[1] + "/current/"
t = pq.read_table(g + "units")
d = duckdb.sql(f"SELECT COUNT(*) FROM '{g}units/*.parquet'").fetchall()[0][0]
e = duckdb.sql(f"SELECT COUNT(*) FROM '{g}edges/*.parquet' WHERE kind = 'REFERENCES'").fetchall()[0][0]
# Vectors are int8 with a scale each: vector[i] * scale is the L2-normalised embedding.
v = pq.read_table(g + "embeddings").schema.field("vector").type
assert str(v.value_type) == "int8" and v.list_size > 0, v
lo, hi = duckdb.sql(f"SELECT MIN(n), MAX(n) FROM (SELECT list_sum(list_transform(vector, lambda x: (x * scale) * (x * scale))) AS n FROM '{g}embeddings/*.parquet')").fetchall()[0]
assert 0.98 < lo <= hi < 1.02, (lo, hi)
print(t.num_rows, d, e)
"#;
    let o = Command::new("python3")
        .args(["-c", script, graph.to_str().expect("utf8")])
        .output()
        .expect("python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let nums: Vec<i64> = stdout(&o)
        .split_whitespace()
        .map(|x| x.parse().expect("number"))
        .collect();
    assert_eq!(nums[0], expected);
    assert_eq!(nums[1], expected);
    assert!(nums[2] > 100);
}

#[test]
fn index_refuses_missing_inputs_and_keeps_the_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    index(&graph);
    let before = std::fs::read_link(graph.join("current")).expect("current version");
    let o = ledger(&[
        "index",
        "/definitely/not/here",
        "--out",
        graph.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("/definitely/not/here:0: error: no such file or folder")
    );
    assert_eq!(
        std::fs::read_link(graph.join("current")).expect("current version"),
        before,
        "the graph is untouched"
    );
}

#[test]
fn related_edges_embeddings_and_similar() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    index(&graph);
    let g = graph.to_str().expect("utf8");
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "--format",
        "csv",
        "SELECT COUNT(*) AS n, MIN(score) AS lo FROM edges WHERE kind = 'RELATED'",
    ]);
    let row = stdout(&o).lines().nth(1).expect("a row").to_string();
    let (n, lo) = row.split_once(',').expect("two columns");
    assert!(n.parse::<i64>().expect("count") > 0, "{row}");
    assert!(lo.parse::<f64>().expect("score") > 0.7, "{row}");
    // RELATED never duplicates a pair that another edge already links.
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "--format",
        "csv",
        "SELECT COUNT(*) AS n FROM edges r JOIN edges o ON o.kind <> 'RELATED' AND r.kind = 'RELATED' \
         AND ((o.src_unit = r.src_unit AND o.dst_unit = r.dst_unit) OR (o.src_unit = r.dst_unit AND o.dst_unit = r.src_unit)) \
         AND o.src_doc = r.src_doc AND o.dst_doc = r.dst_doc",
    ]);
    assert_eq!(stdout(&o).lines().nth(1), Some("0"));
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "--format",
        "csv",
        "SELECT COUNT(DISTINCT model) AS m, MIN(arrow_typeof(vector)) AS t FROM embeddings",
    ]);
    let out = stdout(&o);
    assert!(
        out.contains("1,FixedSizeList(384 x non-null Int8)"),
        "{out}"
    );
    // `similar` ranks by cosine, best first.
    let o = ledger(&[
        "similar",
        "--graph",
        g,
        "--doc",
        "datasets/paper-equational-theories/main.tex",
        "fig:854",
        "-k",
        "3",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let scores: Vec<f64> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| {
            l.split_whitespace()
                .next()
                .expect("score")
                .parse()
                .expect("number")
        })
        .collect();
    assert_eq!(scores.len(), 3);
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // `--doc` takes any path to the document, as the other commands do: the file from another
    // working folder, or the folder holding it.
    let paper = dir.path().join("datasets/paper-equational-theories");
    for named in [paper.join("main.tex"), paper.clone()] {
        let by_path = ledger_in(
            dir.path(),
            &[
                "similar",
                "--graph",
                g,
                "--doc",
                named.to_str().expect("utf8"),
            ]
            .into_iter()
            .chain(["fig:854", "-k", "3"])
            .collect::<Vec<_>>(),
        );
        assert!(
            by_path.status.success(),
            "{}",
            String::from_utf8_lossy(&by_path.stderr)
        );
        assert_eq!(stdout(&by_path), stdout(&o));
    }
}

/// The `cache:` line of `ledger index` as (summaries reused, vectors reused, summaries written,
/// vectors computed).
fn cache_line(out: &str) -> (usize, usize, usize, usize) {
    let line = out
        .lines()
        .find(|l| l.starts_with("cache: "))
        .unwrap_or_else(|| panic!("no cache line in {out}"));
    let n: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1], n[2], n[3])
}

#[test]
fn a_rerun_embeds_only_changed_units() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = dir.path().join("paper");
    std::fs::create_dir(&doc).expect("mkdir");
    let src = root().join("datasets/paper-carleson-lean");
    for f in ["main.tex", "references.bib"] {
        std::fs::copy(src.join(f), doc.join(f)).expect("copy");
    }
    let graph = dir.path().join("graph");
    let run = || {
        let o = ledger(&[
            "index",
            doc.to_str().expect("utf8"),
            "--out",
            graph.to_str().expect("utf8"),
            "--no-progress",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        cache_line(&stdout(&o))
    };
    let (s_reused, v_reused, written, computed) = run();
    assert_eq!((s_reused, v_reused), (0, 0));
    assert!(written > 100 && computed > 100, "{written} {computed}");
    // Unchanged: everything comes from the previous version.
    let (s_reused, v_reused, written2, computed2) = run();
    assert_eq!((written2, computed2), (0, 0));
    assert_eq!(s_reused, written);
    assert_eq!(v_reused, computed);
    // One paragraph edited: its summary and vector are recomputed, and the section that
    // summarises its first paragraphs; nothing else.
    let main = doc.join("main.tex");
    let text = std::fs::read_to_string(&main).expect("read");
    let needle = "\\section{Introduction}\\label{sec:intro}";
    let at = text.find(needle).expect("an introduction") + needle.len();
    let edited = format!(
        "{}\n\nThe Carleson operator controls the pointwise convergence of Fourier series almost everywhere.\n{}",
        &text[..at],
        &text[at..]
    );
    std::fs::write(&main, edited).expect("write");
    let (_, _, written3, computed3) = run();
    assert!(
        (1..=3).contains(&written3),
        "{written3} summaries rewritten"
    );
    assert!((1..=3).contains(&computed3), "{computed3} vectors computed");
}

/// The MiniLM weights folder the binary will use, or `None` (an error when CI requires them).
fn minilm_installed() -> bool {
    let o = ledger(&["models", "path"]);
    let dir = PathBuf::from(stdout(&o).trim());
    let ok = ["config.json", "tokenizer.json", "model.safetensors"]
        .iter()
        .all(|f| dir.join(f).is_file());
    assert!(
        ok || std::env::var("LEDGER_REQUIRE_MINILM").as_deref() != Ok("1"),
        "LEDGER_REQUIRE_MINILM=1 but {} lacks the MiniLM weights",
        dir.display()
    );
    ok
}

#[test]
fn minilm_embeddings_and_related_edges_end_to_end() {
    if !minilm_installed() {
        eprintln!("skipped: MiniLM is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    let g = graph.to_str().expect("utf8");
    let o = ledger(&[
        "index",
        root()
            .join("datasets/paper-carleson-lean")
            .to_str()
            .expect("utf8"),
        "--out",
        g,
        "--no-progress",
        "--embedder",
        "minilm",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains("all-MiniLM-L6-v2"), "{}", stdout(&o));
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "--format",
        "csv",
        "SELECT MIN(model) AS m, COUNT(*) AS n, MIN(arrow_typeof(vector)) AS t FROM embeddings",
    ]);
    let out = stdout(&o);
    assert!(out.contains("all-MiniLM-L6-v2,"), "{out}");
    assert!(out.contains("FixedSizeList(384 x non-null Int8)"), "{out}");
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "--format",
        "csv",
        "SELECT COUNT(*) AS n, MIN(score) AS lo, MAX(evidence) AS e FROM edges WHERE kind = 'RELATED'",
    ]);
    let row = stdout(&o).lines().nth(1).expect("a row").to_string();
    let cols: Vec<&str> = row.split(',').collect();
    assert!(cols[0].parse::<i64>().expect("count") > 0, "{row}");
    assert!(cols[1].parse::<f64>().expect("score") > 0.7, "{row}");
    assert_eq!(cols[2], "all-MiniLM-L6-v2");
}

/// `--doc` takes the document as the user names it: its id, an absolute path, a path relative to
/// another working folder, or the folder holding it; a name that fits no document is an error
/// about the document, not about the unit.
#[test]
fn doc_is_named_as_the_user_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    let o = index(&graph);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = graph.to_str().expect("utf8");
    let paper = dir.path().join("datasets/paper-carleson-lean");
    let impact = |cwd: &Path, doc: &str| {
        ledger_in(
            cwd,
            &[
                "impact",
                "--graph",
                g,
                "metric-space-Carleson",
                "--doc",
                doc,
            ],
        )
    };
    let by_id = impact(&root(), "datasets/paper-carleson-lean/main.tex");
    let expected = stdout(&by_id);
    let absolute = paper.join("main.tex");
    for (cwd, doc) in [
        (root(), absolute.to_str().expect("utf8")),
        (paper.clone(), "main.tex"),
        (paper.clone(), "."),
        (dir.path().to_path_buf(), "datasets/paper-carleson-lean"),
    ] {
        let o = impact(&cwd, doc);
        assert!(
            o.status.success(),
            "{doc} from {}: {}",
            cwd.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(stdout(&o), expected, "{doc} from {}", cwd.display());
    }
    assert!(expected.contains("-> metric-space-Carleson"), "{expected}");
    let o = impact(&root(), "nowhere/main.tex");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no document `nowhere/main.tex`"), "{err}");
}

#[test]
fn context_and_impact_from_a_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    index(&graph);
    let g = graph.to_str().expect("utf8");
    // The unit most referred to or depended on, of those that fit the budget below.
    let top = sql(
        &graph,
        "SELECT d.doc_id, d.unit_id, COUNT(*) AS n FROM dependents d \
         JOIN units u ON u.doc_id = d.doc_id AND u.unit_id = d.unit_id WHERE u.tokens < 1000 \
         GROUP BY d.doc_id, d.unit_id ORDER BY n DESC, d.unit_id LIMIT 1",
    );
    let (doc, unit) = (
        top[0]["doc_id"].as_str().expect("doc"),
        top[0]["unit_id"].as_str().expect("unit"),
    );
    let n = top[0]["n"].as_u64().expect("count");
    assert!(n >= 3, "{top}");
    let o = ledger(&[
        "context", "--graph", g, "--doc", doc, "--target", unit, "--budget", "1500",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(c["units"][0]["unit_id"], unit);
    assert_eq!(c["units"][0]["why"], "target");
    assert!(c["tokens"].as_u64().expect("tokens") <= 1500);
    assert!(c["units"].as_array().expect("units").len() > 1, "{c}");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("% of the document's"), "{err}");
    assert!(!err.contains("is not in the context"), "{err}");
    // A budget the target does not fit in says so (it was left out without a word).
    let o = ledger(&[
        "context", "--graph", g, "--doc", doc, "--target", unit, "--budget", "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let small = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        small.contains(&format!("note: the target `{unit}` (")) && small.contains("raise --budget"),
        "{small}"
    );
    // What is left out is counted in the target's document alone: its units less those taken.
    let left: usize = err
        .split(" of its units left out")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {err}"));
    let in_doc = sql(
        &graph,
        &format!("SELECT COUNT(*) AS n FROM units WHERE doc_id = '{doc}' AND kind <> 'document'"),
    )[0]["n"]
        .as_u64()
        .expect("count") as usize;
    let taken = c["units"]
        .as_array()
        .expect("units")
        .iter()
        .filter(|u| u["doc_id"] == doc)
        .count();
    assert_eq!(left, in_doc - taken, "{err}");
    let o = ledger(&[
        "context",
        "--graph",
        g,
        "--doc",
        doc,
        "--target",
        unit,
        "--budget",
        "1500",
        "--markdown",
    ]);
    assert!(
        stdout(&o).contains(&format!("## `{unit}`")),
        "{}",
        stdout(&o)
    );
    let o = ledger(&["impact", "--graph", g, "--doc", doc, unit, "--depth", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = stdout(&o).lines().count() as u64;
    assert!(
        lines >= 1 && lines <= n,
        "{lines} impacted, {n} direct links"
    );
    assert!(stdout(&o).contains(&format!("-> {unit}")), "{}", stdout(&o));
    // An instruction that names no unit: the nearest summaries are the targets.
    let o = ledger(&[
        "context",
        "--graph",
        g,
        "--budget",
        "800",
        "--instruction",
        "explain the equational theories project and its magma laws",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr)
            .matches("target by similarity")
            .count(),
        3,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The same set through SQL: a recursive query over the `dependents` view.
    let o = ledger(&["impact", "--graph", g, "--doc", doc, unit, "--depth", "3"]);
    let deep = stdout(&o).lines().count();
    let q = format!(
        "WITH RECURSIVE impact(doc_id, unit_id, depth) AS ( \
           SELECT dependent_doc, dependent_unit, 1 FROM dependents WHERE doc_id = '{doc}' AND unit_id = '{unit}' \
           UNION SELECT d.dependent_doc, d.dependent_unit, i.depth + 1 FROM dependents d \
             JOIN impact i ON d.doc_id = i.doc_id AND d.unit_id = i.unit_id WHERE i.depth < 3) \
         SELECT COUNT(*) AS n FROM (SELECT DISTINCT doc_id, unit_id FROM impact \
           WHERE NOT (doc_id = '{doc}' AND unit_id = '{unit}'))"
    );
    let o = ledger(&["sql", "--graph", g, "--format", "json", &q]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(
        rows[0]["n"].as_u64(),
        Some(deep as u64),
        "SQL and `ledger impact` agree"
    );
    let o = ledger(&["impact", "--graph", g, "no-such-unit"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no unit `no-such-unit`"));
}

#[test]
fn relabel_dry_run_apply_verify_and_undo() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = dir.path().join("paper");
    copy_dir(&root().join("datasets/paper-equational-theories"), &paper);
    let p = paper.to_str().expect("utf8");
    let snapshot = || -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(&paper)
            .expect("read_dir")
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| (e.path(), std::fs::read(e.path()).expect("read")))
            .collect();
        files.sort();
        files
    };
    let original = snapshot();
    let verify_line = |o: &Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .unwrap_or_default()
            .to_string()
    };
    let before = verify_line(&ledger(&["verify", p, "--no-diagnostics"]));
    // A label referred to from several places.
    let old = "thm:canon";
    let o = ledger(&["relabel", old, "thm:canonical-form", p, "--dry-run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let diff = stdout(&o);
    assert!(
        diff.contains("-") && diff.contains("+") && diff.contains("thm:canonical-form"),
        "{diff}"
    );
    assert_eq!(snapshot(), original, "a dry run writes nothing");
    let o = ledger(&["relabel", old, "thm:canonical-form", p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_ne!(snapshot(), original);
    assert_eq!(
        verify_line(&ledger(&["verify", p, "--no-diagnostics"])),
        before,
        "nothing newly broken"
    );
    let all: String = snapshot()
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(
        !all.contains("{thm:canon}") && !all.contains("thm:canon,"),
        "no old key left"
    );
    // A label that exists already is refused, nothing written.
    let edited = snapshot();
    let o = ledger(&["relabel", "thm:canonical-form", "irred-desc", p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    assert_eq!(snapshot(), edited);
    // Undo restores every file byte for byte.
    let o = ledger(&["undo", p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(snapshot(), original);
}

#[test]
fn eval_quick_evaluates_real_edits_and_generated_documents_and_holds_its_invariants() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report");
    let history = root().join("datasets/edit-history");
    let o = ledger(&[
        "eval",
        "--quick",
        "--out",
        out.to_str().expect("utf8"),
        "--edit-history",
        history.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    for section in [
        "Real edits: what the authors changed together",
        "test split: gold units found",
        "test split: far gold found",
        "far and near recall at 4K and 16K",
        "Reachability: far gold within 1 / 2 hops",
        "| without typed edges |",
        "Main table",
        "Edge-type ablation",
        "Weight configurations",
        "Edge detection",
        "Deterministic edits",
        "LLM edits\n\nNot measured",
    ] {
        assert!(md.contains(section), "{section}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report.json"))
            .expect("json");
    // Real edits: the newest 12 commits of each of the four bundled histories; cases come from
    // each history, every one with gold units, scored by every strategy under every budget.
    let real = &json["real_edits"];
    let selection = real["selection"].as_array().expect("selection");
    assert_eq!(selection.len(), 4, "{selection:?}");
    let cases = real["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8, "{} cases", cases.len());
    assert!(
        cases
            .iter()
            .all(|c| !c["gold"].as_array().expect("gold").is_empty())
    );
    assert_eq!(real["over_budget"], 0);
    let rows = real["rows"].as_array().expect("rows");
    for r in rows {
        for key in ["recall_micro", "recall_far_micro", "recall_near_micro"] {
            let recall = r[key].as_f64().expect(key);
            assert!((0.0..=1.0).contains(&recall), "{r}");
        }
        assert!(r["far_gold"].as_u64().is_some(), "{r}");
        assert!(r["tokens"].as_f64().expect("tokens") <= r["budget"].as_f64().expect("budget"));
    }
    // Far gold is counted per history, and what the edges reach of it is a share that grows with
    // the hops.
    let far: u64 = selection
        .iter()
        .map(|s| s["far_gold_units"].as_u64().expect("far"))
        .sum();
    let gold: u64 = selection
        .iter()
        .map(|s| s["gold_units"].as_u64().expect("gold"))
        .sum();
    assert!(far > 0 && far < gold, "{far} of {gold}");
    let reach = real["reachability"].as_array().expect("reachability");
    assert!(reach.iter().any(|r| r["source"] == "all"));
    for r in reach {
        for w in r["within"].as_array().expect("within") {
            let (one, two) = (
                w["one"].as_f64().expect("one"),
                w["two"].as_f64().expect("two"),
            );
            assert!(0.0 <= one && one <= two && two <= 1.0, "{w}");
        }
    }
    let svg = std::fs::read_to_string(out.join("real-recall-vs-budget.svg")).expect("plot");
    assert!(svg.starts_with("<svg") && svg.contains("LEDGER"));
    // The same track on one history the user names (here a bundled one, as a repository
    // folder would be): the same cases and figures as that history's part of the default run.
    let one = dir.path().join("one");
    let o = ledger(&[
        "eval",
        "--quick",
        "--track",
        "real",
        "--out",
        one.to_str().expect("utf8"),
        "--history",
        history
            .join("carleson-paper.bundle")
            .to_str()
            .expect("utf8"),
        "--document",
        "paper/main.tex",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let alone: serde_json::Value =
        serde_json::from_slice(&std::fs::read(one.join("report.json")).expect("report.json"))
            .expect("json");
    let of = |v: &serde_json::Value, key: &str| -> Vec<serde_json::Value> {
        v["real_edits"][key]
            .as_array()
            .expect(key)
            .iter()
            .filter(|x| x["source"] == "carleson-paper")
            .cloned()
            .collect()
    };
    for key in ["cases", "rows", "selection", "reachability"] {
        assert!(!of(&alone, key).is_empty(), "{key}");
        assert_eq!(of(&alone, key), of(&json, key), "{key}");
    }
    let report = &json["generated"];
    assert!(report["cases"].as_u64().expect("cases") > 100);
    // Every strategy scored every case, and the documents and graphs are there to inspect.
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(
        rows.iter()
            .filter(|r| r["size"] == "all" && r["category"] == "all")
            .count(),
        13
    );
    for plot in ["tokens-vs-size.svg", "recall-vs-size.svg"] {
        let svg = std::fs::read_to_string(out.join(plot)).expect("plot");
        assert!(svg.starts_with("<svg") && svg.contains("LEDGER"), "{plot}");
    }
    assert!(out.join("documents/gen-5k-1/main.tex").is_file());
    assert!(out.join("documents/gen-5k-md-2/main.md").is_file());
    assert!(out.join("graphs/gen-5k-1/current").exists());
    // Deterministic edits: LEDGER's keep every reference (the run fails otherwise); the text
    // tool's inserts break some, and the verifier refuses each of those.
    let edit = |made_by: &str, edit: &str| {
        report["edits"]
            .as_array()
            .expect("edits")
            .iter()
            .find(|e| {
                e["size"] == "all"
                    && e["format"] == "both"
                    && e["method"] == made_by
                    && e["edit"] == edit
            })
            .unwrap_or_else(|| panic!("{made_by} {edit}"))
            .clone()
    };
    for kind in ["rename-term", "insert-section", "relabel"] {
        let e = edit("LEDGER", kind);
        assert!(e["cases"].as_u64().expect("cases") >= 8, "{e}");
        assert_eq!(e["references_valid"], 1.0, "{e}");
        assert_eq!(e["broken"], 0, "{e}");
    }
    let naive = edit("text tool", "insert-section");
    assert!(naive["broken"].as_u64().expect("broken") > 0, "{naive}");
    assert_eq!(naive["broken_refused"], naive["broken"], "{naive}");
    let naive = edit("text tool", "rename-term");
    assert!(
        naive["consistent"].as_f64().expect("share") < 1.0,
        "{naive}"
    );
}

#[test]
fn eval_measures_llm_edits_through_an_openai_compatible_endpoint() {
    let server = server::FakeServer::start();
    // The first document's case gets an edit of a unit the model was not given, twice (refused
    // after one repair); the second document's case gets the server's empty answer (accepted,
    // nothing changed).
    let bad = r#"{"edits": [{"unit": "nope", "old": "x", "new": "y"}], "note": ""}"#.to_string();
    server.answer_edits(&[bad.clone(), bad]);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report");
    let o = Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args([
            "eval",
            "--quick",
            "--track",
            "generated",
            "--edit-cases",
            "1",
        ])
        .args(["--llm-edits", "1"])
        .arg("--out")
        .arg(&out)
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_EMBED_EMBEDDER", "hash")
        .env("LEDGER_DEPENDS_JUDGE", "offline")
        .env("LEDGER_LLM_URL", &server.url)
        .env("LEDGER_LLM_MODEL", "fake-editor")
        .output()
        .expect("ledger runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let requests = server.edit_requests();
    assert_eq!(requests.len(), 3, "one case per document, one repair");
    assert!(requests[1].contains("this unit was not given to the model"));
    let md = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(md.contains("Model `fake-editor`"), "{md}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("json"))
            .expect("json");
    let all = report["generated"]["llm_edits"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["category"] == "all")
        .expect("all row")
        .clone();
    assert_eq!(all["cases"], 2, "{all}");
    assert_eq!(all["failed"], 0, "{all}");
    assert_eq!(all["accepted"], 0.5, "{all}");
    assert_eq!(all["repaired"], 0.5, "{all}");
    assert_eq!(all["requests"], 3, "{all}");
    // Neither case changed anything: no must-change unit changed, every other unit untouched.
    assert_eq!(all["must_change_changed"], 0.0, "{all}");
    assert_eq!(all["must_not_untouched"], 1.0, "{all}");
    assert_eq!(all["references_valid"], 1.0, "{all}");
}

#[test]
fn the_bundled_generated_documents_are_what_the_generator_writes() {
    for (name, seed, format, file) in [
        ("gen-5k-1", "1", "latex", "main.tex"),
        ("gen-5k-md-1", "2", "markdown", "main.md"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = ledger(&[
            "eval",
            "generate",
            "--out",
            dir.path().to_str().expect("utf8"),
            "--name",
            name,
            "--seed",
            seed,
            "--format",
            format,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for f in [file, "gold.json"] {
            let ours = std::fs::read(dir.path().join(name).join(f)).expect("written");
            let bundled = std::fs::read(root().join("datasets/generated").join(name).join(f))
                .expect("bundled");
            assert!(
                ours == bundled,
                "datasets/generated/{name}/{f} differs from the generator's output: regenerate it (datasets/README.md)"
            );
        }
    }
}

#[test]
fn logs_carry_no_colour_codes_when_stderr_is_not_a_terminal() {
    // An unreadable record of the previous version's inputs is a warning in the log (the run
    // goes on); written to a pipe, the log has no ANSI escape codes.
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = dir.path().join("doc.md");
    std::fs::write(&doc, "# One\n\nText.\n").expect("write");
    let graph = dir.path().join("graph");
    index_into(&doc, &graph, &[]);
    for file in std::fs::read_dir(graph.join("current/inputs"))
        .expect("inputs table")
        .flatten()
    {
        std::fs::write(file.path(), b"PAR1 truncated").expect("truncate");
    }
    let o = index_into(&doc, &graph, &[]);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        log.contains("inputs of the previous version unreadable"),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "{log:?}");
}

#[test]
fn a_reader_that_closes_the_pipe_stops_the_output_not_the_command() {
    use std::io::BufRead;
    use std::process::Stdio;
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ledger"))
            .args(args)
            .env_remove("LEDGER_CONFIG")
            .env("LEDGER_EMBED_EMBEDDER", "hash")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ledger runs")
    };
    // `ledger sql … | head -1`: megabytes of rows, one line read.
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    index(&graph);
    let g = graph.to_str().expect("utf8");
    let mut child = spawn(&["sql", "--graph", g, "SELECT * FROM units"]);
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    assert!(!first.is_empty());
    let o = child.wait_with_output().expect("exits");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {stderr}", o.status);
    assert!(!stderr.contains("panicked"), "{stderr}");

    // An edit whose diff has no reader is still made.
    let paper = dir.path().join("latin1");
    copy_dir(
        &root().join("datasets/latex-features/encodings/latin1"),
        &paper,
    );
    let p = paper.to_str().expect("utf8");
    let mut child = spawn(&["relabel", "eq:energie", "eq:energy", p]);
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("exits");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {stderr}", o.status);
    let chapter = std::fs::read(paper.join("chapitre.tex")).expect("chapter");
    assert!(chapter.windows(9).any(|w| w == b"eq:energy"), "{stderr}");
}

#[test]
fn after_an_edit_stdout_holds_the_diff_and_the_graph_summary_goes_to_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = dir.path().join("latin1");
    copy_dir(
        &root().join("datasets/latex-features/encodings/latin1"),
        &paper,
    );
    let graph = dir.path().join("graph");
    index_into(&paper, &graph, &[]);
    let (p, g) = (paper.to_str().expect("utf8"), graph.to_str().expect("utf8"));
    let o = ledger(&["relabel", "eq:energie", "eq:energy", p, "--graph", g]);
    let (out, err) = (stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with("--- a/"), "{out}");
    assert!(out.contains("+++ b/") && out.contains("eq:energy"), "{out}");
    assert!(!out.contains("documents:"), "{out}");
    assert!(err.contains("documents: 1"), "{err}");
    let labels = |g: &str| {
        sql(
            Path::new(g),
            "SELECT label FROM labels WHERE label LIKE 'eq:ener%' ORDER BY label",
        )
        .to_string()
    };
    assert!(labels(g).contains("eq:energy"), "{}", labels(g));
    // Undone, with the graph following.
    let o = ledger(&["undo", p, "--graph", g]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        labels(g).contains("eq:energie") && !labels(g).contains("eq:energy"),
        "{}",
        labels(g)
    );
}

#[test]
fn an_edit_of_a_single_file_input_is_verified_and_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = dir.path().join("latin1");
    copy_dir(
        &root().join("datasets/latex-features/encodings/latin1"),
        &paper,
    );
    let main = paper.join("main.tex");
    let o = ledger(&[
        "relabel",
        "thm:unicite",
        "thm:uniqueness",
        main.to_str().expect("utf8"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let text = std::fs::read(&main).expect("main");
    assert_eq!(
        text.windows(14).filter(|w| w == b"thm:uniqueness").count(),
        2,
        "{err}"
    );
}

#[test]
fn unreadable_runs_and_parts_of_the_previous_version_do_not_stop_the_next_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(docs.join("a.md"), "# One\n\nText.\n").expect("write");
    std::fs::write(docs.join("b.md"), "# Two\n\nMore text.\n").expect("write");
    let graph = dir.path().join("graph");
    index_into(&docs, &graph, &[]);
    let units = |g: &Path| sql(g, "SELECT COUNT(*) AS n FROM units")[0]["n"].clone();
    let before = units(&graph);
    std::fs::write(graph.join("current/runs/runs.parquet"), b"PAR1 truncated").expect("truncate");
    for part in std::fs::read_dir(graph.join("parts"))
        .expect("parts")
        .flatten()
    {
        std::fs::write(part.path(), b"PAR1 truncated").expect("truncate");
    }
    // b.md changes (a new version is written); a.md does not, but its part no longer reads.
    std::fs::write(docs.join("b.md"), "# Two\n\nOther text.\n").expect("write");
    let o = index_into(&docs, &graph, &[]);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(log.contains("previous runs unreadable"), "{log}");
    assert!(log.contains("part unreadable"), "{log}");
    assert_eq!(sql(&graph, "SELECT COUNT(*) AS n FROM runs")[0]["n"], 1);
    assert_eq!(units(&graph), before);
}

#[test]
fn help_lists_choices_and_examples_and_completions_and_man_pages_render() {
    let help = stdout(&ledger(&["index", "--help"]));
    for want in [
        "[possible values: auto, learned, rules, llm]",
        "[possible values: auto, hash, minilm, openai]",
        "[possible values: document, corpus]",
        "DEPENDS and RELATED",
        "Examples:\n  ledger index datasets --out out/graph",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }
    for command in ["verify", "sql", "context", "relabel", "rename-term"] {
        let help = stdout(&ledger(&[command, "--help"]));
        assert!(help.contains("Example"), "{command}: {help}");
    }
    // The bash completion script parses, and knows the commands and their flags.
    let dir = tempfile::tempdir().expect("tempdir");
    let o = ledger(&["completions", "bash"]);
    assert!(o.status.success());
    let script = dir.path().join("ledger.bash");
    std::fs::write(&script, &o.stdout).expect("write");
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let text = stdout(&o);
    assert!(text.contains("rename-term") && text.contains("--no-keep-anchors"));
    // One man page per command, each a roff page with its name and synopsis.
    let man = dir.path().join("man1");
    let o = ledger(&["man", "--out", man.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for page in [
        "ledger.1",
        "ledger-index.1",
        "ledger-verify.1",
        "ledger-completions.1",
    ] {
        let text = std::fs::read_to_string(man.join(page)).expect(page);
        let name = page.trim_end_matches(".1");
        assert!(text.contains(&format!(".TH {name} 1")), "{page}");
        assert!(
            text.contains(".SH NAME") && text.contains(".SH SYNOPSIS"),
            "{page}"
        );
    }
}

#[test]
fn an_sql_error_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = carleson_graph(dir.path());
    let g = graph.to_str().expect("utf8");
    let o = ledger(&["sql", "--graph", g, "SELEC 1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("found: SELEC").count(), 1, "{err}");
    let o = ledger(&["sql", "--graph", g, "SELECT nope FROM units"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("No field named nope").count(), 1, "{err}");
    // Statements run in order: what finished is printed before a later one fails.
    let script = "SELECT 4040 AS first; SELECT nope FROM units; SELECT 4242 AS last";
    let o = ledger(&["sql", "--graph", g, "--format", "csv", script]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("4040") && !out.contains("4242"), "{out}");
}

#[test]
fn sql_runs_scripts_from_arguments_files_and_stdin_and_an_interactive_shell() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    index_into(&root().join("datasets/paper-carleson-lean"), &graph, &[]);
    let g = graph.to_str().expect("utf8");
    let sql_with_stdin = |args: &[&str], input: &str| -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ledger"))
            .args(args)
            .env_remove("LEDGER_CONFIG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ledger runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        child.wait_with_output().expect("wait")
    };
    // Several statements in one argument; SHOW TABLES and DESCRIBE.
    let o = ledger(&["sql", "--graph", g, "SHOW TABLES; DESCRIBE units"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    assert!(
        out.contains("| mentions") && out.contains("| content_hash"),
        "{out}"
    );
    // A file, and standard input (piped, or named `-`).
    let script = dir.path().join("q.sql");
    std::fs::write(&script, "SELECT 1 AS one;\nSELECT 2 AS two;\n").expect("write");
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "-f",
        script.to_str().expect("utf8"),
        "--format",
        "csv",
    ]);
    assert_eq!(stdout(&o), "one\n1\n\ntwo\n2\n");
    let o = sql_with_stdin(
        &["sql", "--graph", g, "--format", "csv"],
        "SELECT 3 AS three;",
    );
    assert_eq!(
        stdout(&o),
        "three\n3\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = sql_with_stdin(
        &["sql", "--graph", g, "-", "--format", "csv"],
        "SELECT 4 AS four",
    );
    assert_eq!(stdout(&o), "four\n4\n");
    // An empty result keeps its header.
    let none = "SELECT unit_id, kind FROM units WHERE false";
    assert_eq!(
        stdout(&ledger(&["sql", "--graph", g, "--format", "csv", none])),
        "unit_id,kind\n"
    );
    assert!(stdout(&ledger(&["sql", "--graph", g, none])).contains("| unit_id | kind |"));
    // A list column as CSV; JSON keeps null keys.
    let o = ledger(&[
        "sql",
        "--graph",
        g,
        "--format",
        "csv",
        "SELECT unit_id, vector FROM embeddings LIMIT 1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o)
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains(",\"[")),
        "{}",
        stdout(&o)
    );
    let rows = sql(
        &graph,
        "SELECT unit_id, label FROM units WHERE label IS NULL LIMIT 1",
    );
    assert!(
        rows[0]
            .as_object()
            .is_some_and(|r| r.contains_key("label") && r["label"].is_null()),
        "{rows}"
    );
    // Run times are timestamps.
    let runs = sql(
        &graph,
        "SELECT arrow_typeof(started_at) AS t, finished_at >= started_at AS ordered FROM runs",
    );
    assert!(
        runs[0]["t"]
            .as_str()
            .is_some_and(|t| t.starts_with("Timestamp")),
        "{runs}"
    );
    assert_eq!(runs[0]["ordered"], true);
    // Writing is still refused.
    let o = ledger(&["sql", "--graph", g, "SELECT 1; COPY units TO '/tmp/x.csv'"]);
    assert_eq!(o.status.code(), Some(2));
    // The interactive shell, on a terminal (`script` gives it one): a statement, then .quit;
    // the statement is kept in the history.
    let state = dir.path().join("state");
    let mut child = Command::new("script")
        .args([
            "-qec",
            &format!("{} sql --graph {g}", env!("CARGO_BIN_EXE_ledger")),
            "/dev/null",
        ])
        .env("XDG_STATE_HOME", &state)
        .env_remove("LEDGER_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script runs");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(b"SELECT 41 + 1 AS answer;\n")
        .expect("write");
    std::thread::sleep(std::time::Duration::from_secs(3));
    // An unknown dot command is answered with the known ones and runs nothing: the statement
    // after it starts afresh. `.tables` lists the graph's tables sorted, information_schema last.
    // (One line at a time: the line editor drops what was typed ahead of its prompt.)
    for line in [
        &b".schema units\n"[..],
        b"SELECT 6 * 7 AS again;\n",
        b".tables\n",
    ] {
        input.write_all(line).expect("write");
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    input.write_all(b".quit\n").expect("write");
    drop(input);
    let o = child.wait_with_output().expect("wait");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("| 42 "), "{out}");
    assert!(
        out.contains("unknown command .schema; the shell knows:"),
        "{out}"
    );
    assert!(out.contains("| again |"), "{out}");
    let at = |name: &str| {
        out.find(&format!("| {name} "))
            .unwrap_or_else(|| panic!("{name} in {out}"))
    };
    assert!(
        at("documents") < at("edges") && at("edges") < at("units"),
        "{out}"
    );
    assert!(at("units") < at("information_schema"), "{out}");
    let history = std::fs::read_to_string(state.join("ledger/sql_history")).expect("history");
    assert!(history.contains("SELECT 41 + 1 AS answer;"), "{history}");
}

#[test]
fn progress_off_a_terminal_is_a_periodic_line_and_q_and_v_set_how_much_is_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = root().join("datasets/latex-features/classes");
    let index = |graph: &str, extra: &[&str], interval: &str| -> Output {
        let mut args = vec![
            "index",
            input.to_str().expect("utf8"),
            "--out",
            graph,
            "--no-related",
        ];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_ledger"))
            .args(&args)
            .env_remove("LEDGER_CONFIG")
            .env_remove("RUST_LOG")
            .env("LEDGER_PROGRESS_INTERVAL_MS", interval)
            .output()
            .expect("ledger runs")
    };
    let g = |name: &str| dir.path().join(name).to_str().expect("utf8").to_string();
    // stderr is a pipe here: lines with count, rate and time left instead of a bar.
    let o = index(&g("a"), &[], "0");
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("documents: "))
        .collect();
    assert!(lines.len() >= 20, "{err}");
    assert!(lines.iter().any(|l| l.contains("/s")), "{err}");
    assert!(lines.last().is_some_and(|l| l.contains("(100 %)")), "{err}");
    // Inside a document, its judging shows too.
    assert!(
        lines
            .iter()
            .any(|l| l.contains(": judging ") && l.contains(" units, ")),
        "{err}"
    );
    // A big document's summaries and vectors advance in steps, each with its rate.
    let o = Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args(["index", "--out", &g("big"), "--embedder", "hash"])
        .arg(root().join("datasets/hott-book"))
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_PROGRESS_INTERVAL_MS", "0")
        .output()
        .expect("ledger runs");
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let embedding: Vec<&str> = err.lines().filter(|l| l.contains(": embedding ")).collect();
    assert!(embedding.len() >= 2, "{err}");
    assert!(embedding.iter().all(|l| l.contains("/s")), "{err}");
    // The default interval is ten seconds: none for a run this short but the last.
    let o = index(&g("b"), &[], "10000");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("documents: ")).count(),
        1,
        "{err}"
    );
    // -q: no progress; -v: info lines.
    let o = index(&g("c"), &["-q"], "0");
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("documents: "));
    assert!(
        stdout(&o).contains("documents: 20"),
        "the summary is data: {}",
        stdout(&o)
    );
    let o = index(&g("d"), &["-v"], "10000");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("INFO"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A newcomer who runs the README's first command has no `ledger` on PATH: the README says how
/// to install the binary this crate builds before its first example calls `ledger`.
#[test]
fn the_readme_says_how_to_install_ledger_before_using_it() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let install = "cargo install --path crates/cli --locked";
    let installed_at = readme
        .find(install)
        .expect("the README names the install command");
    let first_use = readme
        .find("\n$ ledger ")
        .expect("the README has console examples");
    assert!(
        installed_at < first_use,
        "install is said after the first example"
    );
    let manifest = std::fs::read_to_string(root().join("crates/cli/Cargo.toml")).expect("manifest");
    assert!(
        manifest.contains("[[bin]]\nname = \"ledger\""),
        "crates/cli builds the `ledger` binary"
    );
}
