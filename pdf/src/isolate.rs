//! Extraction in a child process, so that a hostile PDF fails alone.
//!
//! A PDF can overflow the stack, loop, or unpack into gigabytes, and `catch_unwind`
//! catches none of these. The [`Extractor`] runs `EXE __extract FILE` with a
//! wall-clock time limit (the child is
//! killed when it runs out) and, on Unix, an address-space limit (`RLIMIT_AS`) and a
//! CPU-time limit set in the child before it runs. The child writes one JSON object
//! on stdout; a crash, a timeout or an exhausted memory limit becomes an
//! [`Error::Pdf`] with that reason.
//!
//! `EXE` is a binary that serves the hidden subcommand by calling [`serve_child`] first
//! thing in `main`: the `quire` CLI (and its HTTP server) and the `quire-desktop` window
//! both do, so each runs its children from its own executable, no second binary to
//! ship. Other hosts (tests, benchmarks) find a `quire` next to them or `$QUIRE_EXE`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{Error, ExtractedDoc, Result};

/// The hidden subcommand of the `quire` binary that [`child_main`] serves.
pub const CHILD_COMMAND: &str = "__extract";

/// Environment variable naming the `quire` binary, for hosts that are not it.
pub const EXE_ENV: &str = "QUIRE_EXE";

/// What one extraction may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time, after which the child is killed.
    pub time: Duration,
    /// Address space of the child, in bytes (Unix only).
    pub memory: u64,
}

impl Default for Limits {
    /// 120 s and 2 GiB: the largest real PDFs take a few seconds and a few hundred MB.
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(120),
            memory: 2 << 30,
        }
    }
}

/// What the child writes on stdout.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    /// The extracted document.
    Ok(ExtractedDoc),
    /// Extraction failed: the reason, and the page when known.
    Err { page: Option<u32>, reason: String },
}

/// Runs extraction in child processes of the `quire` binary.
#[derive(Debug, Clone)]
pub struct Extractor {
    exe: PathBuf,
    limits: Limits,
    env: Vec<(String, String)>,
}

impl Extractor {
    /// Children are `exe __extract FILE`; `exe` must be the `quire` binary.
    pub fn new(exe: impl Into<PathBuf>) -> Self {
        Extractor {
            exe: exe.into(),
            limits: Limits::default(),
            env: Vec::new(),
        }
    }

    /// The binary that serves the children in this installation: `$QUIRE_EXE`, else
    /// the running executable when it serves them ([`serve_child`] was called) or is
    /// `quire`, else a `quire` next to it (or one folder up, as for test binaries in
    /// `target/debug/deps`).
    pub fn from_env() -> Result<Self> {
        if let Some(p) = std::env::var_os(EXE_ENV) {
            return Ok(Self::new(p));
        }
        let me = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
        let name = format!("quire{}", std::env::consts::EXE_SUFFIX);
        if HOST_SERVES_CHILD.load(Ordering::Relaxed)
            || me.file_name().is_some_and(|n| n == name.as_str())
        {
            return Ok(Self::new(me));
        }
        let dir = me.parent();
        let candidates = [dir, dir.and_then(Path::parent)];
        for d in candidates.into_iter().flatten() {
            let p = d.join(&name);
            if p.is_file() {
                return Ok(Self::new(p));
            }
        }
        Err(Error::Invalid(format!(
            "cannot find the quire binary for isolated PDF extraction (set {EXE_ENV})"
        )))
    }

    /// The same extractor with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same extractor with an environment variable set in its children (tests use
    /// it for the debug-build fault hook, see [`child_main`]).
    #[doc(hidden)]
    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The limits of each extraction.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Extract the text of `path` in a child process within the limits.
    pub fn extract(&self, path: &Path) -> Result<ExtractedDoc> {
        self.extract_until(path, &|| false, &|| false)
    }

    /// [`Extractor::extract`], killing the child and returning [`Error::Cancelled`] as
    /// soon as `cancelled` says so, and stopping the child (SIGSTOP, then SIGCONT)
    /// while `hold` says so, its wall-clock limit extended by the time it was held
    /// (both are asked every 50 ms).
    pub fn extract_until(
        &self,
        path: &Path,
        cancelled: &dyn Fn() -> bool,
        hold: &dyn Fn() -> bool,
    ) -> Result<ExtractedDoc> {
        let pdf_err = |page: Option<u32>, reason: String| Error::Pdf {
            file: path.to_path_buf(),
            page,
            reason,
        };
        let mut cmd = Command::new(&self.exe);
        cmd.arg(CHILD_COMMAND)
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        limit_child(&mut cmd, &self.limits);
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(|e| Error::io(&self.exe, e))?;
        let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(pdf_err(
                None,
                "cannot talk to the extraction process".into(),
            ));
        };
        // stdout is read to its end on a thread, so the wait for it can time out.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let r = stdout.read_to_end(&mut out).map(|_| out);
            let _ = tx.send(r);
        });
        let err_reader = std::thread::spawn(move || {
            // Only the start of stderr matters; the rest is drained.
            let mut head = Vec::new();
            let _ = (&mut stderr).take(16 * 1024).read_to_end(&mut head);
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            head
        });
        let mut held = Duration::ZERO;
        let out = loop {
            let deadline = start + self.limits.time + held;
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(POLL)) {
                Ok(r) => break r,
                Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() && !cancelled() => {
                    if hold() {
                        held += hold_still(&child, hold, cancelled);
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    if cancelled() {
                        return Err(Error::Cancelled);
                    }
                    return Err(pdf_err(
                        None,
                        format!(
                            "extraction took longer than the time limit of {:.1} s; stopped",
                            self.limits.time.as_secs_f64()
                        ),
                    ));
                }
            }
        };
        // stdout is closed: the child is exiting. A child that lingers is killed.
        let left = (self.limits.time + held).saturating_sub(start.elapsed());
        let status = wait_for(&mut child, left).map_err(|e| Error::io(&self.exe, e))?;
        let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
        let out = out.map_err(|e| Error::io(&self.exe, e))?;
        if status.as_ref().is_some_and(|s| s.success()) {
            return match serde_json::from_slice::<Reply>(&out) {
                Ok(Reply::Ok(doc)) => Ok(doc),
                Ok(Reply::Err { page, reason }) => Err(pdf_err(page, reason)),
                Err(e) => Err(pdf_err(
                    None,
                    format!("the extraction process answered nonsense: {e}"),
                )),
            };
        }
        Err(pdf_err(None, crash_reason(status, &stderr, &self.limits)))
    }
}

/// How often a running child's parent looks at the cancel and hold flags.
const POLL: Duration = Duration::from_millis(50);

/// Stop `child` while `hold()` (and not `cancelled()`), then let it go on; the time it
/// was stopped.
fn hold_still(child: &Child, hold: &dyn Fn() -> bool, cancelled: &dyn Fn() -> bool) -> Duration {
    let start = Instant::now();
    signal(child, Signal::Stop);
    while hold() && !cancelled() {
        std::thread::sleep(POLL);
    }
    signal(child, Signal::Continue);
    start.elapsed()
}

enum Signal {
    Stop,
    Continue,
}

#[cfg(unix)]
fn signal(child: &Child, s: Signal) {
    let sig = match s {
        Signal::Stop => libc::SIGSTOP,
        Signal::Continue => libc::SIGCONT,
    };
    // SAFETY: kill(2) on our own child's pid; it has not been waited for, so the pid
    // is still ours.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

#[cfg(not(unix))]
fn signal(_child: &Child, _s: Signal) {}

/// Wait for `child` at most `time`; kill it after that. `None`: it had to be killed.
fn wait_for(
    child: &mut std::process::Child,
    time: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + time;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        if Instant::now() >= deadline {
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Why a child died, in words.
fn crash_reason(status: Option<std::process::ExitStatus>, stderr: &str, limits: &Limits) -> String {
    let Some(status) = status else {
        return "the extraction process did not exit; stopped".into();
    };
    let mib = limits.memory >> 20;
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return format!("needs more memory than the limit of {mib} MiB");
    }
    if stderr.contains("overflowed its stack") {
        return "stack overflow while reading the file".into();
    }
    let signal = signal_of(&status);
    match signal {
        // SIGXCPU: the CPU-time backstop.
        Some(24) => format!(
            "extraction took longer than the time limit of {:.1} s; stopped",
            limits.time.as_secs_f64()
        ),
        // SIGSEGV / SIGBUS: in safe Rust, a guard page hit, i.e. the stack.
        Some(11) | Some(7) => "the extraction process crashed (stack overflow)".into(),
        // SIGABRT without a message we know: most likely an allocation that failed.
        Some(6) => format!(
            "the extraction process aborted (likely out of memory, limit {mib} MiB): {}",
            last_line(stderr)
        ),
        Some(s) => format!("the extraction process was killed by signal {s}"),
        None => format!(
            "the extraction process failed ({status}): {}",
            last_line(stderr)
        ),
    }
}

fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

#[cfg(unix)]
fn limit_child(cmd: &mut Command, limits: &Limits) {
    use std::os::unix::process::CommandExt;
    let memory = limits.memory as libc::rlim_t;
    // A CPU-time backstop a little above the wall-clock limit.
    let cpu = limits.time.as_secs().saturating_add(2) as libc::rlim_t;
    // SAFETY: between fork and exec only async-signal-safe calls are allowed;
    // setrlimit is one, and nothing here allocates.
    unsafe {
        cmd.pre_exec(move || {
            let mem = libc::rlimit {
                rlim_cur: memory,
                rlim_max: memory,
            };
            let cpu = libc::rlimit {
                rlim_cur: cpu,
                rlim_max: cpu.saturating_add(1),
            };
            if libc::setrlimit(libc::RLIMIT_AS, &mem) != 0
                || libc::setrlimit(libc::RLIMIT_CPU, &cpu) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn limit_child(_cmd: &mut Command, _limits: &Limits) {}

/// Extract `path` in a child process of the `quire` binary found by
/// [`Extractor::from_env`], with the default [`Limits`].
pub fn extract_isolated(path: &Path) -> Result<ExtractedDoc> {
    Extractor::from_env()?.extract(path)
}

/// In debug builds, the child fails on purpose as `$QUIRE_TEST_EXTRACT_FAULT` says
/// (`stack`: overflow its stack; `loop`: never finish), so that tests can check
/// how crashes and hangs are reported without a hostile PDF for each; `continued`:
/// wait until stopped and continued once (SIGSTOP, SIGCONT), then extract, so that a
/// test of the hold sees its child stopped however fast the extraction is.
pub const FAULT_ENV: &str = "QUIRE_TEST_EXTRACT_FAULT";

#[cfg(debug_assertions)]
fn test_fault() {
    fn deep(n: u64) -> u64 {
        let frame = std::hint::black_box([n; 256]);
        if n == u64::MAX {
            return 0;
        }
        deep(n + 1).wrapping_add(frame[7])
    }
    match std::env::var(FAULT_ENV).as_deref() {
        Ok("stack") => {
            std::hint::black_box(deep(0));
        }
        Ok("loop") => loop {
            std::thread::park();
        },
        #[cfg(unix)]
        Ok("continued") => until_continued(),
        _ => {}
    }
}

/// Wait for a SIGCONT (the end of a stop): SIGCONT is blocked while the flag is
/// looked at and let in only inside `sigsuspend`, so one that comes in between is
/// not missed.
#[cfg(all(debug_assertions, unix))]
fn until_continued() {
    use std::sync::atomic::AtomicBool;
    static CONTINUED: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_continue(_: libc::c_int) {
        CONTINUED.store(true, Ordering::SeqCst);
    }
    // SAFETY: signal-mask and handler calls on this process's own state; the
    // handler only stores to an atomic.
    unsafe {
        let mut cont: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut cont);
        libc::sigaddset(&mut cont, libc::SIGCONT);
        libc::sigprocmask(libc::SIG_BLOCK, &cont, &mut before);
        libc::sigdelset(&mut before, libc::SIGCONT);
        let handler: extern "C" fn(libc::c_int) = on_continue;
        libc::signal(libc::SIGCONT, handler as libc::sighandler_t);
        while !CONTINUED.load(Ordering::SeqCst) {
            libc::sigsuspend(&before);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
    }
}

/// Set by [`serve_child`]: this executable serves the child command.
static HOST_SERVES_CHILD: AtomicBool = AtomicBool::new(false);

/// Call first thing in the `main` of a binary that extracts PDFs (the CLI, the desktop
/// app). When the process was started as a child (`EXE __extract FILE`), this
/// extracts, writes the reply and exits; otherwise it records that this executable
/// serves children, so [`Extractor::from_env`] runs them from it, and returns.
pub fn serve_child() {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == CHILD_COMMAND) {
        let code = match args.next() {
            Some(file) if args.next().is_none() => match child_main(Path::new(&file)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("{CHILD_COMMAND}: cannot write the reply: {e}");
                    1
                }
            },
            _ => {
                eprintln!("usage: {CHILD_COMMAND} FILE");
                2
            }
        };
        std::process::exit(code);
    }
    HOST_SERVES_CHILD.store(true, Ordering::Relaxed);
}

/// The child's side (`EXE __extract FILE`): extract `path` in this process and
/// write the reply as JSON on stdout. Errors about the file are part of the reply;
/// an `Err` here means stdout could not be written.
pub fn child_main(path: &Path) -> std::io::Result<()> {
    #[cfg(debug_assertions)]
    test_fault();
    let reply = match super::extract(path) {
        Ok(doc) => Reply::Ok(doc),
        Err(Error::Pdf { page, reason, .. }) => Reply::Err { page, reason },
        Err(e) => Reply::Err {
            page: None,
            reason: e.to_string(),
        },
    };
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    serde_json::to_writer(&mut lock, &reply).map_err(std::io::Error::other)?;
    lock.flush()
}
