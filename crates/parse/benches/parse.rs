//! `cargo bench -p ledger-parse`: parse throughput on the shared corpora (or `LEDGER_CORPORA`);
//! `LEDGER_BENCH_TOKENS=0` leaves out the rows with token counting.

fn main() {
    let dir = std::env::var_os("LEDGER_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    let repeat = 5;
    let (bytes, docs, rows) = ledger_parse::throughput::parse_throughput(
        &[dir],
        repeat,
        std::env::var("LEDGER_BENCH_TOKENS").map_or(true, |v| v != "0"),
    );
    print!(
        "{}",
        ledger_parse::throughput::markdown(bytes, docs, repeat, &rows)
    );
}
