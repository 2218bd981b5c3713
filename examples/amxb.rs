use quire::embed::amx::{self, Amx, PackedB};
use std::time::Instant;
fn main() {
    let amx = Amx::detect().unwrap();
    let shapes: Vec<(usize, usize, usize)> = std::env::args()
        .skip(1)
        .map(|a| {
            let v: Vec<usize> = a.split('x').map(|x| x.parse().unwrap()).collect();
            (v[0], v[1], v[2])
        })
        .collect();
    for &(m, n, k) in &shapes {
        let x: Vec<u16> = (0..m * k)
            .map(|i| amx::bf16((i % 97) as f32 / 97.0))
            .collect();
        let w: Vec<f32> = (0..n * k).map(|i| (i % 89) as f32 / 89.0).collect();
        let p = PackedB::pack(&w, n, k);
        let mut y = vec![0f32; m * n];
        amx::matmul(amx, &x, m, &p, &mut y);
        let reps = (2e10 / (2.0 * (m * n * k) as f64)) as usize + 1;
        let t = Instant::now();
        for _ in 0..reps {
            amx::matmul(amx, &x, m, &p, &mut y);
        }
        let s = t.elapsed().as_secs_f64() / reps as f64;
        println!(
            "{m}x{n}x{k}: {:.3} ms, {:.0} GFLOP/s (1 thread)",
            s * 1e3,
            2.0 * (m * n * k) as f64 / s / 1e9
        );
    }
}
