//! Session ids: `YYYYMMDD_HHMMSS_<6 hex>` in UTC (FEATURES §10).

use rand::Rng;

/// A session id string such as `20261129_231500_a1b2c3`.
pub type SessionId = String;

/// Makes a new session id from the current UTC time and 24 random bits.
pub fn new_session_id() -> SessionId {
    let now = chrono::Utc::now();
    let suffix: u32 = rand::rng().random_range(0..0x100_0000);
    format!("{}_{:06x}", now.format("%Y%m%d_%H%M%S"), suffix)
}

#[cfg(test)]
mod tests {
    #[test]
    fn id_has_the_documented_shape() {
        let id = super::new_session_id();
        let parts: Vec<&str> = id.split('_').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1].len(), 6);
        assert_eq!(parts[2].len(), 6);
        assert!(parts[2].chars().all(|c| c.is_ascii_hexdigit()));
    }
}
