//! How long a watched folder's rescan takes: a folder of N files already in the index,
//! scanned unchanged (a `stat` a file, nothing read), then with 1% of the files
//! changed (those read and hashed, and queued) and 1% renamed (moved in place). The
//! scan alone (`Engine::scan_folders`), not the indexing the changes then queue; the
//! files are stand-ins with PDF names (a scan never parses them), registered in the
//! index as they would be once indexed.
//!
//! `cargo run --example folder_rescan -- [N] [KIB]` (default 10000 files of 64 KiB).

use std::time::Instant;

use quire::engine::{Cancel, Engine, EngineConfig, SyncReport};
use quire::ingest::pipeline::content_hash;
use quire::store::folders::mtime_ns;

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    // xorshift: distinct contents without a dependency.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn scan(e: &Engine) -> quire::Result<(f64, SyncReport)> {
    let t = Instant::now();
    let r = e.scan_folders(&Cancel::new())?;
    Ok((t.elapsed().as_secs_f64(), r))
}

fn main() -> quire::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let kib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let tmp = std::env::temp_dir().join(format!("quire-folder-rescan-{}", std::process::id()));
    let root = tmp.join("library");
    for i in 0..n {
        let dir = root.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&dir).map_err(|e| quire::Error::io(&dir, e))?;
        let p = dir.join(format!("f{i:05}.pdf"));
        std::fs::write(&p, bytes(i as u64, kib * 1024)).map_err(|e| quire::Error::io(&p, e))?;
    }
    let e = Engine::open(EngineConfig::new(Some(tmp.join("data")))?)?;
    let f = e.add_folder(&root, &Default::default())?;
    // The files as indexing leaves them: a document each, with hash, size and time.
    {
        let mut store = e.store();
        for i in 0..n {
            let p = std::path::Path::new(&f.path)
                .join(format!("d{:03}", i / 100))
                .join(format!("f{i:05}.pdf"));
            let b = std::fs::read(&p).map_err(|e| quire::Error::io(&p, e))?;
            let m = std::fs::metadata(&p).map_err(|e| quire::Error::io(&p, e))?;
            let path = p.display().to_string();
            let id = store.insert_failed(&path, &content_hash(&b), b.len() as u64, "stand-in")?;
            store.stamp_document(id, m.len(), mtime_ns(&m).unwrap_or(0))?;
        }
    }
    let mut unchanged = Vec::new();
    for _ in 0..3 {
        let (s, r) = scan(&e)?;
        assert_eq!(r.unchanged, n);
        unchanged.push(s);
    }
    unchanged.sort_by(f64::total_cmp);
    // 1% changed (new bytes, same size: only the time tells), 1% renamed.
    let step = 100;
    for i in (0..n).step_by(step) {
        let p = root
            .join(format!("d{:03}", i / 100))
            .join(format!("f{i:05}.pdf"));
        std::fs::write(&p, bytes(i as u64 + 1_000_000, kib * 1024))
            .map_err(|e| quire::Error::io(&p, e))?;
        let j = i + 1;
        if j < n {
            let from = root
                .join(format!("d{:03}", j / 100))
                .join(format!("f{j:05}.pdf"));
            let to = from.with_file_name(format!("renamed{j:05}.pdf"));
            std::fs::rename(&from, &to).map_err(|e| quire::Error::io(&from, e))?;
        }
    }
    let (changed_secs, r) = scan(&e)?;
    println!(
        "{{\"files\":{n},\"kib\":{kib},\"unchanged_secs\":{:.4},\"one_percent_secs\":{changed_secs:.4},\
         \"changed\":{},\"renamed\":{},\"hashed\":{}}}",
        unchanged[1], r.changed, r.renamed, r.hashed
    );
    drop(e);
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
