//! Splitting a matrix product's output rows across the thread pool, and putting
//! the pieces back (or each task writing its own columns in place).

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

/// A task's columns `j0..j1` of an `m × n` row-major output, which no other task of
/// [`column_tasks`] writes: the task writes its share in place, with no block to
/// allocate and copy back.
pub struct Columns<'a> {
    ptr: *mut f32,
    n: usize,
    m: usize,
    j0: usize,
    j1: usize,
    _out: std::marker::PhantomData<&'a mut [f32]>,
}

impl Columns<'_> {
    /// Output row `i`, column `j0 + jj`, set to `v`.
    #[inline]
    pub fn set(&mut self, i: usize, jj: usize, v: f32) {
        assert!(
            i < self.m && self.j0 + jj < self.j1,
            "outside the task's columns"
        );
        // SAFETY: inside `out` (checked above), in columns no other task writes, and
        // `out` is borrowed mutably for as long as the tasks run.
        unsafe { *self.ptr.add(i * self.n + self.j0 + jj) = v }
    }

    /// The block of `rows` output rows from `i` and `cols` of the task's columns from
    /// `jj`, for a kernel to write with its own stores: a pointer to its first value
    /// and the stride between rows, if the block lies inside the task's columns.
    /// Writing through it is the caller's to keep inside the block.
    #[inline]
    pub fn block(
        &mut self,
        i: usize,
        jj: usize,
        rows: usize,
        cols: usize,
    ) -> Option<(*mut f32, usize)> {
        (i + rows <= self.m && self.j0 + jj + cols <= self.j1).then(|| {
            // SAFETY (the offset): inside `out`, as checked.
            (unsafe { self.ptr.add(i * self.n + self.j0 + jj) }, self.n)
        })
    }
}

/// `out`'s base pointer, shared by the tasks (each writes only its own columns).
struct Base(*mut f32);
// SAFETY: the tasks write disjoint columns (see `Columns::set`).
unsafe impl Sync for Base {}
unsafe impl Send for Base {}

/// Run `task(j0, j1, columns)` for blocks of ROWS_PER_TASK of `n` weight rows in
/// parallel, each writing its columns of `out` (`m × n`) in place: [`row_tasks`]
/// without the blocks and [`scatter`] (for a prompt's batch they are megabytes per
/// product, fresh pages each time).
pub fn column_tasks(
    n: usize,
    m: usize,
    out: &mut [f32],
    task: impl Fn(usize, usize, &mut Columns<'_>) + Sync,
) {
    assert_eq!(
        out.len(),
        m * n,
        "output of {} values is not {m}x{n}",
        out.len()
    );
    let base = Base(out.as_mut_ptr());
    let base = &base;
    (0..n.div_ceil(ROWS_PER_TASK))
        .into_par_iter()
        .for_each(|t| {
            let j0 = t * ROWS_PER_TASK;
            let j1 = (j0 + ROWS_PER_TASK).min(n);
            let mut c = Columns {
                ptr: base.0,
                n,
                m,
                j0,
                j1,
                _out: std::marker::PhantomData,
            };
            task(j0, j1, &mut c);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each task's columns written in place equal the blocks put back by `scatter`,
    /// for widths that do and do not divide into whole tasks.
    #[test]
    fn columns_in_place_equal_the_scattered_blocks() {
        for (n, m) in [(1, 1), (16, 3), (37, 5), (100, 17)] {
            let value = |i: usize, j: usize| (i * 1000 + j) as f32;
            let parts = row_tasks(n, m, |j0, j1, res| {
                for i in 0..m {
                    for j in j0..j1 {
                        res[i * (j1 - j0) + j - j0] = value(i, j);
                    }
                }
            });
            let mut want = vec![f32::NAN; m * n];
            scatter(n, parts, m, &mut want);
            let mut got = vec![f32::NAN; m * n];
            column_tasks(n, m, &mut got, |j0, j1, c| {
                for i in 0..m {
                    for jj in 0..j1 - j0 {
                        c.set(i, jj, value(i, j0 + jj));
                    }
                }
            });
            assert_eq!(got, want, "n={n} m={m}");
        }
    }

    #[test]
    #[should_panic(expected = "outside the task's columns")]
    fn a_task_cannot_write_another_tasks_column() {
        let mut out = vec![0f32; 2 * 40];
        column_tasks(40, 2, &mut out, |_, j1, c| c.set(0, j1, 1.0));
    }
}
