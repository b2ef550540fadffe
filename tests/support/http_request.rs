//! The scripted HTTP/1.1 servers of the tests on loopback (`crate::support::http_request`): the
//! accept loop, one request read from a connection, a JSON answer written back, and Keystone's
//! token.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Listens on a free port of 127.0.0.1 and serves each connection with `serve` (given the
/// connection and the port) on a task of its own; returns the port.
pub async fn serve_on_loopback<F, Fut>(serve: F) -> u16
where
    F: Fn(TcpStream, u16) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else { return };
            tokio::spawn(serve(conn, port));
        }
    });
    port
}

/// Answers `status` with the JSON text `body` and the header lines `extra` (each ending in
/// CRLF), then closes the connection.
pub async fn respond_json(conn: &mut TcpStream, status: u16, body: &str, extra: &str) {
    let resp = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(resp.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// The request's head (request line and headers, as text) and its body (`Content-Length`
/// bytes); None when the client closed the connection first.
pub async fn read_request(conn: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = conn.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0usize);
    while buf.len() < header_end + length {
        let n = conn.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[header_end..header_end + length].to_vec()))
}

/// Keystone's answer to `POST /v3/auth/tokens` for user `u` (role member) of project `p`: a
/// token valid until 2099 whose catalog has each service type of `services` at
/// `http://127.0.0.1:<port>`.
pub fn keystone_token(port: u16, services: &[&str]) -> serde_json::Value {
    let endpoints =
        serde_json::json!([{"interface": "public", "region": "RegionOne", "url": format!("http://127.0.0.1:{port}")}]);
    let catalog: Vec<_> = services.iter().map(|t| serde_json::json!({"type": t, "endpoints": endpoints})).collect();
    serde_json::json!({"token": {
        "expires_at": "2099-01-01T00:00:00.000000Z", "issued_at": "2026-01-01T00:00:00.000000Z",
        "user": {"id": "u"}, "project": {"id": "p"}, "roles": [{"name": "member"}], "catalog": catalog
    }})
}
