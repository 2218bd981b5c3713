//! Thread pools as wide as the CPUs this process actually gets.
//!
//! The forward pass and the embedder split each step across a pool and wait for every
//! part: when the scheduler takes a core away from one worker (another program is
//! busy), every step waits for it, and on two cores one busy process costs ~88% of
//! the generation speed instead of half. [`run`] therefore watches the pool's workers:
//! the time each spent runnable but waiting for a CPU (Linux's per-thread
//! `schedstat`) over a window of runs. A pool whose workers waited more than
//! [`CONTENDED`] of their time is too wide for the CPUs this process is getting, and
//! the next runs go to a narrower one. Now and then (every [`PROBE_FIRST`], doubling
//! to [`PROBE_MAX`] while the machine stays busy) one window runs one worker wider:
//! if its workers barely waited, the machine is free again and that width stays.
//!
//! The widest pool follows the CPUs this process may use: the affinity mask and the
//! cgroup CPU quota (what [`std::thread::available_parallelism`] reads on Linux), or
//! `RAYON_NUM_THREADS`. Where `schedstat` cannot be read (another OS, a kernel
//! without it), or with `QUIRE_POOL=fixed` (to measure what adapting buys), the width
//! stays at the widest.
//!
//! The split of a step never changes its result: every output element is computed by
//! one task in the same order whatever the width (the forward pass's and the
//! embedder's tests compare widths 1, 2 and 3 bit for bit).

use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

/// Runs are summed into windows at least this long before the width changes: one
/// scheduler time slice is a few milliseconds, and a generated token ~4 ms.
const WINDOW: Duration = Duration::from_millis(40);
/// The workers waited this share of a window for a CPU: the pool is too wide (after
/// [`STRIKES`] such windows in a row: a daemon waking for a moment is not a busy
/// machine).
pub const CONTENDED: f64 = 0.15;
pub const STRIKES: u32 = 2;
/// A probe one wider keeps that width when its workers waited less than this.
pub const FREE: f64 = 0.06;
/// The first probe after narrowing, and the longest interval between probes.
pub const PROBE_FIRST: Duration = Duration::from_millis(500);
pub const PROBE_MAX: Duration = Duration::from_secs(8);

thread_local! {
    /// A width [`with_width`] imposes on this thread's runs.
    static FORCED: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Run `f` on the pool [`run`] would use now, its parallel steps (rayon's
/// `par_iter`, `scope`, `join`) spread over that pool's workers; learn from how long
/// they waited for a CPU.
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    governor().run(f)
}

/// Run `f` on a pool of exactly `width` workers (tests, benchmarks, a fixed setting):
/// every [`run`] inside `f` on this thread uses it too.
pub fn with_width<R>(width: usize, f: impl FnOnce() -> R) -> R {
    let width = width.max(1);
    let prev = FORCED.with(|c| c.replace(Some(width)));
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// The widest pool: `RAYON_NUM_THREADS`, else the CPUs the affinity mask and the
/// cgroup quota allow.
pub fn max_threads() -> usize {
    governor().max
}

/// Probe one wider at the next run: the caller knows that the machine just got
/// quieter (background work of this process paused for a question).
pub fn probe_soon() {
    let mut s = governor().lock();
    s.next_probe = Instant::now();
    s.probe_every = PROBE_FIRST;
}

/// How [`run`] sees the machine now, for a status line or a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PoolState {
    /// Workers the next run uses (not counting a probe).
    pub width: usize,
    pub max: usize,
    /// Whether the width follows the machine (`schedstat` readable).
    pub adaptive: bool,
    /// Times the pool narrowed, and widened again, since the start.
    pub narrowed: u64,
    pub widened: u64,
}

pub fn state() -> PoolState {
    let g = governor();
    let s = g.lock();
    PoolState {
        width: s.width,
        max: g.max,
        adaptive: g.adaptive,
        narrowed: s.narrowed,
        widened: s.widened,
    }
}

fn governor() -> &'static Governor {
    static G: OnceLock<Governor> = OnceLock::new();
    G.get_or_init(Governor::new)
}

/// One pool and its workers' thread ids.
struct Pool {
    pool: ThreadPool,
    tids: Vec<i32>,
}

struct Governor {
    max: usize,
    adaptive: bool,
    pools: Mutex<Vec<Option<Arc<Pool>>>>,
    state: Mutex<State>,
}

struct State {
    width: usize,
    window: Option<Window>,
    next_probe: Instant,
    probe_every: Duration,
    /// Contended windows in a row at this width.
    strikes: u32,
    narrowed: u64,
    widened: u64,
}

/// Runs at one width, measured together.
struct Window {
    width: usize,
    pool: Arc<Pool>,
    /// The workers' summed wait for a CPU (ns) when the window opened.
    wait0: u64,
    /// The runs' summed wall time.
    wall: Duration,
    /// Runs in flight in this window.
    running: usize,
}

impl Governor {
    fn new() -> Self {
        let max = std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let fixed = std::env::var("QUIRE_POOL").is_ok_and(|v| v == "fixed");
        let adaptive = max > 1 && !fixed && thread_wait_ns(own_tid()).is_some();
        Self {
            max,
            adaptive,
            pools: Mutex::new(vec![None; max]),
            state: Mutex::new(State {
                width: max,
                window: None,
                next_probe: Instant::now(),
                probe_every: PROBE_FIRST,
                strikes: 0,
                narrowed: 0,
                widened: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pool(&self, width: usize) -> Arc<Pool> {
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        let width = width.max(1);
        if pools.len() < width {
            pools.resize(width, None);
        }
        pools[width - 1]
            .get_or_insert_with(|| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(width)
                    .thread_name(move |i| format!("quire-cpu{width}.{i}"))
                    .build()
                    .expect("a thread pool");
                let tids = pool.broadcast(|_| own_tid());
                Arc::new(Pool { pool, tids })
            })
            .clone()
    }

    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        if let Some(width) = FORCED.with(Cell::get) {
            return self.pool(width).pool.install(f);
        }
        if !self.adaptive {
            return self.pool(self.max).pool.install(f);
        }
        let pool = {
            let mut s = self.lock();
            if let Some(w) = &mut s.window {
                w.running += 1;
                w.pool.clone()
            } else {
                let probe = s.width < self.max && Instant::now() >= s.next_probe;
                let width = s.width + usize::from(probe);
                let pool = self.pool(width);
                s.window = Some(Window {
                    width,
                    wait0: pool_wait_ns(&pool),
                    pool: pool.clone(),
                    wall: Duration::ZERO,
                    running: 1,
                });
                pool
            }
        };
        let start = Instant::now();
        let r = pool.pool.install(f);
        self.ran(start.elapsed());
        r
    }

    /// Account one run; close the window and decide once it is long enough.
    fn ran(&self, wall: Duration) {
        let mut s = self.lock();
        let Some(w) = &mut s.window else { return };
        w.wall += wall;
        w.running -= 1;
        if w.running > 0 || w.wall < WINDOW {
            return;
        }
        let w = s.window.take().expect("an open window");
        let waited = pool_wait_ns(&w.pool).saturating_sub(w.wait0) as f64;
        let share = waited / (w.width as f64 * w.wall.as_nanos().max(1) as f64);
        let now = Instant::now();
        decide(&mut s, w.width, share, now);
    }
}

/// The width after a window of `width` workers that waited `share` of their time.
fn decide(s: &mut State, width: usize, share: f64, now: Instant) {
    if width > s.width {
        // A probe.
        if share < FREE {
            s.width = width;
            s.widened += 1;
            s.probe_every = PROBE_FIRST;
        } else {
            s.probe_every = (s.probe_every * 2).min(PROBE_MAX);
        }
        s.next_probe = now + s.probe_every;
    } else if share > CONTENDED && width > 1 {
        s.strikes += 1;
        if s.strikes >= STRIKES {
            // As many workers as got a CPU: on two cores beside one busy process, each
            // of two waited about a third of the time, and one is left.
            let keep = (width as f64 * (1.0 - share)).floor() as usize;
            s.width = keep.clamp(1, width - 1);
            s.strikes = 0;
            s.narrowed += 1;
            s.probe_every = PROBE_FIRST;
            s.next_probe = now + PROBE_FIRST;
        }
    } else {
        s.strikes = 0;
    }
}

fn pool_wait_ns(pool: &Pool) -> u64 {
    pool.tids.iter().filter_map(|&t| thread_wait_ns(t)).sum()
}

#[cfg(target_os = "linux")]
fn own_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

#[cfg(not(target_os = "linux"))]
fn own_tid() -> i32 {
    0
}

/// Nanoseconds thread `tid` of this process has spent runnable, waiting for a CPU
/// (the second field of `/proc/self/task/<tid>/schedstat`).
#[cfg(target_os = "linux")]
fn thread_wait_ns(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn thread_wait_ns(_tid: i32) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(width: usize) -> State {
        State {
            width,
            window: None,
            next_probe: Instant::now(),
            probe_every: PROBE_FIRST,
            strikes: 0,
            narrowed: 0,
            widened: 0,
        }
    }

    /// Decide on `STRIKES` windows alike.
    fn decide_n(s: &mut State, width: usize, share: f64, now: Instant) {
        for _ in 0..STRIKES {
            decide(s, width, share, now);
        }
    }

    #[test]
    fn a_contended_pool_narrows_to_the_cpus_it_got() {
        let now = Instant::now();
        let mut s = state(2);
        decide_n(&mut s, 2, 0.33, now);
        assert_eq!(s.width, 1);
        let mut s = state(16);
        decide_n(&mut s, 16, 0.2, now);
        assert_eq!(s.width, 12);
        // Never below one, always at least one narrower.
        let mut s = state(4);
        decide_n(&mut s, 4, 0.9, now);
        assert_eq!(s.width, 1);
        let mut s = state(8);
        decide_n(&mut s, 8, 0.16, now);
        assert_eq!(s.width, 6);
        // One contended window alone (a daemon waking) is not enough.
        let mut s = state(2);
        decide(&mut s, 2, 0.5, now);
        assert_eq!(s.width, 2);
        decide(&mut s, 2, 0.01, now);
        decide(&mut s, 2, 0.5, now);
        assert_eq!(s.width, 2);
        // Quiet: unchanged.
        let mut s = state(8);
        decide_n(&mut s, 8, 0.02, now);
        assert_eq!((s.width, s.narrowed), (8, 0));
    }

    #[test]
    fn probes_widen_when_free_and_back_off_while_busy() {
        let now = Instant::now();
        let mut s = state(1);
        decide(&mut s, 2, 0.3, now);
        assert_eq!(s.width, 1);
        assert_eq!(s.probe_every, PROBE_FIRST * 2);
        for _ in 0..10 {
            decide(&mut s, 2, 0.3, now);
        }
        assert_eq!(s.probe_every, PROBE_MAX);
        assert_eq!(s.next_probe, now + PROBE_MAX);
        decide(&mut s, 2, 0.01, now);
        assert_eq!((s.width, s.widened, s.probe_every), (2, 1, PROBE_FIRST));
    }

    #[test]
    fn forced_widths_run_on_pools_of_that_width() {
        for w in [1, 2, 3] {
            assert_eq!(with_width(w, || run(rayon::current_num_threads)), w);
        }
        // Nested: the innermost wins, and the outer comes back.
        with_width(3, || {
            assert_eq!(with_width(1, || run(rayon::current_num_threads)), 1);
            assert_eq!(run(rayon::current_num_threads), 3);
        });
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn schedstat_is_read_for_a_worker() {
        // Where the kernel keeps schedstat (this machine's and CI's do), the pools
        // adapt; a worker's wait reads as a number.
        let pool = governor().pool(2);
        assert_eq!(pool.tids.len(), 2);
        for &t in &pool.tids {
            assert!(thread_wait_ns(t).is_some(), "no schedstat for worker {t}");
        }
    }
}
