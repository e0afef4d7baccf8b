use super::*;

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn builtin_skins_parse_completely_and_differ() {
    let dir = dir_with(&[]);
    let default = Skin::builtin_default();
    assert_eq!(default.name, "default");
    assert_eq!(default.prompt_symbol, "❯ ");
    for name in Skin::builtin_names() {
        let (skin, warnings) = Skin::load(dir.path(), name).unwrap();
        assert_eq!(skin.name, name);
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
        assert!(!skin.spinner_frames.is_empty());
        assert!(
            crate::render::code::theme_names().contains(&skin.code_theme),
            "{name}: code_theme {} is not a syntect theme",
            skin.code_theme
        );
    }
    let (mono, _) = Skin::load(dir.path(), "mono").unwrap();
    assert_ne!(mono.colors, default.colors);
    // mono names no banner: it inherits the default's.
    assert_eq!(mono.banner, default.banner);
}

#[test]
fn a_user_skin_overrides_only_what_it_names() {
    let dir = dir_with(&[(
        "sunset.yaml",
        "colors:\n  md_heading: \"#FF8800\"\nbranding:\n  prompt_symbol: \"» \"\ntool_emojis:\n  terminal: \"🐚\"\n",
    )]);
    let (skin, warnings) = Skin::load(dir.path(), "sunset").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let default = Skin::builtin_default();
    assert_eq!(skin.name, "sunset");
    assert_eq!(skin.colors.md_heading, Rgb(255, 136, 0));
    assert_eq!(skin.colors.md_code, default.colors.md_code);
    assert_eq!(skin.prompt_symbol, "» ");
    assert_eq!(skin.spinner_frames, default.spinner_frames);
    assert_eq!(skin.tool_emoji("terminal"), "🐚");
    assert_eq!(skin.tool_emoji("read_file"), "📖");
    assert_eq!(skin.tool_emoji("mcp__gh__search"), "🔌");
    assert_eq!(
        Skin::available(dir.path()),
        ["default", "mono", "poseidon", "sunset"]
    );
}

#[test]
fn broken_yaml_names_the_file_and_line_and_falls_back() {
    let dir = dir_with(&[(
        "broken.yaml",
        "colors:\n  ui_ok: \"#00FF00\"\n  ui_error: [unclosed\n",
    )]);
    let err = Skin::load(dir.path(), "broken").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("broken.yaml"), "{text}");
    assert!(
        matches!(err, SkinError::Parse { line, .. } if line >= 3),
        "{text}"
    );
    let (skin, messages) = Skin::load_or_default(dir.path(), Some("broken"));
    assert_eq!(skin, Skin::builtin_default());
    assert_eq!(messages.len(), 1);
    assert!(messages[0].contains("broken.yaml line"), "{messages:?}");
    assert!(
        messages[0].ends_with("using the default skin"),
        "{messages:?}"
    );
}

#[test]
fn wrong_types_bad_colors_and_unknown_names_are_clear_errors() {
    let dir = dir_with(&[
        ("typed.yaml", "spinner:\n  frames: 7\n"),
        ("hue.yaml", "colors:\n  ui_ok: green\n"),
        ("extra.yaml", "colors:\n  sparkle: \"#FFFFFF\"\n"),
        ("odd.yaml", "flavour: sweet\n"),
    ]);
    let typed = Skin::load(dir.path(), "typed").unwrap_err();
    assert!(matches!(typed, SkinError::Parse { line: 2, .. }), "{typed}");
    let hue = Skin::load(dir.path(), "hue").unwrap_err().to_string();
    assert!(
        hue.contains("hue.yaml") && hue.contains("colors.ui_ok") && hue.contains("green"),
        "{hue}"
    );
    let extra = Skin::load(dir.path(), "extra").unwrap_err().to_string();
    assert!(extra.contains("colors.sparkle"), "{extra}");
    let (_, warnings) = Skin::load(dir.path(), "odd").unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("flavour"), "{warnings:?}");
    let unknown = Skin::load(dir.path(), "nope").unwrap_err().to_string();
    assert!(
        unknown.contains("unknown skin `nope`") && unknown.contains("poseidon"),
        "{unknown}"
    );
}

#[test]
fn no_skin_configured_means_default_without_messages() {
    let dir = dir_with(&[]);
    let (skin, messages) = Skin::load_or_default(dir.path(), None);
    assert_eq!(skin.name, "default");
    assert!(messages.is_empty());
}
