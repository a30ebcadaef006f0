//! Limits on what one SQL statement may take: memory (DataFusion's memory pool, the collected
//! result, and the functions whose output can dwarf their input), time, and the steps of a
//! recursive CTE. A statement that reaches one ends with [`crate::StoreError::LimitExceeded`],
//! never an abort; the session goes on.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::config::ConfigOptions;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{FairSpillPool, MemoryPool, TrackConsumersPool};
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::recursive_query::RecursiveQueryExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
    ReplaceChildrenOptions, SendableRecordBatchStream,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What one statement may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlLimits {
    /// Bytes of memory: DataFusion's operators (sorts, joins, aggregates; they spill to disk
    /// where DataFusion can), the result being collected, and the output of size-multiplying
    /// functions (`repeat`, `lpad`, `array_repeat`, `range` …).
    pub memory: usize,
    /// Wall-clock time, planning included.
    pub timeout: Duration,
    /// Steps of recursive CTEs (runs of their recursive term).
    pub recursion: usize,
}

impl Default for SqlLimits {
    /// A quarter of the machine's memory, five minutes, 10,000 recursive steps (the defaults
    /// of `[sql]` in `configs/default.toml`).
    fn default() -> Self {
        SqlLimits {
            memory: machine_memory() / 4,
            timeout: Duration::from_secs(300),
            recursion: 10_000,
        }
    }
}

/// The memory this process may use: the machine's (`MemTotal` of `/proc/meminfo`), or its
/// control group's limit when lower (a container's); 8 GiB where neither can be read.
pub fn machine_memory() -> usize {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let total = read("/proc/meminfo").and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    });
    let group = read("/sys/fs/cgroup/memory.max").and_then(|t| t.trim().parse::<usize>().ok());
    match (total, group) {
        (Some(t), Some(g)) => t.min(g),
        (Some(t), None) => t,
        (None, Some(g)) => g,
        (None, None) => 8 << 30,
    }
}

/// The limit a statement reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`SqlLimits::memory`].
    Memory(usize),
    /// [`SqlLimits::timeout`].
    Timeout(Duration),
    /// [`SqlLimits::recursion`].
    Recursion(usize),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Memory(bytes) => write!(
                f,
                "the SQL memory limit of {} (raise it with --memory-limit SIZE or [sql] memory_limit)",
                human_bytes(*bytes)
            ),
            Limit::Timeout(t) => write!(
                f,
                "the SQL time limit of {} s (raise it with --timeout SECONDS or [sql] timeout_secs)",
                t.as_secs_f64()
            ),
            Limit::Recursion(n) => write!(
                f,
                "the limit of {n} recursive steps of a recursive CTE (raise it with --max-recursion N or [sql] max_recursion)"
            ),
        }
    }
}

/// `1.5 GiB`, `512 MiB`, `300 B`.
pub fn human_bytes(bytes: usize) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", units[unit])
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// The memory pool of a session: fair to the operators that can spill (each partition's sort
/// gets its share and spills past it, where a greedy pool let the first sort take everything
/// and the second fail), naming its largest consumers when it refuses.
pub(crate) fn memory_pool(limits: &SqlLimits) -> Arc<dyn MemoryPool> {
    Arc::new(TrackConsumersPool::new(
        FairSpillPool::new(limits.memory),
        std::num::NonZeroUsize::new(3).expect("3 > 0"),
    ))
}

/// The limit behind a DataFusion error, if one is.
pub(crate) fn limit_of(error: &DataFusionError, limits: &SqlLimits) -> Option<Limit> {
    match error.find_root() {
        DataFusionError::ResourcesExhausted(_) => Some(Limit::Memory(limits.memory)),
        DataFusionError::External(e) => e.downcast_ref::<Reached>().map(|r| r.0),
        _ => None,
    }
}

/// An error that carries the limit reached through DataFusion.
#[derive(Debug)]
struct Reached(Limit);

impl std::fmt::Display for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the statement reached {}", self.0)
    }
}

impl std::error::Error for Reached {}

fn reached(limit: Limit) -> DataFusionError {
    DataFusionError::External(Box::new(Reached(limit)))
}

// ---------------------------------------------------------------------------------------------
// Functions whose output can be far larger than their input.

/// The built-in functions wrapped by [`Bounded`], with how their output is estimated.
pub(crate) const MULTIPLYING: [(&str, Growth); 7] = [
    ("repeat", Growth::TimesFirst),
    ("concat", Growth::Sum),
    ("lpad", Growth::Count),
    ("rpad", Growth::Count),
    ("array_repeat", Growth::Count),
    ("array_resize", Growth::Count),
    ("range", Growth::Range),
];

/// How a function's output grows with its arguments, at the least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Growth {
    /// The first argument's bytes times the second (`repeat(s, n)`).
    TimesFirst,
    /// The second argument, in elements or characters of at least a byte (`lpad(s, n)`).
    Count,
    /// `(stop − start) / step` elements of 8 bytes (`range(start, stop[, step])`); a single
    /// argument is the stop.
    Range,
    /// The bytes of every text argument (`concat(s, s)`, `s || s`): twice its input, step
    /// after step of a recursive CTE.
    Sum,
}

/// How many times a function's output is held at once, at the most, as it moves up a plan
/// outside the pool: its inputs beside it, a filter's or a repartition's copy, the step of a
/// recursive CTE kept for the next one. Measured: a recursive CTE doubling a string peaked at
/// 3.6 times its last string (`s || s`, 128 MiB).
const OUTPUT_COPIES: u128 = 4;

/// A built-in function that first checks that its output, estimated from its arguments, fits
/// in what the memory limit leaves (the limit less what the session's pool holds), as many
/// times as it is held at once ([`OUTPUT_COPIES`]): a single
/// `repeat('x', 1e9)` allocates outside DataFusion's pool, where running out of memory aborts
/// the process.
#[derive(Debug)]
pub(crate) struct Bounded {
    inner: ScalarUDF,
    growth: Growth,
    memory: usize,
    pool: Arc<dyn MemoryPool>,
}

impl PartialEq for Bounded {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner && self.growth == other.growth && self.memory == other.memory
    }
}

impl Eq for Bounded {}

impl std::hash::Hash for Bounded {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.inner, self.growth, self.memory).hash(state);
    }
}

impl Bounded {
    pub(crate) fn new(
        inner: ScalarUDF,
        growth: Growth,
        memory: usize,
        pool: Arc<dyn MemoryPool>,
    ) -> Self {
        Bounded {
            inner,
            growth,
            memory,
            pool,
        }
    }

    /// The least number of bytes the call will produce (saturating).
    fn least_output(&self, args: &ScalarFunctionArgs) -> u128 {
        let rows = args.number_rows.max(1);
        let ints = |i: usize| args.args.get(i).map(|a| integers(a, rows));
        match self.growth {
            Growth::TimesFirst => match (args.args.first(), ints(1)) {
                (Some(text), Some(counts)) => text_lengths(text, rows)
                    .zip(counts)
                    .map(|(len, n)| len as u128 * n.max(0) as u128)
                    .sum(),
                _ => 0,
            },
            Growth::Count => ints(1).map_or(0, |counts| counts.map(|n| n.max(0) as u128).sum()),
            Growth::Sum => args
                .args
                .iter()
                .map(|a| text_lengths(a, rows).map(|n| n as u128).sum::<u128>())
                .sum(),
            Growth::Range => {
                // Integers only: dates and timestamps step by intervals, which are not counted.
                if !args.arg_fields.iter().all(|f| f.data_type().is_integer()) {
                    return 0;
                }
                let (start, stop, step) = match args.args.len() {
                    1 => (None, ints(0), None),
                    2 => (ints(0), ints(1), None),
                    _ => (ints(0), ints(1), ints(2)),
                };
                let Some(stop) = stop else { return 0 };
                let start = start.map_or_else(
                    || zeros(rows),
                    |s| Box::new(s) as Box<dyn Iterator<Item = i64>>,
                );
                let step = step.map_or_else(
                    || ones(rows),
                    |s| Box::new(s) as Box<dyn Iterator<Item = i64>>,
                );
                start
                    .zip(stop)
                    .zip(step)
                    .map(|((a, b), s)| {
                        let span = (i128::from(b) - i128::from(a)).unsigned_abs();
                        8 * span / s.unsigned_abs().max(1) as u128
                    })
                    .sum()
            }
        }
    }
}

fn zeros(rows: usize) -> Box<dyn Iterator<Item = i64>> {
    Box::new(std::iter::repeat_n(0, rows))
}

fn ones(rows: usize) -> Box<dyn Iterator<Item = i64>> {
    Box::new(std::iter::repeat_n(1, rows))
}

/// An integer argument row by row (0 where null or not an integer).
fn integers(value: &ColumnarValue, rows: usize) -> Box<dyn Iterator<Item = i64> + '_> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Int64Type;
    match value {
        ColumnarValue::Scalar(s) => {
            let n = match s.cast_to(&DataType::Int64) {
                Ok(ScalarValue::Int64(Some(n))) => n,
                _ => 0,
            };
            Box::new(std::iter::repeat_n(n, rows))
        }
        ColumnarValue::Array(a) => match datafusion::arrow::compute::cast(a, &DataType::Int64) {
            Ok(cast) => {
                let ints = cast.as_primitive::<Int64Type>().clone();
                Box::new(
                    (0..ints.len()).map(move |i| if ints.is_null(i) { 0 } else { ints.value(i) }),
                )
            }
            Err(_) => Box::new(std::iter::repeat_n(0, rows)),
        },
    }
}

/// A text argument's byte length row by row (0 where null or not text).
fn text_lengths(value: &ColumnarValue, rows: usize) -> Box<dyn Iterator<Item = usize> + '_> {
    use datafusion::arrow::array::Array;
    match value {
        ColumnarValue::Scalar(s) => {
            let len = match s {
                ScalarValue::Utf8(Some(t))
                | ScalarValue::LargeUtf8(Some(t))
                | ScalarValue::Utf8View(Some(t)) => t.len(),
                _ => 0,
            };
            Box::new(std::iter::repeat_n(len, rows))
        }
        ColumnarValue::Array(a) => {
            let lengths = datafusion::arrow::compute::kernels::length::length(a)
                .ok()
                .and_then(|l| datafusion::arrow::compute::cast(&l, &DataType::Int64).ok());
            match lengths {
                Some(l) => {
                    use datafusion::arrow::array::AsArray;
                    let l = l
                        .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                        .clone();
                    Box::new((0..l.len()).map(move |i| {
                        if l.is_null(i) {
                            0
                        } else {
                            l.value(i).max(0) as usize
                        }
                    }))
                }
                None => Box::new(std::iter::repeat_n(0, rows)),
            }
        }
    }
}

impl ScalarUDFImpl for Bounded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> datafusion::common::Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> datafusion::common::Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        let left = self.memory.saturating_sub(self.pool.reserved());
        if self.least_output(&args) * OUTPUT_COPIES > left as u128 {
            return Err(reached(Limit::Memory(self.memory)));
        }
        self.inner.invoke_with_args(args)
    }
}

/// `a || b` on text, bounded as `concat` is: the operator's output, like the function's,
/// doubles a string at each step of a recursive CTE.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct StringConcat {
    signature: Signature,
}

impl StringConcat {
    pub(crate) fn new() -> Self {
        StringConcat {
            signature: Signature::any(2, datafusion::logical_expr::Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for StringConcat {
    fn name(&self) -> &str {
        "string_concat"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        use datafusion::logical_expr::Operator;
        use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
        match arg_types {
            [l, r] => BinaryTypeCoercer::new(l, &Operator::StringConcat, r).get_result_type(),
            _ => Err(DataFusionError::Plan("|| takes two operands".into())),
        }
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        let to = args.return_field.data_type().clone();
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [l, r] = arrays.as_slice() else {
            return Err(DataFusionError::Plan("|| takes two operands".into()));
        };
        let (l, r) = (
            datafusion::arrow::compute::cast(l, &to)?,
            datafusion::arrow::compute::cast(r, &to)?,
        );
        let out =
            datafusion::arrow::compute::kernels::concat_elements::concat_elements_dyn(&l, &r)?;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        // Two constants give one value, the same on every row.
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// A logical optimizer rule that puts `bounded` (the [`StringConcat`] function within the
/// limit) in place of every `a || b` on text, names kept.
#[derive(Debug)]
pub(crate) struct BoundStringConcat {
    pub(crate) bounded: Arc<ScalarUDF>,
}

impl OptimizerRule for BoundStringConcat {
    fn name(&self) -> &str {
        "ledger_bound_string_concat"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> datafusion::common::Result<Transformed<LogicalPlan>> {
        use datafusion::logical_expr::expr_rewriter::NamePreserver;
        use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
        let names = NamePreserver::new(&plan);
        plan.map_expressions(|expr| {
            let name = names.save(&expr);
            let rewritten = expr.transform_up(|e| match e {
                Expr::BinaryExpr(BinaryExpr {
                    left,
                    op: Operator::StringConcat,
                    right,
                }) => Ok(Transformed::yes(self.bounded.call(vec![*left, *right]))),
                e => Ok(Transformed::no(e)),
            })?;
            Ok(if rewritten.transformed {
                rewritten.update_data(|e| name.restore(e))
            } else {
                rewritten
            })
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Recursive CTEs.

/// A physical optimizer rule that counts the steps of every recursive CTE: it puts a
/// [`CountedSteps`] over each recursive term, which DataFusion runs once per step.
#[derive(Debug)]
pub(crate) struct LimitRecursion(pub(crate) usize);

impl PhysicalOptimizerRule for LimitRecursion {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if !node.is::<RecursiveQueryExec>() {
                return Ok(Transformed::no(node));
            }
            let children: Vec<Arc<dyn ExecutionPlan>> =
                node.children().into_iter().cloned().collect();
            let [base, step] = <[_; 2]>::try_from(children).map_err(|_| {
                DataFusionError::Internal("a recursive CTE without two terms".into())
            })?;
            if step.is::<CountedSteps>() {
                return Ok(Transformed::no(node));
            }
            let counted: Arc<dyn ExecutionPlan> = Arc::new(CountedSteps {
                step,
                runs: Arc::new(AtomicUsize::new(0)),
                limit: self.0,
            });
            let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
            Ok(Transformed::yes(
                node.replace_children(vec![base, counted], recompute)?,
            ))
        })
        .data()
    }

    fn name(&self) -> &str {
        "ledger_limit_recursion"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The recursive term of a CTE, counting its runs (one per step, shared by the copies
/// DataFusion makes of it between steps) and refusing the one past the limit.
#[derive(Debug)]
struct CountedSteps {
    step: Arc<dyn ExecutionPlan>,
    runs: Arc<AtomicUsize>,
    limit: usize,
}

impl DisplayAs for CountedSteps {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "CountedSteps: limit={}", self.limit)
    }
}

impl ExecutionPlan for CountedSteps {
    fn name(&self) -> &str {
        "CountedSteps"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.step.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.step]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> datafusion::common::Result<TreeNodeRecursion>,
    ) -> datafusion::common::Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        let [step] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("CountedSteps takes one child".into()))?;
        Ok(Arc::new(CountedSteps {
            step,
            runs: Arc::clone(&self.runs),
            limit: self.limit,
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> datafusion::common::Result<SendableRecordBatchStream> {
        if partition == 0 && self.runs.fetch_add(1, Ordering::Relaxed) >= self.limit {
            return Err(reached(Limit::Recursion(self.limit)));
        }
        self.step.execute(partition, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(human_bytes(300), "300 B");
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
