//! The default model files load: GGUF header and metadata with candle, the embedding
//! model's config and tokenizer; bad files are clear errors.

use quire::embed::bert::BertFiles;
use quire::llm::gguf::GgufFile;
use quire::Error;

use crate::util;

#[test]
fn default_gguf_header_and_metadata_load() {
    let g = GgufFile::open(util::smollm2()).expect("open gguf");
    assert_eq!(g.architecture().unwrap(), "llama");
    assert_eq!(g.context_length().unwrap(), 8192);
    assert_eq!(g.get_u64("llama.block_count").unwrap(), 30);
    assert_eq!(g.get_u64("tokenizer.ggml.bos_token_id").unwrap(), 1);
    assert_eq!(g.get_u64("tokenizer.ggml.eos_token_id").unwrap(), 2);
    assert!(g
        .get_str("tokenizer.chat_template")
        .unwrap()
        .contains("im_start"));
    // 30 blocks × 9 tensors + embeddings + output norm
    assert_eq!(g.content.tensor_infos.len(), 272);
}

#[test]
fn embedding_model_config_and_tokenizer_load() {
    let b = BertFiles::open(util::default_embedder()).expect("open bert");
    assert_eq!(b.config.hidden_size, 384);
    assert_eq!(b.config.num_hidden_layers, 6);
    assert_eq!(b.tokenizer.get_vocab_size(true), 30522);
    let enc = b.tokenizer.encode("Hello world", true).unwrap();
    // [CLS] hello world [SEP]
    assert_eq!(&enc.get_ids()[..4], &[101, 7592, 2088, 102]);
}

#[test]
fn non_gguf_file_is_a_clear_error() {
    let dir = tempdir();
    let p = dir.join("not-a-model.gguf");
    std::fs::write(&p, b"PK\x03\x04 this is a zip, not a gguf").unwrap();
    let e = GgufFile::open(&p).unwrap_err();
    assert!(matches!(e, Error::ModelFormat { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("not-a-model.gguf") && msg.contains("not a GGUF"),
        "{msg}"
    );
}

#[test]
fn truncated_gguf_is_a_clear_error() {
    let dir = tempdir();
    let p = dir.join("truncated.gguf");
    let bytes = std::fs::read(util::smollm2()).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let msg = GgufFile::open(&p).unwrap_err().to_string();
    assert!(
        msg.contains("truncated.gguf") && msg.contains("truncated"),
        "{msg}"
    );
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "quire-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}
