//! The pages' font on Linux: the desktop's own UI font, named to WebKit up front.
//!
//! The stylesheets ask for `system-ui, -apple-system, "Segoe UI", …, sans-serif`, which is what
//! macOS and Windows webviews resolve at once. WebKitGTK does not map `system-ui` to the
//! desktop's font: it looks each of those names up in fontconfig, and each miss is a full
//! fontconfig match plus Skia's check of which of the ~100 substituted family names are strong
//! bindings, some 2 ms a weight on this project's test machine. The window's first layout paid
//! four misses for each of its three weights (12 of its 17 lookups, benches/at_rest.sh with
//! `perf probe` on libfontconfig), on the path from a click to the painted window.
//!
//! So on Linux the app reads GTK's `gtk-font-name` (the font the user's desktop uses for its
//! own UI: "Cantarell 11", "Noto Sans 10", or "Sans 10" with no desktop settings) when it
//! starts, and each page is given it, through an initialization script that runs before the
//! stylesheets are applied, as the CSS variable `--ui-font` the stylesheets prefer when it is
//! set. A generic name ("Sans") becomes the CSS generic; anything that is not a plain family
//! name is not passed on.

pub use agent_tray::shell_policy::ui_font::{css_family_list, script, CSS_VARIABLE};

/// The desktop's UI font as GTK reports it (a Pango font description, e.g. "Cantarell 11"),
/// read once at start. `None` where there is none (no GTK settings, or not Linux).
#[derive(Debug, Default, Clone)]
pub struct DesktopFont(pub Option<String>);

/// Reads `gtk-font-name` from GTK's settings. Call it on the main thread, after GTK is up (the
/// app's `setup`).
#[cfg(target_os = "linux")]
pub fn desktop_font_name() -> Option<String> {
    use gtk::prelude::ObjectExt;
    let settings = gtk::Settings::default()?;
    let name: Option<String> = settings.property("gtk-font-name");
    name.filter(|n| !n.trim().is_empty())
}

#[cfg(not(target_os = "linux"))]
pub fn desktop_font_name() -> Option<String> {
    None
}

/// The family of a Pango font description ("Noto Sans Bold 10" → "Noto Sans"). Pango's own
/// parser, so styles, weights, sizes and comma-separated family lists read as GTK reads them.
#[cfg(target_os = "linux")]
pub fn family_of(font_name: &str) -> Option<String> {
    let description = gtk::pango::FontDescription::from_string(font_name);
    let family = description.family()?.to_string();
    // A list ("DejaVu Sans,Sans 10") names its preferred family first.
    let first = family
        .split(',')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    (!first.is_empty()).then_some(first)
}

#[cfg(not(target_os = "linux"))]
pub fn family_of(_font_name: &str) -> Option<String> {
    None
}

/// The script for the desktop font read at start, if there is one worth passing on.
pub fn script_for(font: &DesktopFont) -> Option<String> {
    let family = family_of(font.0.as_deref()?)?;
    Some(script(&css_family_list(&family)?))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn pango_reads_the_family_out_of_a_gtk_font_name() {
        assert_eq!(family_of("Cantarell 11").as_deref(), Some("Cantarell"));
        assert_eq!(family_of("Noto Sans Bold 10").as_deref(), Some("Noto Sans"));
        assert_eq!(
            family_of("DejaVu Sans,Sans 10").as_deref(),
            Some("DejaVu Sans")
        );
        assert_eq!(family_of("Sans 10").as_deref(), Some("Sans"));
        let font = DesktopFont(Some("Sans 10".into()));
        assert_eq!(
            script_for(&font).as_deref(),
            Some(
                r#"if (document.documentElement) document.documentElement.style.setProperty("--ui-font", "sans-serif");"#
            )
        );
        assert_eq!(script_for(&DesktopFont(None)), None);
    }
}
