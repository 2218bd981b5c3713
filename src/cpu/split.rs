//! Splitting a matrix product's output rows across the thread pool, and putting
//! the pieces back.

use rayon::prelude::*;

/// Weight rows per parallel task.
const ROWS_PER_TASK: usize = 16;

/// Run `task(j0, j1, res)` for blocks of ROWS_PER_TASK of `n` weight rows in parallel;
/// `res` (`m × (j1 − j0)`, row-major) is the block's share of the output. (Small
/// blocks even for one activation row: measured in generation, 4 large blocks were
/// slower than 40 small ones, which balance when a core starts late.)
pub fn row_tasks(
    n: usize,
    m: usize,
    task: impl Fn(usize, usize, &mut [f32]) + Sync,
) -> Vec<(usize, Vec<f32>)> {
    (0..n.div_ceil(ROWS_PER_TASK))
        .into_par_iter()
        .map(|t| {
            let j0 = t * ROWS_PER_TASK;
            let j1 = (j0 + ROWS_PER_TASK).min(n);
            let mut res = vec![0f32; (j1 - j0) * m];
            task(j0, j1, &mut res);
            (j0, res)
        })
        .collect()
}

/// The tasks' blocks ([`row_tasks`]) into `out` (row-major `m × n`).
pub fn scatter(n: usize, parts: Vec<(usize, Vec<f32>)>, m: usize, out: &mut [f32]) {
    let row = |(i, o): (usize, &mut [f32])| {
        for (j0, res) in &parts {
            let width = res.len() / m;
            o[*j0..j0 + width].copy_from_slice(&res[i * width..(i + 1) * width]);
        }
    };
    if m >= 8 {
        out.par_chunks_exact_mut(n).enumerate().for_each(row);
    } else {
        out.chunks_exact_mut(n).enumerate().for_each(row);
    }
}
