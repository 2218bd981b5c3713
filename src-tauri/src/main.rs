//! Quire's desktop shell: a Tauri window showing `ui/`. It forwards to the core and
//! holds no logic of its own.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    if let Err(e) = tauri::Builder::default().run(tauri::generate_context!()) {
        eprintln!("quire-desktop: {e}");
        std::process::exit(1);
    }
}
