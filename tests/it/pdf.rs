//! PDF text extraction: PDFs generated here with known text, broken and hostile
//! inputs (each fails alone with its reason), the isolation limits, and real corpus
//! PDFs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lopdf::{dictionary, Document, Object, Stream, StringFormat};
use quire::ingest::pdf::{self, Error, Extractor, Limits};

use crate::util;

fn extractor() -> Extractor {
    Extractor::new(crate::util::quire_exe())
}

/// A one-page document: `content` drawn with `/F1` (Helvetica, WinAnsi, code 0xC0 is
/// the glyph `fi`) and `/F2` (a Type0 Identity-H font whose ToUnicode CMap maps
/// <0001> to 中 and <0002> to 文).
fn doc_with(content: &[u8]) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let f1 = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => dictionary! {
            "Type" => "Encoding",
            "BaseEncoding" => "WinAnsiEncoding",
            "Differences" => vec![Object::Integer(0xC0), Object::Name(b"fi".to_vec())],
        },
    });
    let cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
        1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
        1 beginbfchar <0001> <4E2D> endbfchar\n\
        1 beginbfrange <0002> <0002> <6587> endbfrange\n\
        endcmap CMapName currentdict /CMap defineresource pop end end";
    let to_unicode = doc.add_object(Stream::new(dictionary! {}, cmap.to_vec()));
    let cid_font = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "CIDFontType2",
        "BaseFont" => "SomeCJK",
        "CIDSystemInfo" => dictionary! {
            "Registry" => Object::string_literal("Adobe"),
            "Ordering" => Object::string_literal("Identity"),
            "Supplement" => 0,
        },
        "DW" => 1000,
    });
    let f2 = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type0",
        "BaseFont" => "SomeCJK",
        "Encoding" => "Identity-H",
        "DescendantFonts" => vec![Object::Reference(cid_font)],
        "ToUnicode" => Object::Reference(to_unicode),
    });
    let form = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "XObject",
            "Subtype" => "Form",
            "BBox" => vec![0.into(), 0.into(), 600.into(), 800.into()],
        },
        b"BT /F1 12 Tf 72 500 Td (Text in a form) Tj ET".to_vec(),
    ));
    let resources = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => f1, "F2" => f2 },
        "XObject" => dictionary! { "Fm1" => form },
    });
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.to_vec()));
    let page = doc.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => pages_id,
        "Contents" => content_id,
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => vec![page.into()],
            "Count" => 1,
            "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let info = doc.add_object(dictionary! {
        "Title" => Object::String(b"Known text".to_vec(), StringFormat::Literal),
    });
    doc.trailer.set("Info", info);
    doc
}

const KNOWN: &[u8] = b"BT /F1 12 Tf 72 700 Td (Quire ) Tj <C0> Tj (nds ) Tj \
    [(the)-250(words,)] TJ 0 -14 Td (next line) Tj \
    /F2 12 Tf 0 -14 Td <00010002> Tj ET q 1 0 0 1 0 0 cm /Fm1 Do Q";

fn save(doc: &mut Document, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    doc.save(&path).expect("save generated PDF");
    path
}

fn reason(r: pdf::Result<quire::ingest::ExtractedDoc>, file: &Path) -> String {
    match r {
        Err(Error::Pdf {
            file: f, reason, ..
        }) => {
            assert_eq!(f, file, "the error names the file");
            reason
        }
        other => panic!("{}: expected a PDF error, got {other:?}", file.display()),
    }
}

#[test]
fn generated_pdf_round_trips_known_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = save(&mut doc_with(KNOWN), dir.path(), "known.pdf");
    let doc = pdf::extract(&path).expect("extract");
    assert_eq!(doc.title.as_deref(), Some("Known text"));
    assert_eq!(doc.pages.len(), 1);
    assert_eq!(doc.pages[0].number, 1);
    // Differences (0xC0 = fi, expanded), TJ gap = space, Td down = new line,
    // Type0 + ToUnicode (bfchar and bfrange), and the Form XObject's text.
    assert_eq!(
        doc.pages[0].text,
        "Quire finds the words,\nnext line\n中文\nText in a form"
    );
    // The child process gives the same.
    assert_eq!(extractor().extract(&path).expect("isolated"), doc);
}

#[test]
fn page_without_text_is_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = save(
        &mut doc_with(b"q 100 0 0 100 0 0 cm 0 0 1 1 re f Q"),
        dir.path(),
        "scan.pdf",
    );
    let doc = pdf::extract(&path).expect("extract");
    assert_eq!(doc.pages.len(), 1);
    assert_eq!(doc.pages[0].text, "");
    assert_eq!(pdf::pages_without_text(&doc), [1]);
}

#[test]
fn encrypted_with_empty_user_password_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut doc = doc_with(KNOWN);
    encrypt(&mut doc, "");
    let path = save(&mut doc, dir.path(), "empty-password.pdf");
    let text = &pdf::extract(&path).expect("extract").pages[0].text;
    assert!(text.starts_with("Quire finds"), "{text}");
}

fn encrypt(doc: &mut Document, user_password: &str) {
    doc.trailer.set(
        "ID",
        vec![
            Object::String(b"0123456789abcdef".to_vec(), StringFormat::Hexadecimal),
            Object::String(b"0123456789abcdef".to_vec(), StringFormat::Hexadecimal),
        ],
    );
    let state = lopdf::EncryptionState::try_from(lopdf::EncryptionVersion::V2 {
        document: doc,
        owner_password: "owner",
        user_password,
        key_length: 128,
        permissions: lopdf::Permissions::all(),
    })
    .expect("encryption state");
    doc.encrypt(&state).expect("encrypt");
}

/// Broken and hostile files in one batch with good ones: each bad file fails with its
/// reason, the good ones are read.
#[test]
fn broken_files_fail_alone_with_their_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let good = save(&mut doc_with(KNOWN), d, "good.pdf");
    let mut bytes = Vec::new();
    let mut plain = doc_with(KNOWN);
    plain.reference_table.cross_reference_type = lopdf::xref::XrefType::CrossReferenceTable;
    plain.save_to(&mut bytes).expect("save");

    let truncated = d.join("truncated.pdf");
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).expect("write");

    let garbage = d.join("garbage.pdf");
    let noise: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&garbage, &noise).expect("write");

    let mut locked = doc_with(KNOWN);
    encrypt(&mut locked, "secret");
    let encrypted = save(&mut locked, d, "encrypted.pdf");

    // A page tree whose Kids point back at the root.
    let mut looped = doc_with(KNOWN);
    let root = looped
        .catalog()
        .and_then(|c| c.get(b"Pages"))
        .and_then(Object::as_reference)
        .expect("pages root");
    if let Ok(Object::Dictionary(pages)) = looped.get_object_mut(root) {
        pages.set("Kids", vec![Object::Reference(root)]);
    }
    let looping = save(&mut looped, d, "looping-tree.pdf");

    // Every xref offset points at nothing; the trailer is intact.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let start = text.find("\nxref").expect("xref table") + 1;
    let end = text.find("trailer").expect("trailer");
    let mut bad_xref = bytes[..start].to_vec();
    let entries = text[start..end].lines().skip(2).count();
    bad_xref.extend_from_slice(format!("xref\n0 {entries}\n").as_bytes());
    for _ in 0..entries {
        bad_xref.extend_from_slice(b"9999999999 00000 n\r\n");
    }
    bad_xref.extend_from_slice(&bytes[end..]);
    let bad_xref_path = d.join("bad-xref.pdf");
    std::fs::write(&bad_xref_path, &bad_xref).expect("write");

    let ex = extractor();
    let good_text = |p: &Path| ex.extract(p).map(|doc| doc.pages[0].text.clone());
    assert!(good_text(&good)
        .expect("good file")
        .starts_with("Quire finds"));

    let r = reason(ex.extract(&garbage), &garbage);
    assert!(r.contains("not a PDF"), "{r}");
    let r = reason(ex.extract(&encrypted), &encrypted);
    assert!(r.contains("password-protected"), "{r}");
    let r = reason(ex.extract(&looping), &looping);
    assert!(r.contains("page tree"), "{r}");
    let r = reason(ex.extract(&truncated), &truncated);
    assert!(r.contains("cannot parse"), "{r}");
    // lopdf rebuilds a broken xref table by scanning the objects: the text is read.
    let recovered = ex.extract(&bad_xref_path).expect("bad xref is recovered");
    assert!(recovered.pages[0].text.contains("Quire finds"));
    // The good file still reads after all that.
    assert!(good_text(&good)
        .expect("good file")
        .starts_with("Quire finds"));
}

/// A page whose content stream is a few KB compressed and 48 MB of operators once
/// inflated, used by 400 pages: a genuinely slow and large input.
fn slow_pdf(dir: &Path) -> PathBuf {
    let mut ops = Vec::with_capacity(48 << 20);
    while ops.len() < 48 << 20 {
        ops.extend_from_slice(b"1 0 0 1 0 0 cm\n");
    }
    let mut doc = doc_with(b"");
    let mut stream = Stream::new(dictionary! {}, ops);
    stream.compress().expect("compress");
    let content = doc.add_object(stream);
    let pages_root = doc
        .catalog()
        .and_then(|c| c.get(b"Pages"))
        .and_then(Object::as_reference)
        .expect("pages root");
    let kids: Vec<Object> = (0..400)
        .map(|_| {
            doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_root,
                "Contents" => content,
            })
            .into()
        })
        .collect();
    if let Ok(Object::Dictionary(pages)) = doc.get_object_mut(pages_root) {
        pages.set("Kids", kids);
        pages.set("Count", 400);
    }
    save(&mut doc, dir, "slow.pdf")
}

#[test]
fn isolation_stops_a_child_over_its_time_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let slow = slow_pdf(dir.path());
    let ex = extractor().with_limits(Limits {
        time: Duration::from_secs(1),
        ..Limits::default()
    });
    let r = reason(ex.extract(&slow), &slow);
    assert!(r.contains("time limit"), "{r}");
}

#[test]
fn isolation_stops_a_child_over_its_memory_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let slow = slow_pdf(dir.path());
    let small = save(&mut doc_with(KNOWN), dir.path(), "small.pdf");
    let ex = extractor().with_limits(Limits {
        time: Duration::from_secs(60),
        memory: 96 << 20,
    });
    // A small file is read within the limit; inflating 48 MB (twice, while the
    // buffer grows) is not.
    assert!(ex.extract(&small).is_ok());
    let r = reason(ex.extract(&slow), &slow);
    assert!(r.contains("memory"), "{r}");
}

/// The debug-build fault hook makes the child overflow its stack or hang: each is
/// reported as such, and the next file is read as usual.
#[cfg(debug_assertions)]
#[test]
fn isolation_reports_a_crash_and_a_hang() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = save(&mut doc_with(KNOWN), dir.path(), "good.pdf");
    let crash = extractor().with_env(pdf::FAULT_ENV, "stack");
    let r = reason(crash.extract(&good), &good);
    assert!(r.contains("stack overflow"), "{r}");
    let hang = extractor()
        .with_env(pdf::FAULT_ENV, "loop")
        .with_limits(Limits {
            time: Duration::from_millis(500),
            ..Limits::default()
        });
    let r = reason(hang.extract(&good), &good);
    assert!(r.contains("time limit"), "{r}");
    assert!(extractor().extract(&good).is_ok());
}

#[test]
fn missing_file_is_an_error_not_a_crash() {
    let p = Path::new("/nonexistent/quire-test.pdf");
    assert!(pdf::extract(p).is_err());
    assert!(extractor().extract(p).is_err());
}

/// Each question of the corpus names a page and strings that must be on it.
#[test]
fn corpus_pages_contain_what_the_questions_need() {
    let shared = util::shared();
    let mut docs = std::collections::HashMap::new();
    let mut checked = 0;
    for q in util::jsonl(&shared.join("corpus/questions.jsonl")) {
        let (Some(file), Some(pages), Some(must)) = (
            q["file"].as_str(),
            q["pages"].as_array(),
            q["must_contain"].as_array(),
        ) else {
            continue;
        };
        let doc = docs.entry(file.to_string()).or_insert_with(|| {
            pdf::extract(&shared.join("corpus/pdfs").join(file)).expect("corpus PDF")
        });
        let text: String = pages
            .iter()
            .filter_map(|p| p.as_u64())
            .filter_map(|p| doc.pages.get(p as usize - 1))
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let squash = |s: &str| s.split_whitespace().collect::<String>();
        for m in must.iter().filter_map(|m| m.as_str()) {
            assert!(
                squash(&text).contains(&squash(m)),
                "{}: {file} pages {pages:?} lack {m:?}",
                q["id"]
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no must_contain strings checked");
}

/// Questions first: while `hold` says so, the extraction child is stopped (the test
/// sees it in state `T`, then lets it go), and the text comes out the same. The child
/// (debug build's fault hook `continued`) extracts only after it was stopped and
/// continued: a fast extraction would otherwise end before the first look at `hold`,
/// or between that look and the stop, and a child that exited is never seen stopped.
#[test]
fn a_held_extraction_stops_its_child_then_finishes_the_same() {
    let path = util::shared().join("corpus/pdfs/maximabook-19-Sept-2004.pdf");
    let plain = extractor().extract(&path).expect("extract");
    let me = std::process::id();
    // Our stopped child, if any.
    let stopped_child = || {
        std::fs::read_dir("/proc")
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                // pid (comm) state ppid ...
                let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
                let mut f = after.split_whitespace();
                f.next() == Some("T") && f.next() == Some(me.to_string().as_str())
            })
    };
    let calls = std::cell::Cell::new(0);
    let seen = std::cell::Cell::new(false);
    let hold = || {
        calls.set(calls.get() + 1);
        // Hold until the child is seen stopped, then let it go.
        if !seen.get() && stopped_child() {
            seen.set(true);
        }
        !seen.get()
    };
    let held = extractor()
        .with_env(pdf::FAULT_ENV, "continued")
        .extract_until(&path, &|| false, &hold)
        .expect("held extract");
    assert!(
        calls.get() > 0,
        "the extraction ended before the first look at `hold`"
    );
    assert!(seen.get(), "the child was never seen stopped");
    assert!(!stopped_child(), "a child is left stopped");
    assert_eq!(held, plain);
}

/// A real table: the Maxima book's trigonometric functions (p. 43), four columns, no
/// header rule, found with its rows whole and kept across the isolated child.
#[test]
fn a_corpus_table_is_found_with_its_rows() {
    let file = util::shared().join("corpus/pdfs/maximabook-19-Sept-2004.pdf");
    let doc = quire::ingest::pdf::extract(&file).unwrap();
    let page = doc.pages.iter().find(|p| p.number == 43).unwrap();
    let t = page
        .tables
        .iter()
        .find(|t| t.header.first().map(String::as_str) == Some("sin"))
        .unwrap_or_else(|| panic!("no trig table: {:#?}", page.tables));
    assert_eq!(t.header, ["sin", "Sine", "asin", "Arc Sine"]);
    assert_eq!(t.rows.len(), 11, "{t:#?}");
    assert_eq!(
        t.rows[10],
        [
            "coth",
            "Hyperbolic Cotangent",
            "acoth",
            "Hyperbolic Arc Cotangent"
        ]
    );
    // Each row's span is that row's text on the page.
    let (a, b) = t.spans[11];
    assert!(page.text[a..b].starts_with("coth"), "{}", &page.text[a..b]);
    // The isolated child hands the same tables back.
    let isolated = extractor().extract(&file).unwrap();
    assert_eq!(isolated.pages[42].tables, page.tables);
}
