//! Integration tests of the store: real Parquet files written, committed and queried with SQL.

use arrow::array::{Array, Int64Array};
use ledger_core::Document;
use ledger_store::{RunInfo, SqlLimits, SqlSession, write_graph};
use std::path::{Path, PathBuf};

fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}

fn docs() -> Vec<Document> {
    let (sources, _) = ledger_parse::discover(&[datasets().join("paper-equational-theories")]);
    let tok = ledger_parse::Tokenizer::cl100k();
    let mut docs: Vec<_> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, Some(&tok)))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    docs
}

fn run() -> RunInfo {
    RunInfo {
        started_at: ledger_store::now_rfc3339(),
        command: "test".into(),
        inputs: "datasets".into(),
        seconds: 0.1,
        ..Default::default()
    }
}

/// The files of a table of the current version, in order, with their names and bytes.
fn table_files(graph: &Path, table: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(graph.join("current").join(table))
        .expect("table folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("table file"))
        })
        .collect()
}

/// All the bytes of a table of the current version, file after file.
fn table_bytes(graph: &Path, table: &str) -> Vec<u8> {
    table_files(graph, table)
        .into_iter()
        .flat_map(|(_, bytes)| bytes)
        .collect()
}

async fn count(session: &SqlSession, sql: &str) -> i64 {
    let batches = session.query(sql).await.expect("query runs");
    let col = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("an integer column")
        .clone();
    col.value(0)
}

#[tokio::test]
async fn graph_round_trips_through_parquet_and_sql() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = docs();
    let manifest = write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("write");
    let session = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .expect("open");
    let units: usize = docs.iter().map(|d| d.units.len()).sum();
    assert_eq!(
        count(&session, "SELECT COUNT(*) FROM units").await as usize,
        units
    );
    assert_eq!(manifest.rows["units"], units);
    let refs: usize = docs.iter().map(|d| d.reference_edges().len()).sum();
    assert_eq!(
        count(
            &session,
            "SELECT COUNT(*) FROM edges WHERE kind = 'REFERENCES'"
        )
        .await as usize,
        refs
    );
    assert_eq!(
        count(
            &session,
            "SELECT COUNT(*) FROM edges WHERE kind = 'CONTAINS'"
        )
        .await as usize,
        units - docs.len()
    );
    // Every REFERENCES edge points at a unit that exists; every CONTAINS child has exactly one parent.
    let dangling = count(
        &session,
        "SELECT COUNT(*) FROM edges e LEFT JOIN units u ON u.doc_id = e.dst_doc AND u.unit_id = e.dst_unit WHERE u.unit_id IS NULL",
    )
    .await;
    assert_eq!(dangling, 0);
    let broken: usize = docs
        .iter()
        .flat_map(|d| &d.mentions)
        .filter(|m| m.resolution.status() == "broken")
        .count();
    assert_eq!(
        count(&session, "SELECT COUNT(*) FROM broken_references").await as usize,
        broken
    );
    assert!(
        count(
            &session,
            "SELECT COUNT(*) FROM unit_degrees WHERE references_in > 0"
        )
        .await
            > 10
    );
    assert_eq!(count(&session, "SELECT COUNT(*) FROM runs").await, 1);
}

#[tokio::test]
async fn commits_are_versioned_deterministic_and_atomic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = docs();
    write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("first write");
    let v1 = table_bytes(dir.path(), "units");
    // A crash mid-write leaves a temporary folder behind: readers still see version 1.
    let stray = dir.path().join("versions/.tmp-000002-4242");
    std::fs::create_dir_all(&stray).expect("stray");
    std::fs::create_dir_all(stray.join("units")).expect("stray table");
    std::fs::write(stray.join("units/000001-x.parquet"), b"partial").expect("partial file");
    let session = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .expect("open v1");
    assert!(count(&session, "SELECT COUNT(*) FROM units").await > 0);
    let m2 =
        write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("second write");
    assert_eq!(m2.version, 2);
    let v2 = table_bytes(dir.path(), "units");
    assert_eq!(v1, v2, "same input gives byte-identical Parquet");
    assert!(!stray.exists(), "the stray temporary folder is cleaned up");
    let session = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .expect("open v2");
    assert_eq!(
        count(&session, "SELECT COUNT(*) FROM runs").await,
        2,
        "runs accumulate across versions"
    );
    // Only the current and the previous version are kept.
    write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("third write");
    let mut versions: Vec<String> = std::fs::read_dir(dir.path().join("versions"))
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort();
    assert_eq!(versions, ["000002", "000003"]);
}

#[tokio::test]
async fn a_folder_that_is_not_a_graph_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .err()
        .expect("not a graph");
    assert!(err.to_string().contains("not a LEDGER graph"), "{err}");
    assert!(
        SqlSession::open(Path::new("/nonexistent/graph"), SqlLimits::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn bad_sql_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_graph(dir.path(), &docs(), &[], &Default::default(), &run()).expect("write");
    let session = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .expect("open");
    assert!(session.query("SELECT nope FROM units").await.is_err());
    assert!(session.query("SELEC").await.is_err());
}

#[tokio::test]
async fn a_statement_past_a_limit_is_an_error_and_the_session_goes_on() {
    use ledger_store::{Limit, StoreError};
    let dir = tempfile::tempdir().expect("tempdir");
    write_graph(dir.path(), &docs(), &[], &Default::default(), &run()).expect("write");
    let limits = SqlLimits {
        memory: 1 << 20,
        timeout: std::time::Duration::from_secs(60),
        recursion: 30,
    };
    let session = SqlSession::open(dir.path(), limits).await.expect("open");
    let limit = |r: ledger_store::Result<Vec<arrow::array::RecordBatch>>| match r {
        Err(StoreError::LimitExceeded(l)) => Some(l),
        _ => None,
    };
    let big = session.query("SELECT repeat('ab', 1000000) AS s").await;
    assert_eq!(limit(big), Some(Limit::Memory(1 << 20)));
    let padded = session.query("SELECT lpad('x', 2000000) AS s").await;
    assert_eq!(limit(padded), Some(Limit::Memory(1 << 20)));
    let listed = session.query("SELECT range(10000000) AS r").await;
    assert_eq!(limit(listed), Some(Limit::Memory(1 << 20)));
    let endless =
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t";
    assert_eq!(
        limit(session.query(endless).await),
        Some(Limit::Recursion(30))
    );
    // Under the limits the same functions and a recursion of 20 steps run, in the same session.
    let small = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 20) \
                 SELECT count(*) AS n, max(length(repeat('ab', 1000))) AS l FROM t";
    let mut row = Vec::new();
    session
        .run_script(small, ledger_store::OutputFormat::Csv, &mut |b| {
            row.extend_from_slice(b);
            Ok(())
        })
        .await
        .expect("within the limits");
    assert_eq!(String::from_utf8_lossy(&row), "n,l\n20,2000\n");
    // Dates are not counted as integers: a month of days is no memory risk.
    let days =
        "SELECT cardinality(range(DATE '2024-01-01', DATE '2024-02-01', INTERVAL '1 day')) AS d";
    assert!(session.query(days).await.is_ok());
}

#[tokio::test]
async fn string_and_regex_functions_are_available() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_graph(dir.path(), &docs(), &[], &Default::default(), &run()).expect("write");
    let session = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .expect("open");
    let n = count(
        &session,
        "SELECT COUNT(*) FROM units WHERE lower(kind) = 'theorem' AND length(substr(text, 1, 5)) = 5 \
         AND regexp_like(text, '\\\\begin\\{') AND starts_with(unit_id, upper('t')) = false",
    )
    .await;
    assert!(n > 0);
}

#[tokio::test]
async fn judgments_round_trip_with_failures_and_usage() {
    use ledger_core::{CandidateVerdict, Judgment, JudgmentOutcome};
    let mut docs = docs();
    let ids: Vec<String> = docs[0].units.iter().map(|u| u.id.clone()).collect();
    let ok = Judgment {
        unit_id: ids[3].clone(),
        judge: "llm:m:p1".into(),
        cache_key: "k1".into(),
        candidates: vec![ids[1].clone(), ids[2].clone()],
        outcome: JudgmentOutcome::Verdicts(vec![
            CandidateVerdict {
                depends: true,
                elements: vec!["the magma \"M\"".into(), "law (1)".into()],
                score: Some(0.75),
            },
            CandidateVerdict {
                depends: false,
                elements: vec![],
                score: None,
            },
        ]),
        requests: 2,
        prompt_tokens: 900,
        completion_tokens: 40,
        reused: false,
    };
    let failed = Judgment {
        unit_id: ids[4].clone(),
        cache_key: "k2".into(),
        candidates: vec![ids[3].clone()],
        outcome: JudgmentOutcome::Failed("depends judgment: failed after 3 attempts".into()),
        requests: 3,
        reused: true,
        ..ok.clone()
    };
    docs[0].judgments = vec![ok.clone(), failed.clone()];
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("g");
    let mut info = run();
    (
        info.llm_requests,
        info.llm_prompt_tokens,
        info.llm_completion_tokens,
    ) = (5, 900, 40);
    write_graph(&graph, &docs, &[], &Default::default(), &info).expect("write");
    let back = ledger_store::read_judgments(&graph).expect("read");
    assert_eq!(
        back,
        vec![
            (docs[0].id.clone(), ok.clone()),
            (docs[0].id.clone(), failed.clone())
        ]
    );
    let session = SqlSession::open(&graph, SqlLimits::default())
        .await
        .expect("open");
    assert_eq!(
        count(
            &session,
            "SELECT COUNT(*) FROM judgments WHERE status = 'failed' AND error LIKE '%3 attempts'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &session,
            "SELECT CAST(SUM(array_length(candidates)) AS BIGINT) FROM judgments"
        )
        .await,
        3
    );
    assert_eq!(
        count(
            &session,
            "SELECT llm_requests + failed_judgments + reused_judgments + judged_units FROM runs"
        )
        .await,
        5 + 1 + 1 + 2
    );
}

#[test]
fn parts_round_trip_and_rewrites_are_idempotent() {
    use ledger_core::{Semantic, UnitEmbedding};
    let docs = docs();
    let doc = &docs[0];
    let semantic = Semantic {
        model: "m".into(),
        dim: 3,
        summarizer: "s".into(),
        embeddings: vec![UnitEmbedding {
            doc_id: doc.id.clone(),
            unit_id: doc.units[1].id.clone(),
            input_hash: "i".into(),
            summary: "a summary".into(),
            summary_hash: "h".into(),
            // As the graph stores vectors: int8 with a scale.
            vector: ledger_core::quantize::as_stored(&[0.5, -1.0, 2.0]),
        }],
        // Its RELATED edges (document scope) travel with it.
        related: vec![ledger_core::Edge {
            src_doc: doc.id.clone(),
            src_unit: doc.units[1].id.clone(),
            dst_doc: doc.id.clone(),
            dst_unit: doc.units[2].id.clone(),
            kind: ledger_core::EdgeKind::Related,
            score: 0.8125,
            evidence: "m".into(),
        }],
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ledger_store::PartStore::of_graph(&dir.path().join("g"));
    assert!(!store.has("k1"));
    store.write("k1", doc, &semantic).expect("write");
    let file = store.local_path("k1").expect("a local store");
    let first = std::fs::read(&file).expect("bytes");
    // A redelivered job writes the same key again: one file, same bytes.
    store.write("k1", doc, &semantic).expect("rewrite");
    assert_eq!(std::fs::read(&file).expect("bytes"), first);
    let names: Vec<_> = std::fs::read_dir(file.parent().expect("folder"))
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    let (back, back_semantic) = store.read("k1").expect("read");
    assert_eq!(&back, doc);
    assert_eq!(back_semantic, semantic);
    assert!(store.write("../escape", doc, &semantic).is_err());
    // No key reads outside the store: a part written beside it is not reached by `../`.
    let beside = ledger_store::PartStore::of_graph(&dir.path().join("other"));
    beside.write("k2", doc, &semantic).expect("write beside");
    let escape = "../../other/parts/k2";
    assert!(beside.has("k2") && !store.has(escape));
    assert!(store.read(escape).is_err() && store.read_document(escape).is_err());
    assert!(store.local_path(escape).is_none());
    // The same folder opened by URL is the same store.
    let by_url = ledger_store::PartStore::open(&format!("file://{}", store.url())).expect("open");
    assert!(by_url.has("k1"));
    assert!(ledger_store::PartStore::open("ftp://x/y").is_err());
    // The footer holds the document compressed; a part of an earlier build, with plain JSON
    // there, is still read.
    let footer = |path: &Path| {
        let file = std::fs::File::open(path).expect("part");
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .expect("footer");
        meta.file_metadata()
            .key_value_metadata()
            .cloned()
            .unwrap_or_default()
    };
    let packed = footer(&file);
    let json = serde_json::to_string(doc).expect("json");
    let value = |key: &str| {
        packed
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.clone())
    };
    let compressed = value("ledger.document.zst").expect("the document, compressed");
    assert!(value("ledger.document").is_none());
    assert!(
        compressed.len() * 2 < json.len(),
        "{} of {}",
        compressed.len(),
        json.len()
    );
    // A rerun reuses the part on its summary alone, read from the footer.
    assert_eq!(
        store.read_summary("k1").expect("its summary"),
        Some(ledger_core::PartSummary::of(doc, &semantic))
    );
    let plain: Vec<_> = packed
        .iter()
        .filter(|kv| kv.key != "ledger.summary")
        .map(|kv| match kv.key.as_str() {
            "ledger.document.zst" => {
                parquet::file::metadata::KeyValue::new("ledger.document".into(), json.clone())
            }
            "ledger.related.zst" => parquet::file::metadata::KeyValue::new(
                "ledger.related".into(),
                serde_json::to_string(&semantic.related).expect("json"),
            ),
            _ => kv.clone(),
        })
        .collect();
    let rows = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&file).expect("part"),
    )
    .expect("reader")
    .build()
    .expect("rows")
    .map(|b| b.expect("batch"))
    .collect::<Vec<_>>();
    let earlier = store.local_path("k0").expect("a local store");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(Some(plain))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&earlier).expect("create"),
        rows[0].schema(),
        Some(props),
    )
    .expect("writer");
    for b in &rows {
        writer.write(b).expect("write");
    }
    writer.close().expect("close");
    assert!(
        footer(&earlier)
            .iter()
            .any(|kv| kv.key == "ledger.document")
    );
    assert_eq!(
        store.read("k0").expect("an earlier part"),
        (doc.clone(), semantic.clone())
    );
    assert_eq!(&store.read_head("k0").expect("its head").doc, doc);
    assert_eq!(
        store.read_summary("k0").expect("no summary, no error"),
        None
    );
    store.prune(&Default::default());
    assert!(!store.has("k1") && !store.has("k0"));
}

/// A unit of `kind` with id `id` and `text`, the `ordinal`-th of its document.
fn unit(id: &str, kind: ledger_core::UnitKind, ordinal: usize, text: String) -> ledger_core::Unit {
    ledger_core::Unit {
        id: id.into(),
        kind,
        env: String::new(),
        level: 0,
        label: None,
        labels: Vec::new(),
        number: None,
        numbers: Vec::new(),
        title: None,
        parent: (ordinal > 0).then_some(0),
        ordinal,
        file: 0,
        start_byte: 0,
        line: 1,
        end_byte: 0,
        text,
        tokens: 0,
        content_hash: String::new(),
    }
}

/// A document of `n` paragraphs, each with a short text of its own.
fn long_document(id: &str, n: usize) -> Document {
    let mut units = vec![unit(
        "doc",
        ledger_core::UnitKind::Document,
        0,
        String::new(),
    )];
    units.extend((1..=n).map(|i| {
        unit(
            &format!("p-{i}"),
            ledger_core::UnitKind::Paragraph,
            i,
            format!("Paragraph {i} of {id}."),
        )
    }));
    Document {
        id: id.into(),
        path: format!("{id}.md"),
        files: vec![format!("{id}.md")],
        units,
        ..Default::default()
    }
}

#[test]
fn tables_larger_than_a_chunk_keep_every_row_in_order() {
    // 100,000 units: the units table reaches its file in two chunks of rows.
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = [long_document("a", 60_000), long_document("b", 40_000)];
    let manifest = write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("write");
    assert_eq!(manifest.rows["units"], 100_002);
    let units = ledger_store::read_units(dir.path()).expect("units");
    assert_eq!(units.len(), 100_002);
    let order: Vec<(&str, usize)> = units
        .iter()
        .map(|u| (u.doc_id.as_str(), u.ordinal))
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert_eq!(units[60_001].unit_id, "doc");
    assert_eq!(units[100_001].text, "Paragraph 40000 of b.");
}

#[test]
fn a_writer_dropped_unfinished_leaves_the_previous_version_current() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = docs();
    write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("write");
    let before = table_bytes(dir.path(), "units");
    let mut writer =
        ledger_store::GraphWriter::create(dir.path(), Default::default(), &[]).expect("writer");
    let err = writer
        .add(&long_document("a", 10), &[], &[], false)
        .expect_err("no segment begun");
    assert!(err.to_string().contains("before a segment"), "{err}");
    writer.begin_segment("b").expect("segment");
    writer
        .add(&long_document("b", 10), &[], &[], false)
        .expect("first document");
    // Documents come in id order: an earlier id is refused.
    let err = writer
        .add(&long_document("a", 10), &[], &[], false)
        .expect_err("out of order");
    assert!(err.to_string().contains("out of id order"), "{err}");
    drop(writer);
    let after = table_bytes(dir.path(), "units");
    assert_eq!(before, after);
    let leftovers: Vec<String> = std::fs::read_dir(dir.path().join("versions"))
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        leftovers,
        ["000001"],
        "nothing of the dropped version stays"
    );
}

#[tokio::test]
async fn a_version_shares_the_segments_of_documents_that_did_not_change() {
    use std::os::unix::fs::MetadataExt;
    // 64 documents: several segments (a segment ends at about one id in 16).
    let mut docs: Vec<Document> = (0..64)
        .map(|i| long_document(&format!("doc-{i:02}"), 20))
        .collect();
    let ends = docs
        .iter()
        .filter(|d| ledger_store::ends_segment(&d.id))
        .count();
    assert!(ends >= 2, "{ends} segment ends among 64 ids");
    let dir = tempfile::tempdir().expect("tempdir");
    let first = write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("v1");
    assert_eq!(first.shared_segments, 0);
    let inode = |graph: &Path, name: &str| {
        std::fs::metadata(graph.join("current/units").join(format!("{name}.parquet")))
            .expect("segment file")
            .ino()
    };
    let v1_inodes: Vec<u64> = first
        .segments
        .iter()
        .map(|n| inode(dir.path(), n))
        .collect();
    // One paragraph of one document changes: one segment is written, the others are shared.
    docs[40].units[3].text = "Paragraph 3, rewritten.".into();
    let second = write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("v2");
    assert_eq!(second.segments.len(), first.segments.len());
    assert_eq!(second.shared_segments, second.segments.len() - 1);
    let changed: Vec<usize> = (0..second.segments.len())
        .filter(|&i| inode(dir.path(), &second.segments[i]) != v1_inodes[i])
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    // The version equals one written from scratch: the same files, byte for byte.
    let cold = tempfile::tempdir().expect("tempdir");
    let fresh = write_graph(cold.path(), &docs, &[], &Default::default(), &run()).expect("cold");
    assert_eq!(fresh.segments, second.segments);
    let without_runs = |rows: &std::collections::BTreeMap<String, usize>| {
        let mut rows = rows.clone();
        rows.remove("runs");
        rows
    };
    assert_eq!(without_runs(&fresh.rows), without_runs(&second.rows));
    for table in ledger_store::TABLES.iter().filter(|t| **t != "runs") {
        assert_eq!(
            table_files(dir.path(), table),
            table_files(cold.path(), table),
            "{table}"
        );
    }
    let session = SqlSession::open(dir.path(), SqlLimits::default())
        .await
        .expect("open");
    assert_eq!(count(&session, "SELECT COUNT(*) FROM units").await, 64 * 21);
    assert_eq!(
        count(
            &session,
            "SELECT COUNT(*) FROM units WHERE text = 'Paragraph 3, rewritten.'"
        )
        .await,
        1
    );
    // A previous segment file that cannot be read is written again, not shared.
    let v2 = dir.path().join("current").canonicalize().expect("v2");
    let victim = v2
        .join("edges")
        .join(format!("{}.parquet", second.segments[0]));
    let bytes = std::fs::read(&victim).expect("edges file");
    std::fs::remove_file(&victim).expect("unlink the shared file");
    std::fs::write(&victim, &bytes[..bytes.len() / 2]).expect("truncate");
    let third = write_graph(dir.path(), &docs, &[], &Default::default(), &run()).expect("v3");
    assert_eq!(third.shared_segments, third.segments.len() - 1);
    assert_eq!(
        table_files(dir.path(), "edges"),
        table_files(cold.path(), "edges")
    );
}
