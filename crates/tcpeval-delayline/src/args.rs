//! Command-line parsing. Pure: no I/O, so every rule is unit-tested.
//!
//! ```text
//! tcpeval-delayline nfqueue --queue NUM:DELAY_US [--queue ...] [--fifo-priority 50]
//! tcpeval-delayline tun --dev NAME --route A.B.C.D/LEN:DELAY_US [--route ...] [--fifo-priority 50]
//! ```

use crate::prefix::Prefix;
use std::fmt;

/// Default SCHED_FIFO priority (shared/reference/linux-testbed.md: `chrt -f 50`).
pub const DEFAULT_FIFO_PRIORITY: i32 = 50;
/// Valid SCHED_FIFO priorities on Linux (sched(7): 1..99).
pub const FIFO_PRIORITY_RANGE: std::ops::RangeInclusive<i32> = 1..=99;
/// Longest delay accepted per queue or route: 10 s one way covers any
/// terrestrial or geostationary path; longer is almost surely a unit mistake.
pub const MAX_DELAY_US: u64 = 10_000_000;
/// Longest interface name: IFNAMSIZ (16, linux/if.h) minus the NUL.
pub const MAX_DEV_NAME: usize = 15;

pub const USAGE: &str = "usage:
  tcpeval-delayline nfqueue --queue NUM:DELAY_US [--queue NUM:DELAY_US ...] [--fifo-priority 1-99]
  tcpeval-delayline tun --dev NAME --route A.B.C.D/LEN:DELAY_US [--route ...] [--fifo-priority 1-99]";

/// One NFQUEUE queue and the one-way delay applied to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSpec {
    pub queue: u16,
    pub delay_us: u64,
}

/// One destination prefix of the TUN mode and its delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    pub prefix: Prefix,
    pub delay_us: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Nfqueue { queues: Vec<QueueSpec> },
    Tun { dev: String, routes: Vec<RouteSpec> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub mode: Mode,
    pub fifo_priority: i32,
}

/// What the command line asked for: a run, or the usage text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Run(Config),
    Help,
}

/// A bad argument: names it and says what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: String) -> Result<T, ArgError> {
    Err(ArgError(msg))
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, ArgError> {
    let Some(mode) = args.first() else {
        return err("missing mode: expected `nfqueue` or `tun`".into());
    };
    if matches!(mode.as_str(), "-h" | "--help" | "help") {
        return Ok(Command::Help);
    }
    let opts = split_options(&args[1..])?;
    if opts.iter().any(|(k, _)| k == "--help") {
        return Ok(Command::Help);
    }
    let fifo_priority = parse_priority(&opts)?;
    let mode = match mode.as_str() {
        "nfqueue" => parse_nfqueue(&opts)?,
        "tun" => parse_tun(&opts)?,
        other => {
            return err(format!(
                "unknown mode `{other}`: expected `nfqueue` or `tun`"
            ))
        }
    };
    Ok(Command::Run(Config {
        mode,
        fifo_priority,
    }))
}

/// Splits `--key value` and `--key=value` pairs; `--help` takes no value.
fn split_options(args: &[String]) -> Result<Vec<(String, String)>, ArgError> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--help" || arg == "-h" {
            out.push(("--help".to_string(), String::new()));
        } else if let Some((k, v)) = arg.split_once('=').filter(|_| arg.starts_with("--")) {
            out.push((k.to_string(), v.to_string()));
        } else if arg.starts_with("--") {
            let Some(v) = it.next() else {
                return err(format!("{arg}: missing value"));
            };
            out.push((arg.clone(), v.clone()));
        } else {
            return err(format!(
                "unexpected argument `{arg}`: options start with --"
            ));
        }
    }
    Ok(out)
}

fn check_known(opts: &[(String, String)], allowed: &[&str], mode: &str) -> Result<(), ArgError> {
    match opts.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => err(format!(
            "unknown option {k} for mode {mode}: allowed {}",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn values<'a>(opts: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    opts.iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

fn parse_priority(opts: &[(String, String)]) -> Result<i32, ArgError> {
    match values(opts, "--fifo-priority").as_slice() {
        [] => Ok(DEFAULT_FIFO_PRIORITY),
        [v] => match v.parse::<i32>() {
            Ok(p) if FIFO_PRIORITY_RANGE.contains(&p) => Ok(p),
            _ => err(format!(
                "--fifo-priority `{v}`: must be an integer from 1 to 99"
            )),
        },
        _ => err("--fifo-priority given more than once".into()),
    }
}

fn parse_delay(flag: &str, spec: &str, text: &str) -> Result<u64, ArgError> {
    match text.parse::<u64>() {
        Ok(d) if d <= MAX_DELAY_US => Ok(d),
        _ => err(format!(
            "{flag} `{spec}`: DELAY_US must be an integer number of microseconds from 0 to {MAX_DELAY_US}"
        )),
    }
}

fn parse_queue(spec: &str) -> Result<QueueSpec, ArgError> {
    let Some((num, delay)) = spec.split_once(':') else {
        return err(format!(
            "--queue `{spec}`: expected NUM:DELAY_US, e.g. 1:25000"
        ));
    };
    let Ok(queue) = num.parse::<u16>() else {
        return err(format!(
            "--queue `{spec}`: NUM must be an NFQUEUE number from 0 to 65535"
        ));
    };
    Ok(QueueSpec {
        queue,
        delay_us: parse_delay("--queue", spec, delay)?,
    })
}

fn parse_nfqueue(opts: &[(String, String)]) -> Result<Mode, ArgError> {
    check_known(opts, &["--queue", "--fifo-priority"], "nfqueue")?;
    let specs = values(opts, "--queue");
    if specs.is_empty() {
        return err("nfqueue: at least one --queue NUM:DELAY_US is required".into());
    }
    let mut queues: Vec<QueueSpec> = Vec::with_capacity(specs.len());
    for spec in specs {
        let q = parse_queue(spec)?;
        if queues.iter().any(|o| o.queue == q.queue) {
            return err(format!(
                "--queue `{spec}`: queue {} given more than once",
                q.queue
            ));
        }
        queues.push(q);
    }
    Ok(Mode::Nfqueue { queues })
}

fn parse_route(spec: &str) -> Result<RouteSpec, ArgError> {
    let Some((prefix, delay)) = spec.rsplit_once(':') else {
        return err(format!(
            "--route `{spec}`: expected A.B.C.D/LEN:DELAY_US, e.g. 10.2.1.0/24:25000"
        ));
    };
    let prefix = Prefix::parse(prefix).map_err(|e| ArgError(format!("--route `{spec}`: {e}")))?;
    Ok(RouteSpec {
        prefix,
        delay_us: parse_delay("--route", spec, delay)?,
    })
}

fn parse_dev(opts: &[(String, String)]) -> Result<String, ArgError> {
    let dev = match values(opts, "--dev").as_slice() {
        [] => return err("tun: --dev NAME is required".into()),
        [d] => d.to_string(),
        _ => return err("--dev given more than once".into()),
    };
    let ok_chars = dev
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':');
    if dev.is_empty() || dev.len() > MAX_DEV_NAME || !ok_chars {
        return err(format!(
            "--dev `{dev}`: must be 1 to {MAX_DEV_NAME} printable characters without '/', ':' or spaces"
        ));
    }
    Ok(dev)
}

fn parse_tun(opts: &[(String, String)]) -> Result<Mode, ArgError> {
    check_known(opts, &["--dev", "--route", "--fifo-priority"], "tun")?;
    let dev = parse_dev(opts)?;
    let specs = values(opts, "--route");
    if specs.is_empty() {
        return err("tun: at least one --route A.B.C.D/LEN:DELAY_US is required".into());
    }
    let mut routes: Vec<RouteSpec> = Vec::with_capacity(specs.len());
    for spec in specs {
        let r = parse_route(spec)?;
        if routes.iter().any(|o| o.prefix == r.prefix) {
            return err(format!(
                "--route `{spec}`: prefix {} given more than once",
                r.prefix
            ));
        }
        routes.push(r);
    }
    Ok(Mode::Tun { dev, routes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn run(s: &str) -> Config {
        match parse(&args(s)) {
            Ok(Command::Run(c)) => c,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn bad(s: &str) -> String {
        parse(&args(s)).expect_err(s).0
    }

    #[test]
    fn nfqueue_queues_and_default_priority() {
        let c = run("nfqueue --queue 1:25000 --queue=11:0");
        assert_eq!(c.fifo_priority, 50);
        let want = vec![
            QueueSpec {
                queue: 1,
                delay_us: 25000,
            },
            QueueSpec {
                queue: 11,
                delay_us: 0,
            },
        ];
        assert_eq!(c.mode, Mode::Nfqueue { queues: want });
    }

    #[test]
    fn tun_routes_and_priority() {
        let c =
            run("tun --dev tdl --route 10.2.1.0/24:20000 --route 0.0.0.0/0:5 --fifo-priority 99");
        assert_eq!(c.fifo_priority, 99);
        let Mode::Tun { dev, routes } = c.mode else {
            panic!("not tun")
        };
        assert_eq!(dev, "tdl");
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].prefix.to_string(), "10.2.1.0/24");
        assert_eq!(routes[0].delay_us, 20000);
        assert_eq!(routes[1].prefix.to_string(), "0.0.0.0/0");
    }

    #[test]
    fn help() {
        assert_eq!(parse(&args("--help")), Ok(Command::Help));
        assert_eq!(parse(&args("nfqueue --help")), Ok(Command::Help));
    }

    #[test]
    fn bad_mode_and_missing() {
        assert!(bad("").contains("missing mode"));
        assert!(bad("netem --queue 1:1").contains("unknown mode `netem`"));
        assert!(bad("nfqueue").contains("at least one --queue"));
        assert!(bad("tun --route 10.0.0.0/8:1").contains("--dev NAME is required"));
        assert!(bad("tun --dev t").contains("at least one --route"));
        assert!(bad("nfqueue --queue").contains("--queue: missing value"));
    }

    #[test]
    fn bad_queue_specs() {
        assert!(bad("nfqueue --queue 1").contains("expected NUM:DELAY_US"));
        assert!(bad("nfqueue --queue 70000:1").contains("from 0 to 65535"));
        assert!(bad("nfqueue --queue -1:1").contains("from 0 to 65535"));
        assert!(bad("nfqueue --queue 1:abc").contains("DELAY_US must be"));
        assert!(bad("nfqueue --queue 1:10000001").contains("from 0 to 10000000"));
        assert!(bad("nfqueue --queue 1:5 --queue 1:6").contains("queue 1 given more than once"));
    }

    #[test]
    fn bad_options() {
        assert!(bad("nfqueue --queue 1:5 --route 10.0.0.0/8:1")
            .contains("unknown option --route for mode nfqueue"));
        assert!(
            bad("tun --dev t --route 10.0.0.0/8:1 --queue 1:1").contains("unknown option --queue")
        );
        assert!(bad("nfqueue --queue 1:5 stray").contains("unexpected argument `stray`"));
        assert!(bad("nfqueue --queue 1:5 --fifo-priority 0").contains("from 1 to 99"));
        assert!(bad("nfqueue --queue 1:5 --fifo-priority 100").contains("from 1 to 99"));
        assert!(bad("nfqueue --queue 1:5 --fifo-priority x").contains("--fifo-priority `x`"));
    }

    #[test]
    fn bad_tun_specs() {
        assert!(
            bad("tun --dev abcdefghijklmnop --route 10.0.0.0/8:1").contains("1 to 15 printable")
        );
        assert!(bad("tun --dev a/b --route 10.0.0.0/8:1").contains("without '/'"));
        assert!(bad("tun --dev t --route 10.0.0.0/8").contains("--route `10.0.0.0/8`"));
        assert!(bad("tun --dev t --route 10.0.0.1/8:1").contains("host bits"));
        assert!(bad("tun --dev t --route 10.0.0.0/33:1").contains("LEN"));
        assert!(
            bad("tun --dev t --route 10.0.0.0/8:1 --route 10.0.0.0/8:2").contains("more than once")
        );
    }
}
