//! Real processes at once and killed: two writers of one graph, two edits of one folder, and
//! `kill -9` at many moments of an edit, and a crash between two files of a commit.

use super::{copy_dir, ledger, root, sql, stdout};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// `ledger ARGS` started with stderr piped; its stderr lines arrive on the receiver.
fn spawn(args: &[&str], env: &[(&str, &str)]) -> (Child, Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args(args)
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_EMBED_EMBEDDER", "hash")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ledger starts");
    let (tx, rx) = channel();
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits (at most two minutes) for a line containing `needle`; the lines read on the way.
fn wait_for_line(rx: &Receiver<String>, needle: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no line with `{needle}`; stderr was:\n{}", seen.join("\n"));
}

/// The rest of a child's stderr, once it has exited; and its exit code.
fn finish(mut child: Child, rx: Receiver<String>) -> (Option<i32>, String) {
    let status = child.wait().expect("wait");
    (status.code(), rx.iter().collect::<Vec<_>>().join("\n"))
}

/// Holds `path`'s advisory lock as another ledger process would.
fn hold_lock(path: &Path) -> std::fs::File {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .expect("lock file");
    f.lock().expect("lock");
    f
}

#[test]
fn a_second_writer_of_a_graph_waits_for_the_first_or_stops_with_no_wait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = equational_paper(dir.path());
    let graph = dir.path().join("graph");
    let (p, g) = (paper.to_str().expect("utf8"), graph.to_str().expect("utf8"));
    let lock = hold_lock(&graph.join(".lock"));
    let o = ledger(&["index", p, "--out", g, "--no-progress", "--no-wait"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is being written by another ledger process"),
        "{err}"
    );
    assert!(!graph.join("current").exists(), "nothing committed");
    // Two writers started while the graph is locked both wait, then both commit in turn.
    let args = ["index", p, "--out", g, "--no-progress"];
    let (a, a_err) = spawn(&args, &[]);
    let (b, b_err) = spawn(&args, &[]);
    wait_for_line(&a_err, "waiting for it to finish");
    wait_for_line(&b_err, "waiting for it to finish");
    assert!(
        !graph.join("current").exists(),
        "neither wrote while waiting"
    );
    drop(lock);
    for (child, rx) in [(a, a_err), (b, b_err)] {
        let (code, err) = finish(child, rx);
        assert_eq!(code, Some(0), "{err}");
    }
    let docs = sql(&graph, "SELECT count(*) AS n FROM documents");
    assert_eq!(docs[0]["n"], 1);
    let units = sql(&graph, "SELECT count(*) AS n FROM units");
    assert!(units[0]["n"].as_u64().unwrap_or(0) > 100, "{units}");
}

/// A copy of the Equational Theories paper in `dir/paper`, whose label `automated-sec` is
/// defined in one file and referred to from four others.
fn equational_paper(dir: &Path) -> PathBuf {
    let paper = dir.join("paper");
    copy_dir(&root().join("datasets/paper-equational-theories"), &paper);
    paper
}

/// Asserts that every file holds its text in `before` or the complete text of
/// `relabel automated-sec sec:automated` on it, never a mix.
fn assert_old_or_relabelled(now: &[(PathBuf, String)], before: &[(PathBuf, String)], when: &str) {
    for ((path, now), (_, old)) in now.iter().zip(before) {
        let new = old
            .replace("{automated-sec}", "{sec:automated}")
            .replace("automated-sec,", "sec:automated,")
            .replace(",automated-sec", ",sec:automated");
        assert!(
            *now == *old || *now == new,
            "{when}: {} is neither old nor new",
            path.display()
        );
    }
}

/// The paper's `.tex` files with their texts.
fn texts(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "tex"))
        .map(|e| (e.path(), std::fs::read_to_string(e.path()).expect("read")))
        .collect();
    v.sort();
    v
}

#[test]
fn two_edits_of_one_folder_at_once_never_both_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = equational_paper(dir.path());
    let p = paper.to_str().expect("utf8");
    // Both edits read the files and plan while the root is locked, then commit in turn.
    let lock = hold_lock(&paper.join(".ledger-undo/.lock"));
    let (a, a_err) = spawn(&["relabel", "thm:canon", "thm:X1", p], &[]);
    let (b, b_err) = spawn(&["relabel", "thm:canon", "thm:X2", p], &[]);
    wait_for_line(&a_err, "waiting for it to finish");
    wait_for_line(&b_err, "waiting for it to finish");
    drop(lock);
    let (a, b) = (finish(a, a_err), finish(b, b_err));
    let codes = [a.0, b.0];
    assert!(
        codes.contains(&Some(0)) && codes.iter().any(|c| *c != Some(0)),
        "exactly one edit is written: {a:?} {b:?}"
    );
    let loser = if a.0 == Some(0) { &b.1 } else { &a.1 };
    assert!(
        loser.contains("changed on disk since it was read; nothing was written"),
        "{loser}"
    );
    let winner = if a.0 == Some(0) { "thm:X1" } else { "thm:X2" };
    let loser_label = if a.0 == Some(0) { "thm:X2" } else { "thm:X1" };
    let all: String = texts(&paper).into_iter().map(|(_, t)| t).collect();
    assert!(all.contains(&format!("{{{winner}}}")));
    assert!(!all.contains(loser_label) && !all.contains("{thm:canon}"));
    // One record: one undo restores the original.
    let o = ledger(&["undo", p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ledger(&["undo", p]);
    assert!(!o.status.success(), "{}", stdout(&o));
}

#[test]
fn killing_an_edit_at_ten_moments_leaves_every_earlier_edit_undoable_and_no_shadow_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = equational_paper(dir.path());
    let p = paper.to_str().expect("utf8");
    // Shadow copies go to this temporary folder; one left by a process that is gone.
    let temp = dir.path().join("tmp");
    std::fs::create_dir_all(temp.join("ledger-shadow-999999999-gone")).expect("mkdir");
    let t = temp.to_str().expect("utf8");
    let env = [("TMPDIR", t), ("LEDGER_EDIT_PAUSE_BETWEEN_FILES_MS", "120")];
    let run = |args: &[&str]| {
        let (child, rx) = spawn(args, &env);
        finish(child, rx)
    };
    let original = texts(&paper);
    let undo = paper.join(".ledger-undo");
    let records = || -> usize {
        std::fs::read_dir(&undo)
            .map(|d| {
                d.flatten()
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .unwrap_or(0)
    };
    let partials = || -> usize {
        std::fs::read_dir(&undo)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(".partial-"))
                    .count()
            })
            .unwrap_or(0)
    };
    let mut killed_with_a_record = 0;
    for moment in 0..10u64 {
        // The earlier edit, committed.
        let (code, err) = run(&["relabel", "thm:canon", "thm:canonical", p]);
        assert_eq!(code, Some(0), "{err}");
        let before = texts(&paper);
        assert_eq!(records(), 1);
        // The edit killed: during parsing and verification for the first three moments, during
        // the commit (five files renamed 120 ms apart) for the others.
        let (mut child, _rx) = spawn(&["relabel", "automated-sec", "sec:automated", p], &env);
        if moment < 3 {
            std::thread::sleep(Duration::from_millis(150 * (moment + 1)));
        } else {
            let deadline = Instant::now() + Duration::from_secs(120);
            while records() + partials() < 2 && child.try_wait().expect("try_wait").is_none() {
                assert!(Instant::now() < deadline, "the commit never began");
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(Duration::from_millis(90 * (moment - 3)));
        }
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        assert_old_or_relabelled(&texts(&paper), &before, &format!("moment {moment}"));
        // Undo until nothing is left: the killed edit (if its record was written), then the
        // earlier one; the files are then the original.
        let mut undone = 0;
        loop {
            let (code, err) = run(&["undo", p]);
            if code != Some(0) {
                assert!(err.contains("no edit to undo"), "moment {moment}: {err}");
                break;
            }
            undone += 1;
            assert!(undone <= 2, "moment {moment}: more undos than edits");
        }
        assert!(
            undone >= 1,
            "moment {moment}: the earlier edit could not be undone"
        );
        killed_with_a_record += usize::from(undone == 2);
        assert_eq!(texts(&paper), original, "moment {moment}");
        let leftovers: Vec<_> = std::fs::read_dir(&paper)
            .expect("read_dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".ledger-tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "moment {moment}: {leftovers:?}");
    }
    assert!(killed_with_a_record > 0, "no kill fell in a commit");
    // The next edit removes the shadow copies of processes that are gone.
    let (code, err) = run(&["relabel", "thm:canon", "thm:canonical", p]);
    assert_eq!(code, Some(0), "{err}");
    let shadows: Vec<_> = std::fs::read_dir(&temp)
        .expect("read_dir")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("ledger-shadow-")
        })
        .map(|e| e.file_name())
        .collect();
    assert!(shadows.is_empty(), "{shadows:?}");
}

#[test]
fn a_crash_between_files_leaves_each_file_old_or_new_and_undo_restores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = equational_paper(dir.path());
    let p = paper.to_str().expect("utf8");
    let original = texts(&paper);
    // `automated-sec` is defined in one file and referred to from four others: five files change.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args(["relabel", "automated-sec", "sec:automated", p])
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_EDIT_PAUSE_BETWEEN_FILES_MS", "60000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ledger relabel starts");
    // Wait until the first file has its new text, then kill the process.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while texts(&paper) == original {
        assert!(std::time::Instant::now() < deadline, "no file changed");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let crashed = texts(&paper);
    let changed = crashed
        .iter()
        .zip(&original)
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        (1..5).contains(&changed),
        "{changed} files changed before the crash"
    );
    assert_old_or_relabelled(&crashed, &original, "after the crash");
    // The unfinished edit is reported, and no edit builds on the half-written files.
    let o = ledger(&["verify", p]);
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("an edit stopped between writing two of its files")
            && said.contains(&format!("`ledger undo {p}`")),
        "{said}"
    );
    let o = ledger(&["relabel", "fig:flow", "fig:flowchart", p]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("an earlier edit did not finish"), "{err}");
    assert_eq!(texts(&paper), crashed);
    // One undo restores every file.
    let o = ledger(&["undo", p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(texts(&paper), original);
    let leftovers: Vec<_> = std::fs::read_dir(&paper)
        .expect("read_dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".ledger-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_undo_record_that_cannot_be_written_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let guide = dir.path().join("guide");
    std::fs::create_dir_all(&guide).expect("mkdir");
    let paragraph = "The registry keeps every crate. ".repeat(30);
    for name in ["a.md", "b.md"] {
        let text = format!("# {name}\n\n{}\n", format!("{paragraph}\n\n").repeat(30));
        std::fs::write(guide.join(name), text).expect("write");
    }
    let read = || ["a.md", "b.md"].map(|n| std::fs::read_to_string(guide.join(n)).expect("read"));
    let before = read();
    // Files of at most 64 KiB, as on a disk that is full: each file fits (the shadow copy the
    // edit is verified on), the undo record of both does not. SIGXFSZ is ignored so that the
    // write fails with an error instead of killing the process.
    let g = guide.to_str().expect("utf8");
    let o = Command::new("bash")
        .args([
            "-c",
            "trap '' XFSZ; exec prlimit --fsize=65536 -- \"$@\"",
            "ledger",
        ])
        .arg(env!("CARGO_BIN_EXE_ledger"))
        .args(["rename-term", "registry", "index", g])
        .env_remove("LEDGER_CONFIG")
        .output()
        .expect("prlimit runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("record.json"), "{err}");
    assert_eq!(read(), before);
    let records: Vec<String> = std::fs::read_dir(guide.join(".ledger-undo"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".lock" && n != ".gitignore")
                .collect()
        })
        .unwrap_or_default();
    assert!(records.is_empty(), "left behind: {records:?}");
}
