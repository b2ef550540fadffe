//! Certificate rotation on the data plane: HTTPS requests in a loop through Octavia-rendered
//! haproxy while the TLS Secrets get new certificates and the router converges to them. The
//! data plane is re-rendered from Octavia's database and Barbican every 0.5 s and haproxy
//! reloaded (SIGUSR2, as the amphora's reload), so every state the convergence passes through
//! is served: no handshake may fail, no render may fail (a listener naming a secret Barbican no
//! longer has would), and the new certificate is served after it (functional/dataplane/rotation.py).

use super::*;
use std::io::{BufRead, BufReader};

fn fingerprint_of(desired: &DesiredRouter, host: &str) -> String {
    let https = desired.https.as_ref().expect("TLS listener");
    let cert = https.certificates.values().find(|c| c.hosts.iter().any(|h| h == host)).expect("certificate");
    cert.content.as_ref().expect("content").fingerprint.to_ascii_lowercase().replace(':', "")
}

#[tokio::test(flavor = "multi_thread")]
async fn certificate_rotation_serves_every_handshake_and_then_the_new_certificate() {
    if !enabled() {
        return;
    }
    let r = local_router("holds-dp", "rot").await.with_barbican(Barbican::new(session("admin", "admin")));
    let cluster = r.spec().ownership.cluster.clone();
    common::with_router(r, |r| async move {
        let translated = |manifests: String| {
            let mut inputs = Inputs::default();
            load_str(&manifests, Path::new("tls.yaml"), &mut inputs).unwrap();
            inputs.now = Some(std::time::SystemTime::now());
            translate(&inputs, &options("kuryr-l7-router"))
        };
        // Each call makes new keys and certificates: the second is a rotation of both Secrets.
        let before = translated(tls_manifests());
        let report = converge(&r, &before).await;
        let request = serde_json::json!({"scheme": "https", "host": "secure.example.com", "path": "/"});
        let (echo, request) = (serde_json::to_string(&echo_names(&before)).unwrap(), request.to_string());
        let mut child = Command::new("/usr/bin/python3")
            .arg(repo().join("functional/dataplane/rotation.py"))
            .args([report.lb_id.as_str(), "--echo", &echo, "--request", &request, "--rerender", "0.5"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run functional/dataplane/rotation.py");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "READY", "rotation.py did not start");

        let after = translated(tls_manifests());
        let t = std::time::Instant::now();
        let rotation = converge(&r, &after).await;
        let took = t.elapsed();
        // Two more re-renders and reloads after the last write, as the amphora applies it.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        child.stdin.take().unwrap().write_all(b"stop\n").unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        assert!(child.wait().unwrap().success());
        let out: serde_json::Value = serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{e}: {rest}"));
        let kinds: Vec<&str> = rotation.writes.iter().map(|w| w.kind).collect();
        println!(
            "rotation: {:.1} s, writes {kinds:?}; {} requests, {} failed, {} reloads, {} render failures, served {}",
            took.as_secs_f64(),
            out["requests"],
            out["failures"].as_array().map_or(0, Vec::len),
            out["reloads"],
            out["render_failures"].as_array().map_or(0, Vec::len),
            out["served"]
        );
        assert!(!rotation.writes.is_empty(), "the rotation wrote nothing");
        assert_eq!(out["failures"], serde_json::json!([]), "a request failed during the rotation");
        assert_eq!(out["render_failures"], serde_json::json!([]), "the data plane could not be rendered");
        let served: Vec<&str> =
            out["served"].as_array().unwrap().iter().filter_map(|s| s["fingerprint"].as_str()).collect();
        let (old, new) = (fingerprint_of(&before, "secure.example.com"), fingerprint_of(&after, "secure.example.com"));
        assert_eq!(served, [old.as_str(), new.as_str()], "the old certificate, then the new one, nothing else");
        assert_eq!(out["last_fingerprint"], new.as_str(), "the new certificate is served after the rotation");
        assert!(out["requests"].as_u64().unwrap() > 20, "{}", out["requests"]);
    })
    .await;
    super::delete_cluster_secrets(&cluster).await;
}
