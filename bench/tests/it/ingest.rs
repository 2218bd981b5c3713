//! `quire-bench ingest` on two corpus PDFs: the whole pipeline indexes both, and the
//! report's figures agree with each other (its peer, LlamaIndex, is not installed for
//! the tests: `--peer` is measured by hand, see the README's Speed paragraph).

use quire_bench::ingest::{bench, PeerChunks};

use crate::util;

#[test]
fn ingest_indexes_a_folder_and_counts_the_tokens_it_embedded() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["wasysym.pdf", "txfontsdoc.pdf"] {
        std::fs::copy(
            util::shared().join("corpus/pdfs").join(f),
            dir.path().join(f),
        )
        .unwrap();
    }
    // Beside one busy process (`--load 1`), as a laptop that is doing something else.
    let r = bench(dir.path(), None, PeerChunks::Default, 1).unwrap();
    assert_eq!(r.busy, 1, "{r:?}");
    assert_eq!((r.files, r.indexed, r.failed), (2, 2, 0), "{r:?}");
    assert!(r.pages >= 2 && r.chunks >= r.pages / 4, "{r:?}");
    // Every chunk is at most the model's 256 tokens and holds more than a few words.
    assert!(
        r.embedded_tokens > 20 * r.chunks && r.embedded_tokens <= 256 * r.chunks,
        "{r:?}"
    );
    assert!(r.secs > 0.0 && r.embed_write_secs <= r.secs, "{r:?}");
    // Extraction alone is timed where the pipeline extracts in child processes, and
    // the table says where it ran.
    assert_eq!(r.isolated, r.extract_secs.is_finite(), "{r:?}");
    let in_children = r.table().contains("in child processes");
    assert_eq!(in_children, r.isolated, "{}", r.table());
    assert!(r.peer.is_none());
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["embedded_tokens"], r.embedded_tokens);
    assert!(r.table().contains("tokens embedded"));
    assert!(r.table().contains("beside busy processes"));
}
