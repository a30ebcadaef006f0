//! DataFusion SQL over a graph's Parquet tables, with the views users need most.

use crate::schema::TABLES;
use crate::sql_limits::{
    BoundStringConcat, Bounded, Growth, Limit, LimitRecursion, MULTIPLYING, SqlLimits,
    StringConcat, limit_of, memory_pool,
};
use crate::{Result, StoreError};
use arrow::array::RecordBatch;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SQLOptions;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use std::path::Path;
use std::sync::Arc;

/// Views created in every session, `(name, SQL)`.
pub const VIEWS: [(&str, &str); 5] = [
    (
        "dependents",
        "SELECT dst_doc AS doc_id, dst_unit AS unit_id, src_doc AS dependent_doc, \
           src_unit AS dependent_unit, kind FROM edges WHERE kind IN ('REFERENCES', 'DEPENDS')",
    ),
    (
        "broken_references",
        "SELECT doc_id, unit_id, source_path, line, col, text, mention_kind, target_key, reason \
         FROM mentions WHERE status = 'broken'",
    ),
    (
        "ambiguous_references",
        "SELECT doc_id, unit_id, source_path, line, col, text, mention_kind, target_key, reason \
         FROM mentions WHERE status = 'ambiguous'",
    ),
    (
        "unit_degrees",
        "SELECT u.doc_id, u.unit_id, u.kind, \
           COALESCE(o.out_degree, 0) AS out_degree, COALESCE(i.in_degree, 0) AS in_degree, \
           COALESCE(o.references_out, 0) AS references_out, COALESCE(i.references_in, 0) AS references_in \
         FROM units u \
         LEFT JOIN (SELECT src_doc, src_unit, COUNT(*) AS out_degree, \
                      SUM(CASE WHEN kind = 'REFERENCES' THEN 1 ELSE 0 END) AS references_out \
                    FROM edges WHERE kind <> 'CONTAINS' GROUP BY src_doc, src_unit) o \
           ON o.src_doc = u.doc_id AND o.src_unit = u.unit_id \
         LEFT JOIN (SELECT dst_doc, dst_unit, COUNT(*) AS in_degree, \
                      SUM(CASE WHEN kind = 'REFERENCES' THEN 1 ELSE 0 END) AS references_in \
                    FROM edges WHERE kind <> 'CONTAINS' GROUP BY dst_doc, dst_unit) i \
           ON i.dst_doc = u.doc_id AND i.dst_unit = u.unit_id",
    ),
    (
        "unit_counts",
        "SELECT doc_id, kind, COUNT(*) AS units, SUM(tokens) AS tokens FROM units GROUP BY doc_id, kind",
    ),
];

/// How query results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// An ASCII table.
    #[default]
    Table,
    /// CSV with a header row.
    Csv,
    /// A JSON array of objects.
    Json,
}

/// A DataFusion session with a graph's tables and views registered, whose statements run
/// within [`SqlLimits`].
pub struct SqlSession {
    ctx: SessionContext,
    limits: SqlLimits,
}

impl SqlSession {
    /// Opens the current version of the graph at `graph`.
    pub async fn open(graph: &Path, limits: SqlLimits) -> Result<Self> {
        let dir = crate::current_version(graph)?;
        let pool = memory_pool(&limits);
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::clone(&pool))
            .build_arc()?;
        // `information_schema` makes `SHOW TABLES` and `SHOW COLUMNS FROM t` work. A sort keeps
        // back memory to merge what it spilled: DataFusion's 10 MB per partition would leave no
        // room to spill under a small limit, so at most a sixteenth of the limit.
        let mut config = SessionConfig::new().with_information_schema(true);
        let execution = &mut config.options_mut().execution;
        execution.sort_spill_reservation_bytes = execution
            .sort_spill_reservation_bytes
            .min(limits.memory / 16);
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(runtime)
            .with_default_features()
            .with_physical_optimizer_rule(Arc::new(LimitRecursion(limits.recursion)))
            .build();
        let ctx = SessionContext::new_with_state(state);
        let bound = |inner: ScalarUDF, growth| {
            ScalarUDF::new_from_impl(Bounded::new(
                inner,
                growth,
                limits.memory,
                Arc::clone(&pool),
            ))
        };
        for (name, growth) in MULTIPLYING {
            let inner = ctx.state().scalar_functions().get(name).cloned();
            if let Some(inner) = inner {
                ctx.register_udf(bound(inner.as_ref().clone(), growth));
            }
        }
        ctx.add_optimizer_rule(Arc::new(BoundStringConcat {
            bounded: Arc::new(bound(
                ScalarUDF::new_from_impl(StringConcat::new()),
                Growth::Sum,
            )),
        }));
        for table in TABLES {
            // A folder of Parquet files (the trailing `/` makes it one for DataFusion).
            let path = dir.join(table);
            let url = path.to_str().ok_or_else(|| StoreError::NotAGraph {
                path: path.clone(),
                message: "path is not UTF-8".into(),
            })?;
            ctx.register_parquet(table, &format!("{url}/"), ParquetReadOptions::default())
                .await?;
        }
        for (name, sql) in VIEWS {
            ctx.sql(&format!("CREATE VIEW {name} AS {sql}")).await?;
        }
        Ok(SqlSession { ctx, limits })
    }

    /// Runs one read-only SQL statement and collects its result. Statements that would write
    /// files or change the session are refused before anything runs: DDL (`CREATE [EXTERNAL]
    /// TABLE`, `CREATE VIEW`, `DROP`), DML (`INSERT`, `COPY ... TO`, `DELETE`, `UPDATE`) and other
    /// statements (`SET`, `BEGIN`, `PREPARE`).
    pub async fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        self.within_limits(async {
            let df = self.ctx.sql_with_options(sql, read_only()).await?;
            self.collect(df).await
        })
        .await
    }

    /// Runs every statement of `script` (separated by `;`) in order, each refused or run as
    /// [`SqlSession::query`] does, and writes each result in `format` to `out` as soon as it is
    /// there, a blank line between two: what finished is out before a later statement fails
    /// (its planning, a limit). CSV and JSON are written batch by batch, in bounded memory; a
    /// table is printed once its rows are in, its rows and their printed form both counted
    /// against the memory limit. Nothing runs when a statement does not parse.
    pub async fn run_script(
        &self,
        script: &str,
        format: OutputFormat,
        out: &mut (dyn FnMut(&[u8]) -> Result<()> + Send),
    ) -> Result<()> {
        let dialect = datafusion::sql::sqlparser::dialect::GenericDialect {};
        let statements =
            datafusion::sql::parser::DFParser::parse_sql_with_dialect(script, &dialect)
                .map_err(StoreError::Sql)?;
        for (k, statement) in statements.into_iter().enumerate() {
            // The blank line before a result, once it has one.
            let mut gap = k > 0;
            let mut after_gap = |bytes: &[u8]| {
                if std::mem::take(&mut gap) {
                    out(b"\n")?;
                }
                out(bytes)
            };
            self.within_limits(async {
                let plan = self.ctx.state().statement_to_plan(statement).await?;
                read_only().verify_plan(&plan)?;
                let df = self.ctx.execute_logical_plan(plan).await?;
                self.write_result(df, format, &mut after_gap).await
            })
            .await?;
        }
        Ok(())
    }

    /// Writes a query's result in `format` to `out` (see [`SqlSession::run_script`]), ending
    /// with a newline.
    async fn write_result(
        &self,
        df: datafusion::dataframe::DataFrame,
        format: OutputFormat,
        out: &mut (dyn FnMut(&[u8]) -> Result<()> + Send),
    ) -> Result<()> {
        use futures::StreamExt;
        if format == OutputFormat::Table {
            let (batches, reservation) = self.collect_reserved(df).await?;
            reservation.try_grow(printed_size(&batches)?)?;
            let table = arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
            return out(format!("{table}\n").as_bytes());
        }
        let schema = Arc::new(df.schema().as_arrow().clone());
        let mut stream = df.execute_stream().await?;
        let mut sink = Forward {
            out,
            written: 0,
            last: 0,
        };
        if format == OutputFormat::Csv {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut sink);
            let mut any = false;
            while let Some(batch) = stream.next().await {
                w.write(&nested_as_text(&batch?)?)?;
                any = true;
            }
            if !any {
                // The header all the same.
                w.write(&RecordBatch::new_empty(schema))?;
            }
        } else {
            // Null values keep their keys: every object has every column.
            let mut w = arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow::json::writer::JsonArray>(&mut sink);
            while let Some(batch) = stream.next().await {
                w.write(&batch?)?;
            }
            w.finish()?;
        }
        if sink.written == 0 {
            (sink.out)(b"[]")?;
            sink.last = b']';
        }
        if sink.last != b'\n' {
            (sink.out)(b"\n")?;
        }
        Ok(())
    }

    /// `work` stopped at the time limit, and its errors from a limit told apart.
    async fn within_limits<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        match tokio::time::timeout(self.limits.timeout, work).await {
            Err(_) => Err(StoreError::LimitExceeded(Limit::Timeout(
                self.limits.timeout,
            ))),
            Ok(Err(StoreError::Sql(e))) => Err(match limit_of(&e, &self.limits) {
                Some(limit) => {
                    tracing::debug!(%e, "SQL statement stopped at a limit");
                    StoreError::LimitExceeded(limit)
                }
                None => StoreError::Sql(e),
            }),
            Ok(done) => done,
        }
    }

    /// A query's result, counted against the memory limit as it arrives; an empty one keeps its
    /// columns, so that a header is printed all the same.
    async fn collect(&self, df: datafusion::dataframe::DataFrame) -> Result<Vec<RecordBatch>> {
        Ok(self.collect_reserved(df).await?.0)
    }

    /// [`SqlSession::collect`], with the reservation that counts the result (it is freed when
    /// dropped).
    async fn collect_reserved(
        &self,
        df: datafusion::dataframe::DataFrame,
    ) -> Result<(Vec<RecordBatch>, MemoryReservation)> {
        use futures::StreamExt;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let pool = Arc::clone(&self.ctx.runtime_env().memory_pool);
        let reservation = MemoryConsumer::new("query result").register(&pool);
        let mut stream = df.execute_stream().await?;
        let mut batches = Vec::new();
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            reservation.try_grow(batch.get_array_memory_size())?;
            batches.push(batch);
        }
        if batches.iter().all(|b| b.num_rows() == 0) {
            return Ok((vec![RecordBatch::new_empty(schema)], reservation));
        }
        Ok((batches, reservation))
    }
}

/// Bytes handed to a caller's writer as they are written, with how many there were and the
/// last one.
struct Forward<'a> {
    out: &'a mut (dyn FnMut(&[u8]) -> Result<()> + Send),
    written: usize,
    last: u8,
}

impl std::io::Write for Forward<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(&last) = buf.last() {
            (self.out)(buf).map_err(std::io::Error::other)?;
            self.written += buf.len();
            self.last = last;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What printing `batches` as a table takes, at the least: every row padded to the widest
/// value of each column, and a string per cell while the table is built.
fn printed_size(batches: &[RecordBatch]) -> Result<usize> {
    /// A cell's own bookkeeping in the table builder, beside its text.
    const PER_CELL: usize = 64;
    let Some(first) = batches.first() else {
        return Ok(0);
    };
    let schema = first.schema();
    let options = arrow::util::display::FormatOptions::default();
    let mut widths: Vec<usize> = schema
        .fields()
        .iter()
        .map(|f| f.name().chars().count())
        .collect();
    let mut rows = 0;
    let mut text = 0;
    for batch in batches {
        rows += batch.num_rows();
        for (c, column) in batch.columns().iter().enumerate() {
            let formatter = arrow::util::display::ArrayFormatter::try_new(column, &options)?;
            for i in 0..column.len() {
                let mut count = CharCount(0);
                // A value that cannot be shown counts as far as it got.
                let _ =
                    std::fmt::Write::write_fmt(&mut count, format_args!("{}", formatter.value(i)));
                widths[c] = widths[c].max(count.0);
                text += count.0;
            }
        }
    }
    let line = widths.iter().map(|w| w + 3).sum::<usize>() + 2;
    Ok((rows + 4) * line + text + rows * widths.len() * PER_CELL)
}

/// Counts the characters written to it.
struct CharCount(usize);

impl std::fmt::Write for CharCount {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.chars().count();
        Ok(())
    }
}

/// Reading only: DDL, DML and session statements are refused before anything runs.
fn read_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// `batch` with its list, struct and map columns as text (`[a, b]`), which CSV can hold.
fn nested_as_text(batch: &RecordBatch) -> Result<RecordBatch> {
    use arrow::datatypes::{DataType, Field, Schema};
    let nested = |t: &DataType| t.is_nested();
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| nested(f.data_type()))
    {
        return Ok(batch.clone());
    }
    let options = arrow::util::display::FormatOptions::default();
    let mut fields = Vec::new();
    let mut columns: Vec<arrow::array::ArrayRef> = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if nested(field.data_type()) {
            let formatter = arrow::util::display::ArrayFormatter::try_new(column, &options)?;
            let text: arrow::array::StringArray = (0..column.len())
                .map(|i| column.is_valid(i).then(|| formatter.value(i).to_string()))
                .collect();
            fields.push(Field::new(field.name(), DataType::Utf8, true));
            columns.push(std::sync::Arc::new(text));
        } else {
            fields.push(field.as_ref().clone());
            columns.push(column.clone());
        }
    }
    Ok(RecordBatch::try_new(
        std::sync::Arc::new(Schema::new(fields)),
        columns,
    )?)
}
