//! Criterion benchmarks: short versions of the fixed scenarios, for regressions.
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tcpeval_sim::scenarios::{dumbbell, with_cc};

fn engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    let cases = [
        ("b_1g_50ms_20pct_3s", dumbbell(1e9, 50, 0.2, 0.0, 2, 3.0)),
        ("a_100m_100ms_1bdp_10s", dumbbell(100e6, 100, 1.0, 0.0, 2, 10.0)),
        ("e_cubic_1g_50ms_20pct_3s", with_cc(dumbbell(1e9, 50, 0.2, 0.0, 2, 3.0), "cubic")),
    ];
    for (name, cfg) in cases {
        let packets = tcpeval_sim::simulate(cfg.clone()).unwrap().sim.packets;
        g.throughput(Throughput::Elements(packets));
        g.bench_function(name, |b| b.iter(|| tcpeval_sim::simulate(cfg.clone()).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
