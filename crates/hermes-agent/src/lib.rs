//! hermes-agent
