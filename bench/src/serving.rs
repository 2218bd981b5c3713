//! A bounded load test of `quire serve` on loopback: N clients ask over HTTP at once,
//! for a while or a number of asks each, while a batch of PDFs indexes through the same
//! server. Every answer is checked against what the server kept (nothing lost, nothing
//! mixed between streams); some clients stop their ask after its first piece (the
//! connection dropped, as a closed browser tab does), and the server must go on
//! answering the rest. Reported: asks a minute, time to first token and queueing delay
//! (p50/p99), and the server's memory over the run.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `quire` binary to serve with.
    pub quire: PathBuf,
    pub clients: usize,
    /// Stop starting asks after this long…
    pub secs: Option<f64>,
    /// …or after this many asks per client.
    pub asks_per_client: Option<usize>,
    /// Indexed before the clients start: what they ask about.
    pub seed_pdf: PathBuf,
    /// Indexed (one upload) while they ask.
    pub batch: Vec<PathBuf>,
    /// The LLM (a GGUF name or path) instead of the settings' default.
    pub model: Option<String>,
    pub max_tokens: usize,
    /// Every this many asks a client drops its connection after the first piece (0:
    /// never).
    pub cancel_every: usize,
    pub questions: Vec<String>,
}

/// One ask as the client saw it.
#[derive(Debug, Clone, Serialize)]
pub struct AskRecord {
    pub client: usize,
    pub seq: usize,
    pub outcome: Outcome,
    /// Seconds from sending to the first answer piece.
    pub first_token: Option<f64>,
    /// Seconds waiting for the generation turn: the time to the end less the time
    /// the answer itself took (the server's own figure).
    pub queued: Option<f64>,
    pub total: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Answered,
    /// The client dropped the stream after the first piece.
    Cancelled,
    Failed,
}

/// The figures, and anything that went wrong.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub clients: usize,
    pub secs: f64,
    pub answered: usize,
    pub cancelled: usize,
    pub failed: usize,
    pub asks_per_min: f64,
    pub first_token_p50: f64,
    pub first_token_p99: f64,
    pub queued_p50: f64,
    pub queued_p99: f64,
    pub batch_files: usize,
    pub batch_indexed: usize,
    pub batch_failed: usize,
    /// When the batch finished, seconds from the clients' start.
    pub batch_secs: Option<f64>,
    /// The server's resident memory (MiB): after the seed document, the most, at the
    /// end, and the most over the last quarter of the run against the first.
    pub rss_start_mib: f64,
    pub rss_peak_mib: f64,
    pub rss_end_mib: f64,
    pub rss_first_quarter_mib: f64,
    pub rss_last_quarter_mib: f64,
    /// What was wrong: a lost or mixed answer, an ask that failed, a batch that did not
    /// index. Empty when all held.
    pub problems: Vec<String>,
    pub asks: Vec<AskRecord>,
}

/// A running `quire serve`, killed when dropped.
struct Served {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(quire: &Path) -> anyhow::Result<Served> {
    let dir = tempfile::tempdir()?;
    let mut child = Command::new(quire)
        // No token: what is measured is answering and indexing, not the check.
        .args([
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-token",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| anyhow::anyhow!("start {}: {e}", quire.display()))?;
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    let url = loop {
        line.clear();
        if out.read_line(&mut line)? == 0 {
            let _ = child.kill();
            anyhow::bail!("quire serve exited before it listened");
        }
        if let Some(u) = line.trim().strip_prefix("Quire is serving on ") {
            break u.trim_end_matches('/').to_string();
        }
    };
    // Keep draining its output so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    Ok(Served {
        child,
        url,
        _dir: dir,
    })
}

/// The `data:` payloads of a server-sent event stream, parsed, until it ends or `f`
/// returns false.
fn each_event(reader: impl Read, mut f: impl FnMut(Value) -> bool) -> anyhow::Result<()> {
    for line in BufReader::new(reader).lines() {
        let line = line?;
        if let Some(data) = line.strip_prefix("data:") {
            let v: Value = serde_json::from_str(data.trim())?;
            if !f(v) {
                break;
            }
        }
    }
    Ok(())
}

/// Upload `files` in one multipart request; the indexing events go to `f`.
fn upload(url: &str, files: &[PathBuf], f: impl FnMut(Value) -> bool) -> anyhow::Result<()> {
    let boundary = "quire-load-boundary-7d1f";
    let mut body = Vec::new();
    for p in files {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"{name}\"\r\nContent-Type: application/pdf\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(&std::fs::read(p)?);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let resp = ureq::post(&format!("{url}/api/upload"))
        .set(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )
        .send_bytes(&body)?;
    each_event(resp.into_reader(), f)
}

/// Resident memory of `pid` in MiB.
fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

/// One client's asks.
fn client(
    url: &str,
    id: usize,
    opts: &Options,
    start: Instant,
    problems: &Mutex<Vec<String>>,
) -> Vec<AskRecord> {
    let mut out = Vec::new();
    for seq in 0.. {
        if opts.asks_per_client.is_some_and(|n| seq >= n)
            || opts
                .secs
                .is_some_and(|s| start.elapsed().as_secs_f64() >= s)
        {
            break;
        }
        let base = &opts.questions[(id + seq) % opts.questions.len()];
        // Unique, so that what the server kept can be matched to this ask alone.
        let question = format!("{base} (client {id}, ask {seq})");
        let cancel =
            opts.cancel_every > 0 && (seq + id) % opts.cancel_every == opts.cancel_every - 1;
        let rec = ask_once(url, id, seq, &question, cancel).unwrap_or_else(|e| {
            problems
                .lock()
                .expect("problems")
                .push(format!("client {id} ask {seq}: {e:#}"));
            AskRecord {
                client: id,
                seq,
                outcome: Outcome::Failed,
                first_token: None,
                queued: None,
                total: 0.0,
            }
        });
        out.push(rec);
    }
    out
}

fn ask_once(
    url: &str,
    id: usize,
    seq: usize,
    question: &str,
    cancel: bool,
) -> anyhow::Result<AskRecord> {
    let t0 = Instant::now();
    let resp = ureq::post(&format!("{url}/api/ask"))
        .send_json(json!({"question": question, "mode": "compact"}))?;
    let mut conversation = None;
    let mut first = None;
    let mut streamed = String::new();
    let mut done: Option<Value> = None;
    let mut error = None;
    let mut dropped = false;
    each_event(resp.into_reader(), |ev| {
        match ev["type"].as_str().unwrap_or_default() {
            "started" => conversation = ev["conversation_id"].as_i64(),
            "token" if ev["final"] == true => {
                first.get_or_insert_with(|| t0.elapsed().as_secs_f64());
                streamed.push_str(ev["text"].as_str().unwrap_or_default());
                if cancel {
                    dropped = true;
                    return false; // the connection closes with the reader
                }
            }
            "done" => done = Some(ev),
            "error" => error = Some(ev["message"].as_str().unwrap_or("?").to_string()),
            _ => {}
        }
        true
    })?;
    let total = t0.elapsed().as_secs_f64();
    let record = |outcome, queued| AskRecord {
        client: id,
        seq,
        outcome,
        first_token: first,
        queued,
        total,
    };
    if dropped {
        return Ok(record(Outcome::Cancelled, None));
    }
    if let Some(e) = error {
        anyhow::bail!("the server said: {e}");
    }
    let done = done.ok_or_else(|| anyhow::anyhow!("the stream ended without an answer"))?;
    let answer = done["answer"].as_str().unwrap_or_default();
    anyhow::ensure!(
        answer == streamed,
        "the streamed pieces ({streamed:?}) are not the answer ({answer:?})"
    );
    // What the server kept is this ask's question and answer, nobody else's.
    let cid = conversation.ok_or_else(|| anyhow::anyhow!("no started event"))?;
    let conv: Value = ureq::get(&format!("{url}/api/conversations/{cid}"))
        .call()?
        .into_json()?;
    let msgs = conv["messages"].as_array().cloned().unwrap_or_default();
    let kept_q = msgs.iter().find(|m| m["role"] == "user");
    let kept_a = msgs.iter().find(|m| m["id"] == done["message_id"]);
    anyhow::ensure!(
        kept_q.is_some_and(|m| m["content"] == question),
        "conversation {cid} keeps another question: {:?}",
        kept_q.map(|m| m["content"].clone())
    );
    anyhow::ensure!(
        kept_a.is_some_and(|m| m["content"] == answer),
        "conversation {cid} keeps another answer"
    );
    let own = done["stats"]["secs"].as_f64().unwrap_or(0.0);
    Ok(record(Outcome::Answered, Some((total - own).max(0.0))))
}

/// Run it.
pub fn run(opts: &Options, log: &mut dyn FnMut(&str)) -> anyhow::Result<Report> {
    anyhow::ensure!(opts.clients > 0, "no clients");
    anyhow::ensure!(
        opts.secs.is_some() || opts.asks_per_client.is_some(),
        "give a duration or a number of asks per client"
    );
    anyhow::ensure!(!opts.questions.is_empty(), "no questions");
    let served = serve(&opts.quire)?;
    let url = served.url.clone();
    let pid = served.child.id();
    // Settings: the model, short answers, and no "not found" short cut (each ask is
    // the same work).
    let mut s: Value = ureq::get(&format!("{url}/api/settings"))
        .call()?
        .into_json()?;
    if let Some(m) = &opts.model {
        s["model"] = json!(m);
    }
    s["max_tokens"] = json!(opts.max_tokens);
    s["not_found_threshold"] = json!(0.0);
    for k in [
        "models",
        "embedders",
        "index_embedders",
        "modes",
        "default_templates",
    ] {
        s.as_object_mut().map(|o| o.remove(k));
    }
    ureq::put(&format!("{url}/api/settings")).send_json(s)?;
    log(&format!(
        "serving on {url}; indexing {}",
        opts.seed_pdf.display()
    ));
    let mut seeded = false;
    upload(&url, std::slice::from_ref(&opts.seed_pdf), |ev| {
        seeded |= ev["type"] == "file_done";
        true
    })?;
    anyhow::ensure!(seeded, "{} did not index", opts.seed_pdf.display());
    // One warm-up ask loads the model, outside the figures.
    ask_once(&url, usize::MAX, 0, &opts.questions[0], false)?;
    let rss_start = rss_mib(pid);

    let start = Instant::now();
    let problems = Arc::new(Mutex::new(Vec::new()));
    let batch_state = Arc::new(Mutex::new((0usize, 0usize, None::<f64>)));
    let batch = {
        let (url, files, st, problems) = (
            url.clone(),
            opts.batch.clone(),
            batch_state.clone(),
            problems.clone(),
        );
        std::thread::spawn(move || {
            if files.is_empty() {
                return;
            }
            let r = upload(&url, &files, |ev| {
                let mut g = st.lock().expect("batch");
                match ev["type"].as_str().unwrap_or_default() {
                    "file_done" => g.0 += 1,
                    "file_failed" => g.1 += 1,
                    _ => {}
                }
                true
            });
            st.lock().expect("batch").2 = Some(start.elapsed().as_secs_f64());
            if let Err(e) = r {
                problems
                    .lock()
                    .expect("problems")
                    .push(format!("batch upload: {e:#}"));
            }
        })
    };
    // Memory, sampled while the clients run.
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let running = running.clone();
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while running.load(std::sync::atomic::Ordering::Relaxed) {
                samples.push(rss_mib(pid));
                std::thread::sleep(Duration::from_millis(250));
            }
            samples
        })
    };
    log(&format!(
        "{} clients asking while {} PDFs index",
        opts.clients,
        opts.batch.len()
    ));
    let handles: Vec<_> = (0..opts.clients)
        .map(|id| {
            let (url, opts, problems) = (url.clone(), opts.clone(), problems.clone());
            std::thread::spawn(move || client(&url, id, &opts, start, &problems))
        })
        .collect();
    let mut asks: Vec<AskRecord> = Vec::new();
    for h in handles {
        asks.extend(h.join().map_err(|_| anyhow::anyhow!("a client panicked"))?);
    }
    let secs = start.elapsed().as_secs_f64();
    running.store(false, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.join().unwrap_or_default();
    // The batch goes on to its end; the server must still answer after it all.
    batch
        .join()
        .map_err(|_| anyhow::anyhow!("the batch thread panicked"))?;
    let after = ask_once(&url, usize::MAX, 1, &opts.questions[0], false);
    let mut problems = problems.lock().expect("problems").clone();
    if let Err(e) = after {
        problems.push(format!("the ask after the run: {e:#}"));
    }
    let (batch_indexed, batch_failed, batch_secs) = *batch_state.lock().expect("batch");
    if batch_indexed + batch_failed != opts.batch.len() {
        problems.push(format!(
            "the batch reported {} of {} files",
            batch_indexed + batch_failed,
            opts.batch.len()
        ));
    }
    let count = |o| asks.iter().filter(|a| a.outcome == o).count();
    let answered: Vec<&AskRecord> = asks
        .iter()
        .filter(|a| a.outcome == Outcome::Answered)
        .collect();
    let ft: Vec<f64> = answered.iter().filter_map(|a| a.first_token).collect();
    let qd: Vec<f64> = answered.iter().filter_map(|a| a.queued).collect();
    let quarter = (samples.len() / 4).max(1);
    let max = |xs: &[f64]| xs.iter().copied().fold(0.0, f64::max);
    Ok(Report {
        clients: opts.clients,
        secs,
        answered: answered.len(),
        cancelled: count(Outcome::Cancelled),
        failed: count(Outcome::Failed),
        asks_per_min: (answered.len() + count(Outcome::Cancelled)) as f64 / secs * 60.0,
        first_token_p50: quantile(&ft, 0.5),
        first_token_p99: quantile(&ft, 0.99),
        queued_p50: quantile(&qd, 0.5),
        queued_p99: quantile(&qd, 0.99),
        batch_files: opts.batch.len(),
        batch_indexed,
        batch_failed,
        batch_secs,
        rss_start_mib: rss_start,
        rss_peak_mib: max(&samples).max(rss_start),
        rss_end_mib: rss_mib(pid),
        rss_first_quarter_mib: max(&samples[..quarter.min(samples.len())]),
        rss_last_quarter_mib: max(&samples[samples.len().saturating_sub(quarter)..]),
        problems,
        asks,
    })
}

/// The report as a table.
pub fn table(r: &Report) -> String {
    let mut s = String::new();
    s += &format!(
        "{} clients for {:.0} s while {} PDFs indexed ({} indexed, {} refused{})\n",
        r.clients,
        r.secs,
        r.batch_files,
        r.batch_indexed,
        r.batch_failed,
        r.batch_secs
            .map(|t| format!(", done at {t:.0} s"))
            .unwrap_or_default()
    );
    s += &format!(
        "asks: {} answered, {} cancelled by their client, {} failed; {:.1} asks/min\n",
        r.answered, r.cancelled, r.failed, r.asks_per_min
    );
    s += &format!(
        "time to first token  p50 {:.2} s  p99 {:.2} s\nqueueing delay       p50 {:.2} s  p99 {:.2} s\n",
        r.first_token_p50, r.first_token_p99, r.queued_p50, r.queued_p99
    );
    s += &format!(
        "server memory (MiB): {:.0} at start, {:.0} peak, {:.0} at end; most in the first quarter {:.0}, in the last {:.0}\n",
        r.rss_start_mib, r.rss_peak_mib, r.rss_end_mib, r.rss_first_quarter_mib, r.rss_last_quarter_mib
    );
    if r.problems.is_empty() {
        s += "nothing lost or mixed: every answer matched what the server kept\n";
    } else {
        for p in &r.problems {
            s += &format!("PROBLEM: {p}\n");
        }
    }
    s
}
