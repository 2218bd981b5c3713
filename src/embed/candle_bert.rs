//! The BERT encoder on a candle device (the GPU path of [`BertEmbedder`]):
//! candle-transformers' `BertModel` over the folder's weights, padded batches with an
//! attention mask, then the folder's pooling and L2 normalization as the own encoder
//! does them. It runs on the CPU too, which is how tests compare it with the own
//! encoder on a machine without a GPU.
//!
//! The dtype is f32 on every device. Not f16 or bf16: candle-transformers 0.11.1's
//! `BertModel` builds its attention mask as `(1 − mask) · f32::MIN`, and `f32::MIN`
//! rounds to −∞ in both half formats, so `0 · −∞` makes every vector NaN (the test
//! `gpu::candle_bert_matches_own_encoder` saw it in bf16). A half-precision encoder
//! needs a forward pass of our own over candle ops, with a finite mask.
//!
//! [`BertEmbedder`]: super::bert::BertEmbedder

use std::path::Path;

use candle_core::{DType, Device, IndexOp, Tensor, D};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};

use crate::embed::encoder::Pooling;
use crate::{Error, Result};

/// A BERT model on a candle device.
pub struct CandleBert {
    model: BertModel,
    device: Device,
    dtype: DType,
    max_pos: usize,
}

/// The dtype the encoder runs in on `device`: f32 (see the module's comment).
pub fn default_dtype(device: &Device) -> DType {
    let _ = device;
    DType::F32
}

impl CandleBert {
    /// Load `weights` (`model.safetensors` or `pytorch_model.bin`) onto `device`.
    pub fn load(weights: &Path, config: &Config, device: &Device, dtype: DType) -> Result<Self> {
        let bad =
            |e: candle_core::Error| Error::model_format(weights, format!("not a BERT model: {e}"));
        let vb = if weights.extension().is_some_and(|e| e == "safetensors") {
            // SAFETY: the file is memory-mapped read-only for the model's life; Quire
            // does not write model files while they are loaded.
            unsafe { VarBuilder::from_mmaped_safetensors(&[weights], dtype, device) }
                .map_err(bad)?
        } else {
            VarBuilder::from_pth(weights, dtype, device).map_err(bad)?
        };
        let model = BertModel::load(vb, config).map_err(bad)?;
        Ok(Self {
            model,
            device: device.clone(),
            dtype,
            max_pos: config.max_position_embeddings,
        })
    }

    /// The device it runs on: `cpu`, `cuda:0`, `metal`.
    pub fn device_name(&self) -> String {
        match self.device.location() {
            candle_core::DeviceLocation::Cpu => "cpu".to_string(),
            candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
            candle_core::DeviceLocation::Metal { .. } => "metal".to_string(),
        }
    }

    /// The device and dtype it runs in, e.g. "cuda:0 bf16".
    pub fn describe(&self) -> String {
        format!("{} {}", self.device_name(), self.dtype.as_str())
    }

    /// Pooled, L2-normalized embeddings of `seqs` (token ids with their special tokens).
    pub fn embed(&self, seqs: &[&[u32]], pooling: Pooling) -> Result<Vec<Vec<f32>>> {
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        let len = seqs.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
        if len > self.max_pos {
            return Err(Error::Invalid(format!(
                "{len} tokens, more than the model's {} positions",
                self.max_pos
            )));
        }
        let b = seqs.len();
        let mut ids = vec![0u32; b * len];
        let mut mask = vec![0u32; b * len];
        for (i, s) in seqs.iter().enumerate() {
            ids[i * len..i * len + s.len()].copy_from_slice(s);
            mask[i * len..i * len + s.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (b, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (b, len), &self.device)?;
        let types = ids.zeros_like()?;
        let out = self
            .model
            .forward(&ids, &types, Some(&mask))?
            .to_dtype(DType::F32)?;
        let pooled = match pooling {
            Pooling::Cls => out.i((.., 0))?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let sum = out.broadcast_mul(&m)?.sum(1)?;
                let n = m.sum(1)?.clamp(1f32, f32::MAX)?;
                sum.broadcast_div(&n)?
            }
        };
        let norm = pooled
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        Ok(pooled.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}
