//! The `quire` binary of this package, run as a person runs it. Having an integration
//! test here also makes `cargo test --workspace` build the real `quire` binary before
//! any test runs, so the core's tests (tests/it), which start it as a child process,
//! never run a stale one.

use std::process::Command;

fn quire() -> Command {
    Command::new(env!("CARGO_BIN_EXE_quire"))
}

#[test]
fn help_names_every_subcommand() {
    let out = quire().arg("--help").output().expect("quire runs");
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    for cmd in [
        "models", "modes", "serve", "index", "queue", "docs", "search", "ask", "bench",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(cmd)),
            "`quire --help` lacks `{cmd}`:\n{help}"
        );
    }
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let out = quire().arg("frobnicate").output().expect("quire runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("frobnicate"), "{err}");
}

#[test]
fn serving_beyond_loopback_without_a_token_is_refused() {
    // `quire serve` makes a token by default; `--no-token` is for loopback only.
    let data = std::env::temp_dir().join(format!("quire-cli-test-{}", std::process::id()));
    let out = quire()
        .args(["serve", "--host", "0.0.0.0", "--port", "0", "--no-token"])
        .env("QUIRE_DATA_DIR", &data)
        .env_remove("QUIRE_TOKEN")
        .output()
        .expect("quire runs");
    let _ = std::fs::remove_dir_all(&data);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without an access token"), "{err}");
}

#[test]
fn a_token_and_no_token_together_are_a_usage_error() {
    let out = quire()
        .args(["serve", "--token", "abc", "--no-token"])
        .output()
        .expect("quire runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
