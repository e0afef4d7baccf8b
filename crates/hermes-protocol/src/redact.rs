//! [`debug_redacted!`]: `Debug` that never prints secrets.

/// Implements `Debug` for a struct, printing every field except the secrets, which show as
/// `<redacted>`: API keys, bot tokens and shared secrets must never reach a log or an error
/// message. The field lists are checked by the compiler: a field missing from both lists, or
/// one that does not exist, does not build.
///
/// `debug_redacted!(ModelConfig { secret: [api_key, api_keys], shown: [provider, …] });`
#[macro_export]
macro_rules! debug_redacted {
    ($ty:ident { secret: [$($secret:ident),* $(,)?], shown: [$($shown:ident),* $(,)?] $(,)? }) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let $ty { $($secret: _,)* $($shown,)* } = self;
                let mut d = f.debug_struct(stringify!($ty));
                $(d.field(stringify!($secret), &format_args!("<redacted>"));)*
                $(d.field(stringify!($shown), $shown);)*
                d.finish()
            }
        }
    };
}
