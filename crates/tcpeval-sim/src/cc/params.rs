//! Reading an algorithm's `params` table: every algorithm declares the names it
//! accepts, unknown names are errors listing them, values are type-checked.

use serde_json::{Map, Value};

pub struct Params<'a> {
    algorithm: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> Params<'a> {
    /// Check that every given name is one of `allowed`.
    pub fn new(algorithm: &'a str, map: &'a Map<String, Value>, allowed: &[&str]) -> Result<Self, String> {
        if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            let list = if allowed.is_empty() { "it takes none".to_string() } else { format!("allowed: {}", allowed.join(", ")) };
            return Err(format!("params.{k}: unknown parameter for {algorithm}; {list}"));
        }
        Ok(Params { algorithm, map })
    }

    pub fn f64(&self, name: &str, default: f64) -> Result<f64, String> {
        match self.map.get(name) {
            None => Ok(default),
            Some(v) => v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| self.bad(name, "a number")),
        }
    }

    /// A number within [lo, hi].
    pub fn f64_in(&self, name: &str, default: f64, lo: f64, hi: f64) -> Result<f64, String> {
        let v = self.f64(name, default)?;
        if v < lo || v > hi {
            return Err(format!("params.{name}: {v} is outside [{lo}, {hi}] for {}", self.algorithm));
        }
        Ok(v)
    }

    pub fn u32(&self, name: &str, default: u32) -> Result<u32, String> {
        match self.map.get(name) {
            None => Ok(default),
            Some(v) => v.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(|| self.bad(name, "a whole number")),
        }
    }

    pub fn bool(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.map.get(name) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.bad(name, "true or false")),
        }
    }

    fn bad(&self, name: &str, what: &str) -> String {
        format!("params.{name}: must be {what} for {}", self.algorithm)
    }
}
