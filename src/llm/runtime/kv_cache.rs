//! The KV cache of one layer: llama.cpp keeps it in f16 (`src/llama-kv-cache.cpp`,
//! `GGML_TYPE_F16` keys and values); here the f16 values are kept widened to f32
//! (exact) in the layout attention reads, per kv head, so that no step converts the
//! whole cache again. Truncation (`fork`) lets a new prompt that shares a prefix with
//! the previous one reuse its keys and values.

use super::ops::round_f16;

/// A KV cache of one layer, per kv head. llama.cpp keeps it in f16; the values here
/// are those f16 values, kept widened to f32 (exact) in the layout attention reads,
/// so that no step converts the whole cache again.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    heads: Vec<HeadKv>,
    /// Values per position (kv heads × head dim).
    pub width: usize,
}

impl KvCache {
    /// A cache of `kv_heads` heads of `dim` values.
    pub fn new(kv_heads: usize, dim: usize) -> Self {
        Self {
            heads: vec![
                HeadKv {
                    dim,
                    ..HeadKv::default()
                };
                kv_heads
            ],
            width: kv_heads * dim,
        }
    }

    /// Write positions `pos..pos + n` from rows of `k` and `v` (each `n × width`,
    /// heads side by side), rounded to f16; later positions are dropped.
    pub fn store(&mut self, pos: usize, k: &[f32], v: &[f32]) {
        let w = self.width;
        for (h, head) in self.heads.iter_mut().enumerate() {
            let dim = head.dim;
            let kr: Vec<&[f32]> = k
                .chunks_exact(w)
                .map(|r| &r[h * dim..(h + 1) * dim])
                .collect();
            let vr: Vec<&[f32]> = v
                .chunks_exact(w)
                .map(|r| &r[h * dim..(h + 1) * dim])
                .collect();
            head.store(pos, &kr, &vr);
        }
    }

    /// The number of KV heads.
    pub fn heads(&self) -> usize {
        self.heads.len()
    }

    /// Kv head `h`.
    pub fn head(&self, h: usize) -> &HeadKv {
        &self.heads[h]
    }

    /// A copy holding only positions `0..len`.
    pub fn fork(&self, len: usize) -> Self {
        Self {
            heads: self.heads.iter().map(|h| h.fork(len)).collect(),
            width: self.width,
        }
    }
}

/// One KV head's cache as f32, for attention: keys row by row (`positions × dim`) and
/// values transposed (`dim × stride`, `stride` a multiple of 64, zero past the stored
/// positions).
#[derive(Debug, Clone, Default)]
pub struct HeadKv {
    pub(super) k: Vec<f32>,
    pub(super) vt: Vec<f32>,
    pub(super) stride: usize,
    pub(super) dim: usize,
    pub(super) total: usize,
}

impl HeadKv {
    /// Positions `pos..pos + rows` from `k` and `v` rows; positions after them are
    /// dropped (their values zeroed, as the padded products expect).
    fn store(&mut self, pos: usize, k: &[&[f32]], v: &[&[f32]]) {
        let dim = self.dim;
        let end = pos + k.len();
        let keep = self.total.min(pos);
        self.k.truncate(keep * dim);
        self.k.resize(pos * dim, 0.0);
        for row in k {
            self.k.extend_from_slice(row);
        }
        round_f16(&mut self.k[pos * dim..]);
        if end > self.stride {
            let stride = (end.div_ceil(64) * 64).max(2 * self.stride);
            let mut vt = vec![0f32; dim * stride];
            for d in 0..dim {
                vt[d * stride..d * stride + keep]
                    .copy_from_slice(&self.vt[d * self.stride..d * self.stride + keep]);
            }
            self.vt = vt;
            self.stride = stride;
        }
        for d in 0..dim {
            let col = &mut self.vt[d * self.stride..(d + 1) * self.stride];
            col[keep..pos].fill(0.0);
            for (j, row) in v.iter().enumerate() {
                col[pos + j] = row[d];
            }
            round_f16(&mut col[pos..end]);
            if self.total > end {
                col[end..self.total].fill(0.0);
            }
        }
        self.total = end;
    }

    fn fork(&self, len: usize) -> Self {
        let len = len.min(self.total);
        let mut c = self.clone();
        c.k.truncate(len * self.dim);
        for d in 0..self.dim {
            c.vt[d * self.stride + len..d * self.stride + self.total].fill(0.0);
        }
        c.total = len;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_cache_rewrites_drop_later_positions() {
        let (heads, dim) = (2, 3);
        let mut c = KvCache::new(heads, dim);
        let rows = |n: usize, base: f32| -> Vec<f32> {
            (0..n * heads * dim).map(|i| base + i as f32).collect()
        };
        c.store(0, &rows(5, 0.0), &rows(5, 100.0));
        // Position 2 again: positions 3 and 4 are gone.
        c.store(2, &rows(1, 1000.0), &rows(1, 2000.0));
        let h1 = c.head(1);
        assert_eq!(h1.total, 3);
        assert_eq!(h1.k.len(), 3 * dim);
        // Head 1's key at position 2 = the new row's values 3..6.
        assert_eq!(&h1.k[2 * dim..], &[1003.0, 1004.0, 1005.0]);
        for d in 0..dim {
            let col = &h1.vt[d * h1.stride..(d + 1) * h1.stride];
            // Position 1 of head 1 in the first rows: 100 + 1·6 + 3 + d.
            assert_eq!(col[1], 109.0 + d as f32);
            assert_eq!(col[2], 2003.0 + d as f32);
            assert!(
                col[3..].iter().all(|&x| x == 0.0),
                "stale values past the end"
            );
        }
        // Values are rounded to f16, as llama.cpp's cache holds them.
        let mut r = KvCache::new(1, 1);
        r.store(0, &[0.1], &[0.1]);
        assert_eq!(r.head(0).k[0], half::f16::from_f32(0.1).to_f32());
        let f = c.fork(2);
        assert_eq!(f.head(0).total, 2);
        assert!(f.head(0).vt[2..f.head(0).stride].iter().all(|&x| x == 0.0));
        // Growing past the stride keeps the stored values.
        let mut g = KvCache::new(1, 2);
        g.store(0, &rows(60, 0.0)[..120], &rows(60, 0.0)[..120]);
        g.store(60, &rows(10, 500.0)[..20], &rows(10, 500.0)[..20]);
        let h = g.head(0);
        assert_eq!(h.total, 70);
        assert_eq!(h.vt[h.stride + 59], 119.0);
        assert_eq!(h.vt[h.stride + 60], 501.0);
    }
}
