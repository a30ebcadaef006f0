//! The offline DEPENDS judge against the carleson blueprint's author-written `\uses{}`
//! annotations (hidden from the judge), and the candidate rules.

use ledger_core::{Document, JudgmentOutcome, MentionKind, Resolution, UnitKind};
use ledger_llm::depends::{Cache, DocContext, OfflineJudge, candidates, judge_corpus, judge_text};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn corpora() -> PathBuf {
    std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        })
}

/// The documents of `path`, parsed (no token counts) and resolved.
pub(crate) fn parsed(path: &std::path::Path) -> Vec<Document> {
    let (sources, diags) = ledger_parse::discover(&[path.to_path_buf()]);
    assert!(diags.is_empty(), "{diags:?}");
    let mut docs: Vec<Document> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    docs
}

pub(crate) fn blueprint() -> Document {
    parsed(&corpora().join("carleson-blueprint/print.tex")).remove(0)
}

#[test]
fn the_judge_never_sees_uses_annotations() {
    let t = "\\begin{lemma}\\label{x}\\uses{a,b}\\leanok\\lean{Foo.bar} Text.\\end{lemma}";
    let seen = judge_text(t);
    assert!(!seen.contains("uses") && !seen.contains("lean"), "{seen}");
    assert!(seen.contains("Text."));
}

/// The statement a unit belongs to: a proof (or a part of one) belongs to the theorem-like unit
/// it proves, the nearest earlier sibling statement; any other unit is its own. Blueprint
/// authors put a result's `\uses` on its statement or on its proof alike, and the `\ref`s
/// that reveal what a result applies are mostly in the proof.
fn statement_of(doc: &Document, i: usize) -> usize {
    let mut p = Some(i);
    while let Some(x) = p {
        if doc.units[x].kind == UnitKind::Proof {
            let parent = doc.units[x].parent;
            return (0..x)
                .rev()
                .find(|&k| doc.units[k].parent == parent && doc.units[k].kind != UnitKind::Proof)
                .filter(|&k| doc.units[k].kind == UnitKind::Theorem)
                .unwrap_or(x);
        }
        p = doc.units[x].parent;
    }
    i
}

/// Precision and recall of the document's judgments against the blueprint's `\uses`, at
/// statement level, overall and per environment of the dependent statement:
/// `(predicted, correct, gold)`. Verdicts count, not edges: a `\uses` is also a REFERENCES edge,
/// which takes precedence over the DEPENDS edge of the same pair.
fn score(doc: &Document) -> BTreeMap<String, (usize, usize, usize)> {
    let index = doc.unit_indices();
    let owner = |i: usize| statement_of(doc, i);
    let mut gold: BTreeSet<(usize, usize)> = BTreeSet::new();
    for m in doc.mentions.iter().filter(|m| m.kind == MentionKind::Uses) {
        if let Resolution::Resolved { doc: d, unit } = &m.resolution
            && d == &doc.id
            && let Some(&j) = index.get(unit.as_str())
            && owner(j) < owner(m.unit)
        {
            // DEPENDS points to earlier units only; later prerequisites are out of reach.
            gold.insert((owner(m.unit), owner(j)));
        }
    }
    let annotated: BTreeSet<usize> = gold.iter().map(|g| g.0).collect();
    let mut predicted: BTreeSet<(usize, usize)> = BTreeSet::new();
    for j in &doc.judgments {
        let JudgmentOutcome::Verdicts(verdicts) = &j.outcome else {
            continue;
        };
        for (c, v) in j.candidates.iter().zip(verdicts) {
            let pair = (owner(index[j.unit_id.as_str()]), owner(index[c.as_str()]));
            if v.depends && pair.0 != pair.1 && annotated.contains(&pair.0) {
                predicted.insert(pair);
            }
        }
    }
    let mut per: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for &(i, j) in &predicted {
        for key in [String::from("all"), doc.units[i].env.clone()] {
            let e = per.entry(key).or_default();
            e.0 += 1;
            e.1 += usize::from(gold.contains(&(i, j)));
        }
    }
    for &(i, _) in &gold {
        for key in [String::from("all"), doc.units[i].env.clone()] {
            per.entry(key).or_default().2 += 1;
        }
    }
    per
}

fn ratio(a: usize, b: usize) -> f64 {
    a as f64 / b.max(1) as f64
}

#[test]
fn offline_judge_against_blueprint_uses() {
    let mut docs = vec![blueprint()];
    let report = judge_corpus(&mut docs, &OfflineJudge, 8, &Cache::new());
    let doc = &docs[0];
    let edges = &doc.depends;
    let index = doc.unit_indices();
    let per = score(doc);
    for (env, &(p, h, g)) in &per {
        eprintln!(
            "blueprint {env}: predicted {p}, correct {h}, gold {g}: precision {:.3}, recall {:.3}",
            ratio(h, p),
            ratio(h, g)
        );
    }
    eprintln!("{report:?}");
    let (p, h, g) = per["all"];
    let (precision, recall) = (ratio(h, p), ratio(h, g));
    assert!(g >= 100, "{g} backward gold pairs");
    // One judgment per judged unit, each recorded, none failed, no request sent.
    assert_eq!(report.units, doc.judgments.len());
    assert_eq!((report.failed, report.reused, report.requests), (0, 0, 0));
    // Every edge is explained, points backwards, and names its judge.
    assert!(
        edges
            .iter()
            .all(|e| e.evidence.starts_with("offline: ") && e.evidence.len() > 9)
    );
    assert!(
        edges
            .iter()
            .all(|e| index[e.dst_unit.as_str()] < index[e.src_unit.as_str()])
    );
    // Regression floors a little under the measurement (precision 0.194, recall 0.762 at
    // statement level); raised as the judge improves. Precision is a lower bound: `\uses` lists
    // what a Lean formalisation needed, not every definition a reader needs.
    assert!(precision >= FLOOR_PRECISION, "precision {precision}");
    assert!(recall >= FLOOR_RECALL, "recall {recall}");
}

const FLOOR_PRECISION: f64 = 0.17;
const FLOOR_RECALL: f64 = 0.70;

#[test]
fn candidates_are_a_window_plus_earlier_introducers() {
    let doc = blueprint();
    let ctx = DocContext::new(&doc);
    let last = doc.units.len() - 1;
    for i in [last / 3, last / 2, last] {
        let c = candidates(&ctx, i, 8);
        assert!(c.iter().all(|&j| j < i), "only earlier units");
        assert!(
            c.windows(2).all(|w| w[0] < w[1]),
            "document order, no duplicates"
        );
        let window: Vec<usize> = c.iter().copied().filter(|&j| j + 200 > i).collect();
        assert!(window.len() <= c.len());
    }
}
