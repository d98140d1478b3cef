//! Low-priority transports (issue 4 item 3): beside a Reno or CUBIC flow they
//! yield the link. (Alone they do not yet fill it: see docs/algorithms/lp.md.)
mod common;
use common::*;

fn share_against(cc: &str, other: &str) -> f64 {
    let flows = vec![flow(other, 40, 0.0), flow(cc, 40, 5.0)];
    let r = run_checked(dumbbell(100e6, 40, 1.0, 90, flows));
    goodput_mbps(&r, 1, 30.0, 90.0) / 100.0
}

#[test]
fn lp_yields_to_reno_and_cubic() {
    for other in ["reno", "cubic"] {
        let share = share_against("lp", other);
        assert!(share <= 0.10, "TCP-LP takes {share:.3} of the link beside {other}");
    }
}

#[test]
fn hstcplp_yields_to_reno_and_cubic() {
    for other in ["reno", "cubic"] {
        let share = share_against("hstcplp", other);
        assert!(share <= 0.10, "HSTCP-LP takes {share:.3} of the link beside {other}");
    }
}
