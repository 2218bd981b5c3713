//! Text recognition (OCR) for pages without a text layer: poppler's `pdftoppm`
//! renders the page to a grayscale PNG at 300 dpi, and Tesseract's command line
//! (`tesseract`, English and Simplified Chinese when their data are installed) reads
//! it. Both are separate programs, run with a time limit and killed on cancel, so a
//! hostile page hurts them, not Quire. Per page: a page with a text layer keeps it,
//! and a page that draws no image (a blank one) is skipped.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::ExtractedDoc;
use crate::{Error, Result};

/// How to install what OCR needs (Debian and Ubuntu).
pub const INSTALL: &str =
    "sudo apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim poppler-utils";

/// The longest one page's rendering or recognition may take.
const PAGE_TIME: Duration = Duration::from_secs(120);

/// Whether and how pages without text are recognized.
#[derive(Debug, Clone, PartialEq)]
pub enum Ocr {
    /// Turned off in the settings.
    Off,
    /// Wanted but not possible here: the reason, with how to install what is missing.
    Missing(String),
    /// The programs and Tesseract's languages (`eng+chi_sim`).
    On {
        pdftoppm: PathBuf,
        tesseract: PathBuf,
        languages: String,
    },
}

/// `name` on `$PATH`.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl Ocr {
    /// What this machine can do, when `enabled`.
    pub fn detect(enabled: bool) -> Ocr {
        if !enabled {
            return Ocr::Off;
        }
        let (Some(tesseract), Some(pdftoppm)) = (which("tesseract"), which("pdftoppm")) else {
            return Ocr::Missing(format!(
                "text recognition needs Tesseract and pdftoppm: install them with `{INSTALL}`"
            ));
        };
        let listed = Command::new(&tesseract)
            .arg("--list-langs")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let have: Vec<&str> = listed.lines().map(str::trim).collect();
        let languages: Vec<&str> = ["eng", "chi_sim"]
            .into_iter()
            .filter(|l| have.contains(l))
            .collect();
        if languages.is_empty() {
            return Ocr::Missing(format!(
                "Tesseract has no English or Chinese language data: install them with `{INSTALL}`"
            ));
        }
        Ocr::On {
            pdftoppm,
            tesseract,
            languages: languages.join("+"),
        }
    }

    /// Why a document with no text on any of its `pages` pages cannot be indexed;
    /// `images`: whether any of them draws an image.
    pub fn no_text_reason(&self, pages: usize, images: bool) -> String {
        if !images {
            return format!("no text on any of its {pages} pages, and no image to read text from");
        }
        let why = match self {
            Ocr::Off => "text recognition (OCR) is turned off in the settings".to_string(),
            Ocr::Missing(m) => m.clone(),
            Ocr::On { .. } => "text recognition found no words".to_string(),
        };
        format!("no text on any of its {pages} pages (a scan?); {why}")
    }

    /// Recognize the text of the pages of `doc` (read from `file`) that have none,
    /// marking them. `stop` is asked between and during pages. A page that cannot be
    /// read stays empty; only a cancel is an error.
    pub fn fill(&self, file: &Path, doc: &mut ExtractedDoc, stop: &dyn Fn() -> bool) -> Result<()> {
        let Ocr::On {
            pdftoppm,
            tesseract,
            languages,
        } = self
        else {
            return Ok(());
        };
        // Only pages without text that draw an image: a blank page has nothing to read.
        let wanted = |p: &super::ExtractedPage| p.text.trim().is_empty() && p.has_images;
        if !doc.pages.iter().any(wanted) {
            return Ok(());
        }
        let dir = TempDir::new()?;
        for page in doc.pages.iter_mut().filter(|p| wanted(p)) {
            if stop() {
                return Err(Error::Cancelled);
            }
            let prefix = dir.0.join(format!("p{}", page.number));
            let n = page.number.to_string();
            let mut render = Command::new(pdftoppm);
            render
                .args([
                    "-r",
                    "300",
                    "-gray",
                    "-png",
                    "-singlefile",
                    "-f",
                    &n,
                    "-l",
                    &n,
                ])
                .arg(file)
                .arg(&prefix);
            if run(render, stop)?.is_none() {
                continue;
            }
            let png = prefix.with_extension("png");
            let mut read = Command::new(tesseract);
            read.arg(&png)
                .arg("stdout")
                .args(["-l", languages])
                // One thread: the machine's cores are busy embedding.
                .env("OMP_THREAD_LIMIT", "1");
            if let Some(text) = run(read, stop)? {
                let text = text.trim();
                if !text.is_empty() {
                    page.text = text.to_string();
                    page.ocr = true;
                }
            }
            let _ = std::fs::remove_file(&png);
        }
        Ok(())
    }
}

/// Run `cmd` within [`PAGE_TIME`]: its stdout when it succeeded, `None` when it
/// failed or ran out of time; `Err(Cancelled)` when `stop` said so.
fn run(mut cmd: Command, stop: &dyn Fn() -> bool) -> Result<Option<String>> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = cmd.spawn() else {
        return Ok(None);
    };
    let Some(mut stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Ok(None);
    };
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + PAGE_TIME;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline && !stop() => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    if stop() {
        return Err(Error::Cancelled);
    }
    Ok(status
        .filter(|s| s.success())
        .map(|_| String::from_utf8_lossy(&out).into_owned()))
}

/// A folder of its own under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("quire-ocr-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
