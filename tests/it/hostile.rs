//! Hostile PDFs, made here byte by byte: a page tree nested 100,000 deep, a content
//! stream that draws itself forever, a decompression bomb, an object-stream cycle, a
//! truncated file, a file that is not a PDF, an encrypted one, and one with JavaScript
//! and launch actions. Dropped in one batch with good files, through the command line
//! and over HTTP (both extracting in child processes), each fails alone with its
//! reason or is indexed as text; the good ones are indexed and the server keeps
//! answering.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use quire::engine::{Engine, EngineConfig, IndexEvent};

use crate::util;
use crate::util::{raw_pdf, stream};

/// A page's content stream showing `text` (ASCII, no parentheses).
fn text_content(text: &str) -> Vec<u8> {
    format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").into_bytes()
}

const FONT: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";

/// One page showing `text`: catalog 1, pages 2, page 3, content 4, font 5.
fn one_page(text: &str) -> Vec<u8> {
    raw_pdf(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
               /Resources << /Font << /F1 5 0 R >> >> >>"
                .to_vec(),
            stream("", &text_content(text)),
            FONT.as_bytes().to_vec(),
        ],
        "",
    )
}

/// A page tree nested `depth` levels deep above its one page.
fn deep_tree(depth: u32) -> Vec<u8> {
    let mut objects = vec![b"<< /Type /Catalog /Pages 2 0 R >>".to_vec()];
    // Objects 2 ..= depth + 1 are Pages nodes, each the only kid of the one before.
    for k in 2..=depth + 1 {
        let parent = if k == 2 {
            String::new()
        } else {
            format!("/Parent {} 0 R", k - 1)
        };
        objects.push(
            format!("<< /Type /Pages /Kids [{} 0 R] /Count 1 {parent} >>", k + 1).into_bytes(),
        );
    }
    let page = depth + 2;
    objects.push(
        format!(
            "<< /Type /Page /Parent {} 0 R /MediaBox [0 0 612 792] /Contents {} 0 R \
             /Resources << /Font << /F1 {} 0 R >> >> >>",
            page - 1,
            page + 1,
            page + 2
        )
        .into_bytes(),
    );
    objects.push(stream("", &text_content("At the bottom of a deep tree")));
    objects.push(FONT.as_bytes().to_vec());
    raw_pdf(&objects, "")
}

/// A page whose content draws a form that draws itself.
fn looping_content() -> Vec<u8> {
    raw_pdf(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
               /Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R >> >> >>"
                .to_vec(),
            stream(
                "",
                b"/X1 Do BT /F1 12 Tf 72 720 Td (Drawn after the loop) Tj ET",
            ),
            FONT.as_bytes().to_vec(),
            stream(
                "/Type /XObject /Subtype /Form /BBox [0 0 612 792] \
                 /Resources << /XObject << /X1 6 0 R >> >>",
                b"/X1 Do",
            ),
        ],
        "",
    )
}

/// A page whose content stream is 2 GiB of zero bytes (whitespace), deflated twice:
/// a file of a few kilobytes.
fn decompression_bomb() -> Vec<u8> {
    use flate2::write::ZlibEncoder;
    use flate2::Compression;
    let mut inner = ZlibEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..2048 {
        inner.write_all(&zeros).expect("deflate");
    }
    let inner = inner.finish().expect("deflate");
    let mut outer = ZlibEncoder::new(Vec::new(), Compression::best());
    outer.write_all(&inner).expect("deflate");
    let data = outer.finish().expect("deflate");
    raw_pdf(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
            stream("/Filter [/FlateDecode /FlateDecode]", &data),
        ],
        "",
    )
}

/// An object stream that holds itself and whose `/Length` and `/Extends` lead back
/// to it, found through a cross-reference stream.
fn object_stream_cycle() -> Vec<u8> {
    let mut out = b"%PDF-1.5\n".to_vec();
    let mut offsets = vec![0usize; 8];
    let obj = |out: &mut Vec<u8>, offsets: &mut Vec<usize>, n: usize, body: &[u8]| {
        offsets[n] = out.len();
        out.extend_from_slice(format!("{n} 0 obj\n").as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    };
    obj(
        &mut out,
        &mut offsets,
        1,
        b"<< /Type /Catalog /Pages 2 0 R >>",
    );
    obj(
        &mut out,
        &mut offsets,
        2,
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    );
    // Object 3 (the page) and object 5 (the length) live in object stream 4, which
    // the cross-reference stream also places inside itself.
    let inside = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> 40";
    let header = format!("3 0 5 {} ", inside.len() - 2);
    let first = header.len();
    let mut data = header.into_bytes();
    data.extend_from_slice(inside);
    offsets[4] = out.len();
    out.extend_from_slice(
        format!(
            "4 0 obj\n<< /Type /ObjStm /N 2 /First {first} /Length 5 0 R /Extends 4 0 R >>\nstream\n"
        )
        .as_bytes(),
    );
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\nendstream\nendobj\n");
    // The cross-reference stream (object 6): W [1 4 2], entries 0..=6.
    let xref_at = out.len();
    let mut entries = Vec::new();
    let mut entry = |t: u8, a: u32, b: u16| {
        entries.push(t);
        entries.extend_from_slice(&a.to_be_bytes());
        entries.extend_from_slice(&b.to_be_bytes());
    };
    entry(0, 0, 65535);
    entry(1, offsets[1] as u32, 0);
    entry(1, offsets[2] as u32, 0);
    entry(2, 4, 0); // 3: in stream 4
    entry(2, 4, 2); // 4: in stream 4 too: the cycle
    entry(2, 4, 1); // 5: in stream 4
    entry(1, xref_at as u32, 0);
    out.extend_from_slice(
        format!(
            "6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 2] /Root 1 0 R /Length {} >>\nstream\n",
            entries.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&entries);
    out.extend_from_slice(format!("\nendstream\nendobj\nstartxref\n{xref_at}\n%%EOF\n").as_bytes());
    out
}

/// A PDF encrypted with a user password (the empty one does not open it).
fn encrypted() -> Vec<u8> {
    util::encrypted(
        lopdf::Document::load_mem(&one_page("Secret text behind a password")).expect("own PDF"),
    )
}

/// A PDF with JavaScript run at open, a launch action on the page and a link that
/// launches a program: its text is what gets indexed.
fn scripted() -> Vec<u8> {
    raw_pdf(
        &[
            b"<< /Type /Catalog /Pages 2 0 R /OpenAction 6 0 R \
               /Names << /JavaScript << /Names [(x) 6 0 R] >> >> >>"
                .to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
               /Resources << /Font << /F1 5 0 R >> >> /AA << /O 7 0 R >> /Annots [8 0 R] >>"
                .to_vec(),
            stream(
                "",
                &text_content("Blueberry harvest figures for the northern orchards"),
            ),
            FONT.as_bytes().to_vec(),
            b"<< /S /JavaScript /JS (app.alert\\('hello'\\); this.exportDataObject\\({}\\);) >>"
                .to_vec(),
            b"<< /S /Launch /F (/bin/sh) /Win << /F (calc.exe) >> >>".to_vec(),
            b"<< /Type /Annot /Subtype /Link /Rect [0 0 612 792] /A 7 0 R >>".to_vec(),
        ],
        "",
    )
}

/// The batch: (file name, bytes, whether it must be indexed, what a failure's reason
/// must say).
fn batch() -> Vec<(&'static str, Vec<u8>, Option<&'static str>)> {
    let good = one_page("Glaciers carve valleys in the mountains over thousands of years");
    let truncated = good[..good.len() / 2].to_vec();
    vec![
        ("good-glaciers.pdf", good, None),
        (
            "good-tides.pdf",
            one_page("Tides rise and fall twice a day because of the moon"),
            None,
        ),
        ("scripted.pdf", scripted(), None),
        ("deep-tree.pdf", deep_tree(100_000), Some("")),
        ("looping-content.pdf", looping_content(), Some("")),
        ("bomb.pdf", decompression_bomb(), Some("")),
        ("objstm-cycle.pdf", object_stream_cycle(), Some("")),
        ("truncated.pdf", truncated, Some("")),
        (
            "not-a-pdf.pdf",
            b"PK\x03\x04 a zip file, named as if it were a PDF".repeat(20),
            Some("not a PDF"),
        ),
        ("encrypted.pdf", encrypted(), Some("encrypted")),
    ]
}

/// Which of the batch must be indexed (the tree 100,000 deep too: its page's fonts are
/// found by walking up the tree without recursion); the others may be indexed (when the
/// extractor makes sense of them: a form that draws itself) or fail, with the reason
/// given, but never take the batch down.
fn must_index(name: &str) -> bool {
    name.starts_with("good-") || name == "scripted.pdf" || name == "deep-tree.pdf"
}

fn file_name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Check what happened to each file of the batch, from the final events.
fn check_outcomes(events: &[IndexEvent], names: &[(&str, Option<&str>)]) {
    for (name, reason) in names {
        let done = events.iter().any(|e| {
            matches!(e, IndexEvent::FileDone { path, skipped: false, .. } if file_name(path) == *name)
        });
        let failed: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                IndexEvent::FileFailed { path, reason } if file_name(path) == *name => {
                    Some(reason.as_str())
                }
                _ => None,
            })
            .collect();
        eprintln!("{name}: {}", failed.first().copied().unwrap_or("indexed"));
        assert!(
            done ^ !failed.is_empty(),
            "{name}: done {done}, failed {failed:?}\n{events:?}"
        );
        if must_index(name) {
            assert!(done, "{name} was not indexed: {failed:?}");
        }
        if let (Some(want), Some(got)) = (reason, failed.first()) {
            assert!(got.contains(want), "{name}: reason {got:?} lacks {want:?}");
        }
        if let Some(want) = reason.filter(|r| !r.is_empty()) {
            assert!(!done, "{name} should fail with {want:?}");
        }
    }
}

fn write_batch(dir: &Path) -> Vec<(&'static str, Option<&'static str>)> {
    std::fs::create_dir_all(dir).expect("mkdir");
    batch()
        .into_iter()
        .map(|(name, bytes, reason)| {
            std::fs::write(dir.join(name), bytes).expect("write");
            (name, reason)
        })
        .collect()
}

#[test]
fn hostile_pdfs_fail_alone_in_the_cli() {
    let tmp = tempfile::tempdir().expect("tmp");
    let docs = tmp.path().join("docs");
    let names = write_batch(&docs);
    let data = tmp.path().join("data");
    let (out, events) = util::run_index(util::quire_index(&data).arg(&docs));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "quire index failed: {stderr}");
    check_outcomes(&events, &names);

    // The scripted PDF is indexed as text: its words are found.
    let out = Command::new(crate::util::quire_exe())
        .args(["search", "--json", "--retrievers", "bm25", "--data-dir"])
        .arg(&data)
        .arg("blueberry harvest orchards")
        .output()
        .expect("run quire search");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.contains("scripted.pdf"), "{found}");

    // The page at the bottom of the tree 100,000 deep is read, as pdftotext reads it.
    let out = Command::new(crate::util::quire_exe())
        .args(["search", "--json", "--retrievers", "bm25", "--data-dir"])
        .arg(&data)
        .arg("bottom of a deep tree")
        .output()
        .expect("run quire search");
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.contains("deep-tree.pdf"), "{found}");
}

/// A page tree nested 100,000 deep, extracted in the child process as indexing does:
/// the page's text, with its font, is there.
#[test]
fn a_page_tree_100000_deep_keeps_its_text() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("deep.pdf");
    std::fs::write(&path, deep_tree(100_000)).expect("write");
    let doc = quire::ingest::pdf::Extractor::new(crate::util::quire_exe())
        .extract(&path)
        .expect("extract");
    assert_eq!(doc.pages.len(), 1);
    assert_eq!(doc.pages[0].text.trim(), "At the bottom of a deep tree");
}

/// One multipart body with every file of `files`.
fn multipart(files: &[(&str, Vec<u8>)]) -> (String, Vec<u8>) {
    let boundary = "quire-hostile-boundary";
    let mut body = Vec::new();
    for (name, content) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"{name}\"\r\nContent-Type: application/pdf\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Send one HTTP/1.1 request; the response's status line, headers and body.
fn request(addr: SocketAddr, method: &str, path: &str, ctype: &str, body: &[u8]) -> (u16, String) {
    let mut t = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {ctype}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    t.write_all(head.as_bytes()).expect("send");
    t.write_all(body).expect("send");
    let mut r = BufReader::new(t);
    let mut status = String::new();
    r.read_line(&mut status).expect("status");
    let code = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).expect("body");
    (code, String::from_utf8_lossy(&rest).into_owned())
}

#[test]
fn hostile_uploads_fail_alone_and_the_server_keeps_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Arc::new(
        Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).expect("config"))
            .expect("engine"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let opts = quire_cli::server::ServeOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        token: None,
        max_upload: quire_cli::server::DEFAULT_MAX_UPLOAD,
        ui_dir: Some(util::repo().join("ui")),
        allowed_hosts: Vec::new(),
    };
    let app = quire_cli::server::router(engine.clone(), &opts);
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move { axum::serve(listener, app).await });

    // The upload refuses what is not a PDF at the door; the rest go in one batch.
    let all = batch();
    let (ctype, body) = multipart(&[("not-a-pdf.pdf", all[8].1.clone())]);
    let (status, text) = request(addr, "POST", "/api/upload", &ctype, &body);
    assert_eq!(status, 415, "{text}");
    let files: Vec<(&str, Vec<u8>)> = all
        .iter()
        .filter(|(n, _, _)| *n != "not-a-pdf.pdf")
        .map(|(n, b, _)| (*n, b.clone()))
        .collect();
    let (ctype, body) = multipart(&files);
    let (status, sse) = request(addr, "POST", "/api/upload", &ctype, &body);
    assert_eq!(status, 200, "{sse}");
    let events: Vec<IndexEvent> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, IndexEvent::Finished { .. })),
        "{sse}"
    );
    let names: Vec<(&str, Option<&str>)> = all
        .iter()
        .filter(|(n, _, _)| *n != "not-a-pdf.pdf")
        .map(|(n, _, r)| (*n, *r))
        .collect();
    check_outcomes(&events, &names);

    // The server still answers, and lists what it indexed.
    let (status, docs) = request(addr, "GET", "/api/documents", "text/plain", b"");
    assert_eq!(status, 200, "{docs}");
    let listed = docs;
    for good in ["good-glaciers.pdf", "good-tides.pdf", "scripted.pdf"] {
        assert!(listed.contains(good), "{good} not listed: {listed}");
    }
    // The queue shows the batch finished, and cancelling an empty queue is a no-op.
    let (status, q) = request(addr, "GET", "/api/queue", "text/plain", b"");
    assert_eq!(status, 200, "{q}");
    assert!(q.contains("\"pending\":0"), "{q}");
    assert!(q.contains("good-tides.pdf"), "{q}");
    let (status, c) = request(addr, "POST", "/api/queue/cancel", "application/json", b"{}");
    assert_eq!(status, 200, "{c}");
    assert!(c.contains("\"cancelled\":0"), "{c}");
}
