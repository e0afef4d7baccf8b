//! hermes-testkit
