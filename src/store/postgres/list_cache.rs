//! The decoded lists of the most used common terms, kept between questions.
//!
//! A common term has a row in nearly every document: at 10,000 documents, reading
//! its list is ten thousand rows through PostgreSQL's executor, for every question
//! that has the term, and the same few common words come back question after
//! question. So a list read whole that spans many documents is kept, decoded, up to
//! a fixed budget (least recently used out first): memory that does not grow with
//! the library.
//!
//! The lists are those of one state of the index: each is tagged with the store's
//! `generation` (bumped by every write and removal, in the same transaction), read
//! in the question's snapshot. A question of a newer generation empties the cache;
//! one of an older snapshot neither uses it nor fills it. Several processes sharing
//! the database each keep their own, each right for the generation it read.

use std::collections::HashMap;
use std::sync::Arc;

use super::maxscore::TermList;

/// Bytes of decoded lists kept.
pub(super) const BUDGET: usize = 64 << 20;

/// Lists of fewer rows are read again each time: a few rows cost less than their
/// room in the cache.
pub(super) const MIN_ROWS: usize = 256;

#[derive(Default)]
pub(super) struct ListCache {
    generation: i64,
    used: usize,
    clock: u64,
    lists: HashMap<String, (Arc<TermList>, u64)>,
}

impl ListCache {
    /// `term`'s list at `generation`, if kept.
    pub(super) fn get(&mut self, generation: i64, term: &str) -> Option<Arc<TermList>> {
        self.advance(generation);
        if generation != self.generation {
            return None;
        }
        self.clock += 1;
        let clock = self.clock;
        self.lists.get_mut(term).map(|(list, used)| {
            *used = clock;
            list.clone()
        })
    }

    /// Keep `term`'s list, read at `generation`, if it is worth keeping, making room
    /// by the least recently used.
    pub(super) fn put(&mut self, generation: i64, term: &str, list: &Arc<TermList>) {
        self.advance(generation);
        let bytes = list.bytes();
        if generation != self.generation || list.rows() < MIN_ROWS || bytes > BUDGET / 4 {
            return;
        }
        while self.used + bytes > BUDGET {
            let Some(oldest) = self
                .lists
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(t, _)| t.clone())
            else {
                break;
            };
            if let Some((l, _)) = self.lists.remove(&oldest) {
                self.used -= l.bytes();
            }
        }
        self.clock += 1;
        if let Some((old, _)) = self
            .lists
            .insert(term.to_string(), (list.clone(), self.clock))
        {
            self.used -= old.bytes();
        }
        self.used += bytes;
    }

    /// Forget everything older than `generation`.
    fn advance(&mut self, generation: i64) {
        if generation > self.generation {
            self.lists.clear();
            self.used = 0;
            self.generation = generation;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::bm25::push_posting;
    use super::*;

    /// A list of `rows` documents, one posting each.
    fn list(rows: i64) -> Arc<TermList> {
        let bytes: Vec<(i64, Vec<u8>)> = (0..rows)
            .map(|d| {
                let mut l = Vec::new();
                push_posting(&mut l, d * 10, 1, 20);
                (d, l)
            })
            .collect();
        Arc::new(TermList::from_rows(bytes.iter().map(|(d, l)| (*d, l.as_slice()))).unwrap())
    }

    #[test]
    fn a_list_is_kept_for_its_generation_only() {
        let mut c = ListCache::default();
        let l = list(MIN_ROWS as i64);
        c.put(3, "licens", &l);
        assert_eq!(c.get(3, "licens").unwrap().rows(), MIN_ROWS);
        // An older snapshot neither uses nor fills it.
        assert!(c.get(2, "licens").is_none());
        c.put(2, "program", &l);
        assert!(c.get(3, "program").is_none());
        // A write since: gone.
        assert!(c.get(4, "licens").is_none());
        assert_eq!(c.used, 0);
        // A short list is not kept.
        c.put(4, "rare", &list(3));
        assert!(c.get(4, "rare").is_none());
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_budget_holds() {
        let mut c = ListCache::default();
        let big = list((BUDGET / 4 / 16 / 2) as i64);
        let per = big.bytes();
        let fit = BUDGET / per;
        assert!(fit >= 4);
        for i in 0..fit {
            c.put(1, &format!("t{i}"), &big);
        }
        assert!(c.get(1, "t0").is_some()); // t0 used: t1 is now the oldest
        c.put(1, "new", &big);
        assert!(c.used <= BUDGET);
        assert!(c.get(1, "t0").is_some());
        assert!(c.get(1, "t1").is_none());
        assert!(c.get(1, "new").is_some());
        // One list over a quarter of the budget is never kept.
        c.put(1, "huge", &list((BUDGET / 16) as i64));
        assert!(c.get(1, "huge").is_none());
    }
}
