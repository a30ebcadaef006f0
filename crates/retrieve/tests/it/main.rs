//! Retrieval and impact sets on the shared LaTeX papers (real references, offline DEPENDS).

use ledger_core::{Document, Edge, EdgeKind, UnitKind};
use ledger_retrieve::{Graph, RetrieveError, Weights};
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::LazyLock;

fn corpora() -> PathBuf {
    std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        })
}

/// The shared LaTeX papers, parsed with token counts, with CONTAINS, REFERENCES and offline
/// DEPENDS edges (one REFERENCES > DEPENDS edge per pair).
fn paper(name: &str) -> (Document, Vec<Edge>) {
    let (sources, diags) = ledger_parse::discover(&[corpora().join(name)]);
    assert!(diags.is_empty(), "{diags:?}");
    let tok = ledger_parse::Tokenizer::cl100k();
    let mut docs: Vec<Document> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, Some(&tok)))
        .filter(|d| d.format == Some(ledger_core::Format::Latex))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    ledger_llm::depends::judge_corpus(
        &mut docs,
        &ledger_llm::depends::OfflineJudge,
        8,
        &Default::default(),
    );
    let doc = docs
        .into_iter()
        .max_by_key(|d| d.units.len())
        .expect("a LaTeX document");
    let edges: Vec<Edge> = doc
        .contains_edges()
        .into_iter()
        .chain(doc.reference_edges())
        .chain(doc.depends.iter().cloned())
        .collect();
    (doc, edges)
}

static PAPERS: LazyLock<Vec<(Document, Graph)>> = LazyLock::new(|| {
    [
        "paper-carleson-lean",
        "paper-equational-theories",
        "paper-sympy",
    ]
    .iter()
    .map(|name| {
        let (doc, edges) = paper(name);
        let graph = Graph::new(doc.unit_records(), &edges);
        (doc, graph)
    })
    .collect()
});

#[test]
fn every_direct_referrer_and_dependent_of_a_theorem_fits_in_15_percent() {
    let (mut checked, mut held, mut missed, mut too_big) = (0, 0, Vec::new(), Vec::new());
    for (doc, graph) in PAPERS.iter() {
        let total: usize = doc.units.iter().map(|u| u.tokens).sum();
        let budget = total * 15 / 100;
        let mut ratios = Vec::new();
        for (t, u) in doc.units.iter().enumerate() {
            if u.kind != UnitKind::Theorem {
                continue;
            }
            let context = graph.context(&[t], budget, &Weights::default(), 2);
            assert!(context.tokens <= budget);
            assert_eq!(context.units[0].unit, t, "the target comes first");
            ratios.push(context.tokens as f64 / total as f64);
            let taken: std::collections::HashSet<usize> =
                context.units.iter().map(|x| x.unit).collect();
            let needed: Vec<usize> = doc
                .reference_edges()
                .iter()
                .chain(&doc.depends)
                .filter(|e| e.dst_unit == u.id && e.dst_doc == doc.id)
                .filter_map(|e| graph.index_of(&e.src_doc, &e.src_unit))
                .collect();
            // Only possible when they fit: the target and its direct referrers and dependents.
            let mut distinct = needed.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let need: usize = u.tokens
                + distinct
                    .iter()
                    .filter(|&&n| n != t)
                    .map(|&n| graph.units()[n].tokens)
                    .sum::<usize>();
            if need > budget {
                too_big.push(format!("{}:{} ({need} tokens)", doc.id, u.id));
                continue;
            }
            checked += 1;
            if needed.iter().all(|n| taken.contains(n)) {
                held += 1;
            } else {
                missed.push(format!("{}:{}", doc.id, u.id));
            }
        }
        ratios.sort_by(f64::total_cmp);
        eprintln!(
            "{}: {} theorem-like targets, {total} tokens, budget {budget}; context/document median {:.3}, max {:.3}",
            doc.id,
            ratios.len(),
            ratios.get(ratios.len() / 2).copied().unwrap_or(0.0),
            ratios.last().copied().unwrap_or(0.0)
        );
    }
    eprintln!(
        "{held} of {checked} targets got every referrer and dependent; missed: {missed:?}; more than 15% of the document on their own: {too_big:?}"
    );
    assert!(checked >= 40, "{checked} theorem-like units");
    assert!(too_big.len() * 20 <= checked, "{too_big:?}");
    assert_eq!(held, checked, "missed: {missed:?}");
}

#[test]
fn targets_are_found_by_id_label_and_prose() {
    let (doc, graph) = &PAPERS[1];
    let thm = doc
        .units
        .iter()
        .position(|u| {
            u.kind == UnitKind::Theorem
                && u.env == "theorem"
                && u.number.is_some()
                && u.label.is_some()
        })
        .expect("a numbered, labelled theorem");
    let u = &doc.units[thm];
    assert_eq!(graph.find(&u.id, None), Ok(thm));
    assert_eq!(
        graph.find(u.label.as_deref().unwrap_or_default(), None),
        Ok(thm)
    );
    let prose = format!("Theorem {}", u.number.as_deref().unwrap_or_default());
    assert_eq!(graph.find(&prose, Some(&doc.id)), Ok(thm));
    assert_eq!(
        graph.targets_in(
            &format!("Strengthen {prose} and keep `{}` consistent", u.id),
            None
        ),
        vec![thm]
    );
    assert!(matches!(
        graph.find("Theorem 999", None),
        Err(RetrieveError::NotFound(_))
    ));
    // A capitalised word before the mention is not an appendix letter.
    assert_eq!(
        graph.targets_in(&format!("Rewrite {prose} for clarity"), None),
        vec![thm]
    );
}

#[test]
fn the_impact_set_is_every_transitive_referrer_with_its_path() {
    let (doc, graph) = &PAPERS[1];
    // The unit with the most direct referrers and dependents.
    let incoming = |i: usize| {
        doc.reference_edges()
            .iter()
            .chain(&doc.depends)
            .filter(|e| e.dst_unit == doc.units[i].id)
            .count()
    };
    let target = (0..doc.units.len())
        .max_by_key(|&i| incoming(i))
        .expect("units");
    let impact = graph.impact(target, 1);
    assert_eq!(impact.len(), {
        let mut srcs: Vec<&str> = doc
            .reference_edges()
            .iter()
            .chain(&doc.depends)
            .filter(|e| e.dst_unit == doc.units[target].id && e.src_unit != doc.units[target].id)
            .map(|e| {
                graph.units()[graph.index_of(&e.src_doc, &e.src_unit).expect("unit")]
                    .unit_id
                    .as_str()
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        srcs.sort_unstable();
        srcs.dedup();
        srcs.len()
    });
    let deeper = graph.impact(target, 4);
    assert!(deeper.len() >= impact.len());
    for i in &deeper {
        // A path from the impacted unit to the target, each step an edge of the graph.
        let mut at = i.unit;
        for (k, (u, kind)) in i.path.iter().enumerate() {
            assert_eq!(*u, at);
            assert!(matches!(kind, EdgeKind::References | EdgeKind::Depends));
            at = i.path.get(k + 1).map_or(target, |p| p.0);
        }
        assert!(i.path.len() <= 4);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn packing_never_exceeds_the_budget(paper in 0usize..3, picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..4), budget in 0usize..20_000, depth in 0usize..4) {
        let (doc, graph) = &PAPERS[paper];
        let targets: Vec<usize> = picks.iter().map(|p| p.index(doc.units.len())).collect();
        let context = graph.context(&targets, budget, &Weights::default(), depth);
        prop_assert!(context.tokens <= budget);
        prop_assert_eq!(context.units.iter().map(|t| t.tokens).sum::<usize>(), context.tokens);
        let mut ids: Vec<usize> = context.units.iter().map(|t| t.unit).collect();
        // Targets that fit come first.
        let first_linked = context.units.iter().position(|t| t.score.is_some()).unwrap_or(context.units.len());
        prop_assert!(context.units[..first_linked].iter().all(|t| targets.contains(&t.unit)));
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        prop_assert_eq!(ids.len(), n, "no unit twice");
    }
}
