// Keep a console window from appearing beside the app in Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    agent_tray_desktop::run();
}
