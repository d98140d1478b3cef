//! `cargo run --release --example stack_response`: each stack's response
//! function on the algorithm harness (docs/stacks.md): the mean window of a
//! flow acknowledged in pairs (delayed ACKs) under deterministic periodic loss,
//! one loss per 1/p packets, per algorithm and stack. No network: it isolates
//! the growth rules the stacks switch.

use tcpeval_sim::cc::harness::Harness;
use tcpeval_sim::stack::{Stack, STACKS};

/// Losses before measuring (MIMD algorithms converge slowly from slow start)
/// and measured.
const WARMUP_LOSSES: u32 = 150;
const MEASURED_LOSSES: u32 = 150;

fn mean_window(stack: Stack, cc: &str, p: f64) -> f64 {
    let mut h = Harness::for_stack(stack, cc, 10);
    h.s.ssthresh = 20;
    let (mut since_loss, mut losses, mut sum, mut rounds) = (0.0, 0, 0.0, 0.0);
    while losses < WARMUP_LOSSES + MEASURED_LOSSES {
        let w = h.s.cwnd as f64;
        h.ack_round_in_pairs();
        since_loss += w;
        if losses >= WARMUP_LOSSES {
            (sum, rounds) = (sum + w, rounds + 1.0);
        }
        if since_loss >= 1.0 / p {
            (since_loss, losses) = (0.0, losses + 1);
            h.lose();
        }
    }
    sum / rounds
}

fn main() {
    let names: Vec<&str> = STACKS.iter().map(|s| s.name()).collect();
    for p in [1e-4, 1e-3] {
        println!("\np = {p}: mean window (packets), delayed ACKs, periodic loss");
        println!("| cc | {} |", names.join(" | "));
        println!("|---|{}", "---|".repeat(names.len()));
        for cc in ["reno", "bic", "cubic", "scalable", "highspeed", "htcp"] {
            let cells: Vec<String> = STACKS
                .iter()
                .map(|&s| if s.offers(cc).is_ok() { format!("{:.0}", mean_window(s, cc, p)) } else { "-".into() })
                .collect();
            println!("| {cc} | {} |", cells.join(" | "));
        }
    }
}
