//! Prompt assembly inputs: instruction files.

pub mod instructions;
