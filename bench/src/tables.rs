//! `quire bench tables`: the table detector (`quire_pdf`'s, in extraction) against the
//! tables marked by hand in `bench/data/tables.jsonl` (document, page, rows of cells).
//! On the marked pages it counts rows — a detected row matches a marked one when
//! their cells' text, joined and normalized (ASCII letters and digits lowercased, CJK
//! characters; the rest dropped), is equal — and, within matched rows, cells (equal
//! when normalized the same; empty ones not counted). Tables: a marked table is found
//! when half its rows or more are matched. Figures per half of the committed split
//! (`bench/data/tables_split.json`); thresholds are tuned on the tuning half only
//! (`--grid` prints the figures of the tuning half over a grid of thresholds).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use quire::ingest::pdf::{self, TableParams};
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::not_found::{load_split, Split};

/// One hand-marked table.
#[derive(Debug, Clone, Deserialize)]
pub struct Marked {
    pub id: String,
    pub doc: String,
    pub page: u32,
    pub rows: Vec<Vec<String>>,
}

/// Read `bench/data/tables.jsonl`.
pub fn load_marked(path: &Path) -> Result<Vec<Marked>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| Error::Invalid(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Counts for one half.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// `tune`, `held` or `all`.
    pub split: String,
    pub tables: usize,
    pub tables_found: usize,
    pub rows_marked: usize,
    pub rows_detected: usize,
    pub rows_matched: usize,
    pub cells_marked: usize,
    pub cells_detected: usize,
    pub cells_matched: usize,
}

impl Figure {
    fn ratio(a: usize, b: usize) -> f64 {
        if b == 0 {
            0.0
        } else {
            a as f64 / b as f64
        }
    }
    pub fn row_precision(&self) -> f64 {
        Self::ratio(self.rows_matched, self.rows_detected)
    }
    pub fn row_recall(&self) -> f64 {
        Self::ratio(self.rows_matched, self.rows_marked)
    }
    pub fn cell_precision(&self) -> f64 {
        Self::ratio(self.cells_matched, self.cells_detected)
    }
    pub fn cell_recall(&self) -> f64 {
        Self::ratio(self.cells_matched, self.cells_marked)
    }
    fn add(&mut self, o: &Figure) {
        self.tables += o.tables;
        self.tables_found += o.tables_found;
        self.rows_marked += o.rows_marked;
        self.rows_detected += o.rows_detected;
        self.rows_matched += o.rows_matched;
        self.cells_marked += o.cells_marked;
        self.cells_detected += o.cells_detected;
        self.cells_matched += o.cells_matched;
    }
}

/// The report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub documents: usize,
    pub params: String,
    /// `tune`, `held`, `all`.
    pub figures: Vec<Figure>,
    /// Each row missed or detected in excess, on the pages of the halves measured.
    pub misses: Vec<String>,
}

impl Report {
    pub fn figure(&self, split: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.split == split)
    }

    pub fn print(&self) {
        println!(
            "table detection over {} documents' marked pages ({})",
            self.documents, self.params
        );
        println!(
            "{:<6} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9}",
            "half", "tables", "found", "row P", "row R", "cell P", "cell R"
        );
        for f in &self.figures {
            println!(
                "{:<6} {:>7} {:>8} {:>8.1}% {:>8.1}% {:>8.1}% {:>8.1}%",
                f.split,
                f.tables,
                f.tables_found,
                100.0 * f.row_precision(),
                100.0 * f.row_recall(),
                100.0 * f.cell_precision(),
                100.0 * f.cell_recall()
            );
        }
    }
}

/// A cell's text as compared: ASCII letters and digits (lowercased) and CJK characters.
pub fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || quire::text::is_cjk(*c))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Rows of cells by (document, page).
type PageRows = BTreeMap<(String, u32), Vec<Vec<String>>>;

/// The detected tables' rows of each marked (document, page), by extracting each
/// document once with `params`.
fn detected(dir: &Path, marked: &[&Marked], params: &TableParams) -> Result<PageRows> {
    let mut out = BTreeMap::new();
    let mut docs: Vec<&str> = marked.iter().map(|m| m.doc.as_str()).collect();
    docs.sort_unstable();
    docs.dedup();
    for d in docs {
        let doc = pdf::extract_with(&dir.join(d), params)?;
        for m in marked.iter().filter(|m| m.doc == d) {
            let rows = doc
                .pages
                .iter()
                .find(|p| p.number == m.page)
                .map(|p| {
                    p.tables
                        .iter()
                        .flat_map(|t| std::iter::once(&t.header).chain(&t.rows))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            out.insert((d.to_string(), m.page), rows);
        }
    }
    Ok(out)
}

/// The counts for the tables of one page against the rows detected there; the rows
/// missed and the rows detected in excess go to `misses`.
fn score_page(tables: &[&Marked], rows: &[Vec<String>], misses: &mut Vec<String>) -> Figure {
    let key = |r: &[String]| normalize(&r.concat());
    let mut used = vec![false; rows.len()];
    let mut f = Figure {
        tables: tables.len(),
        rows_detected: rows.iter().filter(|r| !key(r).is_empty()).count(),
        ..Figure::default()
    };
    for t in tables {
        let mut matched = 0;
        for m in &t.rows {
            let k = key(m);
            if k.is_empty() {
                continue;
            }
            f.rows_marked += 1;
            let cells_m: Vec<String> = m
                .iter()
                .map(|c| normalize(c))
                .filter(|c| !c.is_empty())
                .collect();
            let Some(i) = (0..rows.len()).find(|&i| !used[i] && key(&rows[i]) == k) else {
                misses.push(format!("{} p.{} missed: {m:?}", t.doc, t.page));
                continue;
            };
            used[i] = true;
            matched += 1;
            f.rows_matched += 1;
            let mut cells_d: Vec<String> = rows[i]
                .iter()
                .map(|c| normalize(c))
                .filter(|c| !c.is_empty())
                .collect();
            f.cells_marked += cells_m.len();
            f.cells_detected += cells_d.len();
            for c in &cells_m {
                if let Some(j) = cells_d.iter().position(|d| d == c) {
                    cells_d.swap_remove(j);
                    f.cells_matched += 1;
                }
            }
        }
        let marked_rows = t.rows.iter().filter(|r| !key(r).is_empty()).count();
        if marked_rows > 0 && 2 * matched >= marked_rows {
            f.tables_found += 1;
        }
    }
    if let Some(t) = tables.first() {
        for (r, _) in rows
            .iter()
            .zip(&used)
            .filter(|(r, u)| !**u && !key(r).is_empty())
        {
            misses.push(format!("{} p.{} extra: {r:?}", t.doc, t.page));
        }
    }
    f
}

/// Detection with `params` over the marked tables in `halves` of `split`, per half
/// and in all.
pub fn measure(
    dir: &Path,
    marked: &[Marked],
    split: &Split,
    halves: &[&str],
    params: &TableParams,
) -> Result<Report> {
    let chosen: Vec<&Marked> = marked
        .iter()
        .filter(|m| halves.contains(&split.half(&m.id)))
        .collect();
    let rows = detected(dir, &chosen, params)?;
    let mut figures: Vec<Figure> = halves
        .iter()
        .map(|h| Figure {
            split: h.to_string(),
            ..Figure::default()
        })
        .collect();
    let mut misses = Vec::new();
    let mut all = Figure {
        split: "all".into(),
        ..Figure::default()
    };
    // Pages (not tables) are scored, each once per half holding a table of it: the
    // rows detected there are compared with all of that half's tables on the page.
    for (h, fig) in halves.iter().zip(figures.iter_mut()) {
        let mut pages: BTreeMap<(String, u32), Vec<&Marked>> = BTreeMap::new();
        for m in chosen.iter().filter(|m| split.half(&m.id) == *h) {
            pages.entry((m.doc.clone(), m.page)).or_default().push(m);
        }
        for (k, tables) in &pages {
            let got = rows.get(k).map(Vec::as_slice).unwrap_or_default();
            // Rows detected that belong to the other half's tables on the same page
            // are not counted against this half.
            let others: Vec<&Marked> = marked
                .iter()
                .filter(|m| m.doc == k.0 && m.page == k.1 && split.half(&m.id) != *h)
                .collect();
            let foreign: Vec<String> = others
                .iter()
                .flat_map(|m| m.rows.iter().map(|r| normalize(&r.concat())))
                .collect();
            let mine: Vec<Vec<String>> = got
                .iter()
                .filter(|r| !foreign.contains(&normalize(&r.concat())))
                .cloned()
                .collect();
            fig.add(&score_page(tables, &mine, &mut misses));
        }
        all.add(fig);
    }
    figures.push(all);
    let mut docs: Vec<&str> = chosen.iter().map(|m| m.doc.as_str()).collect();
    docs.sort_unstable();
    docs.dedup();
    Ok(Report {
        documents: docs.len(),
        params: format!("{params:?}"),
        figures,
        misses,
    })
}

/// One table the detector found (`quire bench tables --list`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Found {
    pub doc: String,
    pub page: u32,
    /// Its rows, the header first.
    pub rows: Vec<Vec<String>>,
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} p.{} ({} rows)", self.doc, self.page, self.rows.len())?;
        for r in &self.rows {
            writeln!(f, "  | {} |", r.join(" | "))?;
        }
        Ok(())
    }
}

/// Every table the detector finds (default thresholds) in the PDFs of `dir`, by
/// document name and page.
pub fn list(dir: &Path) -> Result<Vec<Found>> {
    let mut out = Vec::new();
    for f in crate::pdfs(dir)? {
        let doc = pdf::extract_with(&f, &TableParams::default())?;
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for p in &doc.pages {
            for t in &p.tables {
                out.push(Found {
                    doc: name.clone(),
                    page: p.number,
                    rows: std::iter::once(&t.header).chain(&t.rows).cloned().collect(),
                });
            }
        }
    }
    Ok(out)
}

/// Where `quire bench tables` reads from.
pub struct Inputs {
    pub dir: PathBuf,
    pub marked: PathBuf,
    pub split: PathBuf,
}

/// The report over `halves` (both: `tune`, `held`) with the detector's default
/// thresholds.
pub fn run(inputs: &Inputs, halves: &[&str]) -> Result<Report> {
    let marked = load_marked(&inputs.marked)?;
    let split = load_split(&inputs.split)?;
    measure(
        &inputs.dir,
        &marked,
        &split,
        halves,
        &TableParams::default(),
    )
}

/// The tuning half's figures over a grid of thresholds.
pub fn grid(inputs: &Inputs) -> Result<Vec<Report>> {
    let marked = load_marked(&inputs.marked)?;
    let split = load_split(&inputs.split)?;
    let mut out = Vec::new();
    for min_rows in [2, 3] {
        for line_gap in [1.8, 2.2, 3.0] {
            for align in [0.4, 0.6, 1.0] {
                for gutter in [0.0, 0.1, 0.25] {
                    let p = TableParams {
                        min_rows,
                        line_gap,
                        align,
                        prose_words: 5.0,
                        gutter,
                    };
                    out.push(measure(&inputs.dir, &marked, &split, &["tune"], &p)?);
                }
            }
        }
    }
    Ok(out)
}
