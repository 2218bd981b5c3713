//! Questions first: foreground work (an answer being generated) pauses background work
//! (indexing's embedding batches, the next extraction) at its next step boundary.
//!
//! On two cores, embedding and generation fighting for the CPUs made a question asked
//! during indexing take 2.5× its quiet time. The foreground holds a [`Foreground`]
//! guard while it runs; the background calls [`Priority::wait_background`] between
//! steps, which returns at once on a quiet machine and otherwise waits until no
//! foreground work is left (or the background is stopped), saying how long it waited
//! so that progress and ETAs leave that time out.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a paused background checks whether it was stopped.
const STOP_POLL: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
pub struct Priority {
    /// Foreground work running now.
    active: Mutex<usize>,
    idle: Condvar,
}

/// Held while foreground work runs; dropping it lets the background go on.
#[must_use = "the background waits only while the guard lives"]
pub struct Foreground<'a>(&'a Priority);

impl Priority {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Foreground work starts; the background pauses at its next step until the guard
    /// (and every other one) is dropped.
    pub fn foreground(&self) -> Foreground<'_> {
        *self.lock() += 1;
        Foreground(self)
    }

    /// Whether foreground work runs now.
    pub fn busy(&self) -> bool {
        *self.lock() > 0
    }

    /// Wait while foreground work runs, or until `stopped()`; returns the time waited
    /// (zero on a quiet machine).
    pub fn wait_background(&self, stopped: impl Fn() -> bool) -> Duration {
        let mut active = self.lock();
        if *active == 0 {
            return Duration::ZERO;
        }
        let start = Instant::now();
        // The foreground now has the CPUs to itself: what its pools learnt beside this
        // background no longer holds.
        super::pool::quieter();
        while *active > 0 && !stopped() {
            active = self
                .idle
                .wait_timeout(active, STOP_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        start.elapsed()
    }
}

impl Drop for Foreground<'_> {
    fn drop(&mut self) {
        let mut active = self.0.lock();
        *active -= 1;
        if *active == 0 {
            self.0.idle.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;

    #[test]
    fn a_quiet_machine_does_not_wait() {
        let p = Priority::new();
        assert!(!p.busy());
        assert_eq!(p.wait_background(|| false), Duration::ZERO);
    }

    #[test]
    fn the_background_waits_until_every_foreground_guard_is_dropped() {
        let p = Priority::new();
        let a = p.foreground();
        let b = p.foreground();
        assert!(p.busy());
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                tx.send("waiting").unwrap();
                p.wait_background(|| false);
                tx.send("resumed").unwrap();
            });
            assert_eq!(rx.recv().unwrap(), "waiting");
            drop(a);
            // One guard left: still paused (the wait re-checks on each wake-up).
            assert!(p.busy());
            assert!(rx.try_recv().is_err());
            drop(b);
            assert_eq!(rx.recv().unwrap(), "resumed");
        });
        assert!(!p.busy());
    }

    #[test]
    fn a_stopped_background_stops_waiting() {
        let p = Priority::new();
        let _fg = p.foreground();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| p.wait_background(|| stop.load(Ordering::Relaxed)));
            stop.store(true, Ordering::Relaxed);
            waiter.join().unwrap();
        });
        assert!(p.busy());
    }
}
