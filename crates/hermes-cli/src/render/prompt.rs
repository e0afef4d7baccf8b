//! The REPL's input prompt drawn from the skin: its prompt symbol in its prompt color.

use std::borrow::Cow;

use reedline::{Prompt, PromptEditMode, PromptHistorySearch, PromptHistorySearchStatus};

use crate::render::skin::Skin;

/// A reedline prompt showing the skin's `branding.prompt_symbol`.
pub struct SkinPrompt {
    symbol: String,
    color: reedline::Color,
}

impl SkinPrompt {
    /// The prompt of `skin`; without `color` the symbol is drawn in the terminal's default
    /// color.
    pub fn new(skin: &Skin, color: bool) -> SkinPrompt {
        let c = skin.colors.prompt;
        SkinPrompt {
            symbol: skin.prompt_symbol.clone(),
            color: if color {
                reedline::Color::Rgb(c.0, c.1, c.2)
            } else {
                reedline::Color::Default
            },
        }
    }
}

impl Prompt for SkinPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed(&self.symbol)
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let state = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({state}search: {}) ", search.term))
    }

    fn get_indicator_color(&self) -> reedline::Color {
        self.color
    }

    fn get_prompt_color(&self) -> reedline::Color {
        self.color
    }
}
