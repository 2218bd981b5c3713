//! On a busy machine `cpu::pool` runs the forward pass and the embedder on fewer
//! workers: their results must be the same bits whatever the width.

use quire::cpu::pool::with_width;
use quire::embed::bert::BertEmbedder;
use quire::embed::Embedder;
use quire::llm::GgufLlm;

use crate::util;

fn assert_same_bits(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: rows");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.len(), y.len(), "{what}: row {i} length");
        let diff = x
            .iter()
            .zip(y)
            .position(|(p, q)| p.to_bits() != q.to_bits());
        assert!(diff.is_none(), "{what}: row {i} differs at {diff:?}");
    }
}

/// A prompt past the length where one token's attention splits across the workers
/// by key (`SPLIT_KEYS`), then a few generated positions.
fn check_llm(path: &std::path::Path) {
    let llm = GgufLlm::load(path).expect("load");
    let text = std::fs::read_to_string("/usr/share/common-licenses/GPL-3").expect("GPL-3");
    let mut ids = llm
        .tokenizer()
        .encode_prompt(&text[..4000])
        .expect("encode");
    ids.truncate(300);
    let forced: Vec<u32> = ids[10..16].to_vec();
    let at = |w: usize| {
        with_width(w, || {
            llm.reset_cache().expect("reset");
            llm.forced_logits(&ids, &forced).expect("logits")
        })
    };
    let one = at(1);
    assert_eq!(one.len(), forced.len() + 1);
    for w in [2, 3] {
        assert_same_bits(&one, &at(w), &format!("{} at {w} workers", path.display()));
    }
}

#[test]
fn llm_logits_are_the_same_bits_at_every_pool_width() {
    check_llm(&util::smollm2());
    // Gemma 3: one KV head, so the attention's split by head changes with the width.
    check_llm(&quire::models::find("gemma-3-270m-q4_k_m.gguf").expect("gemma-3-270m"));
}

#[test]
fn embeddings_are_the_same_bits_at_every_pool_width() {
    let emb = BertEmbedder::open(util::default_embedder()).expect("embedder");
    let text = std::fs::read_to_string("/usr/share/common-licenses/GPL-3").expect("GPL-3");
    let words: Vec<&str> = text.split_whitespace().collect();
    // 37 texts: batches of 32 and 5. A batch of at least two sequences per worker
    // goes sequence by sequence, a smaller one (5 at 3 workers, one text alone) layer
    // by layer across the pool: both ways give the same bits.
    let texts: Vec<String> = (0..37)
        .map(|i| words[i * 37..i * 37 + 20 + (i * 13) % 180].join(" "))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let one = with_width(1, || emb.embed(&refs).expect("embed"));
    for w in [2, 3] {
        assert_same_bits(
            &one,
            &with_width(w, || emb.embed(&refs).expect("embed")),
            &format!("MiniLM at {w} workers"),
        );
    }
    for i in [0, 17, 36] {
        assert_same_bits(
            &one[i..=i],
            &with_width(2, || emb.embed(&refs[i..=i]).expect("embed")),
            &format!("MiniLM, text {i} alone"),
        );
    }
}

/// The widest pool follows the CPUs the process may use (the affinity mask here; the
/// cgroup quota the same way), not the machine's count: `quire bench embed` under
/// `taskset -c 0` reports one worker.
#[test]
fn the_widest_pool_follows_the_affinity_mask() {
    let out = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(crate::util::quire_exe())
        .args(["bench", "embed", "--chunks", "4", "--runs", "1", "--json"])
        .args(["--reference", "/nonexistent"])
        .env_remove("RAYON_NUM_THREADS")
        .output()
        .expect("taskset (util-linux) runs quire bench embed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["threads"], 1, "{v}");
    assert_eq!(v["pool"]["max"], 1, "{v}");
}
