#!/bin/bash
#
# devstack plugin of kuryr-l7-router: builds the controller from this repository, writes
# /etc/kuryr/kuryr-l7-router.conf from the devstack cloud and runs the controller as the devstack
# service `kuryr-l7-router`. Enable it with (see devstack/local.conf.sample):
#
#   enable_plugin kuryr-l7-router <repo> [branch]
#   enable_service kuryr-l7-router
#   KURYR_ENABLE_INGRESS=True
#
# Phases: stack install (toolchain, build), stack post-config (kuryr-l7-router.conf, static part),
# stack extra (subnet IDs and floating IP, which exist only once devstack has created its initial
# networks; IngressClass; start), unstack (stop), clean (remove the config).

# Save trace setting; devstack plugins run with xtrace on.
_XTRACE_KURYR_L7_ROUTER=$(set +o | grep xtrace)
set +o xtrace

function _kuryr_l7_router_cargo {
    # The cargo on PATH, else the one rustup put into KURYR_L7_ROUTER_CARGO_HOME.
    if command -v cargo >/dev/null 2>&1; then
        command -v cargo
    elif [[ -x "$KURYR_L7_ROUTER_CARGO_HOME/bin/cargo" ]]; then
        echo "$KURYR_L7_ROUTER_CARGO_HOME/bin/cargo"
    fi
}

function install_kuryr_l7_router_toolchain {
    if [[ -n "$(_kuryr_l7_router_cargo)" ]]; then
        echo "kuryr-l7-router: using $(_kuryr_l7_router_cargo)"
        return 0
    fi
    echo "kuryr-l7-router: no cargo found, installing rustup into $KURYR_L7_ROUTER_CARGO_HOME"
    # A C compiler and linker for the Rust build (ring); devstack hosts normally have them.
    install_package curl gcc
    local rustup_init
    rustup_init=$(mktemp)
    curl --proto '=https' --tlsv1.2 -sSf -o "$rustup_init" https://sh.rustup.rs
    RUSTUP_HOME=$KURYR_L7_ROUTER_RUSTUP_HOME CARGO_HOME=$KURYR_L7_ROUTER_CARGO_HOME \
        sh "$rustup_init" -y --no-modify-path --profile minimal \
        --default-toolchain "$KURYR_L7_ROUTER_RUST_TOOLCHAIN"
    rm -f "$rustup_init"
}

function build_kuryr_l7_router {
    local cargo
    cargo=$(_kuryr_l7_router_cargo)
    if [[ -z "$cargo" ]]; then
        die $LINENO "kuryr-l7-router: cargo is not available"
    fi
    (
        cd "$KURYR_L7_ROUTER_DIR" || exit 1
        RUSTUP_HOME=${RUSTUP_HOME:-$KURYR_L7_ROUTER_RUSTUP_HOME} \
            "$cargo" build --release --locked --bin kuryr-l7-router
    ) || die $LINENO "kuryr-l7-router: cargo build failed in $KURYR_L7_ROUTER_DIR"
    if [[ ! -x "$KURYR_L7_ROUTER_BIN" ]]; then
        die $LINENO "kuryr-l7-router: $KURYR_L7_ROUTER_BIN was not built"
    fi
}

function _kuryr_l7_router_subnet_id {
    # ID of a subnet given by name or ID.
    openstack --os-cloud devstack-admin --os-region "$REGION_NAME" subnet show "$1" -f value -c id
}

function _kuryr_l7_router_floating_ip {
    # The router's floating IP: the one tagged $KURYR_L7_ROUTER_FIP_TAG on the public network if
    # there is one (kept across restacks), else a newly allocated and tagged one.
    local fip
    fip=$(openstack --os-cloud devstack-admin --os-region "$REGION_NAME" floating ip list \
        --network "$KURYR_L7_ROUTER_PUBLIC_NETWORK" --tags "$KURYR_L7_ROUTER_FIP_TAG" \
        -f value -c "Floating IP Address" | head -n 1)
    if [[ -z "$fip" ]]; then
        fip=$(openstack --os-cloud devstack-admin --os-region "$REGION_NAME" floating ip create \
            --tag "$KURYR_L7_ROUTER_FIP_TAG" --description "kuryr-l7-router address (devstack)" \
            "$KURYR_L7_ROUTER_PUBLIC_NETWORK" -f value -c floating_ip_address)
    fi
    echo "$fip"
}

function configure_kuryr_l7_router {
    sudo install -d -o "$STACK_USER" -m 0755 "$KURYR_L7_ROUTER_CONF_DIR"
    rm -f "$KURYR_L7_ROUTER_CONF"
    local conf=$KURYR_L7_ROUTER_CONF

    iniset "$conf" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"

    iniset "$conf" kubernetes enable_ingress True
    iniset "$conf" kubernetes ingress_class "$KURYR_L7_ROUTER_INGRESS_CLASS"
    iniset "$conf" kubernetes cluster_name "$KURYR_L7_ROUTER_CLUSTER_NAME"
    iniset "$conf" kubernetes health_port "$KURYR_L7_ROUTER_HEALTH_PORT"
    # One controller process: nothing to elect.
    iniset "$conf" kubernetes leader_election False
    if [[ -f "$KURYR_L7_ROUTER_KUBECONFIG" ]]; then
        iniset "$conf" kubernetes kubeconfig "$KURYR_L7_ROUTER_KUBECONFIG"
    fi

    iniset "$conf" octavia_defaults l7_router_name "$KURYR_L7_ROUTER_NAME"
    iniset "$conf" octavia_defaults lb_algorithm "$KURYR_L7_ROUTER_LB_ALGORITHM"
    if [[ -n "$KURYR_L7_ROUTER_AVAILABILITY_ZONE" ]]; then
        iniset "$conf" octavia_defaults availability_zone "$KURYR_L7_ROUTER_AVAILABILITY_ZONE"
    fi

    # devstack's admin credentials (the file is readable by $STACK_USER only).
    iniset "$conf" neutron auth_url "$KEYSTONE_SERVICE_URI/v3"
    iniset "$conf" neutron auth_type password
    iniset "$conf" neutron username admin
    iniset "$conf" neutron password "$ADMIN_PASSWORD"
    iniset "$conf" neutron project_name admin
    iniset "$conf" neutron user_domain_name Default
    iniset "$conf" neutron project_domain_name Default
    iniset "$conf" neutron region_name "$REGION_NAME"
    iniset "$conf" neutron interface public
    chmod 0600 "$conf"
}

function configure_kuryr_l7_router_network {
    # Needs Neutron running with devstack's initial networks (stack extra).
    local conf=$KURYR_L7_ROUTER_CONF
    local lb_subnet external_subnet
    lb_subnet=$(_kuryr_l7_router_subnet_id "$KURYR_L7_ROUTER_LB_SUBNET")
    external_subnet=$(_kuryr_l7_router_subnet_id "$KURYR_L7_ROUTER_EXTERNAL_SUBNET")
    if [[ -z "$lb_subnet" || -z "$external_subnet" ]]; then
        die $LINENO "kuryr-l7-router: subnets $KURYR_L7_ROUTER_LB_SUBNET / $KURYR_L7_ROUTER_EXTERNAL_SUBNET not found"
    fi
    iniset "$conf" neutron_defaults lb_subnet "$lb_subnet"
    iniset "$conf" neutron_defaults external_svc_subnet "$external_subnet"
    if [[ "$KURYR_L7_ROUTER_FIP" == "True" ]]; then
        local fip
        fip=$(_kuryr_l7_router_floating_ip)
        if [[ -z "$fip" ]]; then
            die $LINENO "kuryr-l7-router: no floating IP on $KURYR_L7_ROUTER_PUBLIC_NETWORK"
        fi
        iniset "$conf" neutron_defaults l7_router_ip "$fip"
    fi

}

function create_kuryr_l7_router_ingress_class {
    # The IngressClass the controller serves, when this host can reach the cluster.
    if ! command -v kubectl >/dev/null 2>&1 || [[ ! -f "$KURYR_L7_ROUTER_KUBECONFIG" ]]; then
        echo "kuryr-l7-router: no kubectl/kubeconfig; create the IngressClass yourself" \
            "(etc/manifests/ingressclass.yaml)"
        return 0
    fi
    kubectl --kubeconfig "$KURYR_L7_ROUTER_KUBECONFIG" apply -f - <<EOC
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: $KURYR_L7_ROUTER_INGRESS_CLASS
spec:
  controller: openstack.org/kuryr-l7-router
EOC
}

function start_kuryr_l7_router {
    run_process kuryr-l7-router "$KURYR_L7_ROUTER_BIN run --config-file $KURYR_L7_ROUTER_CONF"
}

function stop_kuryr_l7_router {
    stop_process kuryr-l7-router
}

function cleanup_kuryr_l7_router {
    # The floating IP is kept on purpose (same router address after the next stack); delete it
    # with: openstack floating ip delete $(openstack floating ip list --tags kuryr-l7-router -f value -c ID)
    # The build output in $KURYR_L7_ROUTER_DIR/target is kept too (incremental rebuilds).
    sudo rm -f "$KURYR_L7_ROUTER_CONF"
}

if is_service_enabled kuryr-l7-router && [[ "$KURYR_ENABLE_INGRESS" == "True" ]]; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Building kuryr-l7-router"
        install_kuryr_l7_router_toolchain
        build_kuryr_l7_router
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring kuryr-l7-router"
        configure_kuryr_l7_router
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting kuryr-l7-router"
        configure_kuryr_l7_router_network
        create_kuryr_l7_router_ingress_class
        start_kuryr_l7_router
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_kuryr_l7_router
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_kuryr_l7_router
    fi
fi

# Restore xtrace.
$_XTRACE_KURYR_L7_ROUTER
