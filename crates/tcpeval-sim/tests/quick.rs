mod common;
use common::*;

#[test]
fn smoke_one_reno_flow() {
    let cfg = dumbbell(100e6, 50, 1.0, 20, vec![flow("reno", 50, 0.0)]);
    let r = run_checked(cfg);
    let u = utilization(&r, 100e6, 5.0, 20.0);
    eprintln!("util {u} flows {:?}", serde_json::to_string(&r.flows).unwrap());
    eprintln!("events {} packets {}", r.sim.events, r.sim.packets);
    assert!(u > 0.9);
}
