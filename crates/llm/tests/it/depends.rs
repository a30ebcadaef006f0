//! The DEPENDS judge's input (no `\uses` leaks into it) and the candidate rules. Its quality
//! against the blueprint's author-written `\uses{}` is measured in `ledger-eval`'s tests.

use ledger_core::Document;
use ledger_llm::depends::{
    Cache, DocContext, RulesJudge, candidates, judge_corpus, judge_text, learned,
};
use std::path::PathBuf;

fn corpora() -> PathBuf {
    std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets"))
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

#[test]
fn a_markdown_definition_is_a_prerequisite_of_the_units_using_its_term() {
    let mut docs = parsed_source(
        "ledger-md-def",
        "manual.md",
        "# Manual\n\nA **lockfile** is the record of every resolved version.\n\n\
         Unrelated text about colours.\n\nOne more unrelated paragraph.\n\n\
         Commit the lockfile with the sources.\n",
    );
    judge_corpus(&mut docs, &RulesJudge, 8, &Cache::new());
    let doc = &docs[0];
    let text = |id: &str| {
        doc.units
            .iter()
            .find(|u| u.id == id)
            .map(|u| u.text.clone())
            .unwrap_or_default()
    };
    let pairs: Vec<(String, String)> = doc
        .depends
        .iter()
        .map(|e| (text(&e.src_unit), text(&e.dst_unit)))
        .collect();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert!(pairs[0].0.starts_with("Commit the lockfile"), "{pairs:?}");
    assert!(pairs[0].1.starts_with("A **lockfile** is"), "{pairs:?}");
}

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

#[test]
fn citing_an_equation_of_a_lemma_points_the_learned_judge_at_the_lemma() {
    // `\eqref{eq:bound}` names an equation inside the lemma's statement: who cites it uses the
    // lemma (carleson's estimates cite the Calderón–Zygmund decomposition's equations so).
    let docs = parsed_source(
        "ledger-cited-inside",
        "paper.tex",
        "\\documentclass{article}\\begin{document}\n\\section{Bounds}\n\
         \\begin{lemma}\\label{lem:bound}For every $x$,\n\\begin{equation}\\label{eq:bound}\n\
         f(x) \\le 1.\n\\end{equation}\n\\end{lemma}\n\
         \\begin{lemma}\\label{lem:other}Colours of a painting are many.\\end{lemma}\n\
         \\begin{theorem}\\label{thm:main}The sum $g$ is small.\\end{theorem}\n\
         \\begin{proof}By \\eqref{eq:bound}, every term of $g$ is at most one.\\end{proof}\n\
         \\end{document}\n",
    );
    let doc = &docs[0];
    let index = doc.unit_indices();
    let ctx = DocContext::new(doc);
    let inside = feature(&ctx, index["thm:main"], "cited_inside");
    let found: Vec<usize> = inside.iter().map(|(j, _)| *j).collect();
    let (bound, other) = (index["lem:bound"], index["lem:other"]);
    assert!(
        found.contains(&bound) && found.contains(&other),
        "{found:?}"
    );
    for (j, flag) in inside {
        assert_eq!(flag == 1.0, j == bound, "{}", doc.units[j].id);
    }
}

#[test]
fn how_a_document_cites_weighs_on_the_candidates_a_unit_does_not_name() {
    // Two of the four statements name an earlier one (one in its proof, not on its first line,
    // where a reference says which statement the proof proves): the document cites at 0.5, and the feature says so on every candidate the head does not name, 0 on the one it
    // names. Trained on the blueprints, the shipped model trusts an unnamed candidate less the
    // more its document cites (Carleson's authors reference 85 % of what they use).
    let docs = parsed_source(
        "ledger-citing",
        "notes.tex",
        "\\documentclass{article}\\begin{document}\n\\section{Sets}\n\
         \\begin{definition}\\label{def:a}A good set is a finite set of integers.\\end{definition}\n\
         \\begin{lemma}\\label{lem:b}Every good set has a largest element.\\end{lemma}\n\
         \\begin{proof}The set is finite\nby Definition~\\ref{def:a}.\\end{proof}\n\
         \\begin{lemma}\\label{lem:c}The union of two good sets is a good set.\\end{lemma}\n\
         \\begin{theorem}\\label{thm:d}A good set is bounded, by Lemma~\\ref{lem:b}.\\end{theorem}\n\
         \\end{document}\n",
    );
    let doc = &docs[0];
    let index = doc.unit_indices();
    let ctx = DocContext::new(doc);
    let values = feature(&ctx, index["thm:d"], "citing_x_uncited");
    let names = |j: usize| doc.units[j].id.clone();
    assert!(
        values.iter().any(|(j, _)| *j == index["lem:b"]) && values.len() >= 2,
        "{:?}",
        values
            .iter()
            .map(|(j, v)| (names(*j), *v))
            .collect::<Vec<_>>()
    );
    for (j, v) in values {
        let expected = if j == index["lem:b"] { 0.0 } else { 0.5 };
        assert_eq!(v, expected, "{}", names(j));
    }
    let model = learned::Model::shipped();
    let column = learned::FEATURES
        .iter()
        .position(|f| *f == "citing_x_uncited")
        .expect("the feature");
    assert!(
        model.pairs.weights[column] < 0.0,
        "{}",
        model.pairs.weights[column]
    );
}

/// The learned judge's feature `name` of head `head` against each of its candidates.
fn feature(ctx: &DocContext, head: usize, name: &str) -> Vec<(usize, f64)> {
    let s = ctx.signals();
    let found = learned::candidates(ctx, s, head, 8);
    let column = learned::FEATURES
        .iter()
        .position(|f| *f == name)
        .expect("the feature");
    let rows = learned::features(ctx, s, head, &found);
    found
        .into_iter()
        .zip(rows.iter().map(|r| r[column]))
        .collect()
}

#[test]
fn an_operation_declared_in_a_definition_is_a_symbol_that_later_laws_use() {
    // equational_theories' "Equation 7 is the law $x = y \op z$" uses the magma's operation,
    // declared as `$\op: G \times G \to G$` a long way back; its neighbours are parallel laws.
    let filler: String = (0..12)
        .map(|k| format!("Remark number {k} about colours of paintings.\n\n"))
        .collect();
    let docs = parsed_source(
        "ledger-declared",
        "laws.tex",
        &format!(
            "\\documentclass{{article}}\\begin{{document}}\n\\section{{Magmas}}\n\
             \\begin{{definition}}[Magma]\\label{{magma-def}}A magma is a set $G$ with a binary \
             operation $\\op: G \\times G \\to G$.\\end{{definition}}\n\n{filler}\
             \\begin{{definition}}[Equation 7]\\label{{eq7}}Equation 7 is the law $x = y \\op z$.\
             \\end{{definition}}\n\
             \\begin{{definition}}[Equation 8]\\label{{eq8}}Equation 8 is the law \
             $x = x \\op (x \\op x)$.\\end{{definition}}\n\
             \\begin{{lemma}}\\label{{lem:id}}The map $\\operatorname{{id}}$ is onto.\\end{{lemma}}\n\
             \\end{{document}}\n"
        ),
    );
    let doc = &docs[0];
    let index = doc.unit_indices();
    let ctx = DocContext::new(doc);
    let (magma, eq7, eq8) = (index["magma-def"], index["eq7"], index["eq8"]);
    assert!(ctx.intro.introducers_used_by(eq7).contains(&magma));
    assert!(
        !ctx.intro
            .introducers_used_by(index["lem:id"])
            .contains(&magma),
        "`\\operatorname` is not a use of `\\op`"
    );
    let twins = feature(&ctx, eq8, "title_twin");
    assert!(twins.iter().any(|(j, _)| *j == magma), "{twins:?}");
    for (j, twin) in twins {
        assert_eq!(twin == 1.0, j == eq7, "{}", doc.units[j].id);
    }
}

#[test]
fn a_proof_or_an_equation_of_a_statement_stands_for_the_statement() {
    // The authors' `\uses` name statements; so does the learned judge: a candidate proof is the
    // lemma it proves, an equation inside a definition is the definition.
    let docs = parsed_source(
        "ledger-held",
        "series.tex",
        "\\documentclass{article}\\begin{document}\n\\section{Series}\n\
         \\begin{definition}\\label{def:E}We define the series\n\\begin{equation}\\label{eq:E}\n\
         E(z) = \\sum_n n^{-z}\n\\end{equation}\n\\end{definition}\n\
         \\begin{lemma}\\label{lem:pos}Every term of $E(z)$ is positive.\\end{lemma}\n\
         \\begin{proof}\\label{prf:pos}Each $n^{-z}$ is positive.\\end{proof}\n\
         \\begin{lemma}\\label{lem:E}The series $E(z)$ converges for $z > 1$.\\end{lemma}\n\
         \\end{document}\n",
    );
    let doc = &docs[0];
    let index = doc.unit_indices();
    let ctx = DocContext::new(doc);
    let found = learned::candidates(&ctx, ctx.signals(), index["lem:E"], 8);
    let kinds: Vec<(&str, ledger_core::UnitKind)> = found
        .iter()
        .map(|&j| (doc.units[j].id.as_str(), doc.units[j].kind))
        .collect();
    assert!(
        found.contains(&index["def:E"]) && found.contains(&index["lem:pos"]),
        "{kinds:?}"
    );
    assert!(
        kinds.iter().all(|(_, k)| !matches!(
            k,
            ledger_core::UnitKind::Equation | ledger_core::UnitKind::Proof
        )),
        "{kinds:?}"
    );
}

/// The documents of `text`, written as `file` in a fresh temporary folder `name`, parsed.
fn parsed_source(name: &str, file: &str, text: &str) -> Vec<Document> {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(file);
    std::fs::write(&path, text).expect("write");
    let docs = parsed(&path);
    std::fs::remove_dir_all(&dir).ok();
    docs
}
