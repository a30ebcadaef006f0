//! Limits that hold against a hostile user or document: SQL memory, time and recursion; a
//! byte-order mark before a Markdown heading; SARIF URIs of odd file names; resource settings a
//! project file asks for.

use super::{carleson_graph, ledger, ledger_in, stdout};
use std::path::Path;
use std::process::{Command, Output};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `ledger sql` on `graph` with `args` before the statement.
fn sql(graph: &Path, args: &[&str], statement: &str) -> Output {
    let mut all = vec!["sql", "--graph", graph.to_str().expect("utf8")];
    all.extend_from_slice(args);
    all.push(statement);
    ledger(&all)
}

/// Exit code 2 and a message naming `limit`, no abort.
fn stopped_at(o: &Output, limit: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the statement was stopped") && err.contains(limit),
        "{limit}: {err}"
    );
}

#[test]
fn sql_statements_end_within_their_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = carleson_graph(dir.path());
    let g = graph.to_str().expect("utf8");

    // Memory, under a 2 GiB address space: a gigabyte string is refused before it is made
    // (it aborted the process: `memory allocation … failed`, exit 134).
    let o = Command::new("prlimit")
        .args(["--as=2147483648", "--", env!("CARGO_BIN_EXE_ledger")])
        .args(["sql", "--graph", g, "--memory-limit", "256MiB"])
        .arg("SELECT length(repeat('x', 1000000000))")
        .env_remove("LEDGER_CONFIG")
        .output()
        .expect("prlimit runs");
    stopped_at(
        &o,
        "the SQL memory limit of 256 MiB (raise it with --memory-limit",
    );
    // A result larger than the limit is stopped as it is collected.
    let cross = "SELECT a.text, b.text FROM units a, units b";
    stopped_at(
        &sql(&graph, &["--memory-limit", "1MiB"], cross),
        "memory limit of 1 MiB",
    );
    // A sort of the same rows (a window needs it; a plain ORDER BY under count(*) is optimised
    // away) spills to disk within 16 MiB and counts what the unlimited run counts; within 1 MiB
    // it cannot even spill, and stops.
    let sorted = "SELECT count(*) AS n, max(r) AS m FROM \
                  (SELECT row_number() OVER (ORDER BY a.text, b.text) AS r FROM units a, units b)";
    let spilled = sql(
        &graph,
        &["--memory-limit", "16MiB", "--format", "csv"],
        sorted,
    );
    assert!(spilled.status.success(), "{}", stderr(&spilled));
    let whole = sql(&graph, &["--format", "csv"], sorted);
    assert_eq!(stdout(&spilled), stdout(&whole));
    let analysed = sql(
        &graph,
        &["--memory-limit", "16MiB"],
        &format!("EXPLAIN ANALYZE {sorted}"),
    );
    let plan = stdout(&analysed);
    let spills = plan
        .split("spill_count=")
        .skip(1)
        .filter_map(|s| {
            s.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum::<u64>();
    assert!(spills > 0, "the sort did not spill: {plan}");
    stopped_at(
        &sql(&graph, &["--memory-limit", "1MiB"], sorted),
        "memory limit of 1 MiB",
    );
    // Within the limit the same query runs.
    let o = sql(&graph, &[], "SELECT length(repeat('x', 1000)) AS n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("| 1000 |"), "{}", stdout(&o));

    // Recursion: an endless recursive CTE stops at the default 10,000 steps; a finite one runs,
    // and is stopped by a lower limit.
    let endless =
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t";
    stopped_at(&sql(&graph, &[], endless), "limit of 10000 recursive steps");
    let hundred = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 100) \
                   SELECT count(*) AS steps FROM t";
    let o = sql(&graph, &["--format", "csv"], hundred);
    assert_eq!(stdout(&o), "steps\n100\n", "{}", stderr(&o));
    stopped_at(
        &sql(&graph, &["--max-recursion", "50"], hundred),
        "limit of 50 recursive steps",
    );

    // Time: a filtered four-way self-join of the units (about 10^10 rows) is cancelled.
    let join = "SELECT count(*) FROM units a, units b, units c, units d \
                WHERE a.text < b.text AND b.text < c.text AND c.text <> d.text";
    stopped_at(
        &sql(&graph, &["--timeout", "2"], join),
        "the SQL time limit of 2 s",
    );

    // A limit in the configuration file works as the flag does.
    let config = dir.path().join("mine.toml");
    std::fs::write(&config, "[sql]\nmax_recursion = 20\n").expect("write");
    let c = config.to_str().expect("utf8");
    stopped_at(
        &sql(&graph, &["--config", c], hundred),
        "limit of 20 recursive steps",
    );
    let o = sql(&graph, &["--memory-limit", "lots"], "SELECT 1");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("sql.memory_limit = \"lots\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_sql_shell_survives_a_limit_and_takes_the_next_statement() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = carleson_graph(dir.path());
    let command = format!(
        "{} sql --graph {} --memory-limit 64MiB --max-recursion 100",
        env!("CARGO_BIN_EXE_ledger"),
        graph.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env_remove("LEDGER_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script runs");
    let mut input = child.stdin.take().expect("stdin");
    std::thread::sleep(std::time::Duration::from_secs(3));
    for line in [
        "SELECT length(repeat('x', 1000000000));\n",
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t;\n",
        "SELECT 6 * 7 AS still_here;\n",
    ] {
        input.write_all(line.as_bytes()).expect("write");
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    input.write_all(b".quit\n").expect("write");
    drop(input);
    let o = child.wait_with_output().expect("wait");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("memory limit of 64 MiB"), "{out}");
    assert!(out.contains("limit of 100 recursive steps"), "{out}");
    assert!(out.contains("| still_here |"), "{out}");
    assert!(o.status.success(), "{out}");
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_heading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    let file = docs.join("widgets.md");
    let text =
        "\u{feff}# Widgets\n\nSee [widgets](#widgets).\n\n## Gadgets\n\nUse [them](#widgets).\n";
    std::fs::write(&file, text).expect("write");
    let d = docs.to_str().expect("utf8");
    // The anchor resolves (it was reported broken).
    let o = ledger(&["verify", d]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // A rename of that heading keeps its old anchor and the mark, and undo restores the bytes.
    let o = ledger(&["rename-term", "widgets", "gizmos", d]);
    assert!(o.status.success(), "{}", stderr(&o));
    let edited = std::fs::read(&file).expect("read");
    let edited = String::from_utf8(edited).expect("utf8");
    assert!(
        edited.starts_with("\u{feff}# Gizmos {#widgets}\n"),
        "{edited:?}"
    );
    assert!(ledger(&["verify", d]).status.success());
    let o = ledger_in(&docs, &["undo", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), text);
}

#[test]
fn sarif_uris_are_relative_percent_encoded_and_the_log_validates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    let odd = docs.join("odd name, with\nbreak");
    std::fs::create_dir_all(&odd).expect("mkdir");
    std::fs::write(odd.join("a b,c.md"), "# A\n\nSee [b](#nowhere).\n").expect("write");
    std::fs::write(docs.join("plain.md"), "# P\n\nSee [q](#gone).\n").expect("write");
    let o = ledger_in(dir.path(), &["verify", "docs", "--format", "sarif"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let log = stdout(&o);
    let sarif: serde_json::Value = serde_json::from_str(&log).expect("SARIF is JSON");
    let run = &sarif["runs"][0];
    let mut uris: Vec<String> = run["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            let at = &r["locations"][0]["physicalLocation"]["artifactLocation"];
            assert_eq!(at["uriBaseId"], "%SRCROOT%", "{at}");
            at["uri"].as_str().expect("uri").to_string()
        })
        .collect();
    uris.sort();
    assert_eq!(
        uris,
        [
            "docs/odd%20name%2C%20with%0Abreak/a%20b%2Cc.md",
            "docs/plain.md"
        ]
    );
    let base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .expect("the base is given");
    assert!(
        base.starts_with("file:///") && base.ends_with('/'),
        "{base}"
    );
    // Microsoft's SARIF validator (the SARIF 2.1.0 schema and its rules; tests/run installs it):
    // no error, where the raw path gave SARIF1002 "not a valid URI reference".
    let Some(validator) = sarif_validator() else {
        return;
    };
    let validate = |log: &str| {
        let path = dir.path().join("ledger.sarif");
        std::fs::write(&path, log).expect("write");
        let o = Command::new(&validator)
            .arg("validate")
            .arg(&path)
            .output()
            .expect("the validator runs");
        // Its exit code is 0 with errors too: the errors it prints decide.
        let said = stdout(&o);
        (o.status.success() && !said.contains(": error SARIF"), said)
    };
    let (valid, said) = validate(&log);
    assert!(valid, "{said}");
    // The check is not vacuous: the raw path that ledger wrote before is an error.
    let mut raw = sarif.clone();
    for r in raw["runs"][0]["results"].as_array_mut().expect("results") {
        let at = &mut r["locations"][0]["physicalLocation"]["artifactLocation"];
        let decoded = at["uri"].as_str().expect("uri").replace("%20", " ");
        let decoded = decoded.replace("%2C", ",").replace("%0A", "\n");
        at["uri"] = decoded.into();
    }
    let (valid, said) = validate(&raw.to_string());
    assert!(!valid && said.contains("error SARIF1002"), "{said}");
}

/// Microsoft's SARIF multitool named by `LEDGER_SARIF_MULTITOOL`, or `None` (a failure when
/// `LEDGER_REQUIRE_SARIF=1`, as in CI).
fn sarif_validator() -> Option<std::path::PathBuf> {
    let tool = std::env::var_os("LEDGER_SARIF_MULTITOOL").map(std::path::PathBuf::from);
    match tool {
        Some(t) if t.is_file() => Some(t),
        _ => {
            assert!(
                std::env::var("LEDGER_REQUIRE_SARIF").as_deref() != Ok("1"),
                "LEDGER_REQUIRE_SARIF=1 but LEDGER_SARIF_MULTITOOL names no validator"
            );
            eprintln!("skipped: no SARIF validator (tests/run installs it)");
            None
        }
    }
}

#[test]
fn a_project_file_cannot_ask_for_more_than_the_machine_has() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(docs.join("guide.md"), "# Guide\n\nText.\n").expect("write");
    std::fs::write(
        docs.join("ledger.toml"),
        "[index]\njobs = 100000\n[related]\nk = 1000000\n",
    )
    .expect("write");
    let graph = dir.path().join("graph");
    let o = ledger(&[
        "index",
        docs.to_str().expect("utf8"),
        "--out",
        graph.to_str().expect("utf8"),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        err.contains(&format!(
            "index.jobs = 100000 is more than a project's ledger.toml may ask; using {cores}"
        )),
        "{err}"
    );
    assert!(err.contains("related.k = 1000000"), "{err}");
}

/// `ledger sql` on `graph` run under GNU time: its output, and its peak resident memory in
/// bytes.
fn sql_peak(graph: &Path, args: &[&str], statement: &str) -> (Output, usize) {
    let o = Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kib=%M", "--", env!("CARGO_BIN_EXE_ledger")])
        .args(["sql", "--graph", graph.to_str().expect("utf8")])
        .args(args)
        .arg(statement)
        .env_remove("LEDGER_CONFIG")
        .output()
        .expect("GNU time runs (the `time` package)");
    let err = stderr(&o);
    let kib: usize = err
        .rsplit("peak-rss-kib=")
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {err}"));
    (o, kib * 1024)
}

#[test]
fn sql_results_and_doubled_strings_stay_near_the_memory_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = carleson_graph(dir.path());
    const LIMIT: usize = 16 << 20;
    let (_, base) = sql_peak(&graph, &[], "SELECT 1");
    let near = |peak: usize, what: &str| {
        assert!(
            peak <= base + 2 * LIMIT,
            "{what}: {} MiB at the peak, {} MiB for SELECT 1, a limit of 16 MiB",
            peak >> 20,
            base >> 20
        );
    };
    // Every unit's text beside every unit: about 40 MB. As a table (printed once its rows are
    // in, each padded to the widest) it stops at the limit; as CSV and JSON it streams out
    // whole in bounded memory.
    let cross = "SELECT a.text FROM units a, units b";
    let (o, peak) = sql_peak(&graph, &["--memory-limit", "16MiB"], cross);
    stopped_at(&o, "the SQL memory limit of 16 MiB");
    near(peak, "a table");
    // A result of a few kilobytes whose table is 100 MB: one wide value pads every row.
    let padded = "SELECT CASE WHEN value = 1 THEN repeat('x', 5000) ELSE 'y' END AS c \
                  FROM generate_series(1, 20000)";
    let (o, peak) = sql_peak(&graph, &["--memory-limit", "16MiB"], padded);
    stopped_at(&o, "the SQL memory limit of 16 MiB");
    near(peak, "a padded table");
    let (o, _) = sql_peak(
        &graph,
        &["--memory-limit", "16MiB", "--format", "csv"],
        padded,
    );
    assert_eq!(o.stdout.len(), 2 + 5001 + 2 * 19999, "{}", stderr(&o));
    for format in ["csv", "json"] {
        let (o, peak) = sql_peak(
            &graph,
            &["--memory-limit", "16MiB", "--format", format],
            cross,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            o.stdout.len() > 2 * LIMIT,
            "{format}: {} bytes",
            o.stdout.len()
        );
        near(peak, format);
    }
    // A recursive CTE that doubles a string at each step (`||` and `concat`) stops at the limit
    // before it has the memory several times over.
    for double in ["s || s", "concat(s, s)"] {
        let doubling = format!(
            "WITH RECURSIVE t(s, n) AS (SELECT 'ab', 1 UNION ALL SELECT {double}, n + 1 FROM t \
             WHERE n < 40) SELECT max(length(s)) FROM t"
        );
        let (o, peak) = sql_peak(&graph, &["--memory-limit", "16MiB"], &doubling);
        stopped_at(&o, "the SQL memory limit of 16 MiB");
        near(peak, double);
    }
    // Under the limit `||` gives what it always gave, nulls included.
    let o = sql(
        &graph,
        &["--format", "csv"],
        "SELECT 'a' || 'b' AS x, 'a' || NULL AS y, max(length(text || text)) = 2 * max(length(text)) AS z FROM units",
    );
    assert_eq!(stdout(&o), "x,y,z\nab,,true\n", "{}", stderr(&o));
}
