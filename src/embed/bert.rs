//! The files of a sentence-transformers BERT model (all-MiniLM-L6-v2 by default):
//! `config.json`, `tokenizer.json`, `model.safetensors` (or `pytorch_model.bin`), and when present
//! `1_Pooling/config.json` (mean or [CLS] pooling) and the query and passage prompts
//! of `config_sentence_transformers.json`.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use candle_transformers::models::bert::{Config, HiddenAct};
use tokenizers::Tokenizer;

use candle_core::{DType, Device};

use crate::embed::candle_bert::CandleBert;
use crate::embed::encoder::{Dims, Encoder, Kernels, Pooling};
use crate::embed::Embedder;
use crate::{Error, Result};

/// A BERT model folder with its config and tokenizer read.
pub struct BertFiles {
    pub dir: PathBuf,
    pub config: Config,
    pub tokenizer: Tokenizer,
    pub weights: PathBuf,
    /// The languages the model card declares (empty: unknown).
    pub languages: Vec<String>,
    /// From `1_Pooling/config.json`; mean when the folder has none.
    pub pooling: Pooling,
    /// Text put before a question and before a passage, from the `prompts` of
    /// `config_sentence_transformers.json` (`query: ` and `passage: ` for e5).
    pub query_prompt: String,
    pub passage_prompt: String,
}

/// The weights of the model folder `dir`: `model.safetensors`, else PyTorch's
/// `pytorch_model.bin` (older sentence-transformers folders ship only that).
pub fn weights_file(dir: &Path) -> Option<PathBuf> {
    ["model.safetensors", "pytorch_model.bin"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// sentence-transformers' `1_Pooling/config.json`.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct PoolingConfig {
    pooling_mode_cls_token: bool,
    pooling_mode_mean_tokens: bool,
    pooling_mode_max_tokens: bool,
    pooling_mode_mean_sqrt_len_tokens: bool,
    pooling_mode_weightedmean_tokens: bool,
    pooling_mode_lasttoken: bool,
}

pub(crate) fn read_pooling(dir: &Path) -> Result<Pooling> {
    let p = dir.join("1_Pooling").join("config.json");
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(Pooling::Mean);
    };
    let c: PoolingConfig = serde_json::from_str(&text)
        .map_err(|e| Error::model_format(&p, format!("not a pooling config: {e}")))?;
    let others = c.pooling_mode_max_tokens
        || c.pooling_mode_mean_sqrt_len_tokens
        || c.pooling_mode_weightedmean_tokens
        || c.pooling_mode_lasttoken;
    match (c.pooling_mode_cls_token, c.pooling_mode_mean_tokens, others) {
        (true, false, false) => Ok(Pooling::Cls),
        (false, true, false) => Ok(Pooling::Mean),
        _ => Err(Error::model_format(
            &p,
            "only [CLS] or mean pooling is supported (one of pooling_mode_cls_token, \
             pooling_mode_mean_tokens)",
        )),
    }
}

/// The query and passage prompts of `config_sentence_transformers.json`.
fn read_prompts(dir: &Path) -> (String, String) {
    let v: serde_json::Value =
        std::fs::read_to_string(dir.join("config_sentence_transformers.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    let prompt = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| v["prompts"][k].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    (prompt(&["query"]), prompt(&["passage", "document"]))
}

impl BertFiles {
    /// Read `config.json` and `tokenizer.json` from `dir`, and check that
    /// `model.safetensors` is there.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let config: Config = serde_json::from_str(&text).map_err(|e| {
            Error::model_format(&config_path, format!("not a BERT config.json: {e}"))
        })?;
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&tok_path).map_err(|e| {
            Error::model_format(&tok_path, format!("not a tokenizers tokenizer.json: {e}"))
        })?;
        let Some(weights) = weights_file(&dir) else {
            return Err(Error::ModelMissing {
                path: dir.join("model.safetensors"),
                hint: "an embedding model folder needs model.safetensors or pytorch_model.bin \
                       beside its config.json; run models/fetch.sh for the default one"
                    .into(),
            });
        };
        let languages = std::fs::read_to_string(dir.join("README.md"))
            .map(|card| crate::embed::card_languages(&card))
            .unwrap_or_default();
        let pooling = read_pooling(&dir)?;
        let (query_prompt, passage_prompt) = read_prompts(&dir);
        Ok(Self {
            dir,
            config,
            tokenizer,
            weights,
            languages,
            pooling,
            query_prompt,
            passage_prompt,
        })
    }
}

/// all-MiniLM-L6-v2's maximum sequence length in sentence-transformers (the packaged
/// `tokenizer.json` says 128; the model was trained with, and is used at, 256).
pub const MAX_TOKENS: usize = 256;

/// How many texts go through the model at once.
pub const BATCH_SIZE: usize = 32;

/// The encoder behind a [`BertEmbedder`].
enum Net {
    /// Quire's own f32/AMX kernels, on the CPU.
    Own(Encoder),
    /// candle's BERT on a candle device (the GPU path).
    Candle(CandleBert),
}

/// Which encoder to load.
enum Backend {
    Own(Kernels),
    Candle(Device, DType),
}

/// A sentence-transformers BERT embedder on Quire's own encoder (or candle's, on a
/// GPU): the folder's pooling, L2-normalized vectors.
pub struct BertEmbedder {
    model: Net,
    pooling: Pooling,
    query_prompt: String,
    passage_prompt: String,
    /// No truncation, no padding: used to count tokens and for offsets.
    tokenizer: Tokenizer,
    max_tokens: usize,
    dims: usize,
    languages: Vec<String>,
    /// The ids of texts [`Embedder::count_tokens`] tokenized (the splitter's chunks),
    /// taken by `embed` when it gets the same text: a chunk is tokenized once, on the
    /// thread that split it (the pipeline's extraction threads), not again on the
    /// thread that waits for the model.
    counted: Mutex<HashMap<String, Vec<u32>>>,
    /// The last few queries' vectors, newest last: one answer embeds its question for
    /// retrieval, for the quotes and for the sentence optimizer, and each after the
    /// first takes it from here.
    queries: Mutex<VecDeque<(String, Vec<f32>)>>,
}

/// At most this many texts' ids are kept for `embed` (a few megabytes); past it they
/// are all dropped (and tokenized again when embedded).
const COUNTED_MAX: usize = 8192;

/// Queries whose vectors [`BertEmbedder::embed_query`] keeps.
const QUERIES_KEPT: usize = 8;

impl BertEmbedder {
    /// Load the model in `dir` (see [`BertFiles`]) on the CPU.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::from_files(BertFiles::open(dir)?)
    }

    /// Load the model in `dir` on the CPU with the dense layers on `kernels` (`open`
    /// takes [`Kernels::best`]).
    pub fn open_with(dir: impl AsRef<Path>, kernels: Kernels) -> Result<Self> {
        Self::load(BertFiles::open(dir)?, Backend::Own(kernels))
    }

    /// Load the model from files already read (Quire's own encoder, on the CPU, on the
    /// fastest kernels the machine has).
    pub fn from_files(files: BertFiles) -> Result<Self> {
        Self::load(files, Backend::Own(Kernels::best()))
    }

    /// Load the model in `dir` on `device`: on the CPU with no `dtype`, Quire's own
    /// encoder; otherwise candle's BERT ([`CandleBert`]) in `dtype`, by default the
    /// device's ([`crate::embed::candle_bert::default_dtype`]).
    pub fn open_on(dir: impl AsRef<Path>, device: &Device, dtype: Option<DType>) -> Result<Self> {
        let files = BertFiles::open(dir)?;
        if device.is_cpu() && dtype.is_none() {
            return Self::from_files(files);
        }
        let dtype = dtype.unwrap_or_else(|| crate::embed::candle_bert::default_dtype(device));
        Self::load(files, Backend::Candle(device.clone(), dtype))
    }

    /// The device it runs on: `cpu`, `cuda:0`, `metal`.
    pub fn device_name(&self) -> String {
        match &self.model {
            Net::Own(_) => "cpu".into(),
            Net::Candle(c) => c.device_name(),
        }
    }

    /// Which encoder runs: "own CPU kernels" or "candle on cuda:0 bf16" and the like.
    pub fn runtime(&self) -> String {
        match &self.model {
            Net::Own(e) => format!("own CPU kernels, {}", e.kernels()),
            Net::Candle(c) => format!("candle on {}", c.describe()),
        }
    }

    fn load(files: BertFiles, backend: Backend) -> Result<Self> {
        crate::embed::tune_allocator();
        let BertFiles {
            config,
            mut tokenizer,
            weights,
            languages,
            pooling,
            query_prompt,
            passage_prompt,
            ..
        } = files;
        // The packaged tokenizer.json truncates and pads to 128: we count, truncate
        // and pad ourselves.
        tokenizer
            .with_truncation(None)
            .map_err(|e| Error::model_format(&weights, format!("tokenizer: {e}")))?;
        tokenizer.with_padding(None);
        if config.hidden_act != HiddenAct::Gelu {
            return Err(Error::model_format(
                &weights,
                format!(
                    "hidden_act {:?}: only GELU BERT models are supported",
                    config.hidden_act
                ),
            ));
        }
        let model = match backend {
            Backend::Own(kernels) => Net::Own(
                Encoder::load(
                    &weights,
                    Dims {
                        hidden: config.hidden_size,
                        heads: config.num_attention_heads,
                        intermediate: config.intermediate_size,
                        layers: config.num_hidden_layers,
                        eps: config.layer_norm_eps,
                    },
                    kernels,
                )
                .map_err(|e| Error::model_format(&weights, format!("not a BERT model: {e}")))?,
            ),
            Backend::Candle(device, dtype) => {
                Net::Candle(CandleBert::load(&weights, &config, &device, dtype)?)
            }
        };
        let max_tokens = MAX_TOKENS.min(config.max_position_embeddings);
        Ok(Self {
            model,
            pooling,
            query_prompt,
            passage_prompt,
            tokenizer,
            max_tokens,
            dims: config.hidden_size,
            languages,
            counted: Mutex::new(HashMap::new()),
            queries: Mutex::new(VecDeque::new()),
        })
    }

    /// The tokenizer (no truncation, no padding).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// `text`'s ids, special tokens included, not truncated.
    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| Error::Invalid(format!("tokenizer: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        let kept = lock(&self.counted).remove(text);
        let mut ids = match kept {
            Some(ids) => ids,
            None => self.encode(text)?,
        };
        if ids.len() > self.max_tokens {
            // Same as sentence-transformers: keep the head, end with [SEP].
            let last = ids[ids.len() - 1];
            ids.truncate(self.max_tokens - 1);
            ids.push(last);
        }
        Ok(ids)
    }

    /// Embed `texts` as they are (no prompt put before them).
    pub fn embed_raw(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let seqs = texts
            .iter()
            .map(|t| self.tokenize(t))
            .collect::<Result<Vec<_>>>()?;
        // Longest first, so that each batch pads little.
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
        let mut out = vec![Vec::new(); seqs.len()];
        for batch in order.chunks(BATCH_SIZE) {
            let refs: Vec<&[u32]> = batch.iter().map(|&i| seqs[i].as_slice()).collect();
            for (&i, v) in batch.iter().zip(self.forward(&refs)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Embed one batch of token id sequences (packed, no padding).
    fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        match &self.model {
            // As wide as the CPUs this process is getting (`cpu::pool`).
            Net::Own(m) => {
                let tokens = seqs.iter().map(|s| s.len()).sum();
                crate::cpu::pool::run(crate::cpu::pool::Work::Embed, tokens, || {
                    m.embed(seqs, self.pooling)
                })
            }
            Net::Candle(m) => m.embed(seqs, self.pooling),
        }
    }
}

impl Embedder for BertEmbedder {
    fn dims(&self) -> usize {
        self.dims
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if self.passage_prompt.is_empty() {
            self.embed_raw(texts)
        } else {
            let with: Vec<String> = texts
                .iter()
                .map(|t| format!("{}{t}", self.passage_prompt))
                .collect();
            self.embed_raw(&with.iter().map(String::as_str).collect::<Vec<_>>())
        }
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let kept = |q: &VecDeque<(String, Vec<f32>)>| {
            q.iter().find(|(t, _)| t == query).map(|(_, v)| v.clone())
        };
        if let Some(v) = kept(&lock(&self.queries)) {
            return Ok(v);
        }
        let text = format!("{}{query}", self.query_prompt);
        let v = self.embed_raw(&[&text])?.remove(0);
        let mut q = lock(&self.queries);
        if kept(&q).is_none() {
            if q.len() == QUERIES_KEPT {
                q.pop_front();
            }
            q.push_back((query.to_string(), v.clone()));
        }
        Ok(v)
    }

    fn covers(&self, text: &str) -> bool {
        crate::embed::languages_cover(&self.languages, text)
    }

    fn token_spans(&self, text: &str) -> Result<Vec<std::ops::Range<usize>>> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| Error::Invalid(format!("tokenizer: {e}")))?;
        Ok(enc.get_offsets().iter().map(|&(a, b)| a..b).collect())
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        let ids = self.encode(text)?;
        let n = ids.len();
        let mut counted = lock(&self.counted);
        if counted.len() >= COUNTED_MAX {
            counted.clear();
        }
        counted.insert(text.to_string(), ids);
        Ok(n)
    }
}
