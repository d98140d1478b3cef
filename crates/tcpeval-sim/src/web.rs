//! Web-like transfers generated as the run goes (issue 29, goal 4): Poisson
//! arrivals offering a load on a link, sizes from the SURGE mixture, base RTTs
//! from a distribution; docs/traffic.md. The same models as the front end's
//! `tcpeval.traffic` (SizeModel, RttModel), drawn from the engine's seeded
//! streams. Only the next arrival is scheduled, and a finished transfer's slot is
//! reused, so memory follows the transfers in flight, not the run's total.

use crate::config::{RttConfig, SizeConfig, WebConfig};
use crate::rng::Rng;
use crate::time::{Time, SEC};
use serde::Serialize;

/// Random stream of web source k: `WEB_STREAM + k`, far above the link ids that
/// key the links' streams (rng.rs: one stream per component).
pub const WEB_STREAM: u64 = 0x5745_4200_0000_0000;

/// Standard normal CDF through the complementary error function.
pub fn phi(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// erfc with fractional error below 1.2e-7 everywhere: the Chebyshev fit of
/// Press et al., Numerical Recipes in C (2nd ed., 1992), section 6.2, `erfcc`.
pub fn erfc(x: f64) -> f64 {
    const C: [f64; 10] = [
        -1.265_512_23, 1.000_023_68, 0.374_091_96, 0.096_784_18, -0.186_288_06, 0.278_868_07, -1.135_203_98, 1.488_515_87,
        -0.822_152_23, 0.170_872_77,
    ];
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = C.iter().rev().fold(0.0, |acc, c| acc * t + c);
    let r = t * (-z * z + poly).exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// A standard normal draw (Box and Muller 1958; one of the pair is used, so a
/// draw always takes two uniforms and the stream's use is fixed).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.uniform(); // (0, 1]: ln is finite
    let u2 = rng.uniform();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

impl SizeConfig {
    fn z_k(&self) -> f64 {
        (self.k.ln() - self.mu) / self.sigma
    }

    /// E[S] of the capped mixture (tcpeval.traffic.SizeModel.mean).
    pub fn mean(&self) -> f64 {
        let z_k = self.z_k();
        let body = (self.mu + self.sigma * self.sigma / 2.0).exp() * phi(z_k - self.sigma) / phi(z_k);
        let (a, k, m) = (self.alpha, self.k, self.cap);
        let tail = a * k / (a - 1.0) * (1.0 - (k / m).powf(a - 1.0)) + m * (k / m).powf(a);
        (1.0 - self.tail_fraction) * body + self.tail_fraction * tail
    }

    /// The CDF of the continuous mixture before rounding up to whole bytes.
    pub fn cdf(&self, x: f64) -> f64 {
        if x >= self.cap {
            return 1.0;
        }
        let z_k = self.z_k();
        let z = if x > 0.0 { (x.ln() - self.mu) / self.sigma } else { f64::NEG_INFINITY };
        let body = phi(z.min(z_k)) / phi(z_k);
        let tail = if x >= self.k { 1.0 - (self.k / x).powf(self.alpha) } else { 0.0 };
        (1.0 - self.tail_fraction) * body + self.tail_fraction * tail
    }

    /// One size in whole bytes: the tail with probability `tail_fraction`
    /// (inverse Pareto CDF), else the lognormal body below k (a normal draw
    /// rejected above ln k: exact, and 93% of SURGE's draws pass at once).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let size = if rng.uniform() < self.tail_fraction {
            self.k * (1.0 - rng.uniform()).powf(-1.0 / self.alpha)
        } else {
            let z_k = self.z_k();
            let z = std::iter::repeat_with(|| normal(rng)).find(|&z| z <= z_k).expect("an endless iterator");
            (self.mu + self.sigma * z).exp()
        };
        size.ceil().clamp(self.min_size, self.cap) as u64
    }
}

impl RttConfig {
    /// One base RTT in milliseconds (tcpeval.traffic.RttModel.sample_ms).
    pub fn sample_ms(&self, rng: &mut Rng) -> f64 {
        match self.kind.as_str() {
            "uniform" => self.low_ms + (self.high_ms - self.low_ms) * rng.uniform(),
            "lognormal" => self.median_ms * (self.sigma * normal(rng)).exp(),
            "empirical" => {
                let total: f64 = self.table.iter().map(|r| r[1]).sum();
                let mut u = rng.uniform() * total;
                for r in &self.table {
                    if u < r[1] {
                        return r[0];
                    }
                    u -= r[1];
                }
                self.table.iter().rev().find(|r| r[1] > 0.0).map_or(self.value_ms, |r| r[0])
            }
            _ => self.value_ms,
        }
    }
}

/// The web transfers of a run, one column per field (a row per transfer, by
/// id): 10^6 transfers are a few tens of MB here and on their way out, where
/// one object per transfer would be over a GB in the front end.
#[derive(Serialize, Default, Debug)]
pub struct TransferTable {
    pub id: Vec<u32>,
    /// Index of the `web` source that made it.
    pub source: Vec<u32>,
    pub start_ns: Vec<u64>,
    pub rtt_ns: Vec<u64>,
    pub size_bytes: Vec<u64>,
    pub bytes_delivered: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub timeouts: Vec<u64>,
    /// When the last byte was acknowledged; None if it never was.
    pub completed_ns: Vec<Option<u64>>,
}

impl TransferTable {
    pub fn len(&self) -> usize {
        self.id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// The rows in order of id (they are recorded as transfers finish).
    pub fn sorted_by_id(self) -> TransferTable {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&i| self.id[i]);
        fn pick<T: Copy>(col: &[T], order: &[usize]) -> Vec<T> {
            order.iter().map(|&i| col[i]).collect()
        }
        TransferTable {
            id: pick(&self.id, &order),
            source: pick(&self.source, &order),
            start_ns: pick(&self.start_ns, &order),
            rtt_ns: pick(&self.rtt_ns, &order),
            size_bytes: pick(&self.size_bytes, &order),
            bytes_delivered: pick(&self.bytes_delivered, &order),
            retransmits: pick(&self.retransmits, &order),
            timeouts: pick(&self.timeouts, &order),
            completed_ns: pick(&self.completed_ns, &order),
        }
    }
}

/// A transfer about to start: its size and base RTT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transfer {
    pub bytes: u64,
    pub rtt_ns: u64,
}

/// One `web` entry of the config: its arrival process and its free slots.
pub struct WebSource {
    cfg: WebConfig,
    rng: Rng,
    /// Arrivals per second: lambda = load C / (8 E[S]) (reference digest, part D).
    rate_per_s: f64,
    /// The next arrival, seconds (kept in floating point so rounding to
    /// nanoseconds never accumulates).
    next_s: f64,
    /// Flow slots of finished transfers whose packets may still be on the way.
    pub draining: Vec<u32>,
}

impl WebSource {
    pub fn new(cfg: WebConfig, seed: u64, k: usize) -> WebSource {
        let rate_per_s = cfg.load * cfg.rate_bps / (8.0 * cfg.sizes.mean());
        let mut rng = Rng::new(seed, WEB_STREAM + k as u64);
        let next_s = cfg.start_ns as f64 / SEC as f64 + exponential(&mut rng, rate_per_s);
        WebSource { cfg, rng, rate_per_s, next_s, draining: Vec::new() }
    }

    pub fn config(&self) -> &WebConfig {
        &self.cfg
    }

    /// When the next transfer arrives, if before the source stops.
    pub fn next_arrival(&self) -> Option<Time> {
        let t = (self.next_s * SEC as f64) as Time;
        (self.rate_per_s > 0.0 && t < self.cfg.stop_ns).then_some(t)
    }

    /// The transfer arriving now; draws the one after it.
    pub fn arrive(&mut self) -> Transfer {
        let bytes = self.cfg.sizes.sample(&mut self.rng);
        let rtt_ns = (self.cfg.rtt.sample_ms(&mut self.rng) * 1e6) as u64;
        self.next_s += exponential(&mut self.rng, self.rate_per_s);
        Transfer { bytes, rtt_ns }
    }
}

/// An exponential gap with the given rate (inverse CDF).
fn exponential(rng: &mut Rng, rate: f64) -> f64 {
    if rate > 0.0 {
        -(1.0 - rng.uniform()).ln() / rate
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surge() -> SizeConfig {
        serde_json::from_str("{}").unwrap()
    }

    fn source(load: f64) -> WebSource {
        let cfg: WebConfig = serde_json::from_value(serde_json::json!({
            "load": load, "rate_bps": 1e9, "start_ns": 0, "stop_ns": u64::MAX, "cc": "reno",
            "rtt": {"kind": "uniform", "low_ms": 10.0, "high_ms": 300.0},
        }))
        .unwrap();
        WebSource::new(cfg, 7, 0)
    }

    /// Kolmogorov-Smirnov distance between a sample and a CDF.
    fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        xs.iter().enumerate().map(|(i, &x)| (cdf(x) - i as f64 / n).max((i + 1) as f64 / n - cdf(x))).fold(0.0, f64::max)
    }

    #[test]
    fn erfc_matches_known_values() {
        // Abramowitz and Stegun, table 7.1.
        for (x, v) in [(0.0, 1.0), (0.5, 0.479_500_122), (1.0, 0.157_299_207), (2.0, 0.004_677_735), (-1.0, 1.842_700_793)] {
            assert!((erfc(x) - v).abs() < 2e-7 * v.max(1e-3), "erfc({x}) = {}", erfc(x));
        }
    }

    #[test]
    fn surge_mean_is_the_front_ends() {
        // tcpeval.traffic.SizeModel().mean() = 73 050.578....
        assert!((surge().mean() / 73_050.578 - 1.0).abs() < 1e-5, "{}", surge().mean());
    }

    /// 1.95 / sqrt(n) is the KS critical value at the 0.1% level.
    #[test]
    fn sizes_and_gaps_follow_the_model() {
        let n = 20_000;
        let mut s = source(0.5);
        let mut sizes = Vec::with_capacity(n);
        let mut gaps = Vec::with_capacity(n);
        for _ in 0..n {
            let before = s.next_s;
            sizes.push(s.arrive().bytes as f64);
            gaps.push(s.next_s - before);
        }
        let limit = 1.95 / (n as f64).sqrt();
        let d = ks(sizes, |x| surge().cdf(x));
        assert!(d < limit, "sizes: D {d}");
        let rate = s.rate_per_s;
        let d = ks(gaps, |x| 1.0 - (-rate * x).exp());
        assert!(d < limit, "gaps: D {d}");
    }

    #[test]
    fn offered_load_matches_the_target() {
        // 10^6 transfers: the capped Pareto tail's CV of about 10 leaves the mean
        // within 1% (one sigma) of E[S].
        let mut s = source(0.5);
        let (mut bytes, n) = (0u64, 1_000_000);
        for _ in 0..n {
            bytes += s.arrive().bytes;
        }
        let load = bytes as f64 * 8.0 / (s.next_s * 1e9);
        assert!((load / 0.5 - 1.0).abs() < 0.03, "offered load {load}");
    }

    #[test]
    fn rtt_models_draw_within_their_support() {
        let mut rng = Rng::new(1, 2);
        let mut rtt: RttConfig = serde_json::from_str(r#"{"kind":"empirical","table":[[20,1],[80,0],[150,3]]}"#).unwrap();
        let draws: Vec<f64> = (0..4000).map(|_| rtt.sample_ms(&mut rng)).collect();
        let share_20 = draws.iter().filter(|&&x| x == 20.0).count() as f64 / 4000.0;
        assert!(draws.iter().all(|&x| x == 20.0 || x == 150.0));
        assert!((share_20 - 0.25).abs() < 0.03, "share {share_20}");
        rtt.kind = "uniform".into();
        assert!((0..1000).map(|_| rtt.sample_ms(&mut rng)).all(|x| (10.0..=300.0).contains(&x)));
        rtt.kind = "fixed".into();
        assert_eq!(rtt.sample_ms(&mut rng), 100.0);
    }

    #[test]
    fn same_seed_same_transfers() {
        let (mut a, mut b) = (source(0.3), source(0.3));
        for _ in 0..100 {
            assert_eq!(a.next_arrival(), b.next_arrival());
            assert_eq!(a.arrive(), b.arrive());
        }
    }
}
