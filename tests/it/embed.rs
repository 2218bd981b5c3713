//! The BERT embedder against sentence-transformers' vectors.

use quire::embed::bert::BertEmbedder;
use quire::embed::encoder::Kernels;
use quire::embed::Embedder;

use crate::util;
use crate::util::cosine;

#[test]
fn parity_with_sentence_transformers() {
    let path = util::shared().join("reference/embeddings/all-MiniLM-L6-v2.json");
    let text = std::fs::read_to_string(&path).expect("reference embeddings");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    let texts: Vec<&str> = rows
        .iter()
        .map(|r| r["text"].as_str().expect("text"))
        .collect();
    let want: Vec<Vec<f32>> = rows
        .iter()
        .map(|r| {
            r["embedding"]
                .as_array()
                .expect("embedding")
                .iter()
                .map(|x| x.as_f64().expect("number") as f32)
                .collect()
        })
        .collect();
    // Every path: f32 GEMMs, int8 on VNNI, and the machine's best (bf16 AMX tiles
    // where it has them); where the machine lacks one, that pass runs f32 again.
    for kernels in [Kernels::F32, Kernels::Int8, Kernels::best()] {
        let emb = BertEmbedder::open_with(util::default_embedder(), kernels).expect("embedder");
        assert_eq!(emb.dims(), 384);
        assert_eq!(emb.max_tokens(), 256);
        // All at once (one packed batch) and one by one must both match.
        let got = emb.embed(&texts).expect("embed");
        assert_eq!(got.len(), texts.len());
        let mut worst = 1f64;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "row {i} not normalized: {norm}");
            let c = cosine(g, w);
            assert!(
                c >= 0.999,
                "{kernels:?} row {i} ({:?}): cosine {c}",
                &texts[i]
            );
            let alone = emb.embed(&[texts[i]]).expect("embed one");
            let c1 = cosine(&alone[0], w);
            assert!(c1 >= 0.999, "{kernels:?} row {i} alone: cosine {c1}");
            worst = worst.min(c).min(c1);
        }
        eprintln!("{} ({kernels:?}): worst cosine {worst:.6}", emb.runtime());
    }
}

#[test]
fn token_counts_and_spans() {
    let emb = BertEmbedder::open(util::default_embedder()).expect("embedder");
    let text = "The cat sat on the mat. 响应合成器";
    let spans = emb.token_spans(text).expect("spans");
    assert_eq!(emb.count_tokens(text).expect("count"), spans.len() + 2);
    assert_eq!(&text[spans[0].clone()], "The");
    assert_eq!(&text[spans.last().expect("last").clone()], "器");
    // The packaged tokenizer truncates at 128: ours does not.
    let long = "word ".repeat(300);
    assert_eq!(emb.count_tokens(&long).expect("count"), 302);
}

/// A text the splitter counted is embedded from the ids kept then: the same bits as
/// a text never counted, a text longer than the window (truncated as
/// sentence-transformers does) included, and counting twice or embedding twice
/// changes nothing.
#[test]
fn counted_texts_embed_the_same_bits() {
    let fresh = BertEmbedder::open(util::default_embedder()).expect("embedder");
    let counted = BertEmbedder::open(util::default_embedder()).expect("embedder");
    let long = "The response synthesizer refines its answer with every chunk. ".repeat(40);
    let texts = [
        "The cat sat on the mat.",
        long.as_str(),
        "响应合成器 turns retrieved nodes into an answer.",
    ];
    let want = fresh.embed(&texts).expect("embed");
    for t in &texts {
        let n = counted.count_tokens(t).expect("count");
        assert_eq!(n, counted.count_tokens(t).expect("count again"), "{t:?}");
    }
    assert!(counted.count_tokens(&long).expect("count") > counted.max_tokens());
    for round in 0..2 {
        let got = counted.embed(&texts).expect("embed");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits()),
                "round {round}, text {i}: not the same bits"
            );
        }
    }
}

/// A question asked again (retrieval, the quotes and the optimizer each embed it) is
/// answered from the embedder's recent queries with the same bits, and a query pushed
/// out of them is embedded again, still the same.
#[test]
fn repeated_queries_embed_the_same_bits() {
    let fresh = BertEmbedder::open(util::default_embedder()).expect("embedder");
    let kept = BertEmbedder::open(util::default_embedder()).expect("embedder");
    let queries: Vec<String> = (0..12)
        .map(|i| format!("Which option sets the page margin, case {i}?"))
        .collect();
    let want: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| fresh.embed_query(q).expect("embed"))
        .collect();
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    // Each query twice in a row, then all again in order (the first ones were pushed
    // out by then), then the last few again (still kept).
    let order = (0..12)
        .flat_map(|i| [i, i])
        .chain(0..12)
        .chain(8..12)
        .collect::<Vec<_>>();
    for i in order {
        let got = kept.embed_query(&queries[i]).expect("embed");
        assert!(same(&got, &want[i]), "query {i}: not the same bits");
    }
    assert!(!same(&want[0], &want[1]), "different queries, same vector");
}
