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
use tcpeval_sim::stack::DEFAULT_STACK;

/// The algorithms with a BPF program, by the simulator's name.
const ALGORITHMS: &[&str] = &["scalable", "highspeed", "bic", "htcp", "vegas", "illinois", "yeah", "westwood"];

#[derive(Clone, Copy, Debug)]
enum Step {
    Ssthresh(u32),
    Rtt(u64),
    Advance(u64),
    SndNxt(u64),
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
    let mut take = |h: &mut Harness<_>, step: Step| {
        match step {
            Step::Ssthresh(v) => h.s.ssthresh = v,
            Step::Rtt(v) => h.rtt = v,
            Step::Advance(v) => h.advance(v),
            Step::SndNxt(v) => h.s.snd_nxt = v,
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
        }
    }
    (steps, states)
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
    a.extend([Action::Lose, Action::Round { pairs: true }, Action::Timeout]);
    a.extend([Action::Round { pairs: false }; 12]);
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

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => any::<bool>().prop_map(|pairs| Action::Round { pairs }),
        2 => Just(Action::Lose),
        1 => Just(Action::Timeout),
        1 => (2u32..3000).prop_map(Action::Ssthresh),
        2 => (20u64..400).prop_map(|ms| Action::Rtt(ms * 1_000_000)),
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
