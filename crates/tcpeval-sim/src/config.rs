//! The engine's input: a fully resolved scenario (docs/engine-interface.md). The
//! Python front end resolves units and defaults; this module only checks that the
//! values are usable, naming the field when they are not.

use crate::cc::Cc;
use crate::consts;
use crate::stack::Stack;
use crate::tcp::rack::LossDetection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Seed of every random stream of the run (loss, RED, send overhead).
    pub seed: u64,
    /// Simulated time of the run.
    pub duration_ns: u64,
    /// Report interval of the per-interval tables.
    pub interval_ns: u64,
    /// Sampling interval of the cwnd/RTT trace and the queue trace.
    pub trace_interval_ns: u64,
    pub network: NetworkConfig,
    /// TCP flows (one per stream), in the order of their ids.
    pub flows: Vec<FlowConfig>,
    /// UDP cross-traffic streams (constant rate or sinusoidal).
    #[serde(default)]
    pub udp: Vec<UdpConfig>,
    /// Web-like transfers generated as the run goes (crate::web): each entry is a
    /// Poisson source of transfers; they are reported after `flows`, ids
    /// following on in order of arrival.
    #[serde(default)]
    pub web: Vec<WebConfig>,
    /// Packet capture (crate::capture); absent: none.
    #[serde(default)]
    pub capture: Option<crate::capture::CaptureConfig>,
}

/// A source of web-like transfers (docs/traffic.md): Poisson arrivals offering
/// `load` of `rate_bps` on average between start and stop, each a TCP transfer
/// of a size from `sizes` over a base RTT from `rtt`.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// Offered load as a fraction of `rate_bps` (0 generates nothing).
    pub load: f64,
    /// The capacity the load is a fraction of (the bottleneck's).
    pub rate_bps: f64,
    /// The first transfer arrives one exponential gap after this time.
    #[serde(default)]
    pub start_ns: u64,
    /// No transfer arrives from this time on (running ones go on).
    pub stop_ns: u64,
    /// Transfer sizes (default: SURGE's).
    #[serde(default)]
    pub sizes: SizeConfig,
    /// Base RTT of each transfer (below its path's: the path's).
    pub rtt: RttConfig,
    /// The transfers' congestion-control algorithm.
    #[schemars(schema_with = "cc_schema")]
    pub cc: String,
    /// The algorithm's parameters, as a flow's.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// "forward" (data over the forward bottleneck) or "reverse".
    #[serde(default = "default_direction")]
    #[schemars(schema_with = "direction_schema")]
    pub direction: String,
    /// Receive window of each transfer; absent: unlimited.
    #[serde(default)]
    pub max_window_bytes: Option<u64>,
    /// The transfers' TCP stack, as a flow's (docs/stacks.md); each transfer
    /// also takes the stack's initial window and delayed-ACK timer.
    #[serde(default = "default_stack")]
    #[schemars(schema_with = "stack_schema")]
    pub stack: String,
}

/// Transfer sizes in bytes: lognormal body (mu, sigma in ln bytes) below k, a
/// Pareto tail (alpha) above it drawn with probability `tail_fraction`, rounded up
/// and kept in [min_size, cap]. Defaults: SURGE (Barford and Crovella,
/// SIGMETRICS 1998, table 2), as tcpeval.traffic.SizeModel.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct SizeConfig {
    /// Mean of ln(size) of the lognormal body.
    pub mu: f64,
    /// Standard deviation of ln(size) of the body.
    pub sigma: f64,
    /// Pareto shape of the tail (above 1: a finite mean).
    pub alpha: f64,
    /// Bytes where the body ends and the tail begins.
    pub k: f64,
    /// Share of transfers drawn from the tail.
    pub tail_fraction: f64,
    /// Largest size in bytes (the tail's variance is infinite otherwise).
    pub cap: f64,
    /// Smallest size in bytes.
    pub min_size: f64,
}

impl Default for SizeConfig {
    fn default() -> Self {
        SizeConfig { mu: 9.357, sigma: 1.318, alpha: 1.1, k: 133_000.0, tail_fraction: 0.07, cap: 100e6, min_size: 1.0 }
    }
}

/// Base RTTs in milliseconds: `fixed` (value_ms), `uniform` [low_ms, high_ms],
/// `lognormal` (median_ms, sigma) or `empirical` (rows of [rtt_ms, weight]).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct RttConfig {
    #[schemars(schema_with = "rtt_kind_schema")]
    pub kind: String,
    /// `fixed`: the RTT.
    pub value_ms: f64,
    /// `uniform`: the lowest RTT.
    pub low_ms: f64,
    /// `uniform`: the highest RTT.
    pub high_ms: f64,
    /// `lognormal`: the median RTT.
    pub median_ms: f64,
    /// `lognormal`: the standard deviation of ln(RTT).
    pub sigma: f64,
    /// `empirical`: rows of [rtt_ms, weight], drawn in proportion to weight.
    pub table: Vec<[f64; 2]>,
}

impl Default for RttConfig {
    fn default() -> Self {
        RttConfig { kind: "fixed".into(), value_ms: 100.0, low_ms: 10.0, high_ms: 300.0, median_ms: 80.0, sigma: 0.8, table: vec![] }
    }
}

/// RTT distributions of web transfers.
pub const RTT_KINDS: &[&str] = &["fixed", "uniform", "lognormal", "empirical"];

fn rtt_kind_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    one_of(RTT_KINDS, Some("fixed"))
}

/// The network: a chain of bottleneck hops between routers 0..=n, hosts attached
/// to routers by access links. One hop is the dumbbell; several are a parking lot.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Rate of every host's access link.
    pub access_rate_bps: f64,
    /// The hops of the chain, in order from router 0 (at least one).
    pub hops: Vec<HopConfig>,
}

/// One bottleneck hop, both directions (forward: data from router j to j + 1).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct HopConfig {
    pub rate_bps: f64,
    /// One-way propagation delay.
    #[serde(default)]
    pub delay_ns: u64,
    /// Forward (data) queue limit: exactly one of packets or bytes.
    #[serde(default)]
    pub buffer_pkts: Option<u64>,
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    #[serde(default)]
    pub reverse_buffer_pkts: Option<u64>,
    #[serde(default)]
    pub reverse_buffer_bytes: Option<u64>,
    #[serde(default = "default_queue")]
    #[schemars(schema_with = "queue_schema")]
    pub queue: String,
    /// Bernoulli drop probability of data packets entering the forward direction.
    #[serde(default)]
    pub loss: f64,
    /// RED parameters when `queue = "red"`; missing ones are derived from the buffer.
    #[serde(default)]
    pub red: RedConfig,
    /// CoDel's parameters when `queue = "codel"` (docs/traffic.md).
    #[serde(default)]
    pub codel: CodelConfig,
    /// FQ-CoDel's parameters when `queue = "fq_codel"`.
    #[serde(default)]
    pub fq_codel: FqCodelConfig,
    /// PIE's parameters when `queue = "pie"`.
    #[serde(default)]
    pub pie: PieConfig,
    /// Step marking's threshold when `queue = "step"`.
    #[serde(default)]
    pub step: StepConfig,
}

/// RED thresholds (packets), EWMA weight, max drop probability, gentle mode.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    pub min_th: Option<f64>,
    pub max_th: Option<f64>,
    pub w_q: Option<f64>,
    pub max_p: Option<f64>,
    pub gentle: Option<bool>,
    /// Mark ECN-capable packets CE instead of an early drop (Linux tc red
    /// `ecn`; default off).
    pub ecn: Option<bool>,
    /// With `ecn`, still drop past max_th (2 max_th when gentle) (tc red
    /// `harddrop`; default off).
    pub harddrop: Option<bool>,
    /// Whose arrival rules: Floyd and Jacobson's (`floyd`, the default) or
    /// ns-2's queue/red.cc (`ns2`: no early drop while at most one packet
    /// waits, none on the first arrival above min_th).
    pub variant: Option<RedVariant>,
}

/// RED's arrival rules (`RedConfig::variant`).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RedVariant {
    Floyd,
    Ns2,
}

/// CoDel when `queue = "codel"` (RFC 8289); absent values are Linux's
/// (net/codel.rs): target 5 ms, interval 100 ms, ECN off. The hop's buffer is
/// the limit (Linux's default: 1000 packets).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// Sojourn-time target (5 ms).
    pub target_ns: Option<u64>,
    /// Time above target before dropping, and the control law's base (100 ms).
    pub interval_ns: Option<u64>,
    /// Mark ECN-capable packets instead of dropping them (false).
    pub ecn: Option<bool>,
}

/// FQ-CoDel when `queue = "fq_codel"` (RFC 8290); absent values are Linux's
/// (net/fq_codel.rs): 1024 flows, a quantum of one MTU, 32 MB of memory, drop
/// batches of 64, CoDel's target and interval, ECN on. The hop's buffer is the
/// limit (Linux's default: 10240 packets).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Each flow queue's CoDel target (5 ms).
    pub target_ns: Option<u64>,
    /// Each flow queue's CoDel interval (100 ms).
    pub interval_ns: Option<u64>,
    /// Mark ECN-capable packets instead of dropping them (true).
    pub ecn: Option<bool>,
    /// Flow queues the packets are hashed into (1024).
    pub flows: Option<u32>,
    /// Bytes a flow may send per round robin turn (one MTU).
    pub quantum_bytes: Option<u32>,
    /// Queued bytes beyond which the fattest flow is cut (32 MB).
    pub memory_limit_bytes: Option<u64>,
    /// Most packets dropped at once from the fattest flow (64).
    pub drop_batch: Option<u32>,
}

/// PIE when `queue = "pie"` (RFC 8033); absent values are Linux's (net/pie.rs):
/// target 15 ms, tupdate 15 ms, alpha 0.125, beta 1.25, max_burst 150 ms, ECN
/// off. The hop's buffer is the limit (Linux's default: 1000 packets).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// Queue-delay target (15 ms).
    pub target_ns: Option<u64>,
    /// Time between drop-probability updates (15 ms).
    pub tupdate_ns: Option<u64>,
    /// Weight of the delay's distance from target, per second (0.125).
    pub alpha: Option<f64>,
    /// Weight of the delay's change since the last update, per second (1.25).
    pub beta: Option<f64>,
    /// Burst allowance: no early drops for this long after an idle spell (150 ms).
    pub max_burst_ns: Option<u64>,
    /// Mark ECN-capable packets instead of dropping them while the drop
    /// probability is at most 10% (false).
    pub ecn: Option<bool>,
}

/// Step marking when `queue = "step"` (RFC 8257 section 3.1): the threshold K,
/// exactly one of packets or bytes.
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// Mark arrivals finding more than this many packets queued.
    pub threshold_pkts: Option<u64>,
    /// Mark arrivals finding more than this many bytes queued.
    pub threshold_bytes: Option<u64>,
}

/// A UDP stream: rate(t) = rate + amplitude * sin(2 pi (t - start) / period + 2 pi phase).
#[derive(Deserialize, Serialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct UdpConfig {
    pub rate_bps: f64,
    #[serde(default)]
    pub amplitude_bps: f64,
    #[serde(default = "default_period")]
    pub period_ns: u64,
    /// Phase as a fraction of the period.
    #[serde(default)]
    pub phase: f64,
    #[serde(default)]
    pub start_ns: u64,
    #[serde(default)]
    pub stop_ns: Option<u64>,
    #[serde(default = "default_mtu")]
    pub packet_bytes: u32,
    #[serde(default = "default_direction")]
    #[schemars(schema_with = "direction_schema")]
    pub direction: String,
    #[serde(default)]
    pub path: Option<[u32; 2]>,
    /// Round-trip propagation delay of the stream's path (sets its access delay).
    pub rtt_ns: u64,
}

/// Directions of a stream.
pub const DIRECTIONS: &[&str] = &["forward", "reverse"];

fn one_of(names: &[&str], default: Option<&str>) -> schemars::schema::Schema {
    let mut schema = serde_json::json!({"type": "string", "enum": names});
    if let Some(d) = default {
        schema["default"] = d.into();
    }
    serde_json::from_value(schema).expect("a string enum is a schema")
}

fn cc_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    one_of(&crate::cc::names(), None)
}

fn stack_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    let names: Vec<&str> = crate::stack::STACKS.iter().map(|s| s.name()).collect();
    one_of(&names, Some(crate::stack::DEFAULT_STACK.name()))
}

/// One of the names, or null (absent: the stack's).
fn loss_detection_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    let names = crate::tcp::rack::LOSS_DETECTION_NAMES;
    let schema = serde_json::json!({"anyOf": [{"type": "string", "enum": names}, {"type": "null"}]});
    serde_json::from_value(schema).expect("a string enum or null is a schema")
}

fn default_stack() -> String {
    crate::stack::DEFAULT_STACK.name().into()
}

fn queue_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    one_of(QUEUES, Some(&default_queue()))
}

fn direction_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    one_of(DIRECTIONS, Some(&default_direction()))
}

fn default_period() -> u64 {
    60_000_000_000
}

fn default_direction() -> String {
    "forward".into()
}

fn default_queue() -> String {
    "droptail".into()
}

#[derive(Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// The congestion-control algorithm (`cc::REGISTRY`); its `params` are
    /// checked by the algorithm.
    #[schemars(schema_with = "cc_schema")]
    pub cc: String,
    /// The algorithm's parameters (docs/algorithms/), parsed by the algorithm.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Base (propagation) round-trip time: at least twice the one-way delay of
    /// the flow's path; the access link's delay makes up the rest.
    pub rtt_ns: u64,
    #[serde(default)]
    pub start_ns: u64,
    /// Bytes to transfer; absent: an unlimited backlog (bulk transfer).
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Receive window; absent: unlimited.
    #[serde(default)]
    pub max_window_bytes: Option<u64>,
    /// Payload bytes per segment: 1500 - 52 (IP, TCP and timestamp option).
    #[serde(default = "default_mss")]
    pub mss: u32,
    /// Wire bytes per full segment (headers included).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    #[serde(default = "yes")]
    pub sack: bool,
    #[serde(default = "yes")]
    pub delayed_ack: bool,
    /// Delayed-ACK timer: Linux TCP_DELACK_MIN (HZ/25).
    #[serde(default = "default_delack")]
    pub delack_timeout_ns: u64,
    /// Initial window in segments: Linux TCP_INIT_CWND (RFC 6928).
    #[serde(default = "default_iw")]
    pub initial_cwnd: u32,
    /// "forward" (data over the forward bottleneck) or "reverse".
    #[serde(default = "default_direction")]
    #[schemars(schema_with = "direction_schema")]
    pub direction: String,
    /// Routers where the flow enters and leaves the chain (parking lot).
    #[serde(default)]
    pub path: Option<[u32; 2]>,
    /// The application stops offering new data at this time.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// Record per-interval rows for this flow (off for background flows).
    #[serde(default = "yes")]
    pub trace: bool,
    /// Sender interface queue limit in packets (Linux txqueuelen); none = unlimited.
    #[serde(default)]
    pub nic_queue_pkts: Option<u64>,
    /// Random extra time, uniform in [0, this), the sending host spends on each
    /// packet: breaks the phase locking of deterministic DropTail runs. 0 (the
    /// default) draws nothing. (ns-2's `overhead_` is `send_jitter_ns`.)
    #[serde(default)]
    pub send_overhead_ns: u64,
    /// ns-2's delayed send (its TCP agents' `overhead_`, tcp/tcp.cc and
    /// tcp/tcp-linux.cc `send_much`): after an ACK, a timeout or the start, the
    /// sender waits a random time, uniform in [0, this), and then sends all the
    /// window allows at once; ACKs that arrive meanwhile send nothing of their
    /// own. 0 (the default): the sender sends at once.
    #[serde(default)]
    pub send_jitter_ns: u64,
    /// A label echoed in the results (e.g. "web", "background", or the parent
    /// flow of parallel streams).
    #[serde(default)]
    pub group: Option<String>,
    /// The TCP stack the flow's sender and receiver run, with its era's
    /// algorithm variants and switches (docs/stacks.md); "linux-6.6" is
    /// today's behaviour.
    #[serde(default = "default_stack")]
    #[schemars(schema_with = "stack_schema")]
    pub stack: String,
    /// Negotiate ECN (RFC 3168; tcp::ecn): data leaves ECT(0), AQM queues with
    /// ECN on mark it CE instead of dropping, the receiver echoes ECE and the
    /// sender reduces once per RTT. An algorithm that needs ECN (DCTCP) uses
    /// it whatever this says, as Linux's `tcp_ca_needs_ecn`.
    #[serde(default)]
    pub ecn: bool,
    /// How the sender detects losses: "dupthresh" (RFC 6675), "dupthresh-tlp"
    /// (with 3.10's tail loss probe and early retransmit), "rack" (RACK-TLP,
    /// RFC 8985), "fack" (forward acknowledgment, Linux 2.4-4.14) or
    /// "fack-tlp" (FACK with 3.10's probe and early retransmit, 3.16's
    /// default); absent: the stack's (docs/stacks.md). Without SACK,
    /// NewReno's DupThresh.
    #[serde(default)]
    #[schemars(schema_with = "loss_detection_schema")]
    pub loss_detection: Option<String>,
    /// Segments the receiver ACKs at once at the start of the connection
    /// (Linux quick-ACK mode, `TCP_MAX_QUICKACKS` 16; ns-2's sinks 1, segment
    /// 0); absent: the stack's (docs/stacks.md).
    #[serde(default)]
    pub quickacks: Option<u32>,
}

fn default_mss() -> u32 {
    consts::MSS_BYTES
}
fn default_mtu() -> u32 {
    consts::MTU_BYTES
}
fn yes() -> bool {
    true
}
fn default_delack() -> u64 {
    consts::DELACK_TIMEOUT_NS
}
fn default_iw() -> u32 {
    consts::INITIAL_CWND
}

impl FlowConfig {
    /// A bulk flow with every default (those of the JSON interface).
    pub fn bulk(cc: &str, rtt_ns: u64) -> FlowConfig {
        serde_json::from_value(serde_json::json!({"cc": cc, "rtt_ns": rtt_ns})).expect("defaults are valid")
    }
}

impl NetworkConfig {
    /// A DropTail dumbbell with the same buffer (packets) in both directions and
    /// access links ten times faster than the bottleneck.
    pub fn dumbbell(rate_bps: f64, buffer_pkts: u64) -> NetworkConfig {
        serde_json::from_value(serde_json::json!({
            "access_rate_bps": rate_bps * 10.0,
            "hops": [{"rate_bps": rate_bps, "buffer_pkts": buffer_pkts, "reverse_buffer_pkts": buffer_pkts}],
        }))
        .expect("defaults are valid")
    }
}

/// An input the engine cannot run: the path of the field at fault
/// (`flows[2].params.beta`, `network.hops[1].loss`; `config` for the whole
/// document) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

fn err(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { path: path.into(), message: message.into() }
}

/// A configuration that passed validation, with each flow's algorithm built:
/// what the simulation takes, so nothing is checked or built twice.
#[derive(Clone, Debug)]
pub struct ValidConfig {
    cfg: Config,
    algorithms: Vec<Cc>,
    web_algorithms: Vec<Cc>,
}

impl ValidConfig {
    /// The algorithm of each flow, as configured (each sender takes a copy).
    pub fn algorithms(&self) -> &[Cc] {
        &self.algorithms
    }

    /// The algorithm of each web source's transfers.
    pub fn web_algorithms(&self) -> &[Cc] {
        &self.web_algorithms
    }
}

impl std::ops::Deref for ValidConfig {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.cfg
    }
}

fn positive(field: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(err(field, format!("must be a positive number, got {v}")))
    }
}

/// The JSON Schema of the engine's input, generated from these types: the
/// contract between the front end and the engine (docs/engine-interface.md).
/// Each flow's `params` are described by its algorithm's config struct (one
/// `if cc is NAME then params is ...` per algorithm). Value rules beyond types
/// (positive rates, paths within the chain, checks between parameters) are
/// `Config::validated`'s.
pub fn schema() -> Value {
    let mut root = serde_json::to_value(schemars::schema_for!(Config)).expect("a schema is JSON");
    root["definitions"]["FlowConfig"]["allOf"] = Value::Array(crate::cc::REGISTRY.iter().map(params_by_cc).collect());
    root
}

/// `params` follow `alg`'s config struct when `cc` is one of its names.
fn params_by_cc(alg: &crate::cc::Algorithm) -> Value {
    let mut params = serde_json::to_value((alg.schema)()).expect("a schema is JSON");
    params.as_object_mut().expect("an object schema").remove("$schema");
    serde_json::json!({
        "if": {"properties": {"cc": {"enum": alg.names}}, "required": ["cc"]},
        "then": {"properties": {"params": params}},
    })
}

impl Config {
    /// Parse and validate a JSON configuration: the one place the engine's
    /// input is checked.
    pub fn from_json(text: &str) -> Result<ValidConfig, ConfigError> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| field_error(text, &e))?;
        cfg.validated()
    }

    /// Check every value and build each flow's algorithm, once.
    pub fn validated(self) -> Result<ValidConfig, ConfigError> {
        let delays = self.network.hop_delays();
        self.check(&delays)?;
        let algorithms = self.flows.iter().enumerate().map(|(i, f)| f.validate(i, &delays)).collect::<Result<_, _>>()?;
        let web_algorithms = self.web.iter().enumerate().map(|(i, w)| w.validate(i, &delays, self.duration_ns)).collect::<Result<_, _>>()?;
        Ok(ValidConfig { cfg: self, algorithms, web_algorithms })
    }

    fn check(&self, delays: &[u64]) -> Result<(), ConfigError> {
        if self.duration_ns == 0 {
            return Err(err("duration_ns", "must be positive"));
        }
        if self.interval_ns == 0 {
            return Err(err("interval_ns", "must be positive"));
        }
        if self.trace_interval_ns == 0 {
            return Err(err("trace_interval_ns", "must be positive"));
        }
        self.network.validate()?;
        if self.flows.is_empty() && self.udp.is_empty() && !self.web.iter().any(|w| w.load > 0.0) {
            return Err(err("flows", "at least one flow, UDP stream or web load is needed"));
        }
        for (i, u) in self.udp.iter().enumerate() {
            u.validate(i, delays)?;
        }
        if let Some(c) = &self.capture {
            c.resolve(self)?;
        }
        Ok(())
    }
}

/// Routers a stream enters and leaves: its path, or the chain's ends by direction.
pub fn endpoints(direction: &str, path: Option<[u32; 2]>, n_hops: usize) -> [u32; 2] {
    match (path, direction) {
        (Some(p), _) => p,
        (None, "reverse") => [n_hops as u32, 0],
        (None, _) => [0, n_hops as u32],
    }
}

fn check_path(field: &str, direction: &str, path: Option<[u32; 2]>, delays: &[u64], rtt_ns: u64) -> Result<(), ConfigError> {
    if !DIRECTIONS.contains(&direction) {
        return Err(err(format!("{field}.direction"), format!("unknown direction '{direction}'; allowed: {}", DIRECTIONS.join(", "))));
    }
    let n = delays.len();
    let [a, b] = endpoints(direction, path, n);
    if a == b || a as usize > n || b as usize > n {
        return Err(err(format!("{field}.path"), format!("give [enter, leave], two different routers in 0..{n}, got [{a}, {b}]")));
    }
    let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
    let one_way: u64 = delays[lo..hi].iter().sum();
    if rtt_ns < 2 * one_way {
        let ms = |ns: u64| ns as f64 / 1e6;
        let message = format!("{} ms is less than twice the one-way delay of the path ({} ms)", ms(rtt_ns), ms(one_way));
        return Err(err(format!("{field}.rtt_ns"), message));
    }
    Ok(())
}

impl UdpConfig {
    fn validate(&self, i: usize, delays: &[u64]) -> Result<(), ConfigError> {
        let field = format!("udp[{i}]");
        if !(self.rate_bps.is_finite() && self.rate_bps >= 0.0) {
            return Err(err(format!("{field}.rate_bps"), "must be a non-negative number"));
        }
        if !self.amplitude_bps.is_finite() || self.amplitude_bps < 0.0 {
            return Err(err(format!("{field}.amplitude_bps"), "must be a non-negative number"));
        }
        if self.period_ns == 0 {
            return Err(err(format!("{field}.period_ns"), "must be positive"));
        }
        if self.packet_bytes < 29 {
            return Err(err(format!("{field}.packet_bytes"), "must exceed the 28-byte IP+UDP header"));
        }
        check_path(&field, &self.direction, self.path, delays, self.rtt_ns)
    }
}

impl WebConfig {
    /// Check the source and build its transfers' algorithm.
    fn validate(&self, i: usize, delays: &[u64], duration_ns: u64) -> Result<Cc, ConfigError> {
        let field = format!("web[{i}]");
        if !(self.load.is_finite() && self.load >= 0.0) {
            return Err(err(format!("{field}.load"), format!("must be a non-negative number, got {}", self.load)));
        }
        positive(&format!("{field}.rate_bps"), self.rate_bps)?;
        if self.start_ns >= self.stop_ns || self.start_ns > duration_ns {
            return Err(err(format!("{field}.start_ns"), "must be before stop_ns and within the run"));
        }
        if self.max_window_bytes.is_some_and(|w| w < consts::MSS_BYTES as u64) {
            return Err(err(format!("{field}.max_window_bytes"), format!("must be at least one MSS ({} B)", consts::MSS_BYTES)));
        }
        self.sizes.validate(&format!("{field}.sizes"))?;
        self.rtt.validate(&format!("{field}.rtt"))?;
        // An RTT below the path's is raised to it (build::host_pair's access
        // delay cannot be negative); the path itself must be valid.
        check_path(&field, &self.direction, None, delays, u64::MAX)?;
        let stack = Stack::from_name(&self.stack).map_err(|m| err(format!("{field}.stack"), m))?;
        let (cc, _) = stack.build(&self.cc, &self.params).map_err(|e| err(format!("{field}.{}", e.field), e.message))?;
        Ok(cc)
    }
}

impl SizeConfig {
    fn validate(&self, field: &str) -> Result<(), ConfigError> {
        for (name, v) in [("sigma", self.sigma), ("k", self.k), ("cap", self.cap), ("min_size", self.min_size)] {
            positive(&format!("{field}.{name}"), v)?;
        }
        if !(self.alpha.is_finite() && self.alpha > 1.0) {
            return Err(err(format!("{field}.alpha"), format!("must exceed 1 (a finite mean), got {}", self.alpha)));
        }
        if !(0.0..=1.0).contains(&self.tail_fraction) {
            return Err(err(format!("{field}.tail_fraction"), format!("must be in [0, 1], got {}", self.tail_fraction)));
        }
        if !self.mu.is_finite() || self.cap < self.min_size {
            return Err(err(field, "mu must be finite and cap at least min_size"));
        }
        Ok(())
    }
}

impl RttConfig {
    fn validate(&self, field: &str) -> Result<(), ConfigError> {
        match self.kind.as_str() {
            "fixed" => positive(&format!("{field}.value_ms"), self.value_ms),
            "uniform" if !(self.low_ms > 0.0 && self.high_ms >= self.low_ms && self.high_ms.is_finite()) => {
                Err(err(field, format!("give 0 < low_ms <= high_ms, got {} and {}", self.low_ms, self.high_ms)))
            }
            "lognormal" => positive(&format!("{field}.median_ms"), self.median_ms).and(positive(&format!("{field}.sigma"), self.sigma)),
            "empirical" if self.table.is_empty() || self.table.iter().any(|r| !(r[0] > 0.0 && r[1] >= 0.0)) || self.table.iter().all(|r| r[1] <= 0.0) => {
                Err(err(format!("{field}.table"), "give [rtt_ms, weight] rows: RTTs positive, weights non-negative, some weight positive"))
            }
            k if !RTT_KINDS.contains(&k) => Err(err(format!("{field}.kind"), format!("unknown RTT distribution '{k}'; allowed: {}", RTT_KINDS.join(", ")))),
            _ => Ok(()),
        }
    }
}

impl NetworkConfig {
    /// One-way delay of each hop, in chain order.
    pub fn hop_delays(&self) -> Vec<u64> {
        self.hops.iter().map(|h| h.delay_ns).collect()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        positive("network.access_rate_bps", self.access_rate_bps)?;
        if self.hops.is_empty() {
            return Err(err("network.hops", "at least one hop is needed"));
        }
        for (j, h) in self.hops.iter().enumerate() {
            h.validate(&format!("network.hops[{j}]"))?;
        }
        Ok(())
    }
}

/// Queue disciplines accepted in scenarios.
pub const QUEUES: &[&str] = &["droptail", "red", "codel", "fq_codel", "pie", "step"];

impl HopConfig {
    fn validate(&self, field: &str) -> Result<(), ConfigError> {
        positive(&format!("{field}.rate_bps"), self.rate_bps)?;
        if !QUEUES.contains(&self.queue.as_str()) {
            return Err(err(format!("{field}.queue"), format!("unknown queue '{}'; allowed: {}", self.queue, QUEUES.join(", "))));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(err(format!("{field}.loss"), format!("must be in [0, 1), got {}", self.loss)));
        }
        one_limit(&format!("{field}.buffer"), self.buffer_pkts, self.buffer_bytes)?;
        one_limit(&format!("{field}.reverse_buffer"), self.reverse_buffer_pkts, self.reverse_buffer_bytes)?;
        self.validate_aqm(field)?;
        self.red.validate(&format!("{field}.red"))
    }
}

/// Linux takes times in u32 microseconds (tc's netlink attributes).
const MAX_AQM_TIME_NS: u64 = u32::MAX as u64 * 1_000;

fn aqm_time(field: &str, v: Option<u64>) -> Result<(), ConfigError> {
    match v {
        Some(t) if t == 0 || t > MAX_AQM_TIME_NS => Err(err(field, format!("must be in [1, {MAX_AQM_TIME_NS}] ns, got {t}"))),
        _ => Ok(()),
    }
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(field: &str, v: Option<T>, lo: T, hi: T) -> Result<(), ConfigError> {
    match v {
        Some(x) if !(lo <= x && x <= hi) => Err(err(field, format!("must be in [{lo}, {hi}], got {x}"))),
        _ => Ok(()),
    }
}

impl HopConfig {
    /// The parameters of the hop's AQM (the other disciplines' tables are not read).
    fn validate_aqm(&self, field: &str) -> Result<(), ConfigError> {
        let (c, f, p) = (&self.codel, &self.fq_codel, &self.pie);
        aqm_time(&format!("{field}.codel.target_ns"), c.target_ns)?;
        aqm_time(&format!("{field}.codel.interval_ns"), c.interval_ns)?;
        aqm_time(&format!("{field}.fq_codel.target_ns"), f.target_ns)?;
        aqm_time(&format!("{field}.fq_codel.interval_ns"), f.interval_ns)?;
        // Linux fq_codel_change: 1..=65536 flows, quantum at least 256, memory
        // limit at most 2^31 bytes.
        in_range(&format!("{field}.fq_codel.flows"), f.flows, 1, 65_536)?;
        in_range(&format!("{field}.fq_codel.quantum_bytes"), f.quantum_bytes, 256, 1 << 20)?;
        in_range(&format!("{field}.fq_codel.memory_limit_bytes"), f.memory_limit_bytes, 1, 1 << 31)?;
        in_range(&format!("{field}.fq_codel.drop_batch"), f.drop_batch, 1, 65_536)?;
        aqm_time(&format!("{field}.pie.target_ns"), p.target_ns)?;
        aqm_time(&format!("{field}.pie.tupdate_ns"), p.tupdate_ns)?;
        in_range(&format!("{field}.pie.max_burst_ns"), p.max_burst_ns, 0, MAX_AQM_TIME_NS)?;
        // Linux takes alpha and beta in 16ths, 0 to 32 (sch_pie.c comment).
        in_range(&format!("{field}.pie.alpha"), p.alpha, 0.0, 2.0)?;
        in_range(&format!("{field}.pie.beta"), p.beta, 0.0, 2.0)?;
        if self.queue == "step" {
            one_limit(&format!("{field}.step.threshold"), self.step.threshold_pkts, self.step.threshold_bytes)?;
        }
        Ok(())
    }
}

impl RedConfig {
    fn validate(&self, field: &str) -> Result<(), ConfigError> {
        for (name, th) in [("min_th", self.min_th), ("max_th", self.max_th)] {
            if th.is_some_and(|t| t.is_nan() || t < 0.0) {
                return Err(err(format!("{field}.{name}"), "must be >= 0"));
            }
        }
        if let (Some(lo), Some(hi)) = (self.min_th, self.max_th) {
            if hi <= lo {
                return Err(err(field, format!("min_th ({lo}) must be below max_th ({hi})")));
            }
        }
        for (name, v) in [("w_q", self.w_q), ("max_p", self.max_p)] {
            if let Some(v) = v.filter(|v| !(*v > 0.0 && *v <= 1.0)) {
                return Err(err(format!("{field}.{name}"), format!("must be in (0, 1], got {v}")));
            }
        }
        Ok(())
    }
}

fn one_limit(field: &str, pkts: Option<u64>, bytes: Option<u64>) -> Result<(), ConfigError> {
    match (pkts, bytes) {
        (Some(_), None) | (None, Some(_)) => Ok(()),
        _ => Err(err(field, "give exactly one of packets or bytes")),
    }
}

impl FlowConfig {
    /// Check the flow and build its algorithm.
    fn validate(&self, i: usize, delays: &[u64]) -> Result<Cc, ConfigError> {
        check_path(&format!("flows[{i}]"), &self.direction, self.path, delays, self.rtt_ns)?;
        if self.nic_queue_pkts == Some(0) {
            return Err(err(format!("flows[{i}].nic_queue_pkts"), "must be at least 1"));
        }
        if self.mss == 0 || self.mtu <= self.mss {
            return Err(err(format!("flows[{i}].mss"), format!("must be positive and below the MTU ({})", self.mtu)));
        }
        if self.initial_cwnd == 0 {
            return Err(err(format!("flows[{i}].initial_cwnd"), "must be at least 1"));
        }
        if self.max_window_bytes.is_some_and(|w| w < self.mss as u64) {
            return Err(err(format!("flows[{i}].max_window_bytes"), format!("must be at least one MSS ({} B)", self.mss)));
        }
        if self.bytes == Some(0) {
            return Err(err(format!("flows[{i}].bytes"), "must be positive"));
        }
        if let Some(rule) = &self.loss_detection {
            LossDetection::from_name(rule).map_err(|m| err(format!("flows[{i}].loss_detection"), m))?;
        }
        let stack = Stack::from_name(&self.stack).map_err(|m| err(format!("flows[{i}].stack"), m))?;
        let (cc, _) = stack.build(&self.cc, &self.params).map_err(|e| err(format!("flows[{i}].{}", e.field), e.message))?;
        Ok(cc)
    }
}

/// A deserialisation error named by the field it is about
/// (`flows[0].initial_cwnd: invalid type: ...`), not by its place in the text.
fn field_error(text: &str, e: &serde_json::Error) -> ConfigError {
    let msg = e.to_string();
    let msg = msg.rsplit_once(" at line ").map_or(msg.as_str(), |(m, _)| m);
    let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
    let before: String = line.chars().take(e.column().saturating_sub(1)).collect();
    let mut path = json_path(&before);
    if msg.starts_with("missing field") {
        path.pop(); // the error is about the object, not about its last key
    }
    let path = path.concat();
    let path = path.trim_start_matches('.');
    err(if path.is_empty() { "config" } else { path }, msg)
}

/// The path (`.flows`, `[0]`, `.rtt_ns`) of the value being read at the end of a
/// prefix of one line of JSON.
fn json_path(prefix: &str) -> Vec<String> {
    // Per open container: Some(last key) for an object, None for an array, and
    // the array's index.
    let mut stack: Vec<(Option<String>, usize)> = Vec::new();
    let (mut in_string, mut escaped, mut token) = (false, false, String::new());
    for c in prefix.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => token.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                token.clear();
            }
            ':' => {
                if let Some((key, _)) = stack.last_mut() {
                    *key = Some(std::mem::take(&mut token));
                }
            }
            '{' => stack.push((Some(String::new()), 0)),
            '[' => stack.push((None, 0)),
            '}' | ']' => {
                stack.pop();
            }
            ',' => {
                if let Some((None, i)) = stack.last_mut() {
                    *i += 1;
                }
            }
            _ => {}
        }
    }
    if in_string {
        // Inside a key being read (an unknown field is reported right after it).
        if let Some((Some(key), _)) = stack.last_mut() {
            *key = std::mem::take(&mut token);
        }
    }
    stack
        .into_iter()
        .map(|(key, i)| match key {
            Some(k) if k.is_empty() => String::new(),
            Some(k) => format!(".{k}"),
            None => format!("[{i}]"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        Config::from_json(text).unwrap_err().to_string()
    }

    const BASE: &str = r#"{"seed":1,"duration_ns":1000000000,"interval_ns":1000000,"trace_interval_ns":1000000,"network":{"access_rate_bps":1e8,"hops":[{"rate_bps":1e7,"buffer_pkts":10,"reverse_buffer_pkts":10}]},"flows":[{"cc":"reno","rtt_ns":1000000},{"cc":"reno","rtt_ns":1000000,"initial_cwnd":IW}]}"#;

    #[test]
    fn the_schema_carries_the_names_requirements_and_defaults() {
        let s = schema();
        let flow = &s["definitions"]["FlowConfig"];
        let names: Vec<&str> = flow["properties"]["cc"]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(names, crate::cc::names());
        assert_eq!(flow["required"], serde_json::json!(["cc", "rtt_ns"]));
        assert_eq!(flow["properties"]["initial_cwnd"]["default"], 10);
        assert_eq!(flow["properties"]["direction"]["default"], "forward");
        assert_eq!(s["properties"]["udp"]["default"], serde_json::json!([]));
        assert_eq!(s["additionalProperties"], false);
        let by_cc = flow["allOf"].as_array().unwrap();
        assert_eq!(by_cc.len(), crate::cc::REGISTRY.len());
        let cubic = by_cc.iter().find(|c| c["if"]["properties"]["cc"]["enum"][0] == "cubic").unwrap();
        assert_eq!(cubic["then"]["properties"]["params"]["properties"]["beta"]["maximum"], 0.95);
    }

    #[test]
    fn validation_errors_carry_the_path_apart_from_the_message() {
        let e = Config::from_json(&BASE.replace("IW", "0")).unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("flows[1].initial_cwnd", "must be at least 1"));
        let bad = BASE.replace("IW", "10").replacen(r#""cc":"reno""#, r#""cc":"cubic","params":{"betta":1}"#, 1);
        let e = Config::from_json(&bad).unwrap_err();
        assert_eq!(e.path, "flows[0].params.betta");
        assert!(e.message.contains("allowed: beta, c"), "{e}");
    }

    #[test]
    fn hop_and_path_errors_say_what_is_allowed() {
        let red = BASE.replace("IW", "10").replace(r#""buffer_pkts":10"#, r#""buffer_pkts":10,"red":{"min_th":5,"max_th":3}"#);
        let e = Config::from_json(&red).unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("network.hops[0].red", "min_th (5) must be below max_th (3)"));
        let path = BASE.replace("IW", "10").replacen(r#""rtt_ns":1000000}"#, r#""rtt_ns":1000000,"path":[0,2]}"#, 1);
        let e = Config::from_json(&path).unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("flows[0].path", "give [enter, leave], two different routers in 0..1, got [0, 2]"));
    }

    /// Issue 33.1: the AQM tables' values are checked against Linux's ranges,
    /// by field; step marking needs its threshold.
    #[test]
    fn aqm_parameters_are_checked_by_field() {
        let hop = |extra: &str| BASE.replace("IW", "10").replace(r#""buffer_pkts":10"#, &format!(r#""buffer_pkts":10,{extra}"#));
        let cases = [
            (r#""queue":"codel","codel":{"target_ns":0}"#, "network.hops[0].codel.target_ns"),
            (r#""queue":"fq_codel","fq_codel":{"flows":70000}"#, "network.hops[0].fq_codel.flows"),
            (r#""queue":"fq_codel","fq_codel":{"quantum_bytes":100}"#, "network.hops[0].fq_codel.quantum_bytes"),
            (r#""queue":"pie","pie":{"alpha":3.0}"#, "network.hops[0].pie.alpha"),
            (r#""queue":"step""#, "network.hops[0].step.threshold"),
            (r#""queue":"sfq""#, "network.hops[0].queue"),
        ];
        for (extra, path) in cases {
            let e = Config::from_json(&hop(extra)).unwrap_err();
            assert_eq!(e.path, path, "{extra}: {e}");
        }
        let e = Config::from_json(&hop(r#""queue":"fq_codel","fq_codel":{"flows":0}"#)).unwrap_err();
        assert_eq!(e.message, "must be in [1, 65536], got 0");
        for ok in [r#""queue":"codel","codel":{"target_ns":5000000,"ecn":true}"#, r#""queue":"step","step":{"threshold_pkts":20}"#, r#""queue":"pie""#, r#""queue":"fq_codel""#] {
            assert!(Config::from_json(&hop(ok)).is_ok(), "{ok}");
        }
    }

    /// Issue 28: an unknown stack, or an algorithm the flow's stack did not
    /// have, is an error of that flow saying what is allowed.
    #[test]
    fn a_flow_s_stack_must_exist_and_offer_its_algorithm() {
        let with = |stack: &str, cc: &str| BASE.replace("IW", "10").replacen(r#""cc":"reno""#, &format!(r#""cc":"{cc}","stack":"{stack}""#), 1);
        let e = Config::from_json(&with("linux-2.7", "reno")).unwrap_err();
        assert_eq!(e.path, "flows[0].stack");
        assert!(e.message.starts_with("unknown stack 'linux-2.7'; allowed: linux-2.4, "), "{e}");
        let e = Config::from_json(&with("linux-2.4", "cubic")).unwrap_err();
        assert_eq!(e.path, "flows[0].cc");
        assert!(e.message.starts_with("stack linux-2.4 offers reno, scalable, "), "{e}");
        assert!(matches!(Config::from_json(&with("linux-2.6.22", "cubic")).unwrap().algorithms(), [Cc::Cubic(_), Cc::Reno(_)]));
    }

    #[test]
    fn a_valid_config_holds_each_flows_algorithm() {
        let cfg = Config::from_json(&BASE.replace("IW", "10").replacen(r#""cc":"reno""#, r#""cc":"cubic""#, 1)).unwrap();
        assert!(matches!(cfg.algorithms(), [Cc::Cubic(_), Cc::Reno(_)]));
    }

    #[test]
    fn type_errors_name_the_field() {
        let e = error_of(&BASE.replace("IW", "1e20"));
        assert!(e.starts_with("flows[1].initial_cwnd: invalid type: floating point"), "{e}");
        let e = error_of(&BASE.replace("IW", "-1"));
        assert!(e.starts_with("flows[1].initial_cwnd: invalid value: integer `-1`"), "{e}");
        let e = error_of(&BASE.replace("IW", "10").replace(r#""buffer_pkts":10"#, r#""buffer_pkts":1e20"#));
        assert!(e.starts_with("network.hops[0].buffer_pkts: invalid type"), "{e}");
        let e = error_of(&BASE.replace("IW", "10").replace(r#""seed":1"#, r#""seed":-1"#));
        assert!(e.starts_with("seed: invalid value"), "{e}");
    }

    #[test]
    fn unknown_and_missing_fields_name_their_object() {
        let e = error_of(&BASE.replace(r#""initial_cwnd":IW"#, r#""initial_cwnd":10,"bogus":1"#));
        assert!(e.starts_with("flows[1].bogus: unknown field `bogus`"), "{e}");
        let e = error_of(&BASE.replace("IW", "10").replace(r#"{"cc":"reno","rtt_ns":1000000},"#, r#"{"cc":"reno"},"#));
        assert!(e.starts_with("flows[0]: missing field `rtt_ns`"), "{e}");
        let e = error_of(r#"{"seed":1}"#);
        assert!(e.starts_with("config: missing field"), "{e}");
    }

    #[test]
    fn keys_with_escapes_and_brackets_do_not_confuse_the_path() {
        let text = BASE.replace("IW", "1e20").replace(r#""cc":"reno","rtt_ns":1000000}"#, r#""cc":"reno","group":"a\"[,{x","rtt_ns":1000000}"#);
        let e = error_of(&text);
        assert!(e.starts_with("flows[1].initial_cwnd: invalid type"), "{e}");
    }
}
