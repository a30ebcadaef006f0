//! Reading tables back for commands that need them in memory (`ledger similar`).

use crate::{Result, StoreError, io_err};
use arrow::array::{Array, FixedSizeListArray, Float32Array, StringArray};
use ledger_core::{Semantic, UnitEmbedding};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::Path;

fn column<'a, T: 'static>(batch: &'a arrow::array::RecordBatch, name: &str) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| StoreError::NotAGraph {
            path: name.into(),
            message: format!("embeddings table has no usable `{name}` column"),
        })
}

/// The embeddings of the current version of a graph (RELATED edges are not loaded).
pub fn read_embeddings(graph: &Path) -> Result<Semantic> {
    let dir = crate::current_version(graph)?;
    let path = dir.join("embeddings.parquet");
    let file = std::fs::File::open(&path).map_err(io_err(&path))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let mut semantic = Semantic::default();
    for batch in reader {
        let batch = batch?;
        let (docs, units, models) = (
            column::<StringArray>(&batch, "doc_id")?,
            column::<StringArray>(&batch, "unit_id")?,
            column::<StringArray>(&batch, "model")?,
        );
        let (summarizers, inputs, summaries, hashes) = (
            column::<StringArray>(&batch, "summarizer")?,
            column::<StringArray>(&batch, "input_hash")?,
            column::<StringArray>(&batch, "summary")?,
            column::<StringArray>(&batch, "summary_hash")?,
        );
        let vectors = column::<FixedSizeListArray>(&batch, "vector")?;
        semantic.dim = vectors.value_length() as usize;
        for i in 0..batch.num_rows() {
            semantic.model = models.value(i).to_string();
            semantic.summarizer = summarizers.value(i).to_string();
            let v = vectors.value(i);
            let values = v
                .as_any()
                .downcast_ref::<Float32Array>()
                .map(|a| a.values().to_vec())
                .unwrap_or_default();
            semantic.embeddings.push(UnitEmbedding {
                doc_id: docs.value(i).to_string(),
                unit_id: units.value(i).to_string(),
                input_hash: inputs.value(i).to_string(),
                summary: summaries.value(i).to_string(),
                summary_hash: hashes.value(i).to_string(),
                vector: values,
            });
        }
    }
    Ok(semantic)
}
