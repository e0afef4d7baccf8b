//! hermes-store
