//! Line-based questions for the setup wizard. Answers are read one line at a time from any
//! reader, so the wizard works the same in a terminal, in a pty driven by a test, or with
//! answers piped in; on a terminal the API-key question turns echo off.

use std::io::{BufRead, Write};

use anyhow::{Result, bail};

/// How many invalid answers one question accepts before the wizard gives up.
const MAX_TRIES: usize = 5;

/// Asks questions on `out` and reads answers from `input`.
pub struct Prompter<'a> {
    input: Box<dyn BufRead + 'a>,
    out: Box<dyn Write + 'a>,
    /// Standard input is a terminal: secrets are read with echo off.
    tty: bool,
}

impl<'a> Prompter<'a> {
    /// A prompter over `input`/`out`; `tty` says whether `input` is the user's terminal.
    pub fn new(input: Box<dyn BufRead + 'a>, out: Box<dyn Write + 'a>, tty: bool) -> Prompter<'a> {
        Prompter { input, out, tty }
    }

    /// Writes `text` and a newline.
    pub fn say(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    /// Shows `question` and returns the answer line, trimmed. Errors when the input ends
    /// (the wizard cannot go on without answers).
    fn line(&mut self, question: &str) -> Result<String> {
        let _ = write!(self.out, "{question}");
        let _ = self.out.flush();
        let mut answer = String::new();
        if self.input.read_line(&mut answer)? == 0 {
            let _ = writeln!(self.out);
            bail!(
                "the answers ended before setup was done; run `hermes setup` in a terminal, or \
                 `hermes setup --non-interactive` with flags (see `hermes setup --help`)"
            );
        }
        Ok(answer.trim().to_string())
    }

    /// Free text; an empty answer gives `default` (when there is one).
    pub fn text(&mut self, question: &str, default: Option<&str>) -> Result<String> {
        for _ in 0..MAX_TRIES {
            let shown = match default {
                Some(d) if !d.is_empty() => format!("{question} [{d}]: "),
                _ => format!("{question}: "),
            };
            let answer = self.line(&shown)?;
            if !answer.is_empty() {
                return Ok(answer);
            }
            if let Some(d) = default {
                return Ok(d.to_string());
            }
            self.say("  an answer is needed here");
        }
        bail!("no usable answer to “{question}”")
    }

    /// Yes or no; an empty answer gives `default`.
    pub fn confirm(&mut self, question: &str, default: bool) -> Result<bool> {
        let hint = if default { "Y/n" } else { "y/N" };
        for _ in 0..MAX_TRIES {
            let answer = self.line(&format!("{question} [{hint}]: "))?;
            match answer.to_ascii_lowercase().as_str() {
                "" => return Ok(default),
                "y" | "yes" => return Ok(true),
                "n" | "no" => return Ok(false),
                _ => self.say("  please answer y or n"),
            }
        }
        bail!("no usable answer to “{question}”")
    }

    /// One of `options` (shown numbered from 1), picked by number or by its first word;
    /// an empty answer gives `default` (an index into `options`). Returns the index.
    pub fn choose(&mut self, question: &str, options: &[String], default: usize) -> Result<usize> {
        self.say(question);
        for (i, option) in options.iter().enumerate() {
            let mark = if i == default { '*' } else { ' ' };
            self.say(&format!(" {mark}{:>3}) {option}", i + 1));
        }
        for _ in 0..MAX_TRIES {
            let answer = self.line(&format!("choice [{}]: ", default + 1))?;
            if answer.is_empty() {
                return Ok(default);
            }
            if let Ok(n) = answer.parse::<usize>()
                && (1..=options.len()).contains(&n)
            {
                return Ok(n - 1);
            }
            if let Some(i) = options
                .iter()
                .position(|o| o.split_whitespace().next() == Some(answer.as_str()))
            {
                return Ok(i);
            }
            self.say(&format!(
                "  answer with a number from 1 to {} or a name from the list",
                options.len()
            ));
        }
        bail!("no usable answer to “{question}”")
    }

    /// A secret (API key): echo is off while it is typed on a terminal. Empty is allowed.
    pub fn secret(&mut self, question: &str) -> Result<String> {
        let guard = if self.tty { EchoOff::new() } else { None };
        let answer = self.line(question);
        if guard.is_some() {
            // The Enter that ended the line was not echoed either.
            self.say("");
        }
        drop(guard);
        answer
    }
}

/// Terminal echo turned off until dropped (unix terminals only; elsewhere a no-op).
struct EchoOff {
    #[cfg(unix)]
    saved: rustix::termios::Termios,
}

impl EchoOff {
    #[cfg(unix)]
    fn new() -> Option<EchoOff> {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok()?;
        let mut quiet = saved.clone();
        quiet.local_modes.remove(LocalModes::ECHO);
        tcsetattr(&stdin, OptionalActions::Now, &quiet).ok()?;
        Some(EchoOff { saved })
    }

    #[cfg(not(unix))]
    fn new() -> Option<EchoOff> {
        None
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use rustix::termios::{OptionalActions, tcsetattr};
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompter<'a>(answers: &'a str, out: &'a mut Vec<u8>) -> Prompter<'a> {
        Prompter::new(Box::new(answers.as_bytes()), Box::new(out), false)
    }

    #[test]
    fn choose_takes_numbers_names_and_the_default_and_re_asks_on_nonsense() {
        let options = vec!["local — offline".to_string(), "openrouter".to_string()];
        let mut out = Vec::new();
        let mut p = prompter("\n2\nopenrouter\n9\nlocal\n", &mut out);
        assert_eq!(p.choose("provider?", &options, 0).unwrap(), 0);
        assert_eq!(p.choose("provider?", &options, 0).unwrap(), 1);
        assert_eq!(p.choose("provider?", &options, 0).unwrap(), 1);
        assert_eq!(p.choose("provider?", &options, 1).unwrap(), 0);
        drop(p);
        let shown = String::from_utf8(out).unwrap();
        assert!(
            shown.contains("answer with a number from 1 to 2"),
            "{shown}"
        );
    }

    #[test]
    fn text_confirm_and_the_end_of_input() {
        let mut out = Vec::new();
        let mut p = prompter("\nmy-model\n\nn\n", &mut out);
        assert_eq!(p.text("model", Some("m1")).unwrap(), "m1");
        assert_eq!(p.text("model", Some("m1")).unwrap(), "my-model");
        assert!(p.confirm("go?", true).unwrap());
        assert!(!p.confirm("go?", true).unwrap());
        let err = p.text("more?", None).unwrap_err().to_string();
        assert!(err.contains("--non-interactive"), "{err}");
    }
}
