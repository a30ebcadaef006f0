//! `cargo bench -p ledger-parse`: parse throughput on the shared corpora (or `LEDGER_CORPORA`).

fn main() {
    let dir = std::env::var_os("LEDGER_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    let repeat = 5;
    let (bytes, docs, rows) = ledger_parse::bench::parse_throughput(&[dir], repeat);
    print!(
        "{}",
        ledger_parse::bench::markdown(bytes, docs, repeat, &rows)
    );
}
