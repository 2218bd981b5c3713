//! Turns positioned glyphs, in content-stream order, into text: a space where the gap
//! between two glyphs on a line is wider than a fraction of the font size, a line
//! break where the baseline moves. It also keeps the page's horizontal runs of text
//! (words closer than a cell gap) with their positions and their bytes in the text,
//! which [`super::table`] reads tables from.

use super::table::{self, Run, Table};

/// Gap (in font sizes) from which two glyphs on a line are separate words.
const WORD_GAP: f64 = 0.1;
/// Baseline shift (in font sizes) from which a glyph starts a new line.
const LINE_SHIFT: f64 = 0.5;

#[derive(Debug, Clone, Copy)]
struct Last {
    end: (f64, f64),
    dir: (f64, f64),
    size: f64,
}

/// Accumulates a page's text.
#[derive(Debug, Default)]
pub struct Layout {
    out: String,
    last: Option<Last>,
    /// The horizontal runs closed so far.
    runs: Vec<Run>,
    /// The run the last glyphs extend, if any.
    run: Option<Run>,
}

impl Layout {
    /// One glyph from `origin` to `end` (device space), reading along `dir`, of `size`.
    pub fn glyph(
        &mut self,
        text: &str,
        origin: (f64, f64),
        end: (f64, f64),
        dir: (f64, f64),
        size: f64,
    ) {
        let blank = text.chars().all(char::is_whitespace);
        if let Some(last) = self.last {
            let dx = origin.0 - last.end.0;
            let dy = origin.1 - last.end.1;
            let along = dx * last.dir.0 + dy * last.dir.1;
            let across = -dx * last.dir.1 + dy * last.dir.0;
            let size_ref = size.max(last.size).max(1e-6);
            let same_dir = (dir.0 * last.dir.0 + dir.1 * last.dir.1) > 0.9;
            if !same_dir || across.abs() > LINE_SHIFT * size_ref || along < -8.0 * size_ref {
                self.newline();
            } else if along > WORD_GAP * size_ref {
                self.space();
            }
        }
        if blank {
            if !text.is_empty() {
                self.space();
            }
        } else {
            self.extend_run(origin, end, dir, size);
            // Ligatures are normalized glyph by glyph (the mapping is per character),
            // so that the runs' byte offsets hold in the finished text.
            self.out
                .push_str(&super::encoding::normalize_ligatures(text));
            if let Some(run) = &mut self.run {
                run.bytes.end = self.out.len();
            }
        }
        self.last = Some(Last { end, dir, size });
    }

    /// The run a visible glyph at `origin` belongs to: the open one when on its
    /// baseline within a cell gap, else a new one (horizontal text only).
    fn extend_run(&mut self, origin: (f64, f64), end: (f64, f64), dir: (f64, f64), size: f64) {
        let horizontal = dir.0 > 0.99 && dir.1.abs() < 0.05;
        if let Some(run) = &mut self.run {
            let gap = origin.0 - run.x1;
            let size_ref = size.max(run.size).max(1e-6);
            let same_line = (origin.1 - run.y).abs() <= LINE_SHIFT * size_ref;
            if horizontal && same_line && gap <= table::CELL_GAP * size_ref && gap > -0.5 * size_ref
            {
                run.x1 = run.x1.max(end.0);
                return;
            }
        }
        self.close_run();
        if horizontal {
            // The run starts after the space a gap may have just put.
            let at = self.out.len();
            self.run = Some(Run {
                x0: origin.0,
                x1: end.0,
                y: origin.1,
                size,
                bytes: at..at,
            });
        }
    }

    fn close_run(&mut self) {
        if let Some(run) = self.run.take() {
            if !run.bytes.is_empty() {
                self.runs.push(run);
            }
        }
    }

    fn space(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
            self.out.push(' ');
        }
    }

    fn newline(&mut self) {
        self.close_run();
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// The page's text and the tables found in it (their rows' bytes index the text).
    pub fn finish(mut self, params: &table::Params) -> (String, Vec<Table>) {
        self.newline();
        while self.out.ends_with('\n') {
            self.out.pop();
        }
        let tables = table::detect(&self.out, &self.runs, params);
        (self.out, tables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_make_spaces_and_shifts_make_lines() {
        let mut l = Layout::default();
        let r = (1.0, 0.0);
        l.glyph("a", (0.0, 0.0), (5.0, 0.0), r, 10.0);
        l.glyph("b", (5.2, 0.0), (10.0, 0.0), r, 10.0); // kerning: same word
        l.glyph("c", (13.5, 0.0), (18.0, 0.0), r, 10.0); // 0.35 em: new word
        l.glyph("d", (0.0, -12.0), (5.0, -12.0), r, 10.0); // next line
        l.glyph("\u{FB01}", (5.0, -12.0), (10.0, -12.0), r, 10.0);
        assert_eq!(l.finish(&table::Params::default()).0, "ab c\ndfi");
    }

    #[test]
    fn runs_split_at_cell_gaps_and_index_the_text() {
        let mut l = Layout::default();
        let r = (1.0, 0.0);
        l.glyph("a", (0.0, 0.0), (5.0, 0.0), r, 10.0);
        l.glyph("b", (8.0, 0.0), (13.0, 0.0), r, 10.0); // a word gap: same run
        l.glyph("c", (40.0, 0.0), (45.0, 0.0), r, 10.0); // a cell gap: a new run
        l.glyph("\u{FB01}", (45.0, 0.0), (50.0, 0.0), r, 10.0);
        l.close_run();
        let text = l.out.clone();
        let runs: Vec<&str> = l.runs.iter().map(|r| &text[r.bytes.clone()]).collect();
        assert_eq!(runs, ["a b", "cfi"]);
    }
}
