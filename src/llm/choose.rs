//! The model chosen for this machine: the best-answering installed model whose
//! predicted median compact answer ([`super::calibrate`]) fits [`BUDGET_SECS`]; when
//! none fits, the fastest, saying so. "Best" is the measured answer quality of
//! [`QUALITY`], one table; a model not in it ranks below every measured one, the
//! larger file first (more parameters of the same kind answer better, as the table
//! shows for the two Qwen2.5 sizes).

/// The most seconds a median compact answer may take on the chosen model.
pub const BUDGET_SECS: f64 = 6.0;

/// A model's prompt and generation tok/s on one class of CPU
/// (`quire-bench llm --model M`: a 512-token prompt, 128 generated tokens, 2 threads).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub prompt_tok_s: f64,
    pub gen_tok_s: f64,
}

/// A model measured on the reference machines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub file: &'static str,
    /// Compact answers with every key term over the corpus questions.
    pub quality: f64,
    /// Its speed where the AVX-512 VNNI kernels run, and where the AVX2 ones do: what
    /// a model not installed yet is estimated by, relative to an installed one. The
    /// ratio of two models differs by kernels and moves as they improve: the 1.5B
    /// (K-quants) against the 0.5B (mostly Q5_0) reads prompts at 0.53× with VNNI and
    /// 0.60× on AVX2, where it was 0.24× before the K-quant tiles (an estimate from
    /// those figures said 22.5 s for the 1.5B on a Zen 3 that answers in 10–12 s).
    pub avx512_vnni: Rates,
    pub avx2: Rates,
    /// Tokens its median compact answer generates over the corpus questions: the same
    /// answers on every machine (the kernels give the same bits), and what sets a
    /// model's time apart beside its rates: the 1.5B writes 103 where the 0.5B writes
    /// 41, and one length for all (67) had predicted the 1.5B 13% fast on Zen 4
    /// (6.1 s against 7.05 s measured) and the 0.5B 9% slow. Gemma 3 270M (a base
    /// model) and SmolLM2 run to the 256-token cap: predicted 1.05 s and 1.03 s with
    /// 67, they answered in 2.92 s and 2.25 s.
    pub answer_tokens: f64,
}

impl Measured {
    /// Its rates on the kernels `k` (the portable kernels: AVX2's, the nearest
    /// measured).
    pub fn rates(&self, k: crate::cpu::Kernels) -> Rates {
        match k {
            crate::cpu::Kernels::Avx512Vnni => self.avx512_vnni,
            crate::cpu::Kernels::Avx2 | crate::cpu::Kernels::Portable => self.avx2,
        }
    }
}

const fn rates(prompt_tok_s: f64, gen_tok_s: f64) -> Rates {
    Rates {
        prompt_tok_s,
        gen_tok_s,
    }
}

/// The measured models: quality by `quire-bench answer --model M --modes compact`
/// over `../shared/corpus/questions.jsonl` (24 questions, 4 sources, 256 tokens at
/// most; README "Models"); answer length by the same command over its 23 questions
/// but A14 (a whole-document read; 2-core AMD EPYC Zen 4, 2026-12-05); speed by `target/release/quire-bench llm --model M` on a
/// 2-core Intel Xeon with AVX-512 VNNI (2026-11-29, README "Models") and on a 2-core
/// AMD EPYC Zen 3 with AVX2 only (2026-12-05).
pub const QUALITY: &[Measured] = &[
    Measured {
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        quality: 0.62,
        avx512_vnni: rates(121.1, 16.5),
        avx2: rates(108.6, 22.2),
        answer_tokens: 103.0,
    },
    Measured {
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        quality: 0.38,
        avx512_vnni: rates(229.6, 35.6),
        avx2: rates(182.4, 41.7),
        answer_tokens: 41.0,
    },
    Measured {
        file: "gemma-3-270m-q4_k_m.gguf",
        quality: 0.33,
        avx512_vnni: rates(746.9, 51.5),
        avx2: rates(480.1, 64.4),
        answer_tokens: 256.0,
    },
    Measured {
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        quality: 0.08,
        avx512_vnni: rates(599.2, 215.2),
        avx2: rates(338.5, 112.9),
        answer_tokens: 256.0,
    },
];

/// The measured figures of a model file name, if measured.
pub fn measured(name: &str) -> Option<&'static Measured> {
    QUALITY.iter().find(|m| m.file.eq_ignore_ascii_case(name))
}

/// The measured quality of a model file name, if measured.
pub fn quality(name: &str) -> Option<f64> {
    measured(name).map(|m| m.quality)
}

/// One installed model as the choice sees it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// The file name.
    pub name: String,
    /// The file's size (the fallback rank of a model not in [`QUALITY`]).
    pub bytes: u64,
    /// The predicted median compact answer in seconds, or why there is none.
    pub predicted: std::result::Result<f64, String>,
    /// Not installed: predicted from an installed model's calibration (what
    /// `models/fetch.sh` asks before fetching it).
    pub estimated: bool,
}

/// Why a model was or was not chosen.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// The best-answering model that fits the budget.
    Chosen,
    /// No model fits the budget: this one is the fastest.
    ChosenFastest { predicted: f64, budget: f64 },
    /// Predicted over the budget.
    TooSlow { predicted: f64, budget: f64 },
    /// Fits, but the chosen model answers better.
    Worse { than: String },
    /// Not the fastest, when none fits.
    Slower { than: String },
    /// Its calibration failed.
    Unusable { error: String },
    /// Not calibrated on this machine yet (the engine calibrates in the background):
    /// not among the candidates until it is.
    NotCalibrated,
}

impl Reason {
    /// Its kind as the JSON names it (`chosen`, `too_slow`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Reason::Chosen => "chosen",
            Reason::ChosenFastest { .. } => "chosen_fastest",
            Reason::TooSlow { .. } => "too_slow",
            Reason::Worse { .. } => "worse",
            Reason::Slower { .. } => "slower",
            Reason::Unusable { .. } => "unusable",
            Reason::NotCalibrated => "not_calibrated",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Chosen => write!(f, "chosen: the best-answering model within {BUDGET_SECS} s"),
            Reason::ChosenFastest { predicted, budget } => write!(
                f,
                "chosen: no model fits {budget} s on this machine; the fastest (predicted {predicted:.1} s)"
            ),
            Reason::TooSlow { predicted, budget } => {
                write!(f, "too slow: predicted {predicted:.1} s > {budget} s")
            }
            Reason::Worse { than } => write!(f, "answers worse than {than}"),
            Reason::Slower { than } => write!(f, "too slow, and slower than {than}"),
            Reason::Unusable { error } => write!(f, "unusable: {error}"),
            Reason::NotCalibrated => write!(f, "not yet calibrated on this machine"),
        }
    }
}

/// The choice: which candidate (by index), and each one's reason.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Choice {
    pub chosen: Option<usize>,
    pub reasons: Vec<Reason>,
}

/// Ranks `a` before `b` when it answers better: measured quality first, then a
/// model not measured by its file size.
fn better(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    match (quality(&a.name), quality(&b.name)) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b.bytes.cmp(&a.bytes),
    }
    .then_with(|| a.name.cmp(&b.name))
}

/// A prediction as the Settings table and the reasons show it: to the tenth of a
/// second. The choice compares this against the budget, so a row never reads
/// "6.0 s" beside "too slow: predicted 6.0 s > 6 s" (a prediction is not finer than
/// that anyway).
fn shown(p: f64) -> f64 {
    format!("{p:.1}").parse().unwrap_or(p)
}

/// Choose among `models` with the budget [`BUDGET_SECS`].
pub fn choose(models: &[Candidate]) -> Choice {
    choose_within(models, BUDGET_SECS)
}

/// Choose among `models`: the best-answering one predicted within `budget` seconds;
/// if none is, the fastest.
pub fn choose_within(models: &[Candidate], budget: f64) -> Choice {
    let mut order: Vec<usize> = (0..models.len())
        .filter(|&i| models[i].predicted.is_ok())
        .collect();
    order.sort_by(|&a, &b| better(&models[a], &models[b]));
    let fits = |i: usize| matches!(models[i].predicted, Ok(p) if shown(p) <= budget);
    let best = order.iter().copied().find(|&i| fits(i));
    let fastest = order.iter().copied().min_by(|&a, &b| {
        let (pa, pb) = (
            *models[a].predicted.as_ref().unwrap_or(&f64::INFINITY),
            *models[b].predicted.as_ref().unwrap_or(&f64::INFINITY),
        );
        // As shown; of two shown alike, the better-answering (the first in `order`).
        shown(pa).total_cmp(&shown(pb))
    });
    let chosen = best.or(fastest);
    let reasons = models
        .iter()
        .enumerate()
        .map(|(i, m)| match &m.predicted {
            Err(e) => Reason::Unusable { error: e.clone() },
            Ok(p) => {
                let p = *p;
                if Some(i) == chosen {
                    if best.is_some() {
                        Reason::Chosen
                    } else {
                        Reason::ChosenFastest {
                            predicted: p,
                            budget,
                        }
                    }
                } else if shown(p) > budget {
                    match (best, chosen) {
                        (None, Some(c)) => Reason::Slower {
                            than: models[c].name.clone(),
                        },
                        _ => Reason::TooSlow {
                            predicted: p,
                            budget,
                        },
                    }
                } else {
                    Reason::Worse {
                        than: chosen.map(|c| models[c].name.clone()).unwrap_or_default(),
                    }
                }
            }
        })
        .collect();
    Choice { chosen, reasons }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, bytes: u64, p: f64) -> Candidate {
        Candidate {
            name: name.into(),
            bytes,
            predicted: Ok(p),
            estimated: false,
        }
    }

    const Q15: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
    const Q05: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
    const SMOL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
    const GEMMA: &str = "gemma-3-270m-q4_k_m.gguf";

    #[test]
    fn the_best_answering_model_within_budget_is_chosen() {
        let ms = [
            m(SMOL, 98, 1.0),
            m(Q05, 491, 2.8),
            m(Q15, 1117, 5.9),
            m(GEMMA, 253, 3.6),
        ];
        let c = choose(&ms);
        assert_eq!(c.chosen, Some(2));
        assert_eq!(c.reasons[2], Reason::Chosen);
        assert_eq!(c.reasons[1], Reason::Worse { than: Q15.into() });
        assert_eq!(
            c.reasons[1].to_string(),
            format!("answers worse than {Q15}")
        );
    }

    #[test]
    fn a_model_over_budget_is_too_slow_and_the_next_best_chosen() {
        let ms = [m(Q15, 1117, 11.2), m(Q05, 491, 2.8), m(SMOL, 98, 1.0)];
        let c = choose(&ms);
        assert_eq!(c.chosen, Some(1));
        assert_eq!(c.reasons[0].to_string(), "too slow: predicted 11.2 s > 6 s");
        assert_eq!(c.reasons[2], Reason::Worse { than: Q05.into() });
        // Quality, not size nor speed, decides among the models that fit.
        let c = choose(&[m(GEMMA, 253, 0.5), m(Q05, 491, 6.0)]);
        assert_eq!(c.chosen, Some(1));
    }

    #[test]
    fn the_budget_is_compared_with_the_prediction_as_shown() {
        // 6.04 s shows as "6.0 s": it fits 6 s. 6.051 s shows as "6.1 s": too slow.
        let c = choose(&[m(SMOL, 98, 3.5), m(Q05, 491, 6.04)]);
        assert_eq!(c.chosen, Some(1));
        let c = choose(&[m(SMOL, 98, 3.5), m(Q05, 491, 6.051)]);
        assert_eq!(c.chosen, Some(0));
        assert_eq!(c.reasons[1].to_string(), "too slow: predicted 6.1 s > 6 s");
    }

    #[test]
    fn when_none_fits_the_fastest_is_chosen_saying_so() {
        let ms = [m(Q15, 1117, 44.0), m(Q05, 491, 11.1), m(SMOL, 98, 7.0)];
        let c = choose(&ms);
        assert_eq!(c.chosen, Some(2));
        assert!(matches!(c.reasons[2], Reason::ChosenFastest { .. }));
        assert!(c.reasons[2].to_string().contains("no model fits 6 s"));
        assert_eq!(c.reasons[1], Reason::Slower { than: SMOL.into() });
    }

    #[test]
    fn unmeasured_models_rank_below_measured_ones_larger_first() {
        let ms = [
            m("big-unknown.gguf", 5_000, 1.0),
            m(SMOL, 98, 1.0),
            m("small-unknown.gguf", 10, 1.0),
        ];
        assert_eq!(choose(&ms).chosen, Some(1));
        let ms = [
            m("small-unknown.gguf", 10, 1.0),
            m("big-unknown.gguf", 5_000, 1.0),
        ];
        assert_eq!(choose(&ms).chosen, Some(1));
    }

    #[test]
    fn a_model_that_failed_calibration_is_never_chosen() {
        let mut bad = m(Q15, 1117, 0.0);
        bad.predicted = Err("not a GGUF file".into());
        let c = choose(&[bad, m(Q05, 491, 2.0)]);
        assert_eq!(c.chosen, Some(1));
        assert_eq!(c.reasons[0].to_string(), "unusable: not a GGUF file");
        let c = choose(&[Candidate {
            name: "x.gguf".into(),
            bytes: 1,
            predicted: Err("bad".into()),
            estimated: false,
        }]);
        assert_eq!(c.chosen, None);
        assert!(choose(&[]).chosen.is_none());
    }

    #[test]
    fn the_kind_is_the_json_tag() {
        for r in [
            Reason::Chosen,
            Reason::ChosenFastest {
                predicted: 1.0,
                budget: 6.0,
            },
            Reason::TooSlow {
                predicted: 1.0,
                budget: 6.0,
            },
            Reason::Worse { than: "x".into() },
            Reason::Slower { than: "x".into() },
            Reason::Unusable { error: "e".into() },
            Reason::NotCalibrated,
        ] {
            let v = serde_json::to_value(&r).unwrap_or_default();
            assert_eq!(v["kind"], r.kind(), "{r:?}");
        }
        assert_eq!(
            Reason::NotCalibrated.to_string(),
            "not yet calibrated on this machine"
        );
    }

    #[test]
    fn the_quality_table_orders_the_readme_figures() {
        assert!(quality(Q15) > quality(Q05));
        assert!(quality(Q05) > quality(GEMMA));
        assert!(quality(GEMMA) > quality(SMOL));
        assert_eq!(quality("nothing.gguf"), None);
    }
}
