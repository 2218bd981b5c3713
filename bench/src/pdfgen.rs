//! A synthetic library of text PDFs for `quire bench library`: how many pages each
//! document has (log-normal, median about 12, capped to 1..=300), its text (lines cut
//! from the license texts every Debian machine has, `/usr/share/common-licenses`,
//! drawn at random per page, as `scripts/text-pdfs.mjs` cuts them), and a small PDF
//! writer (Helvetica, WinAnsi text, one content stream per page, as
//! `tests/e2e/make-pdf.mjs` writes them). Everything follows from a seed: document
//! `i` of a library is the same file whenever it is made, so a folder that holds the
//! files already is reused.

use std::io::Write;
use std::path::{Path, PathBuf};

use quire::{Error, Result};

/// SplitMix64: a small, fast, seeded generator (no dependency for a benchmark's dice).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// A standard normal draw (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Median pages of a document.
pub const MEDIAN_PAGES: f64 = 12.0;
/// Spread of the log of the page count: about 1 document in 20 has over 60 pages.
pub const SIGMA: f64 = 1.0;
pub const MAX_PAGES: u32 = 300;

/// The lines documents are made of.
pub struct TextPool {
    lines: Vec<String>,
}

/// Where the text comes from.
pub const LICENSES: &str = "/usr/share/common-licenses";

impl TextPool {
    /// Lines of the license texts in `dir` (trimmed, at most 90 characters, printable
    /// ASCII only, longer than 20 characters), in file order.
    pub fn load(dir: &Path) -> Result<Self> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        let mut lines = Vec::new();
        for f in files {
            let Ok(bytes) = std::fs::read(&f) else {
                continue;
            };
            for l in bytes.split(|&b| b == b'\n') {
                let l: String = l
                    .iter()
                    .filter(|b| (0x20..0x7f).contains(*b))
                    .map(|&b| b as char)
                    .collect();
                let l: String = l.trim().chars().take(90).collect();
                if l.len() > 20 {
                    lines.push(l);
                }
            }
        }
        if lines.len() < 100 {
            return Err(Error::Invalid(format!(
                "{}: too little text to make documents from ({} lines)",
                dir.display(),
                lines.len()
            )));
        }
        Ok(Self { lines })
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn line(&self, rng: &mut Rng) -> &str {
        &self.lines[rng.below(self.lines.len())]
    }

    /// `n` queries as a person might type them: the first 5 to 10 words of lines of
    /// the text.
    pub fn queries(&self, seed: u64, n: usize) -> Vec<String> {
        let mut rng = Rng::new(seed ^ 0x5157_4552_5945_5321);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let words: Vec<&str> = self.line(&mut rng).split_whitespace().collect();
            let k = (5 + rng.below(6)).min(words.len());
            if k >= 3 {
                out.push(words[..k].join(" "));
            }
        }
        out
    }
}

/// The generator of a document: `seed`, document `i`, text `variant` (0: the
/// library's own; other values: the same pages with other text).
fn doc_rng(seed: u64, i: usize, variant: u64) -> Rng {
    let mut r = Rng::new(seed ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let base = r.next_u64();
    Rng::new(base ^ variant.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// The page count of document `i` of the library made from `seed`.
pub fn doc_pages(seed: u64, i: usize) -> u32 {
    let mut r = doc_rng(seed, i, 0);
    let x = (MEDIAN_PAGES.ln() + SIGMA * r.normal()).exp().round();
    (x as u32).clamp(1, MAX_PAGES)
}

/// The file name of document `i`.
pub fn doc_name(i: usize) -> String {
    format!("lib-{:05}.pdf", i + 1)
}

/// The text of document `i`, page by page, line by line: 28 to 44 lines a page.
pub fn doc_text(pool: &TextPool, seed: u64, i: usize, variant: u64) -> Vec<Vec<String>> {
    let pages = doc_pages(seed, i);
    let mut rng = doc_rng(seed, i, variant.wrapping_add(1));
    (1..=pages)
        .map(|p| {
            let mut lines = vec![if variant == 0 {
                format!("Document {}, page {p}.", i + 1)
            } else {
                format!("Document {}, page {p}, revision {variant}.", i + 1)
            }];
            let n = 28 + rng.below(17);
            lines.extend((0..n).map(|_| pool.line(&mut rng).to_string()));
            lines
        })
        .collect()
}

/// Write document `i` (text `variant`) to `path`, through a temporary file renamed
/// into place, so that a file of that name is always whole.
pub fn write_doc(pool: &TextPool, seed: u64, i: usize, variant: u64, path: &Path) -> Result<()> {
    let pdf = text_pdf(&doc_text(pool, seed, i, variant));
    let tmp = path.with_extension("pdf.part");
    std::fs::write(&tmp, &pdf).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// A PDF of `pages` of text lines, Helvetica 11 on 14 points, lines printable ASCII.
pub fn text_pdf(pages: &[Vec<String>]) -> Vec<u8> {
    // Objects: 1 catalog, 2 pages, 3 font, then a content stream and a page each.
    let mut objs: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
    objs.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );
    let mut kids = Vec::with_capacity(pages.len());
    for lines in pages {
        let mut stream = b"BT\n/F1 11 Tf\n14 TL\n72 750 Td\n".to_vec();
        for l in lines {
            stream.push(b'(');
            for &b in l.as_bytes() {
                if matches!(b, b'\\' | b'(' | b')') {
                    stream.push(b'\\');
                }
                stream.push(if (0x20..0x7f).contains(&b) { b } else { b'?' });
            }
            stream.extend_from_slice(b") Tj T*\n");
        }
        stream.extend_from_slice(b"ET");
        let mut content = format!("<< /Length {} >>\nstream\n", stream.len()).into_bytes();
        content.extend_from_slice(&stream);
        content.extend_from_slice(b"\nendstream");
        objs.push(content);
        let content_id = objs.len();
        objs.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>"
            )
            .into_bytes(),
        );
        kids.push(objs.len());
    }
    objs[0] = b"<< /Type /Catalog /Pages 2 0 R >>".to_vec();
    let kids: Vec<String> = kids.iter().map(|k| format!("{k} 0 R")).collect();
    objs[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        pages.len()
    )
    .into_bytes();
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::with_capacity(objs.len());
    for (i, body) in objs.iter().enumerate() {
        offsets.push(out.len());
        let _ = writeln!(out, "{} 0 obj", i + 1);
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let _ = write!(out, "xref\n0 {}\n0000000000 65535 f \n", objs.len() + 1);
    for o in offsets {
        let _ = writeln!(out, "{o:010} 00000 n ");
    }
    let _ = write!(
        out,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objs.len() + 1
    );
    out
}

/// The library in a folder.
#[derive(Debug, Clone)]
pub struct Library {
    /// Each file with its page count, in order.
    pub files: Vec<(PathBuf, u32)>,
    /// Files written now (the others were there).
    pub written: usize,
    pub secs: f64,
}

/// Make the `n` documents of the library `seed` in `dir`, keeping those already
/// there; `progress` hears about it now and then.
pub fn generate(
    pool: &TextPool,
    dir: &Path,
    n: usize,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Library> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let t = std::time::Instant::now();
    let mut files = Vec::with_capacity(n);
    let mut written = 0;
    for i in 0..n {
        let path = dir.join(doc_name(i));
        let there = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() > 0);
        if !there {
            write_doc(pool, seed, i, 0, &path)?;
            written += 1;
            if written % 100 == 0 {
                progress(&format!("generating PDFs: {} of {n}", i + 1));
            }
        }
        files.push((path, doc_pages(seed, i)));
    }
    Ok(Library {
        files,
        written,
        secs: t.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn page_counts_are_skewed_with_a_median_near_twelve() {
        let mut p: Vec<u32> = (0..2000).map(|i| doc_pages(7, i)).collect();
        p.sort_unstable();
        let median = p[p.len() / 2];
        assert!((9..=16).contains(&median), "median {median}");
        assert!(p[0] >= 1 && *p.last().unwrap() <= MAX_PAGES);
        // Skewed: the mean is well above the median, and some are long.
        let mean = p.iter().map(|&x| f64::from(x)).sum::<f64>() / p.len() as f64;
        assert!(mean > f64::from(median) * 1.2, "mean {mean}");
        assert!(p.iter().any(|&x| x > 100));
        assert_eq!(doc_pages(7, 3), doc_pages(7, 3));
    }

    #[test]
    fn the_pdf_has_one_page_per_page_of_text_and_a_valid_xref() {
        let pages = vec![
            vec!["Hello (world) \\ back".to_string()],
            vec!["second".to_string(), "page".to_string()],
        ];
        let pdf = text_pdf(&pages);
        let s = String::from_utf8_lossy(&pdf);
        assert!(s.contains("/Count 2"));
        assert!(s.contains("(Hello \\(world\\) \\\\ back) Tj"));
        // startxref points at the xref table.
        let at: usize = s
            .rsplit("startxref\n")
            .next()
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(s[at..].starts_with("xref\n0 8\n"));
        // Every offset points at its object.
        for (i, l) in s[at..].lines().skip(3).take(7).enumerate() {
            let o: usize = l[..10].parse().unwrap();
            assert!(s[o..].starts_with(&format!("{} 0 obj", i + 1)), "{l}");
        }
    }
}
