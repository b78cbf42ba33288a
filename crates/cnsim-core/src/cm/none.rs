//! `none`: no congestion management (PAUSE, if configured, still acts).

use super::{parse_params, Scheme};
use crate::error::ScenarioError;
use serde::Deserialize;

/// The scheme takes no parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

pub struct NoCm;

impl Scheme for NoCm {
    fn name(&self) -> &'static str {
        "none"
    }
    fn message_types(&self) -> &'static [&'static str] {
        &[]
    }
}

pub fn build(params: &serde_json::Value) -> Result<Box<dyn Scheme>, ScenarioError> {
    let _: Params = parse_params("none", params)?;
    Ok(Box::new(NoCm))
}
