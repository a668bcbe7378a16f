//! The desktop shell's own decisions, as pure functions: the popover's toggle and placement, what
//! the tray host's messages say about the menu, and the pages' font list. Here so that a core
//! test covers every decision and `src-tauri/` only executes them (it re-exports them under
//! their old paths). Nothing here knows Tauri, GTK or D-Bus.

pub mod popover;
pub mod tray_menu;
pub mod ui_font;
