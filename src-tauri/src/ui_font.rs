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

/// The CSS variable the stylesheets read (`var(--ui-font, system-ui, …)`).
pub const CSS_VARIABLE: &str = "--ui-font";

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

/// The `font-family` list for `family`: the CSS generic for a generic name, else the family
/// quoted with `sans-serif` after it (a glyph it lacks, or a family not installed, falls back
/// there). `None` for a name that is not a plain family name (quotes, semicolons, braces:
/// nothing from the user's settings reaches the page's CSS unless it is only a name).
pub fn css_family_list(family: &str) -> Option<String> {
    let family = family.trim();
    let generic = match family.to_ascii_lowercase().as_str() {
        "sans" | "sans serif" | "sans-serif" => Some("sans-serif"),
        "serif" => Some("serif"),
        "mono" | "monospace" => Some("monospace"),
        "system-ui" => Some("system-ui"),
        _ => None,
    };
    if let Some(generic) = generic {
        return Some(generic.to_string());
    }
    let plain = !family.is_empty()
        && family.len() <= 100
        && family
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
    plain.then(|| format!("\"{family}\", sans-serif"))
}

/// The initialization script that sets [`CSS_VARIABLE`] on the page's root element to
/// `family_list`. User scripts run once the document element exists, before the page's own
/// content, so the first style resolution already uses it.
pub fn script(family_list: &str) -> String {
    // JSON strings are JavaScript string literals.
    let value = serde_json::Value::String(family_list.to_string());
    format!(
        "if (document.documentElement) document.documentElement.style.setProperty({}, {value});",
        serde_json::Value::String(CSS_VARIABLE.to_string())
    )
}

/// The script for the desktop font read at start, if there is one worth passing on.
pub fn script_for(font: &DesktopFont) -> Option<String> {
    let family = family_of(font.0.as_deref()?)?;
    Some(script(&css_family_list(&family)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generic_name_becomes_the_css_generic_so_it_costs_one_lookup() {
        assert_eq!(css_family_list("Sans").as_deref(), Some("sans-serif"));
        assert_eq!(css_family_list("sans serif").as_deref(), Some("sans-serif"));
        assert_eq!(css_family_list("Monospace").as_deref(), Some("monospace"));
        assert_eq!(css_family_list("Serif").as_deref(), Some("serif"));
    }

    #[test]
    fn a_named_family_is_quoted_and_falls_back_to_sans_serif() {
        assert_eq!(
            css_family_list("Noto Sans").as_deref(),
            Some("\"Noto Sans\", sans-serif")
        );
        assert_eq!(
            css_family_list(" Cantarell ").as_deref(),
            Some("\"Cantarell\", sans-serif")
        );
    }

    #[test]
    fn anything_but_a_plain_name_is_not_passed_to_the_page() {
        for bad in [
            "",
            "a\"b",
            "x; color: red",
            "x}body{",
            "x\\",
            "<script>",
            &"a".repeat(101),
        ] {
            assert_eq!(css_family_list(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_script_sets_the_variable_with_the_list_as_a_string_literal() {
        let script = script("\"Noto Sans\", sans-serif");
        assert_eq!(
            script,
            r#"if (document.documentElement) document.documentElement.style.setProperty("--ui-font", "\"Noto Sans\", sans-serif");"#
        );
    }

    #[cfg(target_os = "linux")]
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
