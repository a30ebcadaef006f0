//! Relabelling on the carleson blueprint (a copy), atomic commit and undo.

use ledger_core::{Document, Resolution, TargetKey};
use ledger_edit::{apply, commit, last_record, relabel, undo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpora() -> PathBuf {
    std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets"))
}

/// The bundled datasets.
fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}

#[path = "../../../cli/tests/it/copy_dir.rs"]
mod copy_dir;
use copy_dir::copy_dir;

fn parse(main: &Path) -> Vec<Document> {
    let (sources, diags) = ledger_parse::discover(&[main.to_path_buf()]);
    assert!(diags.is_empty(), "{diags:?}");
    let mut docs: Vec<Document> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    docs
}

fn texts(docs: &[Document]) -> BTreeMap<PathBuf, String> {
    docs.iter()
        .flat_map(|d| &d.files)
        .map(|f| (PathBuf::from(f), std::fs::read_to_string(f).expect("read")))
        .collect()
}

/// Per mention: its unit's position, kind, and where it resolves (target unit position).
fn resolutions(doc: &Document) -> Vec<(usize, String, Option<usize>)> {
    let index = doc.unit_indices();
    doc.mentions
        .iter()
        .map(|m| {
            let target = match &m.resolution {
                Resolution::Resolved { doc: d, unit } if d == &doc.id => {
                    index.get(unit.as_str()).copied()
                }
                _ => None,
            };
            (m.unit, m.kind.as_str().to_string(), target)
        })
        .collect()
}

#[test]
fn relabelling_twenty_blueprint_labels_updates_every_referrer_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("carleson-blueprint");
    copy_dir(&corpora().join("carleson-blueprint"), &root);
    let main = root.join("print.tex");
    let docs = parse(&main);
    let doc = &docs[0];
    let before = resolutions(doc);
    let broken_before = before.iter().filter(|r| r.2.is_none()).count();
    // Labels that something refers to, twenty of them picked with a fixed seed.
    let mut referred: Vec<String> = doc
        .mentions
        .iter()
        .filter_map(|m| match (&m.key, &m.resolution) {
            (TargetKey::Label(l), Resolution::Resolved { .. }) => Some(l.clone()),
            _ => None,
        })
        .collect();
    referred.sort();
    referred.dedup();
    assert!(referred.len() > 100, "{} referred labels", referred.len());
    let mut seed: u64 = 0x5eed;
    let mut picked = Vec::new();
    while picked.len() < 20 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let l = &referred[(seed >> 33) as usize % referred.len()];
        if !picked.contains(l) {
            picked.push(l.clone());
        }
    }
    let old_texts = texts(&docs);
    let mut edits = Vec::new();
    for l in &picked {
        edits.extend(relabel(&docs, &old_texts, l, &format!("{l}-renamed")).expect("relabel"));
    }
    // Exactly the definitions and the mentions of the picked labels are touched.
    let mentions: usize = doc
        .mentions
        .iter()
        .filter(|m| matches!(&m.key, TargetKey::Label(l) if picked.contains(l)))
        .count();
    assert_eq!(
        edits.len(),
        mentions + picked.len(),
        "one edit per mention, one per \\label"
    );
    for e in &edits {
        let was = &old_texts[&e.path][e.start..e.end];
        assert!(picked.iter().any(|l| was == l), "edit of `{was}`");
        assert_eq!(e.text, format!("{was}-renamed"));
    }
    eprintln!(
        "relabelled {} labels: {} edits, {mentions} mentions",
        picked.len(),
        edits.len()
    );
    let new_texts = apply(&old_texts, &edits).expect("apply");
    let changes: BTreeMap<PathBuf, (String, String)> = new_texts
        .iter()
        .map(|(p, new)| (p.clone(), (old_texts[p].clone(), new.clone())))
        .collect();
    let undo_root = dir.path().join("undo");
    let record = commit(&changes, &BTreeMap::new(), &undo_root).expect("commit");
    // Re-parsed: every mention still resolves where it did, nothing new is broken.
    let after_docs = parse(&main);
    let after = resolutions(&after_docs[0]);
    assert_eq!(after, before);
    assert_eq!(
        after.iter().filter(|r| r.2.is_none()).count(),
        broken_before
    );
    assert!(
        after_docs[0]
            .mentions
            .iter()
            .all(|m| !matches!(&m.key, TargetKey::Label(l) if picked.contains(l)))
    );
    // Undo restores every file byte for byte.
    assert_eq!(last_record(&undo_root), Some(record.clone()));
    let restored = undo(&record).expect("undo");
    assert_eq!(restored.len(), changes.len());
    for (p, (old, _)) in &changes {
        assert_eq!(&std::fs::read_to_string(p).expect("read"), old);
    }
}

#[test]
fn a_file_changed_since_reading_stops_the_commit_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.tex"), dir.path().join("b.tex"));
    std::fs::write(&a, "one").expect("write");
    std::fs::write(&b, "two").expect("write");
    let mut changes = BTreeMap::new();
    changes.insert(a.clone(), ("one".to_string(), "ONE".to_string()));
    changes.insert(b.clone(), ("stale".to_string(), "TWO".to_string()));
    assert!(commit(&changes, &BTreeMap::new(), &dir.path().join("undo")).is_err());
    assert_eq!(std::fs::read_to_string(&a).expect("read"), "one");
    assert_eq!(std::fs::read_to_string(&b).expect("read"), "two");
    assert!(last_record(&dir.path().join("undo")).is_none());
}

/// Occurrences of `workspace(s)` in one Markdown file, found line by line with regular
/// expressions (not with the parser the edit uses): outside fenced code, HTML lines, inline
/// code, link destinations and definitions, URLs, `{{#…}}`/`{#…}`, and reference links whose
/// text is their label; whole words in lower, Title or UPPER case, not inside a path or name.
fn expected_workspace_lines(text: &str) -> BTreeMap<usize, Vec<String>> {
    let re = |p: &str| regex::Regex::new(p).expect("valid");
    let (code, link_dest, url, directive, tag, definition) = (
        re(r"`+[^`]*`+"),
        re(r"\]\([^)]*\)"),
        re(r"<?(?:https?://|www\.)[^\s>)]+>?"),
        re(r"\{\{#[^}]*\}\}|\{#[^}]*\}"),
        re(r"<[^>]+>"),
        re(r"^\s*\[([^\]]+)\]:"),
    );
    let defined: Vec<String> = text
        .lines()
        .filter_map(|l| definition.captures(l).map(|c| c[1].to_lowercase()))
        .collect();
    let shortcut = re(r"\[([^\]]+)\](\[\])?");
    let word = re(r"(?i)\b(workspaces|workspace)\b");
    let mut out = BTreeMap::new();
    let mut fence: Option<char> = None;
    let mut html_skip: Option<&str> = None;
    let inline_html =
        re(r"<!--.*?-->|<pre[^>]*>.*?</pre>|<(code|kbd|samp)[^>]*>.*?</(code|kbd|samp)>");
    for (k, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(&format!("{f}{f}{f}")) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = t.chars().next();
            continue;
        }
        if definition.is_match(line) {
            continue;
        }
        // Raw HTML: comments and <pre> blocks are not prose, nor is <code>/<kbd>/<samp> text.
        let mut l = line.to_string();
        if html_skip.is_some() {
            let end = html_skip.take().expect("set");
            match l.find(end) {
                Some(k) => l = " ".repeat(k + end.len()) + &l[k + end.len()..],
                None => {
                    html_skip = Some(end);
                    continue;
                }
            }
        }
        l = code
            .replace_all(&l, |c: &regex::Captures| " ".repeat(c[0].len()))
            .into_owned();
        l = inline_html
            .replace_all(&l, |c: &regex::Captures| " ".repeat(c[0].len()))
            .into_owned();
        for (open, close) in [("<!--", "-->"), ("<pre", "</pre>")] {
            if let Some(k) = l.find(open) {
                l = l[..k].to_string();
                html_skip = Some(close);
            }
        }
        for r in [&code, &link_dest, &url, &directive, &tag] {
            l = r
                .replace_all(&l, |c: &regex::Captures| " ".repeat(c[0].len()))
                .into_owned();
        }
        // `[text]` / `[text][]` whose text names a definition: the text is the label.
        l = shortcut
            .replace_all(&l, |c: &regex::Captures| {
                let end = c.get(0).map_or(0, |m| m.end());
                let next = line[end..].chars().next();
                if defined.contains(&c[1].to_lowercase()) && next != Some('(') && next != Some('[')
                {
                    " ".repeat(c[0].len())
                } else {
                    c[0].to_string()
                }
            })
            .into_owned();
        for m in word.find_iter(&l) {
            let w = m.as_str();
            let cased = w == w.to_lowercase()
                || w == w.to_uppercase()
                || w[..1] == w[..1].to_uppercase() && w[1..] == w[1..].to_lowercase();
            let prev = l[..m.start()].chars().rev().take(2).collect::<Vec<_>>();
            let next = l[m.end()..].chars().take(2).collect::<Vec<_>>();
            let in_name = matches!(prev.as_slice(), [p, c, ..] if "/\\.-@".contains(*p) && c.is_alphanumeric())
                || matches!(next.first(), Some('/' | '@'))
                || matches!(next.as_slice(), ['.' | '-', c, ..] if c.is_alphanumeric());
            if cased && !in_name {
                out.entry(k + 1)
                    .or_insert_with(Vec::new)
                    .push(w.to_string());
            }
        }
    }
    out
}

#[test]
fn renaming_a_term_across_the_cargo_book_changes_exactly_the_expected_occurrences() {
    let docs = parse(&corpora().join("cargo-book/doc/book/src"));
    let texts = texts(&docs);
    let found =
        ledger_edit::rename_term(&docs, &texts, "workspace", "project group", &[]).expect("rename");
    // What the edit changes, per file and line, as the words it replaces.
    let mut got: BTreeMap<(PathBuf, usize), Vec<String>> = BTreeMap::new();
    for r in &found.replacements {
        let text = &texts[&r.path];
        let line = text[..r.start].matches('\n').count() + 1;
        got.entry((r.path.clone(), line))
            .or_default()
            .push(text[r.start..r.end].to_string());
    }
    let mut expected: BTreeMap<(PathBuf, usize), Vec<String>> = BTreeMap::new();
    for (path, text) in &texts {
        for (line, words) in expected_workspace_lines(text) {
            expected.insert((path.clone(), line), words);
        }
    }
    let only_got: Vec<_> = got
        .iter()
        .filter(|(k, v)| expected.get(*k) != Some(v))
        .collect();
    let only_expected: Vec<_> = expected
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .collect();
    assert!(
        only_got.is_empty() && only_expected.is_empty(),
        "edit only: {only_got:#?}\nexpected only: {only_expected:#?}"
    );
    let total: usize = got.values().map(Vec::len).sum();
    let files: std::collections::BTreeSet<_> = got.keys().map(|k| &k.0).collect();
    println!(
        "{total} occurrences on {} lines in {} files; {} left alone",
        got.len(),
        files.len(),
        found.left.len()
    );
    assert!(
        total > 300 && files.len() > 30,
        "{total} in {}",
        files.len()
    );
    // Casings and plurals follow the term.
    let edited = apply(&texts, &found.replacements).expect("apply");
    let all: String = edited.values().cloned().collect();
    for form in ["project groups", "Project group", "Project groups"] {
        assert!(all.contains(form), "{form}");
    }
    // Code keeps the old word: `[workspace]` tables, `--workspace` flags.
    assert!(found.left.iter().any(|l| l.reason == "code"));
    assert!(all.contains("[workspace]"));
}

#[test]
fn a_label_in_a_file_two_documents_include_is_one_label() {
    // The blueprint's print.tex and web.tex both include chapter/main.tex: two documents, one
    // `\label` each time, at one place in one file.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("carleson-blueprint");
    copy_dir(&corpora().join("carleson-blueprint"), &root);
    let docs = parse(&root);
    assert_eq!(docs.len(), 2, "print.tex and web.tex");
    let label = docs[0]
        .mentions
        .iter()
        .find_map(|m| match (&m.key, &m.resolution) {
            (TargetKey::Label(l), Resolution::Resolved { .. }) => Some(l.clone()),
            _ => None,
        })
        .expect("a resolved reference");
    let old_texts = texts(&docs);
    let edits = relabel(&docs, &old_texts, &label, "renamed-label").expect("one label");
    let definitions: Vec<_> = edits
        .iter()
        .filter(|e| old_texts[&e.path][..e.start].ends_with("\\label{"))
        .collect();
    assert_eq!(definitions.len(), 1, "{definitions:?}");
    // Each referrer once, however many documents read its file.
    let referrers: std::collections::BTreeSet<(PathBuf, usize)> = docs
        .iter()
        .flat_map(|d| {
            d.mentions
                .iter()
                .filter(|m| matches!(&m.key, TargetKey::Label(l) if *l == label))
                .map(move |m| (PathBuf::from(&d.files[m.file]), m.start_byte))
        })
        .collect();
    assert_eq!(edits.len(), referrers.len() + 1);
    // A label defined at two places of two files stays ambiguous.
    let web = root.join("web.tex");
    let text = std::fs::read_to_string(&web).expect("web.tex");
    let with_own = text.replacen(
        "\\begin{document}",
        &format!("\\begin{{document}}\n\\section{{Own}}\\label{{{label}}}"),
        1,
    );
    let mut writable = std::fs::metadata(&web).expect("web.tex").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    writable.set_readonly(false);
    std::fs::set_permissions(&web, writable).expect("chmod");
    std::fs::write(&web, with_own).expect("write");
    let docs = parse(&root);
    let err = relabel(&docs, &texts(&docs), &label, "renamed-label").expect_err("two labels");
    assert!(err.to_string().contains("in different places"), "{err}");
}

#[test]
fn edits_of_a_latin1_document_write_latin1_and_change_only_what_they_change() {
    use ledger_edit::{Sources, Written, plan_relabel, plan_rename_term, undo_last, write_checked};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("latin1");
    copy_dir(&datasets().join("latex-features/encodings/latin1"), &root);
    let (main, chapter) = (root.join("main.tex"), root.join("chapitre.tex"));
    let before = (
        std::fs::read(&main).expect("main"),
        std::fs::read(&chapter).expect("chapter"),
    );
    let inputs = [root.clone()];

    // A relabel: the label and its references change, every other byte (Latin-1 accents
    // included) stays as it was.
    let sources = Sources::read(&inputs).expect("sources");
    let (checked, n) = plan_relabel(&sources, "eq:energie", "eq:energy").expect("plan");
    assert_eq!(n, 2);
    let written = write_checked(&sources, checked, false, &[]).expect("write");
    assert!(matches!(written, Written::Committed(_)), "{written:?}");
    let swap = |bytes: &[u8]| {
        let text: String = bytes.iter().map(|&b| b as char).collect();
        text.replace("eq:energie", "eq:energy")
            .chars()
            .map(|c| c as u8)
            .collect::<Vec<u8>>()
    };
    assert_eq!(std::fs::read(&main).expect("main"), swap(&before.0));
    assert_eq!(std::fs::read(&chapter).expect("chapter"), swap(&before.1));
    undo_last(&root).expect("undo");
    assert_eq!(std::fs::read(&main).expect("main"), before.0);
    assert_eq!(std::fs::read(&chapter).expect("chapter"), before.1);

    // A term with an accent, renamed: written in Latin-1.
    let sources = Sources::read(&inputs).expect("sources");
    let plan = plan_rename_term(&sources, "Naïve", "Candide", &[], true).expect("plan");
    assert_eq!(plan.occurrences, 1);
    write_checked(&sources, plan.checked, false, &[]).expect("write");
    let now = std::fs::read(&chapter).expect("chapter");
    assert!(now.windows(7).any(|w| w == b"Candide"));
    assert!(
        now.windows(3).any(|w| w == b"\xe0 s"),
        "the other accents stay Latin-1"
    );
    undo_last(&root).expect("undo");

    // A character Latin-1 cannot hold: refused, nothing written.
    let sources = Sources::read(&inputs).expect("sources");
    let err = plan_rename_term(&sources, "Naïve", "Naïve→", &[], true)
        .and_then(|plan| write_checked(&sources, plan.checked, false, &[]))
        .expect_err("an arrow is not Latin-1");
    assert!(err.to_string().contains("windows-1252"), "{err}");
    assert_eq!(std::fs::read(&main).expect("main"), before.0);
    assert_eq!(std::fs::read(&chapter).expect("chapter"), before.1);
}

#[test]
fn a_file_with_invalid_bytes_is_read_but_not_written() {
    use ledger_edit::{Sources, plan_relabel, write_checked};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("stray");
    copy_dir(
        &datasets().join("latex-features/encodings/utf8-stray"),
        &root,
    );
    let before = std::fs::read(root.join("main.tex")).expect("main");
    let sources = Sources::read(std::slice::from_ref(&root)).expect("sources");
    let (checked, n) = plan_relabel(&sources, "sec:b", "sec:details").expect("plan");
    assert_eq!(n, 2);
    let err = write_checked(&sources, checked, false, &[]).expect_err("invalid bytes");
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");
    assert_eq!(std::fs::read(root.join("main.tex")).expect("main"), before);
}

#[cfg(unix)]
#[test]
fn an_edit_and_its_undo_keep_each_file_s_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let (private, read_only) = (dir.path().join("a.tex"), dir.path().join("b.tex"));
    let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    for (path, m) in [(&private, 0o600), (&read_only, 0o444)] {
        std::fs::write(path, "old").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).expect("chmod");
    }
    let changes: BTreeMap<PathBuf, (String, String)> = [&private, &read_only]
        .into_iter()
        .map(|p| (p.clone(), ("old".to_string(), "new".to_string())))
        .collect();
    let record = commit(&changes, &BTreeMap::new(), &dir.path().join("undo")).expect("commit");
    assert_eq!(std::fs::read_to_string(&private).expect("read"), "new");
    assert_eq!((mode(&private), mode(&read_only)), (0o600, 0o444));
    undo(&record).expect("undo");
    assert_eq!(std::fs::read_to_string(&read_only).expect("read"), "old");
    assert_eq!((mode(&private), mode(&read_only)), (0o600, 0o444));
}

#[test]
fn an_incomplete_undo_record_is_passed_over_and_the_records_stay_out_of_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a.tex");
    std::fs::write(&file, "old").expect("write");
    let undo_root = dir.path().join(".ledger-undo");
    let changes: BTreeMap<PathBuf, (String, String)> =
        [(file.clone(), ("old".to_string(), "new".to_string()))].into();
    let record = commit(&changes, &BTreeMap::new(), &undo_root).expect("commit");
    assert!(record.join("record.json").is_file());
    // The folder ignores itself for git.
    let ignore = std::fs::read_to_string(undo_root.join(".gitignore")).expect(".gitignore");
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
    // A newer record folder without its content (a crash of an older version) is passed over.
    std::fs::create_dir(undo_root.join("99999999999999999999")).expect("mkdir");
    assert_eq!(last_record(&undo_root), Some(record.clone()));
    undo(&record).expect("undo");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "old");
}

#[test]
fn rename_term_finds_symbol_terms_keeps_title_case_and_old_anchors() {
    use ledger_edit::plan_rename_term;
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "# Guide\n\n## Building C++ Code\n\nSome C++ and c++ code, not c+++ nor c++17.\n\n\
                See [building](#building-c-code).\n\n## Registry Index\n\nThe registry lists crates.\n";
    let (sources, file) = one_markdown_file(dir.path(), "guide", text);
    let broken = |docs: &[Document]| {
        docs.iter()
            .flat_map(|d| &d.mentions)
            .filter(|m| !matches!(m.resolution, ledger_core::Resolution::Resolved { .. }))
            .count()
    };
    assert_eq!(
        broken(&sources.docs),
        0,
        "the link resolves before the edit"
    );
    let edited = |plan: &ledger_edit::RenamePlan| {
        assert!(
            plan.checked.findings.is_empty(),
            "{:?}",
            plan.checked.findings
        );
        plan.checked.edited[&file].clone()
    };
    // `c++` is found although `\b` cannot end it; `c+++` and `c++17` are other words. The
    // heading keeps its old anchor, so the link (and any from outside) still lands.
    let plan = plan_rename_term(&sources, "c++", "Rust", &[], true).expect("plan");
    assert_eq!((plan.occurrences, plan.anchors_kept, plan.links), (3, 1, 0));
    let new = edited(&plan);
    assert!(
        new.contains("## Building Rust Code {#building-c-code}\n"),
        "{new}"
    );
    assert!(
        new.contains("Some Rust and Rust code, not c+++ nor c++17."),
        "{new}"
    );
    assert!(new.contains("[building](#building-c-code)"), "{new}");
    // Without kept anchors the link follows the new one.
    let plan = plan_rename_term(&sources, "c++", "Rust", &[], false).expect("plan");
    assert_eq!((plan.occurrences, plan.anchors_kept, plan.links), (3, 0, 1));
    let new = edited(&plan);
    assert!(new.contains("## Building Rust Code\n"), "{new}");
    assert!(new.contains("[building](#building-rust-code)"), "{new}");
    // A title-cased heading stays title-cased; a sentence keeps sentence case.
    let plan = plan_rename_term(&sources, "registry", "crate store", &[], true).expect("plan");
    let new = edited(&plan);
    assert!(
        new.contains("## Crate Store Index {#registry-index}\n"),
        "{new}"
    );
    assert!(new.contains("The crate store lists crates."), "{new}");
    // "package index" would make "Package Index Index": a repetition verification refuses.
    let plan = plan_rename_term(&sources, "registry", "package index", &[], true).expect("plan");
    let kinds: Vec<_> = plan.checked.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [ledger_edit::FindingKind::Repeat]);
}

#[test]
fn a_terms_file_whose_renames_feed_each_other_is_refused_naming_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let read = |text: &str| {
        let path = dir.path().join("terms.toml");
        std::fs::write(&path, text).expect("write");
        ledger_edit::read_terms(&path).map_err(|e| e.to_string())
    };
    let cycle = read("workspace = \"package\"\npackage = \"Workspace\"\n").expect_err("a cycle");
    assert!(
        cycle.contains("form a cycle") && cycle.contains("`package` → `Workspace`"),
        "{cycle}"
    );
    let chain = read("crate = \"package\"\npackage = \"module\"\n").expect_err("a chain");
    assert!(
        chain.contains("chain") && chain.contains("`crate` → `package` → `module`"),
        "{chain}"
    );
    // A change of case only, and renames that do not meet, are read as they are.
    let fine = read("Cargo = \"cargo\"\ncrate = \"package\"\n").expect("no chain");
    assert_eq!(fine.len(), 2);
    // A new term whose own rename only changes its case feeds nothing.
    let fine = read("cask = \"Barrel\"\nbarrel = \"Barrel\"\n").expect("no cycle");
    assert_eq!(fine.len(), 2);
}

/// A folder `name` in `dir` holding one Markdown file, `name.md` with `text`, read as an edit's
/// sources; and the file's path.
fn one_markdown_file(dir: &Path, name: &str, text: &str) -> (ledger_edit::Sources, PathBuf) {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).expect("mkdir");
    let file = root.join(format!("{name}.md"));
    std::fs::write(&file, text).expect("write");
    let sources = ledger_edit::Sources::read(std::slice::from_ref(&root)).expect("sources");
    (sources, file)
}

/// Distinct lower-case words of six letters or more in the cargo book's prose, in order of
/// first use, none the plural of another (their renames would overlap).
fn cargo_book_words(texts: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut words = Vec::new();
    for text in texts.values() {
        for w in text.split(|c: char| !c.is_ascii_alphabetic()) {
            if w.len() >= 6 && w.chars().all(|c| c.is_ascii_lowercase()) && seen.insert(w) {
                words.push(w.to_string());
            }
        }
    }
    let plurals: std::collections::BTreeSet<String> =
        words.iter().map(|w| ledger_edit::plural(w)).collect();
    words.retain(|w| !plurals.contains(w));
    words
}

#[test]
fn renaming_many_terms_in_one_pass_equals_renaming_them_one_by_one() {
    let docs = parse(&corpora().join("cargo-book/doc/book/src"));
    let texts = texts(&docs);
    let words = cargo_book_words(&texts);
    assert!(words.len() > 1000, "{}", words.len());
    // Every 40th word: common and rare ones.
    let terms: Vec<(String, String)> = words
        .iter()
        .step_by(40)
        .map(|w| (w.clone(), format!("{w}zq")))
        .collect();
    let all = ledger_edit::rename_terms(&docs, &texts, &terms, &[]).expect("all at once");
    let (mut replacements, mut left) = (Vec::new(), Vec::new());
    for (old, new) in &terms {
        let one = ledger_edit::rename_term(&docs, &texts, old, new, &[]).expect("one");
        replacements.extend(one.replacements);
        left.extend(one.left);
    }
    replacements.sort();
    left.sort();
    assert!(all.replacements.len() > 500, "{}", all.replacements.len());
    assert_eq!(all.replacements, replacements);
    assert_eq!(all.left, left);
}

#[test]
fn a_term_is_matched_in_any_case_unicode_gives_it() {
    use ledger_edit::plan_rename_term;
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "# Cities\n\nİstanbul is large. ISTANBUL, istanbul and Istanbul too.\n\n\
                ÉCOLE and école and École.\n";
    let (sources, file) = one_markdown_file(dir.path(), "cities", text);
    let plan = plan_rename_term(&sources, "istanbul", "ankara", &[], true).expect("plan");
    assert!(plan.left.is_empty(), "{:?}", plan.left);
    assert_eq!(plan.occurrences, 4);
    let new = &plan.checked.edited[&file];
    assert!(
        new.contains("Ankara is large. ANKARA, ankara and Ankara too."),
        "{new}"
    );
    let plan = plan_rename_term(&sources, "école", "lycée", &[], true).expect("plan");
    assert!(
        plan.checked.edited[&file].contains("LYCÉE and lycée and Lycée."),
        "{}",
        plan.checked.edited[&file]
    );
}

#[test]
fn reference_links_whose_text_holds_code_and_brackets_follow_a_renamed_heading() {
    use ledger_edit::plan_rename_term;
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "# Guide\n\n## Configuring a target\n\nSettings.\n\n## Tables\n\n\
                See the [`[[test]]` table][t] and [the target][].\n\n\
                [t]: #configuring-a-target\n[the target]: #configuring-a-target\n";
    let (sources, file) = one_markdown_file(dir.path(), "guide", text);
    let plan = plan_rename_term(&sources, "target", "goal", &[], false).expect("plan");
    assert!(
        plan.checked.findings.is_empty(),
        "{:?}",
        plan.checked.findings
    );
    assert_eq!(plan.links, 2);
    let new = &plan.checked.edited[&file];
    assert!(new.contains("## Configuring a goal\n"), "{new}");
    assert!(
        new.contains("[t]: #configuring-a-goal\n[the target]: #configuring-a-goal\n"),
        "{new}"
    );
    // Kept anchors: the links stay as they are.
    let plan = plan_rename_term(&sources, "target", "goal", &[], true).expect("plan");
    assert_eq!((plan.links, plan.anchors_kept), (0, 1));
    let new = &plan.checked.edited[&file];
    assert!(
        new.contains("## Configuring a goal {#configuring-a-target}\n"),
        "{new}"
    );
}

/// What a [`Progress`](ledger_core::progress::Progress) heard: each step with its total and
/// how many items advanced.
#[derive(Default)]
struct Heard(std::sync::Mutex<Vec<(String, u64, u64)>>);

impl ledger_core::progress::Progress for Heard {
    fn start(&self, what: &str, total: u64) {
        self.0
            .lock()
            .expect("lock")
            .push((what.to_string(), total, 0));
    }
    fn grow(&self, _: u64) {}
    fn advance(&self, _: &str) {
        if let Some(step) = self.0.lock().expect("lock").last_mut() {
            step.2 += 1;
        }
    }
    fn note(&self, _: &str) {}
    fn finish(&self) {}
}

#[test]
fn renaming_terms_reports_each_file_matched_then_verification() {
    let book = corpora().join("cargo-book/doc/book/src");
    let sources = ledger_edit::Sources::read(std::slice::from_ref(&book)).expect("sources");
    let files = sources.texts.len() as u64;
    let terms = [("registry".to_string(), "package index".to_string())];
    let heard = Heard::default();
    let plan = ledger_edit::plan_rename_terms(&sources, &terms, &[], true, &heard).expect("plan");
    assert!(plan.occurrences > 100, "{}", plan.occurrences);
    let steps = heard.0.into_inner().expect("lock");
    assert_eq!(
        steps,
        [
            ("matching terms".to_string(), files, files),
            ("verifying".to_string(), 2, 2)
        ]
    );
}
