//! `kuryr-l7-router status-responder` as shipped: the binary on the addresses of a kuryr.conf
//! without any Keystone option, answering 404 / 503 with a body that names host and path only,
//! `/healthz` on its own port, and a clean exit on SIGTERM.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 request (with a query, a cookie and an Authorization header that must never be
/// echoed); the status line and the whole response.
fn get(port: u16, host: &str, target: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nCookie: session=c00kie\r\nAuthorization: Bearer t0ken\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    (out.lines().next().unwrap_or_default().to_string(), out)
}

fn wait_listening(port: u16, child: &mut Child) {
    let t = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(child.try_wait().unwrap().is_none(), "status-responder exited early");
        assert!(t.elapsed() < Duration::from_secs(10), "status-responder did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_subcommand_answers_404_503_and_health_then_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (nf, un, he) = (free_port(), free_port(), free_port());
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(
        &conf,
        format!(
            "[status_responder]\nnot_found_listen = 127.0.0.1:{nf}\nunavailable_listen = 127.0.0.1:{un}\nserver_error_listen = 127.0.0.1:0\nhealth_listen = 127.0.0.1:{he}\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"))
        .args(["status-responder", "--config-file"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for port in [nf, un, he] {
        wait_listening(port, &mut child);
    }

    let (status, whole) = get(nf, "shop.example.com", "/cart/42?token=s3cret");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert!(whole.ends_with("404 Not Found: no route for host \"shop.example.com\" path \"/cart/42\"\n"), "{whole}");
    assert!(whole.to_ascii_lowercase().contains("content-type: text/plain"), "{whole}");
    let (status, whole) = get(un, "app.example.com", "/admin/users?id=1");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    assert!(whole.contains("the backend of host \"app.example.com\" path \"/admin/users\" is unavailable"), "{whole}");
    // Every path gets the answer on the answer ports, /healthz included.
    assert_eq!(get(nf, "x", "/healthz").0, "HTTP/1.1 404 Not Found");
    for (_, whole) in [get(nf, "a", "/?token=s3cret"), get(un, "a", "/?token=s3cret")] {
        for secret in ["s3cret", "c00kie", "t0ken"] {
            assert!(!whole.contains(secret), "{secret} echoed: {whole}");
        }
    }
    let (status, whole) = get(he, "x", "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(whole.ends_with("ok\n"));

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let t = Instant::now();
    let code = loop {
        if let Some(code) = child.try_wait().unwrap() {
            break code;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "exit {code:?}");
}

#[test]
fn an_address_in_use_is_an_error_naming_the_option() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(
        &conf,
        format!("[status_responder]\nnot_found_listen = 127.0.0.1:0\nunavailable_listen = 127.0.0.1:{port}\nserver_error_listen = 127.0.0.1:0\nhealth_listen = 127.0.0.1:0\n"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"))
        .args(["status-responder", "--config-file"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("[status_responder] unavailable_listen = 127.0.0.1:{port}: cannot listen")),
        "{stderr}"
    );
}
