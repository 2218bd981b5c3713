//! `quire-bench matmul --json`, the binary as a person runs it: every shape of the
//! widths asked for, per type and row count, timed (GFLOP/s consistent with the
//! milliseconds), the shapes a type cannot hold left out and named, and a wrong type
//! refused with a clear error.

use std::process::Command;

use crate::util::json_out;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .arg("matmul")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn matmul_bench_times_every_shape_and_names_what_it_leaves_out() {
    let out = bench(&[
        "--widths",
        "256:768,384:512",
        "--types",
        "q4_k,q6_k,q8_0",
        "--rows",
        "16,1",
        "--reps",
        "1",
        "--json",
    ]);
    let v = json_out(&out);
    let shapes = v["shapes"].as_array().unwrap();
    // 256:768: three shapes for every type; 384:512: only the 384 × 512 product has
    // whole K-quant blocks (k = 512), all three have Q8_0's.
    assert_eq!(shapes.len(), 2 * (3 + 3 + 3 + 1 + 1 + 3), "{v}");
    let skipped: Vec<&str> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        [
            "q4_k 384x384",
            "q4_k 512x384",
            "q6_k 384x384",
            "q6_k 512x384"
        ],
        "{v}"
    );
    for s in shapes {
        let f = |k: &str| s[k].as_f64().unwrap();
        assert!(f("best_ms") > 0.0, "{s}");
        let flops = 2.0 * f("n") * f("k") * f("m");
        let gflops = flops / (f("best_ms") / 1e3) / 1e9;
        assert!((gflops - f("gflops")).abs() <= 1e-6 * gflops, "{s}");
    }
    assert!(v["threads"].as_u64().unwrap() >= 1, "{v}");
}

#[test]
fn matmul_bench_refuses_an_unknown_type() {
    let out = bench(&["--types", "q3_xs", "--widths", "256:512", "--reps", "1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("q3_xs") && err.contains("q4_k"), "{err}");
}
