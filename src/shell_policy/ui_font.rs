//! The pages' font from the desktop's: which `font-family` list a desktop font family becomes,
//! and the script that hands it to a page before its stylesheets apply. Pure: the shell
//! (`src-tauri/src/ui_font.rs`) reads GTK's setting and Pango's parse of it, and uses these.
//! Why the app names the font at all: see that file.

/// The CSS variable the stylesheets read (`var(--ui-font, system-ui, …)`).
pub const CSS_VARIABLE: &str = "--ui-font";

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
}
