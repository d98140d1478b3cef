//! The testbed's BPF congestion controls (python/tcpeval/testbed/bpf, issue 32)
//! against the simulator's algorithms on the same inputs. The BPF C is built in
//! user space (its shim.h stands in for the kernel structures) into a driver that
//! takes the cc harness's primitive steps on stdin; the harness takes the same
//! steps here, and after each one both must hold the same cwnd and ssthresh.
//! Skips (saying so) where no C compiler or python3 is installed.

use proptest::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use tcpeval_sim::cc::harness::Harness;
use tcpeval_sim::cc::AckSample;
use tcpeval_sim::stack::DEFAULT_STACK;

/// The algorithms with a BPF program, by the simulator's name.
const ALGORITHMS: &[&str] = &["scalable", "highspeed", "bic", "htcp", "vegas", "illinois", "yeah", "westwood", "lp", "hstcplp", "fast", "compound"];
/// The reverse path's delay in the timestamped lives (their forward delay varies).
const REVERSE: u64 = 25_000_000;

#[derive(Clone, Copy, Debug)]
enum Step {
    Ssthresh(u32),
    Rtt(u64),
    Advance(u64),
    SndNxt(u64),
    /// The next ACKs' TSval (ns) and that they echo a timestamp.
    Tsval(u64),
    Tsecr,
    /// Whether the sender is using its window (`tcp_is_cwnd_limited`).
    Limited(bool),
    Ack(u32),
    Lose,
    Timeout,
}

impl Step {
    fn command(self) -> String {
        match self {
            Step::Ssthresh(v) => format!("ssthresh {v}"),
            Step::Rtt(v) => format!("rtt {v}"),
            Step::Advance(v) => format!("advance {v}"),
            Step::SndNxt(v) => format!("snd_nxt {v}"),
            Step::Tsval(v) => format!("tsval {v}"),
            Step::Tsecr => "tsecr 0".into(),
            Step::Limited(v) => format!("limited {}", v as u8),
            Step::Ack(v) => format!("ack {v}"),
            Step::Lose => "lose".into(),
            Step::Timeout => "timeout".into(),
        }
    }
}

/// What a scenario asks for; rounds are expanded into steps from the
/// simulator's window at the time (as the harness's ack_round does).
#[derive(Clone, Copy, Debug)]
enum Action {
    Round { pairs: bool },
    Lose,
    Timeout,
    Ssthresh(u32),
    /// The RTT of the ACKs from now on (ns): queueing for the delay-based algorithms.
    Rtt(u64),
    /// A round of timestamped ACKs (for TCP-LP's one-way delay): each ACK
    /// arrives `Forward` + REVERSE after the newest segment it acknowledges
    /// was sent, its RTT sample is that interval, its TSval the segment's
    /// arrival at the receiver; the window is refilled after every ACK.
    StampedRound { pairs: bool },
    /// The forward delay of the timestamped rounds from now on (ns).
    Forward(u64),
    /// Whether the sender uses its window from now on (Linux
    /// `tcp_is_cwnd_limited`; a paced or application-limited flow does not).
    Limited(bool),
}

fn bpf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/tcpeval/testbed/bpf")
}

/// The simulator's defaults as gen_params.py reads them (what `_sim.algorithm_params()` gives).
fn params_json() -> String {
    let all: serde_json::Map<String, serde_json::Value> = tcpeval_sim::cc::REGISTRY
        .iter()
        .flat_map(|a| a.names.iter().map(move |n| (n.to_string(), serde_json::Value::Object((a.params)()))))
        .collect();
    serde_json::Value::Object(all).to_string()
}

/// Build each algorithm's driver once; None (the reason printed) when the tools are missing.
fn drivers() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        // Under target/ (cargo's scratch space for integration tests), one per run.
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bpf-agreement-{}", std::process::id()));
        std::fs::create_dir_all(&out).ok()?;
        let Ok(mut gen) = Command::new("python3")
            .arg(bpf_dir().join("gen_params.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
        else {
            eprintln!("skipped: no python3 to generate params.h");
            return None;
        };
        gen.stdin.take()?.write_all(params_json().as_bytes()).ok()?;
        let header = gen.wait_with_output().ok()?;
        assert!(header.status.success(), "gen_params.py failed");
        std::fs::write(out.join("params.h"), header.stdout).ok()?;
        for alg in ALGORITHMS {
            let src = bpf_dir().join(format!("tcpeval_{alg}.c"));
            let status = Command::new("cc")
                .args(["-O2", "-Wall", "-Werror", "-I"])
                .arg(&out)
                .arg("-I")
                .arg(bpf_dir())
                .arg("-o")
                .arg(out.join(alg))
                .arg(bpf_dir().join("driver.c"))
                .arg(src)
                .status();
            match status {
                Ok(s) => assert!(s.success(), "the user-space build of {alg} failed"),
                Err(_) => {
                    eprintln!("skipped: no C compiler (cc)");
                    return None;
                }
            }
        }
        Some(out)
    })
    .as_ref()
}

/// Run the actions on the simulator's algorithm: the steps taken and (cwnd, ssthresh) after each.
fn simulate(alg: &str, cwnd: u32, actions: &[Action]) -> (Vec<Step>, Vec<(u32, u32)>) {
    let mut h = Harness::for_stack(DEFAULT_STACK, alg, cwnd);
    let (mut steps, mut states) = (vec![], vec![]);
    let (mut tsval, mut tsecr) = (0, false);
    // Timestamped rounds: the send time of each segment in flight, and the forward delay.
    let (mut sent, mut forward) = (std::collections::VecDeque::<u64>::new(), REVERSE);
    let mut take = |h: &mut Harness<_>, step: Step| {
        match step {
            Step::Ssthresh(v) => h.s.ssthresh = v,
            Step::Rtt(v) => h.rtt = v,
            Step::Advance(v) => h.advance(v),
            Step::SndNxt(v) => h.s.snd_nxt = v,
            Step::Tsval(v) => tsval = v,
            Step::Tsecr => tsecr = true,
            Step::Limited(v) => h.s.cwnd_limited = v,
            Step::Ack(n) if tsecr => {
                // The BPF program dates the newest segment acked as now - rtt_us.
                let newest_acked_tx = h.s.now.checked_sub(h.rtt);
                let sample = AckSample { acked: n, rtt: Some(h.rtt), in_flight: h.s.cwnd, rcv_tsval: tsval, rcv_tsecr: Some(0), newest_acked_tx };
                h.ack_sample(&sample);
            }
            Step::Ack(n) => h.ack(n),
            Step::Lose => {
                h.lose();
            }
            Step::Timeout => {
                h.timeout();
            }
        }
        steps.push(step);
        states.push((h.s.cwnd, h.s.ssthresh));
    };
    for &action in actions {
        match action {
            Action::Round { pairs } => {
                let w = h.s.cwnd;
                let per_ack = if pairs { 2 } else { 1 };
                let acks = w.div_ceil(per_ack);
                let (snd_nxt, gap) = (h.s.snd_una + w as u64, h.rtt / acks as u64);
                take(&mut h, Step::SndNxt(snd_nxt));
                for i in 0..acks {
                    take(&mut h, Step::Advance(gap));
                    let n = if pairs && i == acks - 1 && w % 2 == 1 { 1 } else { per_ack };
                    take(&mut h, Step::Ack(n));
                }
            }
            Action::Lose => take(&mut h, Step::Lose),
            Action::Timeout => take(&mut h, Step::Timeout),
            Action::Ssthresh(v) => take(&mut h, Step::Ssthresh(v)),
            Action::Rtt(v) => take(&mut h, Step::Rtt(v)),
            Action::Forward(v) => forward = v,
            Action::Limited(v) => take(&mut h, Step::Limited(v)),
            Action::StampedRound { pairs } => {
                let per_ack: usize = if pairs { 2 } else { 1 };
                for _ in 0..(h.s.cwnd as usize).div_ceil(per_ack) {
                    refill(&mut h, &mut sent, &mut take);
                    let n = per_ack.min(sent.len());
                    if n == 0 {
                        break;
                    }
                    let newest = sent[n - 1];
                    let arrival = (newest + forward + REVERSE).max(h.s.now);
                    take(&mut h, Step::Rtt(arrival - newest));
                    take(&mut h, Step::Tsval(newest + forward));
                    take(&mut h, Step::Tsecr);
                    let wait = arrival - h.s.now;
                    take(&mut h, Step::Advance(wait));
                    take(&mut h, Step::Ack(n as u32));
                    sent.drain(..n);
                }
            }
        }
    }
    (steps, states)
}

/// The sender after an ACK: send what the window allows now (the time LP's
/// send log reads), and tell the driver the new snd_nxt.
fn refill(h: &mut Harness<tcpeval_sim::cc::Cc>, sent: &mut std::collections::VecDeque<u64>, take: &mut impl FnMut(&mut Harness<tcpeval_sim::cc::Cc>, Step)) {
    if sent.len() < h.s.cwnd as usize {
        sent.resize(h.s.cwnd as usize, h.s.now);
        h.s.last_send_time = h.s.now;
        take(h, Step::SndNxt(h.s.snd_una + sent.len() as u64));
    }
}

fn run_driver(dir: &Path, alg: &str, cwnd: u32, steps: &[Step]) -> Vec<(u32, u32)> {
    let mut script = format!("init {cwnd}\n");
    for s in steps {
        script.push_str(&s.command());
        script.push('\n');
    }
    let mut child = Command::new(dir.join(alg)).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    // Written from a thread: the driver answers as it reads, and a full
    // stdout pipe would block it while we still write.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(script.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "driver {alg} rejected the script");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(|l| {
        let mut it = l.split(' ').map(|v| v.parse::<u32>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    });
    lines.next(); // the state after init
    lines.collect()
}

/// Both sides step by step; the first difference names the step.
fn agree(alg: &str, cwnd: u32, actions: &[Action]) -> Result<(), String> {
    let Some(dir) = drivers() else { return Ok(()) };
    let (steps, want) = simulate(alg, cwnd, actions);
    let got = run_driver(dir, alg, cwnd, &steps);
    assert_eq!(got.len(), want.len(), "{alg}: the driver answered {} of {} steps", got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if g != w {
            return Err(format!("{alg} from cwnd {cwnd}: step {i} ({:?}): BPF (cwnd, ssthresh) {g:?}, simulator {w:?}", steps[i]));
        }
    }
    Ok(())
}

/// Slow start, a loss, avoidance with delayed ACKs, another loss, a timeout and recovery from it.
fn life() -> Vec<Action> {
    let mut a = vec![Action::Round { pairs: false }; 4];
    a.push(Action::Lose);
    a.extend([Action::Round { pairs: true }; 15]);
    // Queueing: the RTT grows by half, then drains.
    a.push(Action::Rtt(150_000_000));
    a.extend([Action::Round { pairs: true }; 10]);
    a.push(Action::Rtt(100_000_000));
    a.extend([Action::Round { pairs: true }; 5]);
    // Small queues, around Vegas's alpha and beta and Illinois's thresholds.
    for ms in [101, 102, 103, 104, 105, 106, 108, 110, 115, 100] {
        a.push(Action::Rtt(ms * 1_000_000));
        a.extend([Action::Round { pairs: false }, Action::Round { pairs: true }]);
    }
    // Rounds that leave the window unused (a paced or application-limited
    // sender): Linux's modules grow only when tcp_is_cwnd_limited; Vegas's,
    // Illinois's and FAST's round updates run regardless.
    a.extend([Action::Limited(false), Action::Rtt(104_000_000), Action::Round { pairs: true }]);
    a.extend([Action::Rtt(100_000_000), Action::Round { pairs: true }, Action::Limited(true)]);
    a.extend([Action::Lose, Action::Round { pairs: true }, Action::Timeout]);
    a.extend([Action::Round { pairs: false }; 3]);
    a.extend([Action::Limited(false), Action::Round { pairs: false }, Action::Limited(true)]);
    a.extend([Action::Round { pairs: false }; 8]);
    a
}

#[test]
fn each_bpf_algorithm_follows_the_simulator_through_a_life() {
    for alg in ALGORITHMS {
        for cwnd in [10, 200] {
            agree(alg, cwnd, &life()).unwrap();
        }
        // Above Scalable's 100-packet and HighSpeed's 38-packet thresholds.
        let mut big = vec![Action::Ssthresh(1000)];
        big.extend([Action::Round { pairs: true }; 3]);
        big.push(Action::Lose);
        big.extend([Action::Round { pairs: false }; 3]);
        agree(alg, 1000, &big).unwrap();
        // Avoidance before any loss, one packet per ACK (BIC's no-loss cap
        // with its ACK ratio drifting from 2 to 1).
        let mut no_loss = vec![Action::Ssthresh(500)];
        no_loss.extend([Action::Round { pairs: false }; 6]);
        agree(alg, 600, &no_loss).unwrap();
    }
}

#[test]
fn westwood_follows_the_simulator_with_rtts_between_whole_jiffies() {
    // Westwood+ counts in 1 ms jiffies and rounds RTT samples up: RTTs off the
    // millisecond grid, and sampling windows that close a fraction of a jiffy
    // apart, must give the same windows on both sides.
    let mut a = vec![Action::Rtt(20_400_000)];
    a.extend([Action::Round { pairs: false }; 5]);
    a.push(Action::Lose);
    for us in [60_700, 49_999, 50_001, 120_300, 80_900] {
        a.push(Action::Rtt(us * 1000));
        a.extend([Action::Round { pairs: true }, Action::Round { pairs: false }, Action::Lose]);
    }
    a.extend([Action::Timeout, Action::Round { pairs: false }, Action::Round { pairs: true }, Action::Lose]);
    for cwnd in [10, 300] {
        agree("westwood", cwnd, &a).unwrap();
    }
}

/// Compound's delay window through each of its rules: rounds at the base RTT
/// above the low window (dwnd grows by alpha win^(3/4) - 1 a round), a queue
/// below gamma (it still grows), one above (it shrinks, to 0), a loss (the split
/// of win (1 - beta)), growth again, a timeout (dwnd cleared) and slow start
/// back; RTTs off the ms grid.
#[test]
fn compound_follows_the_simulator_through_its_delay_window() {
    let mut a = vec![Action::Ssthresh(45)];
    a.extend([Action::Round { pairs: true }; 8]);
    a.push(Action::Rtt(100_700_300));
    a.extend([Action::Round { pairs: false }, Action::Round { pairs: true }]);
    a.push(Action::Rtt(160_300_000));
    a.extend([Action::Round { pairs: true }; 6]);
    a.push(Action::Rtt(100_000_000));
    a.extend([Action::Round { pairs: false }; 3]);
    a.extend([Action::Lose, Action::Round { pairs: true }, Action::Round { pairs: true }, Action::Lose]);
    a.extend([Action::Round { pairs: false }; 4]);
    a.extend([Action::Timeout, Action::Ssthresh(80)]);
    a.extend([Action::Round { pairs: true }; 10]);
    for cwnd in [50, 300, 5000] {
        // The life really runs the delay window: an ACK adds more than one
        // packet (a dwnd step up) and one takes some away (a step down).
        let (steps, states) = simulate("compound", cwnd, &a);
        let acks: Vec<(u32, u32)> = states.windows(2).zip(&steps[1..]).filter(|(_, s)| matches!(s, Step::Ack(_))).map(|(w, _)| (w[0].0, w[1].0)).collect();
        assert!(acks.iter().any(|&(before, after)| after >= before + 2 && before >= 45), "from {cwnd}: no dwnd step up");
        assert!(acks.iter().any(|&(before, after)| after < before), "from {cwnd}: no dwnd step down");
        agree("compound", cwnd, &a).unwrap();
    }
}

/// The algorithms that read the ACKs' timestamps (TCP-LP's one-way delay).
const STAMPED: &[&str] = &["lp", "hstcplp"];

/// A steady path, a rise of the forward delay (an ECI: halve), a further rise
/// inside the inference window (cwnd 1), recovery, a loss; delays off the ms grid.
fn stamped_life() -> Vec<Action> {
    let mut a = vec![Action::Forward(25_000_000)];
    a.extend([Action::StampedRound { pairs: false }; 4]);
    a.push(Action::Forward(26_337_000));
    a.extend([Action::StampedRound { pairs: true }; 2]);
    a.push(Action::Forward(41_000_000));
    a.extend([Action::StampedRound { pairs: true }; 2]);
    a.push(Action::Forward(25_000_000));
    a.extend([Action::StampedRound { pairs: false }; 8]);
    a.extend([Action::Forward(29_999_000), Action::StampedRound { pairs: true }]);
    a.extend([Action::Lose, Action::StampedRound { pairs: false }, Action::StampedRound { pairs: true }]);
    a
}

#[test]
fn each_timestamp_algorithm_follows_the_simulator_through_a_stamped_life() {
    for alg in STAMPED {
        for cwnd in [10, 150] {
            // The life really triggers early congestion indications: a collapse to 1.
            let (_, states) = simulate(alg, cwnd, &stamped_life());
            assert!(states.iter().any(|&(c, _)| c == 1), "{alg}: no collapse in the life");
            let mut life = stamped_life();
            // A timeout restores slow start: room for it above the small window.
            life.extend([Action::Timeout, Action::Ssthresh(64)]);
            life.extend([Action::StampedRound { pairs: false }; 8]);
            agree(alg, cwnd, &life).unwrap();
        }
    }
}

fn stamped_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => any::<bool>().prop_map(|pairs| Action::StampedRound { pairs }),
        3 => (10_000u64..80_000).prop_map(|us| Action::Forward(us * 1000)),
        1 => Just(Action::Lose),
        1 => Just(Action::Timeout),
        1 => (2u32..1000).prop_map(Action::Ssthresh),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn each_timestamp_algorithm_follows_the_simulator_on_random_stamped_lives(
        cwnd in 2u32..400,
        actions in proptest::collection::vec(stamped_action(), 1..20),
    ) {
        for alg in STAMPED {
            prop_assert!(agree(alg, cwnd, &actions).is_ok(), "{}", agree(alg, cwnd, &actions).unwrap_err());
        }
    }
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => any::<bool>().prop_map(|pairs| Action::Round { pairs }),
        2 => Just(Action::Lose),
        1 => Just(Action::Timeout),
        1 => (2u32..3000).prop_map(Action::Ssthresh),
        2 => (20u64..400).prop_map(|ms| Action::Rtt(ms * 1_000_000)),
        1 => any::<bool>().prop_map(Action::Limited),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn each_bpf_algorithm_follows_the_simulator_on_random_lives(
        cwnd in 2u32..2000,
        actions in proptest::collection::vec(action(), 1..25),
    ) {
        for alg in ALGORITHMS {
            prop_assert!(agree(alg, cwnd, &actions).is_ok(), "{}", agree(alg, cwnd, &actions).unwrap_err());
        }
    }
}

#[test]
fn the_agreement_test_can_fail() {
    // The driver really runs the algorithm: with the ACKs emptied its window
    // stays where the simulator's grew.
    let Some(dir) = drivers() else { return };
    let (steps, want) = simulate("scalable", 10, &[Action::Round { pairs: false }; 3]);
    let fewer: Vec<Step> = steps.iter().map(|s| if let Step::Ack(_) = s { Step::Ack(0) } else { *s }).collect();
    assert_ne!(run_driver(dir, "scalable", 10, &fewer), want);
}
