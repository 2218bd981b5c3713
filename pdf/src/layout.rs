//! Turns positioned glyphs, in content-stream order, into text: a space where the gap
//! between two glyphs on a line is wider than a fraction of the font size, a line
//! break where the baseline moves.

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
            self.out.push_str(text);
        }
        self.last = Some(Last { end, dir, size });
    }

    fn space(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
            self.out.push(' ');
        }
    }

    fn newline(&mut self) {
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// The page's text.
    pub fn finish(mut self) -> String {
        self.newline();
        while self.out.ends_with('\n') {
            self.out.pop();
        }
        super::encoding::normalize_ligatures(&self.out).into_owned()
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
        assert_eq!(l.finish(), "ab c\ndfi");
    }
}
