//! Fusion of ranked lists, the four modes of LlamaIndex's `QueryFusionRetriever`.
//!
//! The input is one list per (query, retriever), in query-major order as LlamaIndex
//! iterates its results dict. Nodes are deduplicated by chunk id (LlamaIndex keys
//! by text). Ties keep the order in which chunks were first seen, as Python's
//! stable sort over insertion-ordered dicts does.
//!
//! - `reciprocal_rerank`: Σ 1 / (rank + 60) over the lists, rank 0-based after
//!   sorting each list by score.
//! - `relative_score`: per list, min-max scale the scores (a list whose scores are
//!   all equal scales to 1 if they are positive, else 0), multiply by the
//!   retriever's weight (weights sum to 1, equal by default), divide by the number
//!   of queries asked for, and sum over the lists.
//! - `dist_based_score`: the same with min = mean − 3σ and max = mean + 3σ
//!   (population σ), not clipped.
//! - `simple`: the highest raw score the chunk had in any list.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Hit, SourceNode};
use crate::{Error, Result};

/// The `k` of reciprocal rank fusion, from the original paper (Cormack et al.).
pub const RRF_K: f64 = 60.0;

/// How ranked lists are fused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMode {
    #[default]
    ReciprocalRerank,
    RelativeScore,
    DistBasedScore,
    Simple,
}

impl FusionMode {
    pub const ALL: [FusionMode; 4] = [
        FusionMode::ReciprocalRerank,
        FusionMode::RelativeScore,
        FusionMode::DistBasedScore,
        FusionMode::Simple,
    ];

    /// LlamaIndex's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            FusionMode::ReciprocalRerank => "reciprocal_rerank",
            FusionMode::RelativeScore => "relative_score",
            FusionMode::DistBasedScore => "dist_based_score",
            FusionMode::Simple => "simple",
        }
    }
}

impl std::str::FromStr for FusionMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        FusionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown fusion mode {s:?} (use reciprocal_rerank, relative_score, \
                     dist_based_score or simple)"
                ))
            })
    }
}

impl std::fmt::Display for FusionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One retriever's hits for one query.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedList {
    /// Index into the queries (0 is the user's).
    pub query: usize,
    /// Index into the retrievers.
    pub retriever: usize,
    pub hits: Vec<Hit>,
}

/// Why a chunk was chosen: where one (query, retriever) list ranked it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Index into [`super::Retrieval::queries`].
    pub query: usize,
    /// Index into [`super::Retrieval::retrievers`].
    pub retriever: usize,
    /// 1 is the list's best.
    pub rank: usize,
    /// The retriever's raw score.
    pub score: f32,
}

/// Retriever weights normalized to sum to 1 (equal when `None`).
pub fn normalized_weights(weights: Option<&[f64]>, retrievers: usize) -> Result<Vec<f64>> {
    let Some(w) = weights else {
        return Ok(vec![1.0 / retrievers.max(1) as f64; retrievers]);
    };
    if w.len() != retrievers {
        return Err(Error::Invalid(format!(
            "{} retriever weights for {retrievers} retrievers",
            w.len()
        )));
    }
    let total: f64 = w.iter().sum();
    if w.iter().any(|x| !x.is_finite() || *x < 0.0) || total <= 0.0 {
        return Err(Error::Invalid(
            "retriever weights must be non-negative and not all 0".into(),
        ));
    }
    Ok(w.iter().map(|x| x / total).collect())
}

/// Fuse `lists` into the `top_k` best source nodes (without chunk text).
/// `weights[i]` is retriever `i`'s weight (see [`normalized_weights`]);
/// `num_queries` is the number of queries asked for, the user's included.
pub fn fuse(
    lists: &[RankedList],
    mode: FusionMode,
    weights: &[f64],
    num_queries: usize,
    top_k: usize,
) -> Vec<SourceNode> {
    let mut nodes: Vec<SourceNode> = Vec::new();
    let mut index: HashMap<i64, usize> = HashMap::new();
    let nq = num_queries.max(1) as f64;
    for list in lists {
        // Each list ranked by score, stable for equal scores (as Python's sorted).
        let mut hits: Vec<Hit> = list.hits.clone();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut seen_here: Vec<i64> = Vec::with_capacity(hits.len());
        let (lo, hi) = match mode {
            FusionMode::RelativeScore => min_max(&hits),
            FusionMode::DistBasedScore => mean_3_sigma(&hits),
            _ => (0.0, 0.0),
        };
        let weight = weights.get(list.retriever).copied().unwrap_or(0.0);
        for (rank, h) in hits.iter().enumerate() {
            if seen_here.contains(&h.chunk_id) {
                continue;
            }
            seen_here.push(h.chunk_id);
            let raw = f64::from(h.score);
            let contribution = match mode {
                FusionMode::ReciprocalRerank => 1.0 / (rank as f64 + RRF_K),
                FusionMode::RelativeScore | FusionMode::DistBasedScore => {
                    let scaled = if hi == lo {
                        if hi > 0.0 {
                            1.0
                        } else {
                            0.0
                        }
                    } else {
                        (raw - lo) / (hi - lo)
                    };
                    scaled * weight / nq
                }
                FusionMode::Simple => raw,
            };
            let ev = Evidence {
                query: list.query,
                retriever: list.retriever,
                rank: rank + 1,
                score: h.score,
            };
            match index.get(&h.chunk_id) {
                Some(&i) => {
                    let n = &mut nodes[i];
                    n.score = if mode == FusionMode::Simple {
                        n.score.max(contribution)
                    } else {
                        n.score + contribution
                    };
                    n.evidence.push(ev);
                }
                None => {
                    index.insert(h.chunk_id, nodes.len());
                    nodes.push(SourceNode {
                        chunk_id: h.chunk_id,
                        score: contribution,
                        evidence: vec![ev],
                        chunk: None,
                        kind: None,
                    });
                }
            }
        }
    }
    // Stable: ties stay in first-seen order.
    nodes.sort_by(|a, b| b.score.total_cmp(&a.score));
    nodes.truncate(top_k);
    nodes
}

fn min_max(hits: &[Hit]) -> (f64, f64) {
    if hits.is_empty() {
        return (0.0, 0.0);
    }
    hits.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), h| {
            let s = f64::from(h.score);
            (lo.min(s), hi.max(s))
        })
}

fn mean_3_sigma(hits: &[Hit]) -> (f64, f64) {
    if hits.is_empty() {
        return (0.0, 0.0);
    }
    let n = hits.len() as f64;
    let mean = hits.iter().map(|h| f64::from(h.score)).sum::<f64>() / n;
    let var = hits
        .iter()
        .map(|h| (f64::from(h.score) - mean).powi(2))
        .sum::<f64>()
        / n;
    let sd = var.sqrt();
    (mean - 3.0 * sd, mean + 3.0 * sd)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn list(query: usize, retriever: usize, hits: &[(i64, f32)]) -> RankedList {
        RankedList {
            query,
            retriever,
            hits: hits
                .iter()
                .map(|&(chunk_id, score)| Hit { chunk_id, score })
                .collect(),
        }
    }

    /// Vector finds 1, 2, 3; BM25 finds 2, 4 (4 only by BM25, 1 and 3 only by vector).
    fn two_lists() -> Vec<RankedList> {
        vec![
            list(0, 0, &[(1, 0.9), (2, 0.8), (3, 0.5)]),
            list(0, 1, &[(2, 12.0), (4, 4.0)]),
        ]
    }

    fn scores(nodes: &[SourceNode]) -> Vec<(i64, f64)> {
        nodes.iter().map(|n| (n.chunk_id, n.score)).collect()
    }

    fn assert_close(got: &[(i64, f64)], want: &[(i64, f64)]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.0, w.0, "{got:?} vs {want:?}");
            assert!((g.1 - w.1).abs() < 1e-9, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn reciprocal_rerank_by_hand() {
        let w = normalized_weights(None, 2).unwrap();
        let got = fuse(&two_lists(), FusionMode::ReciprocalRerank, &w, 1, 10);
        assert_close(
            &scores(&got),
            &[
                (2, 1.0 / 61.0 + 1.0 / 60.0),
                (1, 1.0 / 60.0),
                // 3 (rank 2 in vector) and 4 (rank 1 in BM25): 4 wins, 1/61 > 1/62.
                (4, 1.0 / 61.0),
                (3, 1.0 / 62.0),
            ],
        );
        // Evidence: chunk 2 is vector's #2 (0.8) and BM25's #1 (12.0).
        let two = &got[0];
        assert_eq!(
            two.evidence,
            vec![
                Evidence {
                    query: 0,
                    retriever: 0,
                    rank: 2,
                    score: 0.8
                },
                Evidence {
                    query: 0,
                    retriever: 1,
                    rank: 1,
                    score: 12.0
                },
            ]
        );
        // A chunk found by one retriever only has one piece of evidence.
        assert_eq!(got[2].evidence.len(), 1);
        assert_eq!(got[2].evidence[0].retriever, 1);
    }

    #[test]
    fn reciprocal_rerank_ranks_unsorted_lists_and_keeps_ties_first_seen() {
        // Unsorted input is ranked by score first (LlamaIndex sorts each list).
        let lists = vec![
            list(0, 0, &[(5, 0.1), (6, 0.7)]),
            list(0, 1, &[(5, 3.0), (6, 1.0)]),
        ];
        let got = fuse(&lists, FusionMode::ReciprocalRerank, &[0.5, 0.5], 1, 10);
        // Sorted, list 0 is [6, 5] and list 1 is [5, 6]: both chunks score
        // 1/60 + 1/61, a tie that keeps first-seen order (6 first, from sorted list 0).
        assert_close(
            &scores(&got),
            &[(6, 1.0 / 60.0 + 1.0 / 61.0), (5, 1.0 / 61.0 + 1.0 / 60.0)],
        );
        // Equal raw scores keep input order for ranks.
        let lists = vec![list(0, 0, &[(8, 0.5), (7, 0.5)])];
        let got = fuse(&lists, FusionMode::ReciprocalRerank, &[1.0], 1, 10);
        assert_close(&scores(&got), &[(8, 1.0 / 60.0), (7, 1.0 / 61.0)]);
    }

    #[test]
    fn relative_score_by_hand() {
        let w = normalized_weights(None, 2).unwrap();
        let got = fuse(&two_lists(), FusionMode::RelativeScore, &w, 1, 10);
        // Vector min-max over [0.9, 0.8, 0.5]: 1, 0.75, 0; BM25 over [12, 4]: 1, 0.
        // Times weight 0.5, divided by 1 query.
        let (lo, hi) = (f64::from(0.5f32), f64::from(0.9f32));
        let v = |s: f64| (s - lo) / (hi - lo) * 0.5;
        assert_close(
            &scores(&got),
            &[
                (2, v(0.8f32 as f64) + 0.5),
                (1, v(0.9f32 as f64)),
                // 3 and 4 both score 0: first-seen order (vector's list came first).
                (3, 0.0),
                (4, 0.0),
            ],
        );
    }

    #[test]
    fn relative_score_weights_queries_and_flat_lists() {
        // Two queries, weights 3:1 -> 0.75, 0.25; num_queries = 2 divides by 2.
        let lists = vec![
            list(0, 0, &[(1, 0.6), (2, 0.2)]),
            list(0, 1, &[(2, 5.0)]),           // one hit: max == min > 0 -> 1
            list(1, 0, &[(3, 0.0), (1, 0.0)]), // flat at 0 -> 0
            list(1, 1, &[]),
        ];
        let w = normalized_weights(Some(&[3.0, 1.0]), 2).unwrap();
        let got = fuse(&lists, FusionMode::RelativeScore, &w, 2, 10);
        assert_close(&scores(&got), &[(1, 0.75 / 2.0), (2, 0.25 / 2.0), (3, 0.0)]);
        assert_eq!(got[0].evidence.len(), 2); // found by query 0 and query 1
    }

    #[test]
    fn dist_based_score_by_hand() {
        let w = normalized_weights(None, 2).unwrap();
        let got = fuse(&two_lists(), FusionMode::DistBasedScore, &w, 1, 10);
        let scale = |xs: &[f64], x: f64| {
            let m = xs.iter().sum::<f64>() / xs.len() as f64;
            let sd = (xs.iter().map(|v| (v - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
            (x - (m - 3.0 * sd)) / (6.0 * sd)
        };
        let vs = [0.9f32 as f64, 0.8f32 as f64, 0.5f32 as f64];
        let bs = [12.0, 4.0];
        // BM25: mean 8, sd 4 -> range [-4, 20]: 12 -> 2/3, 4 -> 1/3.
        assert!((scale(&bs, 12.0) - 2.0 / 3.0).abs() < 1e-12);
        let want = [
            (2, 0.5 * scale(&vs, vs[1]) + 0.5 * scale(&bs, 12.0)),
            (4, 0.5 * scale(&bs, 4.0)),
            (1, 0.5 * scale(&vs, vs[0])),
            (3, 0.5 * scale(&vs, vs[2])),
        ];
        let mut want = want.to_vec();
        want.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_close(&scores(&got), &want);
    }

    #[test]
    fn simple_takes_the_max_raw_score() {
        let w = normalized_weights(None, 2).unwrap();
        let got = fuse(&two_lists(), FusionMode::Simple, &w, 1, 10);
        assert_close(
            &scores(&got),
            &[(2, 12.0), (4, 4.0), (1, 0.9f32 as f64), (3, 0.5f32 as f64)],
        );
        // Ties: equal max scores keep first-seen order.
        let lists = vec![list(0, 0, &[(9, 1.0)]), list(0, 1, &[(8, 1.0), (9, 0.5)])];
        let got = fuse(&lists, FusionMode::Simple, &w, 1, 10);
        assert_close(&scores(&got), &[(9, 1.0), (8, 1.0)]);
    }

    #[test]
    fn top_k_dedupe_and_names() {
        let w = normalized_weights(None, 2).unwrap();
        for mode in FusionMode::ALL {
            let got = fuse(&two_lists(), mode, &w, 1, 2);
            assert_eq!(got.len(), 2);
            let mut ids: Vec<i64> = got.iter().map(|n| n.chunk_id).collect();
            ids.dedup();
            assert_eq!(ids.len(), 2);
            assert_eq!(mode.as_str().parse::<FusionMode>().unwrap(), mode);
        }
        assert!("rrf".parse::<FusionMode>().is_err());
        assert!(normalized_weights(Some(&[1.0]), 2).is_err());
        assert!(normalized_weights(Some(&[0.0, 0.0]), 2).is_err());
        assert!(fuse(&[], FusionMode::ReciprocalRerank, &w, 1, 5).is_empty());
    }
}
