//! Reads the Tauri configuration from the workspace root, where `tauri.conf.json` lives beside the
//! core package, so that a plain `cargo build -p agent-tray-desktop` needs no tauri CLI.
fn main() {
    if let Err(error) =
        tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json"))
    {
        // A build script can only report by failing; the message says which part of the config broke.
        panic!("tauri build step failed: {error:#}");
    }
}
