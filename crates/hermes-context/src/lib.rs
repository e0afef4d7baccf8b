//! hermes-context
