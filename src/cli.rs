//! Command line: `run` (default), `check-config`, `smoke`, `plan`, `apply`, `show`, `move`,
//! `status-responder`.
use crate::config::{self as conf, Settings};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "kuryr-l7-router",
    version,
    about = "Kubernetes Ingresses as L7 routing on one shared Octavia load balancer"
)]
pub struct Cli {
    /// kuryr.conf (oslo.config INI); repeatable, later files override earlier ones.
    #[arg(long = "config-file", global = true, value_name = "PATH")]
    pub config_files: Vec<PathBuf>,
    /// Log format (default: `[DEFAULT] log_format`).
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormatArg>,
    /// Default: `run`.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormatArg {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the controller (the default): watch Kubernetes and keep the L7 router converged.
    Run,
    /// Validate the configuration and print it, secrets masked.
    CheckConfig {
        /// Also run the preflight against the cloud: Octavia API version and features,
        /// providers, the user's roles. Non-zero exit when the controller would refuse to start.
        #[arg(long)]
        online: bool,
    },
    /// Authenticate, then create and delete a throwaway load balancer (a client smoke run).
    Smoke,
    /// Print the desired L7 router for Kubernetes manifests (no OpenStack needed).
    Plan {
        /// YAML/JSON manifest files or directories (multi-document, `kind: List`).
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: OutputFormat,
    },
    /// Converge the L7 router once to the manifests and print every write made.
    Apply {
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
    },
    /// Read the L7 router back from Octavia: addresses, policies with rules, default pool, pools, members.
    /// With `-f`, each pool's weighting reason is computed from those manifests as `plan` does.
    Show {
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: OutputFormat,
        /// Manifests of the cluster (e.g. `kubectl get ingress,svc,endpointslices,nodes -A -o yaml`):
        /// print why each pool is weighted the way it is.
        #[arg(short = 'f', long = "filename")]
        files: Vec<PathBuf>,
        /// Only this router (with `scale_out`, `<l7_router_name>-N`; or a Gateway's load balancer).
        #[arg(long = "router")]
        router: Option<String>,
    },
    /// With `scale_out`: ask the controller to move an Ingress's host group to a router of the set
    /// (make-before-break), or take the request back with `--clear`, or cancel the move in
    /// progress with `--cancel` (rolled back; refused once it deletes the old routes). Writes the request in the
    /// controller's namespace (`[kubernetes] lease_namespace`); the controller reads it at its
    /// next Sync of the set, and a refused one (a router outside the set's bounds) gets a
    /// Warning Event `MoveRefused` on the Ingress. Needs Kubernetes credentials that may write
    /// ConfigMaps there.
    Move {
        /// The Ingress: `<namespace>/<name>`.
        ingress: String,
        /// The target router: `<l7_router_name>` or `<l7_router_name>-N`.
        #[arg(required_unless_present_any = ["clear", "cancel"])]
        router: Option<String>,
        /// Remove the request for this Ingress.
        #[arg(long, conflicts_with = "router")]
        clear: bool,
        /// Cancel the move in progress of this Ingress's host group: rolled back, the group stays
        /// on (or goes back to, make-before-break) its source. Refused once the move deletes the
        /// old routes.
        #[arg(long, conflicts_with_all = ["router", "clear"])]
        cancel: bool,
    },
    /// Delete every object of this instance's router set: each router's load balancer (cascade)
    /// with the floating IP allocated for it and its Barbican secrets, and the controller's
    /// ConfigMaps of the set (records, move requests, stamps). Only objects tagged as this
    /// instance's set; a router adopted with `l7_router_uuid` and an `l7_router_ip` are kept.
    /// Asks to type the set's name on a terminal; `--yes` otherwise. Stop the controller first.
    Teardown {
        /// Do not ask (required when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Serve the HTTP answers Octavia cannot give: 404 for requests no route matches, 503 for
    /// routes whose backend cannot be served, on the `[status_responder]` addresses. Reads only
    /// `[DEFAULT]` and `[status_responder]` (no Keystone or Kubernetes options needed).
    StatusResponder,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let files = if cli.config_files.is_empty() {
        vec![PathBuf::from(conf::DEFAULT_CONFIG_FILE)]
    } else {
        cli.config_files.clone()
    };
    if matches!(cli.command, Some(Command::StatusResponder)) {
        return status_responder(&files, cli.log_format);
    }
    // `plan` talks to no OpenStack: it needs no Keystone options (issue 14 §5).
    let needs = match cli.command {
        Some(Command::Plan { .. } | Command::Move { .. }) => conf::Needs::Offline,
        _ => conf::Needs::OpenStack,
    };
    let loaded = conf::load_as(&files, std::env::vars(), needs);
    let log_json = match (cli.log_format, &loaded) {
        (Some(LogFormatArg::Json), _) => true,
        (Some(LogFormatArg::Text), _) => false,
        (None, Ok(l)) => matches!(l.settings.default.log_format, conf::LogFormat::Json),
        (None, Err(_)) => false,
    };
    let debug = loaded.as_ref().is_ok_and(|l| l.settings.default.debug);
    init_logging(log_json, debug);

    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    let settings = loaded.settings;
    match cli.command.unwrap_or(Command::Run) {
        Command::Run => {
            run_async(async move { crate::controller::runtime::run(settings).await.map_err(|e| e.to_string()) })
        }
        Command::CheckConfig { online } => {
            print!("{}", settings.render_masked());
            if online { run_async(check_online(settings)) } else { ExitCode::SUCCESS }
        }
        Command::Smoke => run_async(smoke(settings)),
        Command::Plan { files, output } => plan(&settings, &files, output),
        Command::Apply { files } => run_async(apply(settings, files)),
        Command::Show { output, files, router } => run_async(show(settings, output, files, router)),
        Command::Move { ingress, cancel: true, .. } => run_async(cancel_move(settings, ingress)),
        Command::Move { ingress, router, .. } => run_async(request_move(settings, ingress, router)),
        Command::Teardown { yes } => run_async(teardown(settings, yes)),
        Command::StatusResponder => unreachable!("dispatched before the full configuration is read"),
    }
}

/// `move`: writes (or, without a router, removes) the operator's move request.
async fn request_move(settings: Settings, ingress: String, router: Option<String>) -> Result<(), String> {
    let api = requests_api(&settings).await?;
    let base = &settings.octavia_defaults.l7_router_name;
    crate::controller::router_set::store::request_move(&api, base, &ingress, router.as_deref()).await?;
    match router {
        Some(r) => println!("move of {ingress}'s host group to {r} requested"),
        None => println!("move request of {ingress} removed"),
    }
    Ok(())
}

/// `move --cancel`: checks, from the set's records, that a move of the Ingress's hosts is in
/// progress and has not reached deleting its old routes, then writes the cancel request.
async fn cancel_move(settings: Settings, ingress: String) -> Result<(), String> {
    use crate::controller::router_set::store::{SetRecords, SetStore, request_cancel};
    use crate::placement::router_name;
    let api = requests_api(&settings).await?;
    let base = &settings.octavia_defaults.l7_router_name;
    let (ns, name) = ingress.split_once('/').ok_or_else(|| format!("{ingress:?} is not <namespace>/<name>"))?;
    let ingresses: kube::Api<k8s_openapi::api::networking::v1::Ingress> =
        kube::Api::namespaced(api.clone().into_client(), ns);
    let ing = ingresses.get(name).await.map_err(|e| format!("cannot read Ingress {ingress}: {e}"))?;
    let hosts = crate::controller::router_set::moves::ingress_hosts(&ing);
    let loaded = SetStore::<SetRecords>::new(api.clone(), base).load().await?;
    let moves = loaded.records.map(|r| r.moves).unwrap_or_default();
    let plan = moves.values().find(|m| !hosts.is_empty() && !m.hosts.is_disjoint(&hosts));
    let Some(plan) = plan else {
        return Err(format!("no move of {ingress}'s host group is in progress: nothing to cancel"));
    };
    let (from, to) = (router_name(base, plan.from), router_name(base, plan.to));
    if !plan.routes_wanted().source {
        return Err(format!(
            "the move of {ingress}'s host group from {from} to {to} is deleting the routes on {from}: it can no \
             longer be cancelled; once it is done, move the group back with `kuryr-l7-router move {ingress} {from}`"
        ));
    }
    request_cancel(&api, base, &ingress).await?;
    println!(
        "cancel of the move of {ingress}'s host group from {from} to {to} requested (its move request, if any, \
         replaced): the controller rolls it back at its next Sync of the set, within seconds"
    );
    Ok(())
}

/// The ConfigMaps of the controller's namespace, where the operator's requests are written.
async fn requests_api(settings: &Settings) -> Result<kube::Api<k8s_openapi::api::core::v1::ConfigMap>, String> {
    if !settings.octavia_defaults.scale_out.enabled {
        return Err("moves are for the router set: [octavia_defaults] scale_out is off".into());
    }
    let k = &settings.kubernetes;
    let client = crate::controller::client::client_of(k).await.map_err(|e| e.to_string())?;
    Ok(kube::Api::namespaced(client, &k.lease_namespace))
}

/// `teardown`: what will be deleted, the confirmation, then the deletions.
async fn teardown(settings: Settings, yes: bool) -> Result<(), String> {
    use std::io::IsTerminal;
    let plan = crate::teardown::plan(&settings).await?;
    print!("{}", plan.text(&settings.kubernetes.lease_namespace));
    let read_line = || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).ok().map(|_| line)
    };
    crate::teardown::confirmed(&plan.base, yes, std::io::stdin().is_terminal(), read_line)?;
    crate::teardown::run(&settings, &plan).await
}

/// `status-responder`: its own, smaller configuration (its pods mount no Keystone secret).
fn status_responder(files: &[PathBuf], log_format: Option<LogFormatArg>) -> ExitCode {
    let loaded = conf::load_status_responder(files, std::env::vars());
    let json = match (log_format, &loaded) {
        (Some(f), _) => matches!(f, LogFormatArg::Json),
        (None, Ok((d, _))) => matches!(d.log_format, conf::LogFormat::Json),
        (None, Err(_)) => false,
    };
    init_logging(json, loaded.as_ref().is_ok_and(|(d, _)| d.debug));
    match loaded {
        Ok((_, settings)) => run_async(crate::status_responder::run(settings)),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(json: bool, debug: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(if debug { "kuryr_l7_router=debug,info" } else { "info" }));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn run_async<F: std::future::Future<Output = Result<(), String>>>(f: F) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(f) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `check-config --online`: the controller's start-up preflight, printed.
async fn check_online(settings: Settings) -> Result<(), String> {
    let (octavia, _) = crate::wiring::clients(&settings).map_err(|e| e.to_string())?;
    let checks = crate::openstack::preflight::Checks {
        octavia_roles: settings.octavia_defaults.preflight_role_check,
        ..Default::default()
    };
    let report = crate::openstack::preflight::run_with(&octavia, &settings.octavia_defaults.provider, &checks)
        .await
        .map_err(|e| format!("preflight: cannot read the cloud's capabilities: {e}"))?;
    print!("{}", report.render());
    match report.refusal() {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

/// Create an LB, wait for ACTIVE, delete it (cascade), clean its VIP port.
async fn smoke(settings: Settings) -> Result<(), String> {
    use crate::openstack::octavia_requests::LoadBalancerCreate;
    use std::time::Instant;
    let (octavia, neutron) = crate::wiring::clients(&settings).map_err(|e| e.to_string())?;
    let info = octavia.session().token_info().await.map_err(|e| e.to_string())?;
    println!("keystone: authenticated, token expires at {}", info.expires_at);
    for svc in [crate::openstack::Service::LoadBalancer, crate::openstack::Service::Network] {
        let url = octavia.session().endpoint(svc).await.map_err(|e| e.to_string())?;
        println!("catalog: {} -> {url}", svc.catalog_type());
    }
    let subnet = settings
        .neutron_defaults
        .lb_subnet
        .clone()
        .ok_or("[neutron_defaults] lb_subnet is required for the smoke run")?;
    let name = format!("{}-smoke-{}", settings.octavia_defaults.l7_router_name, std::process::id());
    let t = Instant::now();
    let lb = octavia
        .create_load_balancer(&LoadBalancerCreate {
            name: Some(name.clone()),
            vip_subnet_id: Some(subnet),
            tags: vec![crate::driver::ownership::PRODUCT_TAG.into(), "smoke".into()],
            ..LoadBalancerCreate::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    println!("octavia: created load balancer {name} ({}), status {}", lb.id, lb.provisioning_status);
    let lb =
        octavia.wait_active(&lb.id, settings.octavia_defaults.lb_create_timeout).await.map_err(|e| e.to_string())?;
    println!(
        "octavia: {} ACTIVE after {:.1}s, VIP {} on port {}",
        lb.id,
        t.elapsed().as_secs_f64(),
        lb.vip_address.as_deref().unwrap_or("-"),
        lb.vip_port_id.as_deref().unwrap_or("-")
    );
    octavia.delete_load_balancer(&lb.id, true).await.map_err(|e| e.to_string())?;
    octavia.wait_deleted(&lb.id, settings.octavia_defaults.write_timeout).await.map_err(|e| e.to_string())?;
    println!("octavia: {} deleted (cascade)", lb.id);
    if let Some(port) = &lb.vip_port_id
        && neutron.delete_leftover_vip_port(port).await.map_err(|e| e.to_string())?
    {
        println!("neutron: VIP port {port} deleted");
    }
    let stats = octavia.session().stats();
    println!("smoke run OK: {} requests, {} writes", stats.requests, stats.writes);
    Ok(())
}

/// Read the manifests and translate them; warnings and notes go to stderr.
fn desired_from(settings: &Settings, files: &[PathBuf]) -> Result<crate::model::DesiredRouter, String> {
    let texts = crate::translate::manifest::read_manifests(files).map_err(|e| e.to_string())?;
    inputs_desired_and_gateways(settings, &texts).map(|(_, desired, _)| desired)
}

/// The manifests' inputs, the Ingresses' translation and the Gateway plan (`None`: no Gateway
/// API object in them). The Gateway plan comes first: with `[kubernetes] host_ownership`, the
/// Ingress translation loses the hosts that older Gateway API objects claim, as in the
/// controller (one owner index for both kinds).
fn inputs_desired_and_gateways(
    settings: &Settings,
    texts: &[(PathBuf, String)],
) -> Result<(crate::translate::Inputs, crate::model::DesiredRouter, Option<crate::gateway::plan::GatewayPlan>), String>
{
    let mut inputs = crate::translate::manifest::inputs_of(texts).map_err(|e| e.to_string())?;
    // Certificates are checked against the clock, as the controller does.
    inputs.now = Some(std::time::SystemTime::now());
    for note in &inputs.notes {
        tracing::info!("{note}");
    }
    let opts = crate::wiring::translate_options(settings);
    let gateways = crate::gateway::plan::plan(texts, &inputs, &opts)?;
    if let Some(g) = &gateways {
        inputs.gateway_claims = std::sync::Arc::new(g.host_claims());
    }
    let desired = crate::translate::translate(&inputs, &opts);
    Ok((inputs, desired, gateways))
}

fn plan(settings: &Settings, files: &[PathBuf], output: OutputFormat) -> ExitCode {
    // The Gateways of ours in the manifests, each with its router and status (`None`: no
    // Gateway API object in them), from the same inputs as the Ingress translation.
    // The files are read once: the Ingress translation and the Gateway plan parse the same texts.
    let texts = crate::translate::manifest::read_manifests(files).map_err(|e| e.to_string());
    let planned = texts.and_then(|texts| inputs_desired_and_gateways(settings, &texts));
    match planned {
        Ok((inputs, desired, gateways)) => {
            let set = settings.octavia_defaults.scale_out.enabled.then(|| plan_placement(settings, &inputs, &desired));
            let base = &settings.octavia_defaults.l7_router_name;
            match (output, set) {
                (OutputFormat::Table, set) => {
                    println!("{}\n", crate::wiring::router_zone_text(settings));
                    print!("{}", crate::translate::render_table(&desired));
                    if let Some(set) = set {
                        let capacity = settings.octavia_defaults.scale_out.capacity;
                        print!("\n{}", crate::placement::report::render_placement(base, capacity, &set));
                        let (in_progress, starting) = plan_moves(settings, &inputs, &desired);
                        print!("\n{}", crate::placement::report::render_moves(base, &in_progress, &starting));
                    }
                    if let Some(g) = &gateways {
                        print!("\n{}", crate::gateway::plan::render_table(g));
                    }
                }
                (OutputFormat::Json, None) if gateways.is_none() => {
                    println!("{}", crate::translate::render_json(&desired))
                }
                (OutputFormat::Json, set) => {
                    let mut json = match set {
                        Some(set) => {
                            let mut json = crate::placement::report::placement_json(base, &set);
                            let (in_progress, starting) = plan_moves(settings, &inputs, &desired);
                            json["moves"] = crate::placement::report::moves_json(base, &in_progress, &starting);
                            json
                        }
                        None => serde_json::to_value(&desired).expect("the model always serializes"),
                    };
                    // Only with Gateway API objects: the Ingress-only output stays as it was.
                    if let (Some(g), Some(m)) = (&gateways, json.as_object_mut()) {
                        m.insert("gatewayApi".into(), crate::gateway::plan::to_json(g));
                    }
                    println!("{}", serde_json::to_string_pretty(&json).expect("JSON values serialize"));
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The placement `run` would make: `plan` reads no OpenStack, but the placement recorded on the
/// manifests' Ingresses (`controller::router_set::migration::PLACEMENT_ANNOTATION`, the records of versions before the controller kept its own) is kept, as `run` does.
fn plan_placement(
    settings: &Settings,
    inputs: &crate::translate::Inputs,
    desired: &crate::model::DesiredRouter,
) -> crate::placement::split::RouterSet {
    crate::placement::split::place_and_split(desired, &plan_split_params(settings, inputs))
}

/// The split parameters `run` starts from: the configured capacity and the placement recorded
/// on the manifests' Ingresses.
fn plan_split_params(settings: &Settings, inputs: &crate::translate::Inputs) -> crate::placement::split::SplitParams {
    let so = &settings.octavia_defaults.scale_out;
    let base = &settings.octavia_defaults.l7_router_name;
    crate::placement::split::SplitParams {
        capacity: so.capacity,
        current: crate::controller::router_set::migration::recorded_placement(base, &inputs.ingresses),
        routers: Default::default(),
        now: 0,
        empty_grace_secs: so.empty_router_grace.as_secs(),
    }
}

/// The moves `run` would drive from these manifests: those recorded in progress on the
/// Ingresses, and those its placement would start now (an operator's `move-to`, a merge, a
/// group that grew, since the cost recorded on its Ingresses, on a router now over capacity).
fn plan_moves(
    settings: &Settings,
    inputs: &crate::translate::Inputs,
    desired: &crate::model::DesiredRouter,
) -> (Vec<crate::placement::MovePlan>, Vec<crate::placement::MovePlan>) {
    use crate::controller::router_set::migration::recorded_moves;
    use crate::controller::router_set::moves::{Growth, admit_asks, move_asks, place_with_moves};
    let base = &settings.octavia_defaults.l7_router_name;
    let params = plan_split_params(settings, inputs);
    let recorded = recorded_moves(&inputs.ingresses);
    let asks =
        admit_asks(move_asks(base, &inputs.ingresses), &settings.octavia_defaults.scale_out.move_request_namespaces);
    let growth = Growth {
        before: crate::controller::router_set::migration::recorded_costs(&inputs.ingresses),
        ..Growth::default()
    };
    let placed = place_with_moves(desired, &params, recorded.clone(), &asks, 0, &growth);
    let in_progress = placed.moves.values().filter(|m| recorded.contains_key(&m.group)).cloned().collect();
    (in_progress, placed.started)
}

/// Converge the routers once and print every write and a summary; non-zero exit on failure.
/// With `scale_out`, every router of the placement (`plan`'s, the record on the manifests kept)
/// converges to its part, the routers in parallel. Each Gateway of ours in the manifests has its
/// router converged too, as `plan` shows it, and its status is printed as `plan` prints it, with
/// the data plane's answer (`Programmed` and the address, or the error). Manifests with Gateway
/// API objects and no Ingress converge the Gateways' routers only: an empty Ingress router would
/// cost a load balancer for nothing.
async fn apply(settings: Settings, files: Vec<PathBuf>) -> Result<(), String> {
    let texts = crate::translate::manifest::read_manifests(&files).map_err(|e| e.to_string())?;
    let (inputs, desired, gateways) = inputs_desired_and_gateways(&settings, &texts)?;
    for w in &desired.warnings {
        println!("warning: {}: {} ({})", w.object, w.message, w.reason);
    }
    let permits = crate::wiring::write_permits(&settings);
    let ingress = async {
        if gateways.is_some() && inputs.ingresses.is_empty() {
            println!(
                "L7 router {}: no Ingress in the manifests, not converged (the Gateways' routers only)",
                settings.octavia_defaults.l7_router_name
            );
            return Ok(Vec::new());
        }
        apply_ingress_routers(&settings, &inputs, &desired, permits.clone()).await
    };
    let gateway = async {
        match &gateways {
            Some(plan) => apply_gateways(&settings, plan, permits.clone()).await,
            None => Ok(Vec::new()),
        }
    };
    let (ingress, gateway) = futures::future::join(ingress, gateway).await;
    let mut failed = ingress?;
    failed.extend(gateway?);
    if failed.is_empty() { Ok(()) } else { Err(format!("router(s) {} failed", failed.join(", "))) }
}

/// The Ingress router(s) converged: the names of those that failed.
async fn apply_ingress_routers(
    settings: &Settings,
    inputs: &crate::translate::Inputs,
    desired: &crate::model::DesiredRouter,
    permits: crate::driver::WritePermits,
) -> Result<Vec<String>, String> {
    let parts: Vec<(crate::placement::RouterIndex, crate::model::DesiredRouter)> =
        if settings.octavia_defaults.scale_out.enabled {
            plan_placement(settings, inputs, desired).routers.into_iter().collect()
        } else {
            vec![(0, desired.clone())]
        };
    let mut routers = Vec::new();
    for (index, part) in parts {
        let router =
            crate::wiring::router_observed_at(settings, None, index, permits.clone()).map_err(|e| e.to_string())?;
        routers.push((router, part));
    }
    let results = futures::future::join_all(routers.iter().map(|(r, part)| r.converge(part))).await;
    let single = routers.len() == 1 && !settings.octavia_defaults.scale_out.enabled;
    let mut failed = Vec::new();
    for ((router, _), result) in routers.iter().zip(results) {
        match result {
            Ok(report) => print_report(&router.spec().name, &report),
            // The single router's error is the command's, as before.
            Err(e) if single => return Err(e.to_string()),
            Err(e) => {
                println!("L7 router {}: failed: {e}", router.spec().name);
                failed.push(router.spec().name.clone());
            }
        }
    }
    Ok(failed)
}

/// Each Gateway's router converged as the controller's Gateway driver builds it (its name, its
/// HTTP port, its static address: `controller::gateway::driver`), in parallel; then the Gateways'
/// status as `plan` prints it, with each router's address or error. The names of the routers
/// that failed.
async fn apply_gateways(
    settings: &Settings,
    plan: &crate::gateway::plan::GatewayPlan,
    permits: crate::driver::WritePermits,
) -> Result<Vec<String>, String> {
    use crate::controller::gateway::driver::DEFAULT_HTTP_PORT;
    let mut routers = Vec::new();
    for r in &plan.routers {
        let port = r.http_port.unwrap_or(DEFAULT_HTTP_PORT);
        let router = crate::wiring::gateway_router_observed(settings, None, &r.name, port, r.address, permits.clone())
            .map_err(|e| e.to_string())?;
        routers.push((r, router));
    }
    let results = futures::future::join_all(routers.iter().map(|(r, router)| router.converge(&r.desired))).await;
    let mut programmed = crate::gateway::build::Programmed::new();
    let mut failures = crate::gateway::build::RouterFailures::new();
    let mut failed = Vec::new();
    for ((r, _), result) in routers.iter().zip(results) {
        let owner = (r.owner.namespace.clone(), r.owner.name.clone());
        println!("\nGateway {}/{}:", owner.0, owner.1);
        for w in &r.desired.warnings {
            println!("warning: {}: {} ({})", w.object, w.message, w.reason);
        }
        match result {
            Ok(report) => {
                print_report(&r.name, &report);
                programmed.insert(owner, report.address.map(|a| a.to_string()).into_iter().collect());
            }
            Err(e) => {
                println!("L7 router {}: failed: {e}", r.name);
                // As the controller reports it (`gateway_driver::drive`): the label, then the error.
                failures.insert(owner, format!("{}: {e}", e.label()));
                failed.push(r.name.clone());
            }
        }
    }
    println!("\nGATEWAY API STATUS (after apply)");
    print!("{}", crate::gateway::plan::render_status(&plan.status_after(&programmed, &failures), &plan.routers));
    Ok(failed)
}

/// `apply`'s lines about one router: its writes and a summary.
fn print_report(name: &str, report: &crate::driver::ConvergeReport) {
    println!(
        "L7 router {} ({}) listener {}{}",
        name,
        report.lb_id,
        report.listener_id,
        if report.created_router { ", created fully populated" } else { "" }
    );
    for w in &report.writes {
        println!("  write {:>7.0} ms  {}", w.duration.as_secs_f64() * 1000.0, w.description);
    }
    for c in &report.conflicts {
        println!("  note: {c}");
    }
    let by_kind: Vec<String> = report.writes_by_kind().iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!(
        "{} write(s) [{}], {} request(s) in {:.1}s; address {}{}",
        report.writes.len(),
        by_kind.join(" "),
        report.requests,
        report.elapsed.as_secs_f64(),
        report.address.map(|a| a.to_string()).unwrap_or_else(|| "-".into()),
        match (report.floating_ip, report.vip_address) {
            (Some(_), Some(vip)) => format!(" (floating IP on VIP {vip})"),
            _ => String::new(),
        }
    );
}

/// Print the routers as Octavia has them: the first router; with `scale_out`, every router of
/// the set; and the Gateways' routers (see `show::routers_to_show`). `--router NAME` prints that
/// one only. One router prints as before (JSON: one object); several print one after the other
/// (JSON: an array). An error (non-zero exit) when the router asked for does not exist.
async fn show(
    settings: Settings,
    output: OutputFormat,
    files: Vec<PathBuf>,
    wanted: Option<String>,
) -> Result<(), String> {
    let desired = if files.is_empty() { None } else { Some(desired_from(&settings, &files)?) };
    let first = crate::wiring::router(&settings).map_err(|e| e.to_string())?;
    let base = &settings.octavia_defaults.l7_router_name;
    let ours = first.our_load_balancer_names().await.map_err(|e| e.to_string())?;
    let targets =
        crate::show::routers_to_show(base, settings.octavia_defaults.scale_out.enabled, &ours, wanted.as_deref())?;
    let permits = first.write_permits().clone();
    let mut views = Vec::new();
    for (name, kind) in &targets {
        let router = match kind {
            crate::show::ShownRouter::Set(0) => Ok(first.clone()),
            crate::show::ShownRouter::Set(i) => crate::wiring::router_observed_at(&settings, None, *i, permits.clone()),
            crate::show::ShownRouter::Gateway => {
                crate::wiring::gateway_router_observed(&settings, None, name, 80, None, permits.clone())
            }
        }
        .map_err(|e| e.to_string())?;
        match router.snapshot().await.map_err(|e| e.to_string())? {
            Some(view) => views.push(view),
            None if targets.len() == 1 => {
                return Err(format!(
                    "the L7 router {name} does not exist (cluster {}); `apply` creates it",
                    settings.kubernetes.cluster_name
                ));
            }
            None => println!("L7 router {name}: does not exist"),
        }
    }
    // Weighting reasons come from the manifests' translation: the first router's only.
    let reasons =
        crate::show::Reasons { router_zone: crate::wiring::router_zone_text(&settings), desired: desired.as_ref() };
    match output {
        OutputFormat::Table => {
            for view in &views {
                if views.len() > 1 {
                    println!("==== ROUTER {} ====", view.lb.name);
                }
                print!("{}", crate::show::render_with(view, Some(&reasons)));
            }
        }
        OutputFormat::Json if views.len() == 1 => println!("{}", crate::show::render_json(&views[0])),
        OutputFormat::Json => {
            let all: Vec<serde_json::Value> = views
                .iter()
                .map(|v| serde_json::from_str(&crate::show::render_json(v)).expect("render_json prints JSON"))
                .collect();
            println!("{}", serde_json::to_string_pretty(&all).expect("JSON values serialize"));
        }
    }
    Ok(())
}
