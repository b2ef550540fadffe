fn main() -> std::process::ExitCode {
    // One TLS crypto provider for kube and reqwest alike, installed before any client exists.
    rustls::crypto::ring::default_provider()
        .install_default()
        .expect("no other rustls crypto provider is installed before main");
    kuryr_l7_router::cli::main()
}
