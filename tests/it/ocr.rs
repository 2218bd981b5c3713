//! Text recognition for scanned pages: a corpus page rendered to an image and wrapped
//! in a PDF beside a page with a text layer; `quire index` reads the scan with
//! Tesseract (that page only, marked as OCR) and `quire search` finds its words. With
//! OCR turned off, or without Tesseract, the scan fails with a reason that says so.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::util;
use crate::util::{raw_pdf, stream};

/// Render page `page` of `pdf` to 8-bit gray pixels at `dpi` with poppler's pdftoppm:
/// (width, height, pixels).
fn render(pdf: &Path, page: u32, dpi: u32, dir: &Path) -> (usize, usize, Vec<u8>) {
    let prefix = dir.join("render");
    let n = page.to_string();
    let st = Command::new("pdftoppm")
        .args([
            "-gray",
            "-singlefile",
            "-r",
            &dpi.to_string(),
            "-f",
            &n,
            "-l",
            &n,
        ])
        .arg(pdf)
        .arg(&prefix)
        .status()
        .expect("pdftoppm (poppler-utils) is needed");
    assert!(st.success());
    let pgm = std::fs::read(prefix.with_extension("pgm")).expect("pgm");
    // P5\n<w> <h>\n255\n<pixels>
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while pgm[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while !pgm[i].is_ascii_whitespace() {
            i += 1;
        }
        fields.push(String::from_utf8_lossy(&pgm[start..i]).into_owned());
    }
    assert_eq!(fields[0], "P5");
    let (w, h): (usize, usize) = (fields[1].parse().expect("w"), fields[2].parse().expect("h"));
    let pixels = pgm[i + 1..].to_vec();
    assert_eq!(pixels.len(), w * h);
    (w, h, pixels)
}

/// A two-page PDF: page 1 has a text layer, page 2 is only the image (a scan).
fn scanned_pdf(w: usize, h: usize, pixels: &[u8], dpi: usize) -> Vec<u8> {
    use flate2::write::ZlibEncoder;
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(pixels).expect("deflate");
    let image = z.finish().expect("deflate");
    let (pw, ph) = (w * 72 / dpi, h * 72 / dpi);
    let text = b"BT /F1 12 Tf 72 720 Td (A cover page with its own text layer) Tj ET".to_vec();
    let draw = format!("q {pw} 0 0 {ph} 0 0 cm /Im1 Do Q").into_bytes();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R \
           /Resources << /Font << /F1 6 0 R >> >> >>"
            .to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {pw} {ph}] /Contents 7 0 R \
             /Resources << /XObject << /Im1 8 0 R >> >> >>"
        )
        .into_bytes(),
    ];
    objects.push(stream("", &text));
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    objects.push(stream("", &draw));
    objects.push(stream(
        &format!(
            "/Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceGray \
             /BitsPerComponent 8 /Filter /FlateDecode"
        ),
        &image,
    ));
    raw_pdf(&objects, "")
}

fn quire(data: &Path) -> Command {
    let mut c = Command::new(crate::util::quire_exe());
    c.env("QUIRE_DATA_DIR", data);
    c
}

fn have_tesseract() -> bool {
    Command::new("tesseract")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_scanned_page_is_read_by_ocr_and_found_by_search() {
    assert!(
        have_tesseract(),
        "this test needs Tesseract: run scripts/setup.sh (apt-get install tesseract-ocr)"
    );
    let tmp = tempfile::tempdir().expect("tmp");
    // Page 9 of the Debian FAQ: the start of its first chapter.
    let corpus = util::shared().join("corpus/pdfs/debian-faq.en.pdf");
    let (w, h, pixels) = render(&corpus, 9, 200, tmp.path());
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    let scan = docs.join("scanned-faq.pdf");
    std::fs::write(&scan, scanned_pdf(w, h, &pixels, 200)).expect("write");
    // What the page says, by its own text layer, to search for.
    let words = quire::ingest::pdf::extract(&corpus)
        .expect("corpus")
        .pages
        .into_iter()
        .find(|p| p.number == 9)
        .map(|p| p.text)
        .unwrap_or_default();
    assert!(!words.trim().is_empty());
    // The scan alone has no text to extract.
    let plain = quire::ingest::pdf::extract(&scan).expect("scan");
    assert!(
        plain.pages[1].text.trim().is_empty(),
        "{:?}",
        plain.pages[1]
    );

    let data = tmp.path().join("data");
    let (out, _) = util::run_index(util::quire_index(&data).arg(&scan));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Page 2 came from OCR, page 1 kept its text layer.
    let conn = rusqlite::Connection::open(data.join("index.sqlite")).expect("db");
    let pages: Vec<(u32, bool, String)> = conn
        .prepare("SELECT number, ocr, text FROM pages ORDER BY number")
        .expect("sql")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("pages")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(pages.len(), 2);
    assert!(
        !pages[0].1 && pages[0].2.contains("cover page"),
        "{pages:?}"
    );
    assert!(pages[1].1, "page 2 is not marked as OCR: {pages:?}");
    // Most of the page's words were recognized.
    let want: Vec<String> = words
        .split_whitespace()
        .filter(|w| w.len() >= 5 && w.chars().all(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect();
    let got = pages[1].2.to_lowercase();
    let found = want.iter().filter(|w| got.contains(w.as_str())).count();
    assert!(
        found * 10 >= want.len() * 8,
        "OCR found {found} of {} words:\n{got}",
        want.len()
    );

    // `quire search` finds the scanned page by its words, marked as OCR.
    let query = want.iter().take(6).cloned().collect::<Vec<_>>().join(" ");
    let out = quire(&data)
        .args(["search", "--json", "--retrievers", "bm25"])
        .arg(&query)
        .output()
        .expect("quire search");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.contains("scanned-faq.pdf"), "{found}");
    assert!(found.contains("\"page_end\":2"), "{found}");
}

#[test]
fn without_ocr_a_scan_fails_with_a_reason_that_says_why() {
    let tmp = tempfile::tempdir().expect("tmp");
    let corpus = util::shared().join("corpus/pdfs/wasysym.pdf");
    let (w, h, pixels) = render(&corpus, 1, 72, tmp.path());
    let mut pdf = scanned_pdf(w, h, &pixels, 72);
    // Only the scanned page: drop page 1 from the page tree.
    let at = pdf
        .windows(12)
        .position(|x| x == b"[3 0 R 4 0 R")
        .expect("kids");
    pdf.splice(at..at + 12, b"[4 0 R      ".iter().copied());
    let at = pdf
        .windows(8)
        .position(|x| x == b"/Count 2")
        .expect("count");
    pdf[at + 7] = b'1';
    let scan = tmp.path().join("scan-only.pdf");
    std::fs::write(&scan, pdf).expect("write");

    // Tesseract not installed: the reason says how to install it.
    let (out, _) = util::run_index(
        util::quire_index(&tmp.path().join("a"))
            .arg(&scan)
            .env("PATH", tmp.path().join("nothing-here")),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(text.contains("apt-get install tesseract-ocr"), "{text}");

    // Turned off in the settings: the reason says so.
    let data = tmp.path().join("b");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("settings.json"), r#"{"ocr": false}"#).expect("settings");
    let (out, _) = util::run_index(util::quire_index(&data).arg(&scan));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(text.contains("turned off in the settings"), "{text}");
}
