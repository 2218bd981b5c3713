//! Q4_0, Q4_1 and Q8_0 weights (and Q5_0 as Q8_0) kept as the file's blocks, against
//! the quantized activation rows, the kernel chosen per CPU: AVX-512 VNNI ([`vnni`]),
//! else AVX2 ([`avx2`]: a few weight rows against a few activation rows per call,
//! Q8_0 4 × 2, the others 2 × 4), else the portable loop ([`portable`]), all with the
//! bits of llama.cpp's AVX2 `ggml_vec_dot_*` (`ggml-cpu/arch/x86/quants.c`).

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Result;

#[cfg(target_arch = "x86_64")]
use super::avx2;
use super::portable;
use super::q8::{q5_0_as_q8_0, quantize_row_q8, Kind, Q8Block, Q5_0_BYTES, QK};
#[cfg(target_arch = "x86_64")]
use super::vnni;
#[cfg(target_arch = "x86_64")]
use crate::cpu::has_avx2_fma;
use crate::cpu::split::{row_tasks, scatter};
use rayon::prelude::*;

/// Raw blocks of a Q4_0 / Q4_1 / Q8_0 weight of `n` rows of `k` values.
#[derive(Debug, Clone)]
pub(crate) struct OwnWeight {
    pub(super) kind: Kind,
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) data: Vec<u8>,
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    static PAIRS: std::cell::RefCell<Vec<vnni::Pair>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl OwnWeight {
    /// The weight's blocks, if its type has an own kernel (on the CPU).
    /// Q5_0 is taken as the Q8_0 blocks of the same values (see [`q5_0_as_q8_0`]).
    pub(super) fn new(t: &QTensor) -> Result<Option<Self>> {
        let kind = match t.dtype() {
            GgmlDType::Q4_0 => Kind::Q4_0,
            GgmlDType::Q4_1 => Kind::Q4_1,
            GgmlDType::Q8_0 | GgmlDType::Q5_0 => Kind::Q8_0,
            _ => return Ok(None),
        };
        let Ok((n, k)) = t.shape().dims2() else {
            return Ok(None);
        };
        if k % QK != 0 || !t.device().is_cpu() {
            return Ok(None);
        }
        let raw = t.data()?;
        let data = if t.dtype() == GgmlDType::Q5_0 && raw.len() == n * (k / QK) * Q5_0_BYTES {
            q5_0_as_q8_0(&raw)
        } else {
            raw.into_owned()
        };
        if data.len() != n * (k / QK) * kind.block_bytes() {
            candle_core::bail!(
                "weight of {n}x{k} {:?} has {} bytes of data",
                t.dtype(),
                data.len()
            );
        }
        Ok(Some(Self { kind, n, k, data }))
    }

    /// `out[i][j] = x[i] · w[j]` for `m` rows of `x`.
    pub(super) fn matmul(&self, xs: &[f32], m: usize, q: &mut Vec<Q8Block>, out: &mut [f32]) {
        let nb = self.k / QK;
        q.clear();
        q.resize(m * nb, Q8Block::default());
        if m >= 8 {
            xs.par_chunks_exact(self.k)
                .zip(q.par_chunks_exact_mut(nb))
                .for_each(|(row, qrow)| quantize_row_q8(row, qrow));
        } else {
            for (row, qrow) in xs.chunks_exact(self.k).zip(q.chunks_exact_mut(nb)) {
                quantize_row_q8(row, qrow);
            }
        }
        let q: &[Q8Block] = q;
        #[cfg(target_arch = "x86_64")]
        if m >= 2 && crate::cpu::has_vnni() {
            let row_bytes = nb * self.kind.block_bytes();
            let mut pairs = PAIRS.with(|cell| cell.take());
            let parts = {
                vnni::pairs(q, m, nb, &mut pairs);
                let pairs: &[vnni::Pair] = &pairs;
                self.tasks(m, |j0, j1, res| {
                    let width = j1 - j0;
                    let mut wr = vnni::WeightRow::new(self.kind);
                    let mut col = vec![0f32; m];
                    for (jj, j) in (j0..j1).enumerate() {
                        wr.load(&self.data[j * row_bytes..(j + 1) * row_bytes]);
                        vnni::rows(&wr, pairs, &mut col);
                        for (i, v) in col.iter().enumerate() {
                            res[i * width + jj] = *v;
                        }
                    }
                })
            };
            PAIRS.with(|cell| cell.replace(pairs));
            self.scatter(parts, m, out);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            if self.kind == Kind::Q8_0 && crate::cpu::has_f16c() {
                self.blocks(q, m, avx2::dot_q8_0_4x2, out);
            } else {
                let kind = self.kind;
                self.blocks(q, m, |w, ys, r| avx2::dot_2x4(kind, w, ys, r), out);
            }
            return;
        }
        let kern = kernel(self.kind);
        self.blocks(q, m, |[w], [y], [[r]]| *r = kern(w, y), out);
    }

    /// The product of the quantized rows `q` by `W` weight rows against `R` activation
    /// rows at a time (`block`), the rows left over one by one ([`kernel`]).
    /// Activation rows go in tiles of about [`TILE_BYTES`], each staying in cache
    /// while the task's weight rows pass over it (a whole prompt's rows did not).
    fn blocks<const W: usize, const R: usize>(
        &self,
        q: &[Q8Block],
        m: usize,
        block: impl Fn([&[u8]; W], [&[Q8Block]; R], &mut [[f32; R]; W]) + Sync,
        out: &mut [f32],
    ) {
        let nb = self.k / QK;
        let row_bytes = nb * self.kind.block_bytes();
        let kern = kernel(self.kind);
        let stepped = m - m % R;
        let tile = (TILE_BYTES / (nb * std::mem::size_of::<Q8Block>())).max(1) * R;
        let parts = self.tasks(m, |j0, j1, res| {
            let width = j1 - j0;
            let qrow = |i: usize| &q[i * nb..(i + 1) * nb];
            let wrow = |j: usize| &self.data[j * row_bytes..(j + 1) * row_bytes];
            let mut r = [[0f32; R]; W];
            for i0 in (0..stepped).step_by(tile) {
                let i1 = (i0 + tile).min(stepped);
                let mut j = j0;
                while j + W <= j1 {
                    let ws = std::array::from_fn(|c| wrow(j + c));
                    for i in (i0..i1).step_by(R) {
                        block(ws, std::array::from_fn(|t| qrow(i + t)), &mut r);
                        for (c, rc) in r.iter().enumerate() {
                            for (t, v) in rc.iter().enumerate() {
                                res[(i + t) * width + j - j0 + c] = *v;
                            }
                        }
                    }
                    j += W;
                }
                for j in j..j1 {
                    for i in i0..i1 {
                        res[i * width + j - j0] = kern(wrow(j), qrow(i));
                    }
                }
            }
            for j in j0..j1 {
                for i in stepped..m {
                    res[i * width + j - j0] = kern(wrow(j), qrow(i));
                }
            }
        });
        self.scatter(parts, m, out);
    }

    fn tasks(
        &self,
        m: usize,
        task: impl Fn(usize, usize, &mut [f32]) + Sync,
    ) -> Vec<(usize, Vec<f32>)> {
        row_tasks(self.n, m, task)
    }

    fn scatter(&self, parts: Vec<(usize, Vec<f32>)>, m: usize, out: &mut [f32]) {
        scatter(self.n, parts, m, out)
    }
}

type Kernel = fn(&[u8], &[Q8Block]) -> f32;

fn kernel(kind: Kind) -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::has_vnni() {
            return match kind {
                Kind::Q4_0 => |w, ys| vnni::row(Kind::Q4_0, w, ys),
                Kind::Q4_1 => |w, ys| vnni::row(Kind::Q4_1, w, ys),
                Kind::Q8_0 => |w, ys| vnni::row(Kind::Q8_0, w, ys),
            };
        }
        if has_avx2_fma() {
            return match kind {
                Kind::Q4_0 => avx2::dot_q4_0,
                Kind::Q4_1 => avx2::dot_q4_1,
                Kind::Q8_0 => avx2::dot_q8_0,
            };
        }
    }
    match kind {
        Kind::Q4_0 => portable::dot_q4_0,
        Kind::Q4_1 => portable::dot_q4_1,
        Kind::Q8_0 => portable::dot_q8_0,
    }
}

/// Bytes of quantized activation rows a task's weight rows pass over at a time.
const TILE_BYTES: usize = 128 << 10;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::needless_range_loop)]
mod tests {
    use super::super::tests::rnd;
    use super::super::QLinear;
    use super::*;
    use candle_core::{Device, Tensor};

    /// Own kernels (SIMD or portable) agree with each other and, within quantization
    /// error, with the dequantized float product.
    #[test]
    fn kernels_match_the_portable_loop_and_the_float_product() {
        // 1 row (generation), 2, 5 and 9 (an odd row left alone), 7 (an odd row inside
        // a group of four pairs), 8; 37 weight rows (pairs and one left alone).
        for m in [1, 2, 5, 7, 8, 9] {
            kernels_match_for(m, 96);
        }
        // Rows so long that a tile of activation rows (TILE_BYTES) holds 4 of them:
        // 5 tiles, then 3 rows left alone.
        let k = QK * (TILE_BYTES / std::mem::size_of::<Q8Block>() / 2 + 1);
        assert_eq!(TILE_BYTES / (k / QK * std::mem::size_of::<Q8Block>()), 1);
        kernels_match_for(23, k);
    }

    fn kernels_match_for(m: usize, k: usize) {
        let n = 37;
        let w = rnd(n * k, 7);
        let x = rnd(m * k, 11 + m as u64);
        let dev = Device::Cpu;
        let wt = Tensor::from_vec(w.clone(), (n, k), &dev).unwrap();
        let xt = Tensor::from_vec(x.clone(), (m, k), &dev).unwrap();
        for dt in [GgmlDType::Q4_0, GgmlDType::Q4_1, GgmlDType::Q8_0] {
            let qt = QTensor::quantize(&wt, dt).unwrap();
            let deq = qt.dequantize(&dev).unwrap();
            let exact = xt.matmul(&deq.t().unwrap()).unwrap();
            let lin = QLinear::new(qt).unwrap();
            let got = lin.forward_rows(&x, m).unwrap();
            let got = Tensor::from_vec(got, (m, n), &dev).unwrap();
            let QLinear::Own(own) = lin else {
                panic!("{dt:?} should use the own kernel")
            };
            let diff = (got.clone() - exact)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            let tol = 0.05 * (k as f32 / 96.0).sqrt();
            assert!(diff < tol, "{dt:?}: off the float product by {diff}");
            // The portable loop gives the same bits as the dispatched kernel.
            let nb = k / QK;
            let mut q = vec![Q8Block::default(); nb];
            let got = got.to_vec2::<f32>().unwrap();
            let row_bytes = nb * own.kind.block_bytes();
            for i in 0..m {
                quantize_row_q8(&x[i * k..(i + 1) * k], &mut q);
                for j in 0..n {
                    let wj = &own.data[j * row_bytes..(j + 1) * row_bytes];
                    let p = match own.kind {
                        Kind::Q4_0 => portable::dot_q4_0(wj, &q),
                        Kind::Q4_1 => portable::dot_q4_1(wj, &q),
                        Kind::Q8_0 => portable::dot_q8_0(wj, &q),
                    };
                    assert_eq!(p.to_bits(), got[i][j].to_bits(), "{dt:?} [{i}][{j}]");
                }
            }
        }
    }
}
