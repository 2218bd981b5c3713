//! One quantized matrix product timed alone, for `quire bench matmul`: which weight
//! shape is slow, in GFLOP/s, without a model around it.

use std::time::Instant;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Result, Tensor};

use super::QLinear;
use crate::cpu::pool::{self, Work};

/// The weight types a product can be timed for, by their GGUF names.
pub fn dtype(name: &str) -> Option<GgmlDType> {
    Some(match name.to_ascii_lowercase().as_str() {
        "q4_0" => GgmlDType::Q4_0,
        "q4_1" => GgmlDType::Q4_1,
        "q5_0" => GgmlDType::Q5_0,
        "q8_0" => GgmlDType::Q8_0,
        "q4_k" => GgmlDType::Q4K,
        "q5_k" => GgmlDType::Q5K,
        "q6_k" => GgmlDType::Q6K,
        _ => return None,
    })
}

/// The best of `reps` timed runs (after one untimed) of `m` rows times an `n × k`
/// weight of `dtype` (random values, quantized), on the thread pool as a forward pass
/// runs it; `batch`: the rows are a prompt's (the tiled arithmetic for K-quants).
/// Seconds.
pub fn best_secs(
    dtype: GgmlDType,
    n: usize,
    k: usize,
    m: usize,
    batch: bool,
    reps: usize,
) -> Result<f64> {
    let dev = Device::Cpu;
    let w = Tensor::randn(0f32, 1.0, (n, k), &dev)?;
    let w = QLinear::new(QTensor::quantize(&w, dtype)?)?;
    let x = Tensor::randn(0f32, 1.0, (m, k), &dev)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let mut out = Vec::new();
    let work = if m <= 4 { Work::Decode } else { Work::Prompt };
    let mut best = f64::INFINITY;
    for rep in 0..=reps.max(1) {
        let t = Instant::now();
        pool::run(work, m, || w.forward_into(&x, m, batch, &mut out))?;
        if rep > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    Ok(best)
}
