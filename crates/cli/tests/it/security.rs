//! What documents, queue messages, model answers and query text must not be able to do.

use super::{ledger, stdout};
use std::path::Path;

/// A graph of one small Markdown document, indexed into `dir/graph`.
fn small_graph(dir: &Path) -> std::path::PathBuf {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\nSee [the setup](#setup).\n\n## Setup\n\nInstall it.\n",
    )
    .expect("write");
    let graph = dir.join("graph");
    super::index_into(&docs, &graph, &[]);
    graph
}

#[test]
fn sql_is_read_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = small_graph(dir.path());
    let victim = dir.path().join("victim.sh");
    std::fs::write(&victim, "original\n").expect("write");
    let units = std::fs::read_dir(graph.join("current/units"))
        .expect("units folder")
        .flatten()
        .map(|e| e.path())
        .min()
        .expect("a units file");
    let units_before = std::fs::read(&units).expect("units");
    let refused = [
        format!(
            "COPY (SELECT 'echo pwned' AS x) TO '{}' STORED AS CSV OPTIONS ('format.has_header' 'false')",
            victim.display()
        ),
        format!("COPY units TO '{}' STORED AS PARQUET", units.display()),
        "CREATE EXTERNAL TABLE p (line VARCHAR) STORED AS CSV LOCATION '/etc/passwd'".into(),
        "CREATE TABLE t AS SELECT 1 AS x".into(),
        "CREATE VIEW v AS SELECT 1 AS x".into(),
        "DROP VIEW dependents".into(),
        "INSERT INTO units SELECT * FROM units".into(),
        "SET datafusion.execution.batch_size = 1".into(),
    ];
    for query in &refused {
        let o = ledger(&["sql", "--graph", graph.to_str().expect("utf8"), query]);
        assert!(!o.status.success(), "accepted: {query}\n{}", stdout(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("not supported") || err.contains("not allowed"),
            "{query}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "original\n"
    );
    assert_eq!(std::fs::read(&units).expect("units"), units_before);
    // Reading still works, views included.
    let o = ledger(&[
        "sql",
        "--graph",
        graph.to_str().expect("utf8"),
        "SELECT COUNT(*) AS n FROM dependents",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The help says what is refused.
    let help = stdout(&ledger(&["sql", "--help"]));
    for word in ["COPY", "CREATE", "INSERT", "SET"] {
        assert!(help.contains(word), "{help}");
    }
}

#[test]
fn undo_refuses_a_record_naming_a_file_outside_the_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(docs.join("guide.md"), "# Guide\n").expect("write");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").expect("write");
    std::fs::create_dir_all(docs.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink(dir.path(), docs.join("sub/out")).expect("symlink");
    // Records shipped with the folder, each naming the victim another way; `new` is its text, so
    // that only the path check can stop the undo.
    for (n, path) in [
        victim.display().to_string(),
        "../victim.txt".into(),
        "sub/out/victim.txt".into(),
    ]
    .iter()
    .enumerate()
    {
        let record = docs.join(format!(".ledger-undo/{}", n + 1));
        std::fs::create_dir_all(&record).expect("mkdir");
        let saved = serde_json::json!([{ "path": path, "old": "pwned\n", "new": "precious\n" }]);
        std::fs::write(record.join("record.json"), saved.to_string()).expect("write");
        let o = ledger(&["undo", docs.to_str().expect("utf8")]);
        assert!(!o.status.success(), "{path}: {}", stdout(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("outside the edit root"), "{path}: {err}");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "precious\n"
        );
        std::fs::remove_dir_all(&record).expect("rm");
    }
    // A record naming a file inside is restored.
    let record = docs.join(".ledger-undo/9");
    std::fs::create_dir_all(&record).expect("mkdir");
    let saved = serde_json::json!([{ "path": "guide.md", "old": "# Old\n", "new": "# Guide\n" }]);
    std::fs::write(record.join("record.json"), saved.to_string()).expect("write");
    let o = ledger(&["undo", docs.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(docs.join("guide.md")).expect("read"),
        "# Old\n"
    );
}

/// `ledger sql --format json` rows as one string.
fn rows(graph: &Path, query: &str) -> String {
    super::sql(graph, query).to_string()
}

#[test]
fn documents_do_not_read_files_outside_their_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret.tex");
    std::fs::write(&secret, "TOPSECRET credentials\n").expect("write");
    std::fs::write(dir.path().join("secret.md"), "# TOPSECRET\n").expect("write");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("book")).expect("mkdir");
    std::os::unix::fs::symlink(&secret, docs.join("link.tex")).expect("symlink");
    std::os::unix::fs::symlink(dir.path().join("secret.md"), docs.join("alias.md"))
        .expect("symlink");
    std::fs::write(
        docs.join("main.tex"),
        format!(
            "\\documentclass{{article}}\n\\begin{{document}}\n\\section{{A}}\nText.\n\\input{{{}}}\n\\input{{../secret}}\n\\input{{link}}\n\\end{{document}}\n",
            secret.display()
        ),
    )
    .expect("write");
    std::fs::write(
        docs.join("book/SUMMARY.md"),
        "# Summary\n\n- [Intro](intro.md)\n- [Out](../../secret.md)\n",
    )
    .expect("write");
    std::fs::write(docs.join("book/intro.md"), "# Intro\n\nHello.\n").expect("write");
    let graph = dir.path().join("graph");
    super::index_into(&docs, &graph, &[]);
    let texts = rows(&graph, "SELECT text FROM units");
    assert!(!texts.contains("TOPSECRET"), "{texts}");
    assert!(texts.contains("Hello"), "{texts}");
    // Each refused path is named by a diagnostic, and the symlinked document by discovery.
    let diagnostics = rows(&graph, "SELECT source_path, message FROM diagnostics");
    for named in [
        format!("\\\\input{{{}}}", secret.display()),
        "\\\\input{../secret}".to_string(),
        "\\\\input{link}".to_string(),
        "secret.md".to_string(),
    ] {
        let refused = diagnostics
            .split("},{")
            .any(|d| d.contains(&named) && d.contains("outside the input root"));
        assert!(refused, "{named}: {diagnostics}");
    }
    assert!(
        diagnostics.contains("alias.md") && diagnostics.contains("symbolic link"),
        "{diagnostics}"
    );
    // The operator may allow it.
    super::index_into(&docs, &graph, &["--allow-outside-root"]);
    assert!(rows(&graph, "SELECT text FROM units").contains("TOPSECRET"));
}

#[test]
fn an_edit_copies_only_what_the_documents_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("target")).expect("mkdir");
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\nThe widget is small. See [setup](#setup).\n\n## Setup\n\nInstall the widget.\n",
    )
    .expect("write");
    // What a copy of the whole folder would trip over: FIFOs (opening one blocks), a symlink
    // loop, a symlink to the file system's root, and a build folder.
    for fifo in ["pipe", "target/pipe"] {
        let made = std::process::Command::new("mkfifo")
            .arg(docs.join(fifo))
            .status()
            .expect("mkfifo");
        assert!(made.success());
    }
    std::os::unix::fs::symlink(docs.join("loop"), docs.join("loop")).expect("symlink");
    std::os::unix::fs::symlink("/", docs.join("everything")).expect("symlink");
    std::fs::write(docs.join("target/big.bin"), vec![0u8; 1 << 20]).expect("write");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args([
            "rename-term",
            "widget",
            "gadget",
            docs.to_str().expect("utf8"),
        ])
        .env_remove("LEDGER_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ledger runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the edit hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = child.wait_with_output().expect("output");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(docs.join("guide.md")).expect("read");
    assert!(
        text.contains("The gadget is small") && !text.contains("widget"),
        "{text}"
    );
}
