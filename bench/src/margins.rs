//! `quire bench margins`: a diagnostic rather than a benchmark. Along llama.cpp's
//! greedy sequences (its recorded `greedy.jsonl` for the model), each of its tokens fed
//! in turn, how far its next token is from Quire's choice: `+m` where the two agree (m:
//! the lead of that token over the runner-up), `−m` where they part (m: how far
//! llama.cpp's token is below Quire's). Small margins are the near-ties where any
//! difference in arithmetic can flip a greedy token; the tests check the tokens
//! themselves (`tests/it/llm.rs`). Run with the file's own weights, then requantized
//! to Q8_0 at load.

use std::path::{Path, PathBuf};

use quire::llm::{GgufLlm, LoadOptions};
use quire::{Error, Result};

/// One step of a sequence: whether Quire's greedy token is llama.cpp's, and the
/// margin (always ≥ 0; see the module).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Step {
    pub agree: bool,
    pub margin: f32,
}

/// The steps of one reference sequence under one weight choice.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub requantize: bool,
    pub prompt: String,
    pub steps: Vec<Step>,
}

/// Every row, the own weights' first.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Margins {
    pub model: String,
    pub reference: String,
    pub rows: Vec<Row>,
}

/// llama.cpp's `greedy.jsonl` for `model`: `$QUIRE_SHARED` or `../shared`.
pub fn default_reference(model: &Path) -> Option<PathBuf> {
    let stem = model.file_stem()?.to_str()?;
    Some(
        crate::shared()
            .join("reference/llamacpp")
            .join(stem)
            .join("greedy.jsonl"),
    )
}

/// The margins of the first `steps` tokens of every sequence in `reference` (lines of
/// `prompt`, `prompt_ids`, `greedy_ids`), with the own weights and requantized ones.
pub fn run(model: &Path, reference: &Path, steps: usize) -> Result<Margins> {
    let text = std::fs::read_to_string(reference).map_err(|e| Error::io(reference, e))?;
    let lines = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .map_err(|e| Error::Invalid(format!("{}: {e}", reference.display())))
        })
        .collect::<Result<Vec<_>>>()?;
    let ids = |v: &serde_json::Value| -> Result<Vec<u32>> {
        v.as_array()
            .ok_or_else(|| Error::Invalid(format!("{}: ids are no array", reference.display())))?
            .iter()
            .map(|x| {
                x.as_u64()
                    .map(|x| x as u32)
                    .ok_or_else(|| Error::Invalid(format!("{}: bad id {x}", reference.display())))
            })
            .collect()
    };
    let mut rows = Vec::new();
    for requantize in [false, true] {
        let opts = LoadOptions {
            requantize,
            ..LoadOptions::default()
        };
        let llm = GgufLlm::load_with(model, &opts)?;
        for line in &lines {
            let mut ctx = ids(&line["prompt_ids"])?;
            let mut row = Row {
                requantize,
                prompt: line["prompt"].as_str().unwrap_or_default().to_string(),
                steps: Vec::new(),
            };
            for &want in ids(&line["greedy_ids"])?.iter().take(steps) {
                let l = llm.logits(&ctx)?;
                row.steps.push(step(&l, want as usize)?);
                ctx.push(want);
            }
            rows.push(row);
        }
    }
    Ok(Margins {
        model: model.display().to_string(),
        reference: reference.display().to_string(),
        rows,
    })
}

/// Quire's greedy choice among `logits` (the first of the largest) against `want`.
fn step(logits: &[f32], want: usize) -> Result<Step> {
    let (best, top) =
        logits
            .iter()
            .enumerate()
            .fold((0, f32::MIN), |a, (i, &v)| if v > a.1 { (i, v) } else { a });
    let w = *logits
        .get(want)
        .ok_or_else(|| Error::Invalid(format!("token {want} is past the vocabulary")))?;
    Ok(if best == want {
        let second = logits
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != best)
            .map(|(_, &v)| v)
            .fold(f32::MIN, f32::max);
        Step {
            agree: true,
            margin: top - second,
        }
    } else {
        Step {
            agree: false,
            margin: top - w,
        }
    })
}

/// One line a sequence: `MARGIN rq=<requantize> +0.412 +1.020 -0.031 …`.
impl std::fmt::Display for Margins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for r in &self.rows {
            let steps: Vec<String> = r
                .steps
                .iter()
                .map(|s| format!("{}{:.3}", if s.agree { "+" } else { "-" }, s.margin))
                .collect();
            writeln!(f, "MARGIN rq={} {}", r.requantize, steps.join(" "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_the_lead_or_the_gap() -> Result<()> {
        let s = step(&[0.5, 2.0, 1.25], 1)?;
        assert!(s.agree && s.margin == 0.75, "{s:?}");
        let s = step(&[0.5, 2.0, 1.25], 2)?;
        assert!(!s.agree && s.margin == 0.75, "{s:?}");
        assert!(step(&[1.0], 3).is_err());
        let m = Margins {
            model: String::new(),
            reference: String::new(),
            rows: vec![Row {
                requantize: true,
                prompt: String::new(),
                steps: vec![
                    s,
                    Step {
                        agree: true,
                        margin: 0.0,
                    },
                ],
            }],
        };
        assert_eq!(m.to_string(), "MARGIN rq=true -0.750 +0.000\n");
        Ok(())
    }
}
