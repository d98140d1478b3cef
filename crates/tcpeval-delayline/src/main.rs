//! tcpeval-delayline: the user-space propagation-delay line of the tcpeval
//! testbed, for kernels without netem (docs/testbed.md, "The delay line";
//! shared/reference/linux-testbed.md section 2a).
//!
//! Protocol with the caller: bad arguments exit 2, setup failures exit 1;
//! once bound it prints `READY` on stdout; on SIGTERM/SIGINT it prints one
//! JSON line of per-queue counters (see report.rs) and exits 0.

// Off Linux only argument parsing is live; the rest exists for its tests.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

mod args;
mod fifo;
mod netlink;
#[cfg(target_os = "linux")]
mod nfq;
mod prefix;
mod report;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod tun;

use std::process::ExitCode;

/// A failure to set up or run (no permission, missing kernel feature): exit 1.
#[derive(Debug)]
pub struct SetupError(pub String);

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match args::parse(&argv) {
        Ok(args::Command::Help) => {
            println!("{}", args::USAGE);
            ExitCode::SUCCESS
        }
        Ok(args::Command::Run(config)) => run(&config),
        Err(e) => {
            eprintln!("tcpeval-delayline: {e}\n{}", args::USAGE);
            ExitCode::from(2)
        }
    }
}

#[cfg(target_os = "linux")]
fn run(config: &args::Config) -> ExitCode {
    match run_mode(config) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(SetupError(msg)) => {
            eprintln!("tcpeval-delayline: {msg}");
            ExitCode::from(1)
        }
    }
}

#[cfg(target_os = "linux")]
fn run_mode(config: &args::Config) -> Result<String, SetupError> {
    use std::io::Write;
    // Block the signals first, so a SIGTERM during setup still ends in a report.
    let signals = sys::termination_signals().map_err(|e| SetupError(format!("signalfd: {e}")))?;
    if let Err(e) = sys::set_realtime(config.fifo_priority) {
        eprintln!(
            "tcpeval-delayline: SCHED_FIFO priority {} refused ({e}); running at normal priority, expect more lateness",
            config.fifo_priority
        );
    }
    let ready = || {
        let mut out = std::io::stdout().lock();
        // If the caller closed our stdout there is no one to tell; keep relaying.
        let _ = writeln!(out, "READY").and_then(|_| out.flush());
    };
    let (mode, entries) = match &config.mode {
        args::Mode::Nfqueue { queues } => ("nfqueue", nfq::run(queues, &signals, ready)?),
        args::Mode::Tun { dev, routes } => ("tun", tun::run(dev, routes, &signals, ready)?),
    };
    Ok(report::to_json(mode, &entries))
}

#[cfg(not(target_os = "linux"))]
fn run(_config: &args::Config) -> ExitCode {
    eprintln!("tcpeval-delayline: Linux only (NFQUEUE and TUN are Linux interfaces)");
    ExitCode::from(1)
}
