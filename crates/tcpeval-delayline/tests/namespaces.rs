//! End-to-end tests of the delay line in network namespaces:
//!
//! ```text
//!   tcpe-dl-X-a (10.9.1.2) --veth-- tcpe-dl-X-r (router, delay line) --veth-- tcpe-dl-X-b (10.9.2.2)
//! ```
//!
//! 20 ms each way through NFQUEUE, then through the TUN fallback. Checked:
//! ping RTT never below 40 ms and UDP one-way delay (a send stamp in the
//! payload, the kernel's receive stamp, one wall clock) never below 20 ms; the
//! exit JSON counts exactly the packets sent; the UDP delay beyond 20 ms is at
//! least the lateness the delay line reports (less 2 ms); and, when the delay
//! line kept its timing (mean lateness in each direction under 1% of the
//! 40 ms RTT, the testbed's own gate), the reported lateness accounts for
//! that delay within 2 ms, ping RTT is within 2 ms of 40 ms and UDP delay
//! within 2 ms of 20 ms.
//! When it did not, the machine is too busy to judge accuracy (a throttled VM,
//! or CI sharing the cores; the kernel's forwarding is late too, unseen by the
//! delay line): the test says so and skips only those three checks.
//! Needs root, `ip`, `ping` (and `iptables` for NFQUEUE); otherwise each test
//! prints why and passes without running. Namespaces are deleted on every exit
//! path (Drop), processes killed first.

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_tcpeval-delayline");
const ONE_WAY_US: u64 = 20_000;
const PINGS: u32 = 20;
const UDP_PACKETS: u32 = 2000;
const UDP_PORT: u16 = 9099;
/// The brief's 2 ms tolerance on RTT and one-way delay.
const TOLERANCE_MS: f64 = 2.0;
/// Mean lateness under which the machine is calm enough to judge accuracy: 1%
/// of the RTT, as python/tcpeval/testbed/gates.py. Measured ~20-65 us idle or
/// with four busy loops on the 2 cores (the delay line runs SCHED_FIFO).
const CALM_LATE_MEAN_US: f64 = 0.01 * 2.0 * ONE_WAY_US as f64;

fn missing_prerequisite(tools: &[&str]) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = |t: &&str| std::env::split_paths(&path).any(|d| d.join(t).is_file());
    tools
        .iter()
        .find(|t| !found(t))
        .map(|t| format!("`{t}` not installed"))
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .expect(args[0]);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn random_suffix() -> String {
    let mut b = [0u8; 4];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .expect("urandom");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The three namespaces and the processes started in them; Drop cleans up.
struct Lab {
    prefix: String,
    children: Vec<Child>,
}

impl Lab {
    fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.prefix)
    }

    fn new() -> Lab {
        let lab = Lab {
            prefix: format!("tcpe-dl-{}", random_suffix()),
            children: Vec::new(),
        };
        let (a, r, b) = (lab.ns("a"), lab.ns("r"), lab.ns("b"));
        for n in [&a, &r, &b] {
            sh(&["ip", "netns", "add", n]);
            sh(&["ip", "-n", n, "link", "set", "dev", "lo", "up"]);
        }
        for (end, rdev, net) in [(&a, "va", "10.9.1"), (&b, "vb", "10.9.2")] {
            sh(&[
                "ip", "-n", &r, "link", "add", rdev, "type", "veth", "peer", "name", "eth0",
                "netns", end,
            ]);
            sh(&[
                "ip",
                "-n",
                &r,
                "addr",
                "add",
                &format!("{net}.1/24"),
                "dev",
                rdev,
            ]);
            sh(&["ip", "-n", &r, "link", "set", "dev", rdev, "up"]);
            sh(&[
                "ip",
                "-n",
                end,
                "addr",
                "add",
                &format!("{net}.2/24"),
                "dev",
                "eth0",
            ]);
            sh(&["ip", "-n", end, "link", "set", "dev", "eth0", "up"]);
            sh(&[
                "ip",
                "-n",
                end,
                "route",
                "add",
                "default",
                "via",
                &format!("{net}.1"),
            ]);
        }
        sh(&[
            "ip",
            "netns",
            "exec",
            &r,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ]);
        lab
    }

    /// Starts the delay line in the router and waits for its READY line.
    fn start_delay_line(&mut self, args: &[&str]) -> (usize, BufReader<std::process::ChildStdout>) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.ns("r"), BIN])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn delay line");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        self.children.push(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = stdout;
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = tx.send((line, stdout));
        });
        let (line, stdout) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("no READY within 10 s");
        assert_eq!(line, "READY\n");
        (self.children.len() - 1, stdout)
    }

    /// Sends `signal`, checks exit 0 and returns the JSON line.
    fn stop(
        &mut self,
        index: usize,
        mut stdout: BufReader<std::process::ChildStdout>,
        signal: i32,
    ) -> String {
        let child = &mut self.children[index];
        // SAFETY: the pid is our own live child (ip and the binary exec in place).
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().expect("wait");
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        assert!(status.success(), "delay line exited with {status}");
        assert_eq!(
            rest.lines().count(),
            1,
            "expected one JSON line, got {rest:?}"
        );
        rest.trim_end().to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for role in ["a", "r", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(role)])
                .status();
        }
    }
}

/// Runs `f` on a thread that has entered network namespace `ns` (setns(2)
/// affects only the calling thread).
fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("netns file");
    std::thread::spawn(move || {
        // SAFETY: a valid namespace fd; only this thread changes namespace.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// UDP from a to b at ~5000 packets/s, each carrying its send time; returns
/// the one-way delays (ms) of the packets received.
fn udp_one_way_ms(lab: &Lab) -> Vec<f64> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = in_netns(&lab.ns("b"), move || {
        let sock = UdpSocket::bind(("10.9.2.2", UDP_PORT)).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        prepare_receiver(&sock);
        ready_tx.send(()).unwrap();
        let mut delays = Vec::new();
        let mut buf = [0u8; 2048];
        while delays.len() < UDP_PACKETS as usize {
            let Some((n, received)) = recv_stamped(&sock, &mut buf) else {
                break;
            };
            let sent = u64::from_be_bytes(buf[..8].try_into().unwrap());
            assert_eq!(n, 1200);
            delays.push((received - sent) as f64 / 1e6);
        }
        delays
    });
    ready_rx.recv().unwrap();
    in_netns(&lab.ns("a"), || {
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        let mut payload = [0u8; 1200];
        for i in 0..UDP_PACKETS {
            payload[..8].copy_from_slice(&wall_ns().to_be_bytes());
            sock.send_to(&payload, ("10.9.2.2", UDP_PORT)).unwrap();
            if i % 10 == 9 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    })
    .join()
    .unwrap();
    receiver.join().unwrap()
}

/// Sets an integer SOL_SOCKET option.
fn set_socket_option(sock: &UdpSocket, name: libc::c_int, value: libc::c_int) {
    // SAFETY: a valid socket and a c_int option of the size given.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "setsockopt {name}: {}",
        std::io::Error::last_os_error()
    );
}

/// Makes the receiver independent of its own thread's scheduling: the kernel
/// stamps each datagram's arrival (SO_TIMESTAMPNS), so a late thread does not
/// count as delay, and an 8 MB buffer (SO_RCVBUFFORCE; root) holds all 2000
/// datagrams, so a late thread does not drop any. With the default 208 KB
/// (~90 datagrams) a delay line released after a stall overflowed it: 8-20
/// datagrams lost on a throttled VM.
fn prepare_receiver(sock: &UdpSocket) {
    set_socket_option(sock, libc::SO_TIMESTAMPNS, 1);
    set_socket_option(sock, libc::SO_RCVBUFFORCE, 8 << 20);
}

/// One datagram into `buf`: its length and the kernel's receive stamp (wall
/// clock, ns), or None on timeout.
fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> Option<(usize, u64)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // u64s keep the control-message buffer aligned.
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at live buffers of the lengths it states.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return None;
    }
    // SAFETY: walking the control messages recvmsg just filled in.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        let c = unsafe { &*cmsg };
        if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            return Some((
                n as usize,
                ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
            ));
        }
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    panic!("a datagram arrived without its SCM_TIMESTAMPNS stamp");
}

/// Pings b from a; returns (transmitted, received, min ms, avg ms).
fn ping(lab: &Lab) -> (u64, u64, f64, f64) {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns("a"),
            "ping",
            "-q",
            "-c",
            &PINGS.to_string(),
            "-i",
            "0.05",
            "10.9.2.2",
        ])
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let counts: Vec<u64> = text
        .lines()
        .find(|l| l.contains("transmitted"))
        .map(|l| {
            l.split(", ")
                .map(|p| p.split(' ').next().unwrap().parse().unwrap_or(0))
                .take(2)
                .collect()
        })
        .unwrap_or_else(|| panic!("no ping summary in {text}"));
    let rtt = text
        .lines()
        .find(|l| l.starts_with("rtt"))
        .unwrap_or_else(|| panic!("no rtt in {text}"));
    let nums: Vec<f64> = rtt
        .split(" = ")
        .nth(1)
        .unwrap()
        // "40.1/40.5/41.0/0.2 ms", or with ", pipe 2" after it when replies overlapped
        .split(" ms")
        .next()
        .unwrap()
        .split('/')
        .map(|x| x.parse().unwrap())
        .collect();
    (counts[0], counts[1], nums[0], nums[1])
}

/// The JSON object of the entry whose label is `label` (e.g. `"queue":1`).
fn entry<'a>(json: &'a str, label: &str) -> &'a str {
    let start = json
        .find(&format!("{{{label},"))
        .unwrap_or_else(|| panic!("no {label} in {json}"));
    let end = start + json[start..].find('}').unwrap();
    &json[start..=end]
}

/// A numeric field of a flat JSON object.
fn field(obj: &str, key: &str) -> f64 {
    let at = obj
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {obj}"))
        + key.len()
        + 3;
    let end = obj[at..].find([',', '}']).unwrap() + at;
    obj[at..end].parse().unwrap()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// What the traffic through the delay line measured.
struct Measured {
    pings: (u64, u64),
    avg_rtt_ms: f64,
    udp_ms: Vec<f64>,
}

/// Sends ping and UDP through the configured delay line; checks that nothing
/// was lost and nothing arrived sooner than the emulated delay.
fn send_traffic(lab: &Lab) -> Measured {
    let (tx, rx, min_rtt, avg_rtt) = ping(lab);
    let target = 2.0 * ONE_WAY_US as f64 / 1e3;
    eprintln!("ping {tx}/{rx}: min {min_rtt:.3} ms avg {avg_rtt:.3} ms (target {target} ms)");
    assert_eq!((tx, rx), (PINGS as u64, PINGS as u64));
    assert!(
        min_rtt >= target,
        "ping min {min_rtt} ms is below the emulated {target} ms"
    );
    let delays = udp_one_way_ms(lab);
    let one_way = ONE_WAY_US as f64 / 1e3;
    let lo = delays.iter().cloned().fold(f64::MAX, f64::min);
    eprintln!(
        "udp {}: one-way min {lo:.3} ms mean {:.3} ms",
        delays.len(),
        mean(&delays)
    );
    assert_eq!(delays.len(), UDP_PACKETS as usize, "UDP packets lost");
    assert!(
        lo >= one_way,
        "a UDP packet took {lo} ms, less than the emulated {one_way} ms"
    );
    Measured {
        pings: (tx, rx),
        avg_rtt_ms: avg_rtt,
        udp_ms: delays,
    }
}

/// Checks the exit JSON against the traffic sent: exact counts per entry, no
/// drops, the configured delay, and the timing (see the module comment).
fn check_report(json: &str, forward: &str, back: &str, m: &Measured) {
    let (f, b) = (entry(json, forward), entry(json, back));
    assert_eq!(
        field(f, "pkts") as u64,
        m.pings.0 + m.udp_ms.len() as u64,
        "{f}"
    );
    assert_eq!(field(b, "pkts") as u64, m.pings.1, "{b}");
    for e in [f, b] {
        assert_eq!(field(e, "delay_us") as u64, ONE_WAY_US);
        assert!(field(e, "maxdepth") >= 1.0, "{e}");
        assert_eq!(field(e, "dropped"), 0.0, "{e}");
        assert!(field(e, "late_max_us") >= field(e, "late_mean_us"), "{e}");
    }
    let one_way = ONE_WAY_US as f64 / 1e3;
    let udp_mean = mean(&m.udp_ms);
    let beyond_ms = udp_mean - one_way;
    let reported_late_ms = field(f, "late_mean_us") / 1e3;
    // A packet cannot arrive before the delay line released it, so the UDP
    // delay beyond 20 ms covers the reported lateness on any machine.
    assert!(
        beyond_ms > reported_late_ms - TOLERANCE_MS,
        "UDP mean one-way {udp_mean} ms is less than the {one_way} ms delay plus \
         the {reported_late_ms} ms lateness the delay line reports: {json}"
    );
    // Each direction on its own: the 20 pings are all of the return queue
    // but a 1% sliver of the forward one, so the pooled mean hides their
    // lateness (a loaded run failed the ping check at a pooled mean < 400 us).
    let late = field(f, "late_mean_us").max(field(b, "late_mean_us"));
    if late >= CALM_LATE_MEAN_US {
        // On a busy host the kernel's own forwarding (softirq on the router
        // and the receiver) is late too, beyond what the delay line can see:
        // CI measured 3.3 ms more than the 7.2 ms reported.
        eprintln!(
            "accuracy not judged: the delay line ran {late:.0} us late on average \
             in one direction (calm below {CALM_LATE_MEAN_US:.0} us); this machine \
             is too busy now"
        );
        return;
    }
    assert!(
        (beyond_ms - reported_late_ms).abs() < TOLERANCE_MS,
        "UDP mean one-way {udp_mean} ms is not the {one_way} ms delay plus the \
         {reported_late_ms} ms lateness the delay line reports: {json}"
    );
    let target = 2.0 * one_way;
    assert!(
        (m.avg_rtt_ms - target).abs() < TOLERANCE_MS,
        "ping avg {} ms not within 2 ms of {target}",
        m.avg_rtt_ms
    );
    assert!(
        (udp_mean - one_way).abs() < TOLERANCE_MS,
        "UDP mean one-way {udp_mean} ms not within 2 ms of {one_way}"
    );
}

#[test]
fn nfqueue_delays_20ms_each_way() {
    if let Some(why) = missing_prerequisite(&["ip", "iptables", "ping"]) {
        eprintln!("skipping nfqueue_delays_20ms_each_way: {why}");
        return;
    }
    let mut lab = Lab::new();
    let r = lab.ns("r");
    for (dev, queue) in [("va", "1"), ("vb", "2")] {
        sh(&[
            "ip",
            "netns",
            "exec",
            &r,
            "iptables",
            "-A",
            "FORWARD",
            "-i",
            dev,
            "-j",
            "NFQUEUE",
            "--queue-num",
            queue,
        ]);
    }
    let delay = ONE_WAY_US.to_string();
    let (q1, q2) = (format!("1:{delay}"), format!("2:{delay}"));
    let (idx, out) = lab.start_delay_line(&["nfqueue", "--queue", &q1, "--queue", &q2]);
    let second = Command::new("ip")
        .args(["netns", "exec", &r, BIN, "nfqueue", "--queue", &q1])
        .output()
        .unwrap();
    assert_eq!(
        second.status.code(),
        Some(1),
        "binding a bound queue must fail with exit 1"
    );
    assert!(String::from_utf8_lossy(&second.stderr).contains("NFQUEUE 1"));
    let sent = send_traffic(&lab);
    let json = lab.stop(idx, out, libc::SIGTERM);
    eprintln!("{json}");
    assert!(json.starts_with(r#"{"mode":"nfqueue","#));
    check_report(&json, "\"queue\":1", "\"queue\":2", &sent);
    for q in ["\"queue\":1", "\"queue\":2"] {
        let e = entry(&json, q);
        assert_eq!(
            field(e, "no_kernel_ts"),
            0.0,
            "kernel timestamps missing: {json}"
        );
        assert_eq!(
            field(e, "kernel_dropped"),
            0.0,
            "kernel dropped packets: {json}"
        );
    }
}

#[test]
fn tun_delays_20ms_each_way() {
    if let Some(why) = missing_prerequisite(&["ip", "ping"]) {
        eprintln!("skipping tun_delays_20ms_each_way: {why}");
        return;
    }
    let mut lab = Lab::new();
    let r = lab.ns("r");
    let delay = ONE_WAY_US.to_string();
    let (to_b, to_a) = (
        format!("10.9.2.0/24:{delay}"),
        format!("10.9.1.0/24:{delay}"),
    );
    let (idx, out) =
        lab.start_delay_line(&["tun", "--dev", "tdl", "--route", &to_b, "--route", &to_a]);
    // The caller's part (shared/reference/linux-testbed.md 2a): policy routing
    // through the device; no IPv6 on it, so nothing unmatched is generated.
    sh(&[
        "ip",
        "netns",
        "exec",
        &r,
        "sysctl",
        "-qw",
        "net.ipv6.conf.tdl.disable_ipv6=1",
    ]);
    sh(&[
        "ip",
        "netns",
        "exec",
        &r,
        "sysctl",
        "-qw",
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.tdl.rp_filter=0",
    ]);
    sh(&["ip", "-n", &r, "link", "set", "dev", "tdl", "up"]);
    sh(&[
        "ip", "-n", &r, "rule", "add", "iif", "tdl", "lookup", "main", "pref", "100",
    ]);
    sh(&[
        "ip", "-n", &r, "rule", "add", "iif", "va", "lookup", "100", "pref", "200",
    ]);
    sh(&[
        "ip", "-n", &r, "rule", "add", "iif", "vb", "lookup", "100", "pref", "201",
    ]);
    sh(&[
        "ip", "-n", &r, "route", "add", "default", "dev", "tdl", "table", "100",
    ]);
    let sent = send_traffic(&lab);
    let json = lab.stop(idx, out, libc::SIGINT);
    eprintln!("{json}");
    assert!(json.starts_with(r#"{"mode":"tun","#));
    check_report(
        &json,
        "\"route\":\"10.9.2.0/24\"",
        "\"route\":\"10.9.1.0/24\"",
        &sent,
    );
    assert_eq!(
        field(entry(&json, "\"route\":\"10.9.2.0/24\""), "unmatched"),
        0.0,
        "{json}"
    );
}

#[test]
fn bad_arguments_exit_2_naming_the_argument() {
    for (args, names) in [
        (vec!["nfqueue", "--queue", "1:abc"], "--queue `1:abc`"),
        (
            vec!["tun", "--dev", "t", "--route", "10.0.0.1/8:5"],
            "host bits",
        ),
        (
            vec!["nfqueue", "--queue", "1:5", "--fifo-priority", "0"],
            "--fifo-priority",
        ),
        (vec!["warp"], "unknown mode `warp`"),
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(names),
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    }
}
