//! The model setting `auto` on real models: `quire serve` with `model = "auto"` over a
//! model folder of SmolLM2 and Qwen2.5-Coder-0.5B calibrates both in the background,
//! resolves `auto` to what `quire models --choose` prints for the same folder and data
//! directory, and answers with it; on a fake slow machine it resolves to the faster
//! model, saying that none fits 6 s.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::calibrate::model_dir;
use crate::util;

/// `quire …` over the model folder `models` (and nothing else), on every CPU, with
/// the slowdown given or none.
fn quire(models: &Path, slowdown: Option<&str>) -> Command {
    let mut cmd = Command::new(util::quire_exe());
    cmd.env("QUIRE_MODELS_PATH", models)
        .env_remove("RAYON_NUM_THREADS")
        .env_remove("QUIRE_CALIBRATION_SLOWDOWN")
        .env_remove("QUIRE_TOKEN");
    if let Some(f) = slowdown {
        cmd.env("QUIRE_CALIBRATION_SLOWDOWN", f);
    }
    cmd
}

/// `quire serve` on a free port, killed when dropped.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    fn start(models: &Path, data: &Path, slowdown: Option<&str>) -> Self {
        let (child, url) = util::spawn_serve(
            quire(models, slowdown)
                .args(["serve", "--port", "0", "--no-token", "--data-dir"])
                .arg(data),
        );
        let addr = util::serve_addr(&url);
        Serve { child, addr }
    }

    /// `GET /api/settings` as JSON.
    fn settings(&self) -> Value {
        let mut s = TcpStream::connect(self.addr).expect("connect");
        write!(
            s,
            "GET /api/settings HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    /// The settings view once `auto` stands for a calibrated choice (both models
    /// measured in the background); a failure after several minutes.
    fn calibrated(&self) -> Value {
        let first = self.settings();
        // Asked at once: `auto` stands for the default model until both are measured.
        if first["auto_model"]["calibrated"] == false {
            assert_eq!(
                first["auto_model"]["name"],
                quire::models::DEFAULT_LLM,
                "{first}"
            );
            assert!(
                first["auto_model"]["why"]
                    .as_str()
                    .unwrap()
                    .contains("not yet calibrated"),
                "{first}"
            );
        }
        let t0 = Instant::now();
        loop {
            let v = self.settings();
            if v["auto_model"]["calibrated"] == true {
                return v;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(600),
                "calibration never finished: {v}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn time<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["model_times"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in {v}"))
}

/// `quire models --json` over the same folder and data directory.
fn models_json(models: &Path, data: &Path, slowdown: Option<&str>) -> Value {
    let out = quire(models, slowdown)
        .args(["models", "--json", "--data-dir"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The model `quire ask` signs its answer with.
fn answered_with(models: &Path, data: &Path, slowdown: Option<&str>) -> String {
    let out = quire(models, slowdown)
        .args([
            "ask",
            "Which option keeps the integral signs?",
            "--json",
            "--mode",
            "compact",
            "--max-tokens",
            "4",
            "--data-dir",
        ])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "done")
        .expect("a done event");
    assert!(!done["answer"].as_str().unwrap_or("").is_empty(), "{done}");
    done["stats"]["model"]
        .as_str()
        .expect("stats name the model")
        .to_string()
}

#[test]
fn auto_calibrates_in_the_background_and_answers_with_the_choice() {
    let dir = tempfile::tempdir().unwrap();
    let q05 = quire::models::DEFAULT_LLM;
    let smol = quire::models::SMOLLM2;
    let models = model_dir(dir.path(), &[q05, smol]);
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("settings.json"), r#"{"model": "auto"}"#).unwrap();
    let st = quire(&models, None)
        .args(["index", "--json", "--data-dir"])
        .arg(&data)
        .arg(util::shared().join("corpus/pdfs/wasysym.pdf"))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );

    // Asked before any calibration: answered at once (by the stand-in, or the choice
    // should this process's background calibration have finished first), while
    // calibration runs beside it.
    let first = answered_with(&models, &data, None);
    assert!(first == q05 || first == smol, "{first}");

    // The server calibrates both models in the background, then `auto` is the choice.
    let serve = Serve::start(&models, &data, None);
    let v = serve.calibrated();
    drop(serve);
    assert_eq!(v["model"], "auto", "{v}");
    let auto = v["auto_model"]["name"].as_str().unwrap().to_string();
    let p = |n: &str| time(&v, n)["predicted_secs"].as_f64().unwrap();
    let (p05, psmol) = (p(q05), p(smol));
    assert!(p05 > 0.0 && psmol > 0.0, "{v}");
    for n in [q05, smol] {
        assert_eq!(time(&v, n)["calibrated"], true, "{v}");
        assert_eq!(time(&v, n)["chosen"], n == auto, "{v}");
    }
    // The rule, on these predictions: the better-answering 0.5B whenever it fits.
    // (Compared as shown, to the tenth of a second, as the choice compares them.)
    let shown = |x: f64| format!("{x:.1}").parse::<f64>().unwrap();
    let expect = if shown(p05) <= 6.0 {
        q05
    } else if shown(psmol) <= 6.0 || shown(psmol) < shown(p05) {
        smol
    } else {
        q05
    };
    assert_eq!(auto, expect, "{v}");
    assert_eq!(v["auto_model"]["why"], time(&v, &auto)["why"], "{v}");

    // `quire models` reads the same calibrations (cached: nothing measured again)
    // and chooses the same model.
    let m = models_json(&models, &data, None);
    assert_eq!(m["choice"]["chosen"], auto.as_str(), "{m}");
    for e in m["choice"]["models"].as_array().unwrap() {
        assert_eq!(e["cached"], true, "{m}");
        assert_eq!(
            e["predicted_secs"].as_f64(),
            time(&v, e["name"].as_str().unwrap())["predicted_secs"].as_f64()
        );
    }
    let out = quire(&models, None)
        .args(["models", "--choose", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), auto);

    // A question is answered with the model `auto` stands for.
    assert_eq!(answered_with(&models, &data, None), auto);

    // A machine so slow that neither fits: measured again (the slowdown is part of
    // the key), and `auto` is the faster of the two by its predictions, saying so.
    let factor = format!("{}", (60.0 / psmol.min(p05)).ceil());
    let serve = Serve::start(&models, &data, Some(&factor));
    let slow = serve.calibrated();
    drop(serve);
    let s = |n: &str| time(&slow, n)["predicted_secs"].as_f64().unwrap();
    let (s05, ssmol) = (s(q05), s(smol));
    assert!(s05 > 6.0 && ssmol > 6.0, "{slow}");
    // (Of two shown alike, the better-answering 0.5B.)
    let fastest = if shown(ssmol) < shown(s05) { smol } else { q05 };
    assert_eq!(slow["auto_model"]["name"], fastest, "{slow}");
    assert_eq!(time(&slow, fastest)["reason"], "chosen_fastest", "{slow}");
    assert!(
        slow["auto_model"]["why"]
            .as_str()
            .unwrap()
            .contains("no model fits 6 s"),
        "{slow}"
    );
    assert_eq!(answered_with(&models, &data, Some(&factor)), fastest);
}
