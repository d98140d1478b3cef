//! The engine's input: a fully resolved scenario (docs/engine-interface.md). The
//! Python front end resolves units and defaults; this module only checks that the
//! values are usable, naming the field when they are not.

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub seed: u64,
    pub duration_ns: u64,
    pub interval_ns: u64,
    pub trace_interval_ns: u64,
    pub network: NetworkConfig,
    pub flows: Vec<FlowConfig>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    pub bottleneck_rate_bps: f64,
    #[serde(default)]
    pub bottleneck_delay_ns: u64,
    pub access_rate_bps: f64,
    #[serde(default)]
    pub buffer_pkts: Option<u64>,
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    #[serde(default)]
    pub reverse_buffer_pkts: Option<u64>,
    #[serde(default)]
    pub reverse_buffer_bytes: Option<u64>,
    #[serde(default = "default_queue")]
    pub queue: String,
    #[serde(default)]
    pub loss: f64,
}

fn default_queue() -> String {
    "droptail".into()
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub cc: String,
    #[serde(default)]
    pub params: Map<String, Value>,
    pub rtt_ns: u64,
    #[serde(default)]
    pub start_ns: u64,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub max_window_bytes: Option<u64>,
    #[serde(default = "default_mss")]
    pub mss: u32,
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    #[serde(default = "yes")]
    pub sack: bool,
    #[serde(default = "yes")]
    pub delayed_ack: bool,
    #[serde(default = "default_delack")]
    pub delack_timeout_ns: u64,
    #[serde(default = "default_iw")]
    pub initial_cwnd: u32,
}

fn default_mss() -> u32 {
    1448
}
fn default_mtu() -> u32 {
    1500
}
fn yes() -> bool {
    true
}
/// Linux TCP_DELACK_MIN (HZ/25).
fn default_delack() -> u64 {
    40_000_000
}
/// Linux TCP_INIT_CWND (RFC 6928).
fn default_iw() -> u32 {
    10
}

fn positive(field: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{field}: must be a positive number, got {v}"))
    }
}

impl Config {
    pub fn from_json(text: &str) -> Result<Config, String> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| format!("engine config: {e}"))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.duration_ns == 0 {
            return Err("duration_ns: must be positive".into());
        }
        if self.interval_ns == 0 || self.trace_interval_ns == 0 {
            return Err("interval_ns/trace_interval_ns: must be positive".into());
        }
        self.network.validate()?;
        if self.flows.is_empty() {
            return Err("flows: at least one flow is needed".into());
        }
        for (i, f) in self.flows.iter().enumerate() {
            f.validate(i, self.network.bottleneck_delay_ns)?;
        }
        Ok(())
    }
}

impl NetworkConfig {
    fn validate(&self) -> Result<(), String> {
        positive("network.bottleneck_rate_bps", self.bottleneck_rate_bps)?;
        positive("network.access_rate_bps", self.access_rate_bps)?;
        if self.queue != "droptail" {
            return Err(format!("network.queue: unknown queue '{}'; allowed: droptail", self.queue));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(format!("network.loss: must be in [0, 1), got {}", self.loss));
        }
        one_limit("network.buffer", self.buffer_pkts, self.buffer_bytes)?;
        one_limit("network.reverse_buffer", self.reverse_buffer_pkts, self.reverse_buffer_bytes)
    }
}

fn one_limit(field: &str, pkts: Option<u64>, bytes: Option<u64>) -> Result<(), String> {
    match (pkts, bytes) {
        (Some(_), None) | (None, Some(_)) => Ok(()),
        _ => Err(format!("{field}: give exactly one of packets or bytes")),
    }
}

impl FlowConfig {
    fn validate(&self, i: usize, bottleneck_delay: u64) -> Result<(), String> {
        if self.rtt_ns < 2 * bottleneck_delay {
            return Err(format!("flows[{i}].rtt_ns: must be at least twice the bottleneck delay"));
        }
        if self.mss == 0 || self.mtu <= self.mss {
            return Err(format!("flows[{i}].mss: must be positive and below the MTU"));
        }
        if self.initial_cwnd == 0 {
            return Err(format!("flows[{i}].initial_cwnd: must be at least 1"));
        }
        if self.max_window_bytes.is_some_and(|w| w < self.mss as u64) {
            return Err(format!("flows[{i}].max_window_bytes: must be at least one MSS"));
        }
        if self.bytes == Some(0) {
            return Err(format!("flows[{i}].bytes: must be positive"));
        }
        crate::cc::Cc::from_config(&self.cc, &self.params)
            .map(|_| ())
            .map_err(|e| format!("flows[{i}].cc: {e}"))
    }
}
