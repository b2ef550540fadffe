// kube-testcluster: a real Kubernetes control plane for kuryr-l7-router's tests, on loopback, in one
// process: an embedded etcd (go.etcd.io/etcd/server/v3/embed) and kube-apiserver
// (k8s.io/kubernetes/cmd/kube-apiserver/app, the same code as the released binary) with RBAC
// authorization and a service-account issuer. Started and stopped by functional/kube.sh; see
// docs/development.md ("A real API server").
//
//	kube-testcluster serve   -dir D -manifests etc/manifests -crds <gateway-api>/config/crd/standard
//	kube-testcluster token   -dir D [-namespace N -name SA -seconds S]   (prints a token)
//	kube-testcluster compact -dir D                                      (compacts etcd now)
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

const (
	controllerNamespace = "kuryr-l7-router"
	controllerAccount   = "kuryr-l7-router"
	serviceIP           = "10.96.0.1"
	issuer              = "https://kubernetes.default.svc.cluster.local"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-testcluster serve|token|compact -dir DIR ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "token":
		err = token(os.Args[2:])
	case "compact":
		err = compact(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-testcluster:", err)
		os.Exit(1)
	}
}

// freePort asks the kernel for a free loopback port (closed again before use: a short race, fine
// on a test machine).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ports are the loopback ports of one cluster, kept in DIR/ports so that a restart (-reuse)
// serves on the same addresses from the same etcd data.
type ports struct{ API, EtcdClient, EtcdPeer int }

func newPorts(dir string, api int) (p ports, err error) {
	p.API = api
	for _, port := range []*int{&p.API, &p.EtcdClient, &p.EtcdPeer} {
		if *port == 0 {
			if *port, err = freePort(); err != nil {
				return
			}
		}
	}
	err = writeFile(dir, "ports", []byte(fmt.Sprintf("%d %d %d\n", p.API, p.EtcdClient, p.EtcdPeer)))
	return
}

func readPorts(dir string) (p ports, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "ports"))
	if err != nil {
		return p, fmt.Errorf("-reuse needs a directory a serve ran in: %w", err)
	}
	_, err = fmt.Sscan(string(data), &p.API, &p.EtcdClient, &p.EtcdPeer)
	return
}

func startEtcd(dir string, p ports) (*embed.Etcd, string, error) {
	client, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(p.EtcdClient))
	peer, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(p.EtcdPeer))
	cfg := embed.NewConfig()
	cfg.Name = "functional"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	// A throw-away store: no fsync (the CI machine's disk is shared with the OpenStack stack).
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after a minute")
	}
	return e, client.String(), nil
}

// fresh makes a new state directory: key material, the admin kubeconfig, the audit policy, the
// ports.
func fresh(dir string, api int) (ports, error) {
	if err := os.RemoveAll(dir); err != nil {
		return ports{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ports{}, err
	}
	ca, admin, err := pki(dir)
	if err != nil {
		return ports{}, err
	}
	p, err := newPorts(dir, api)
	if err != nil {
		return p, err
	}
	adminKey, err := keyPEM(admin.key)
	if err != nil {
		return p, err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", p.API)
	if err := kubeconfig(filepath.Join(dir, "admin.kubeconfig"), server, certPEM(ca), &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM(admin), ClientKeyData: adminKey,
	}); err != nil {
		return p, err
	}
	// Every request's verb, URI, user and response code (no bodies) in audit.log: the tests
	// find any request of the controller refused (403 by RBAC, 422 by a schema or CEL rule).
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
	return p, writeFile(dir, "audit-policy.yaml", []byte(policy))
}

func apiserverArgs(dir string, p ports, etcdURL string, compaction time.Duration, watchCache bool) []string {
	pkiDir := filepath.Join(dir, "pki")
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The `kubernetes` Service's endpoints would be this loopback address, which the
		// reconciler refuses; nothing here reaches the API server through that Service.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(p.API),
		"--cert-dir=" + filepath.Join(dir, "apiserver"),
		"--tls-cert-file=" + filepath.Join(pkiDir, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(pkiDir, "serving.key"),
		"--client-ca-file=" + filepath.Join(pkiDir, "ca.crt"),
		"--service-account-issuer=" + issuer,
		"--api-audiences=" + issuer,
		"--service-account-key-file=" + filepath.Join(pkiDir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pkiDir, "sa.key"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--etcd-compaction-interval=" + compaction.String(),
		"--watch-cache=" + strconv.FormatBool(watchCache),
		"--profiling=false",
		"--audit-policy-file=" + filepath.Join(dir, "audit-policy.yaml"),
		"--audit-log-path=" + filepath.Join(dir, "audit.log"),
		"--audit-log-maxbackup=0",
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (certificates, etcd data, kubeconfigs)")
	manifests := fs.String("manifests", "", "the shipped manifests directory (etc/manifests)")
	apply := fs.String("apply", "namespace.yaml,serviceaccount.yaml,clusterrole.yaml,clusterrolebinding.yaml,secrets-clusterrole.yaml,role.yaml,rolebinding.yaml,ingressclass.yaml", "manifests applied from -manifests, in order")
	crds := fs.String("crds", "", "Gateway API CRD directory (the module's config/crd/standard)")
	port := fs.Int("port", 0, "API server port on 127.0.0.1 (0: a free one)")
	compaction := fs.Duration("etcd-compaction-interval", 5*time.Minute, "the API server's etcd compaction interval")
	watchCache := fs.Bool("watch-cache", true, "the API server's watch cache")
	withParent := fs.Bool("exit-with-parent", false, "exit when the parent process is gone (a killed test leaves no server behind)")
	reuse := fs.Bool("reuse", false, "restart on -dir's etcd data, keys and ports (an API server restart: every watch is cut)")
	fs.Parse(args)
	if *withParent {
		go exitWithParent()
	}
	if *dir == "" || *manifests == "" || *crds == "" {
		return fmt.Errorf("serve needs -dir, -manifests and -crds")
	}
	var p ports
	var err error
	if *reuse {
		os.Remove(filepath.Join(*dir, "ready"))
		p, err = readPorts(*dir)
	} else {
		p, err = fresh(*dir, *port)
	}
	if err != nil {
		return err
	}
	etcd, etcdURL, err := startEtcd(*dir, p)
	if err != nil {
		return err
	}
	defer etcd.Close()
	if err := writeFile(*dir, "etcd-endpoint", []byte(etcdURL)); err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", p.API)
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(apiserverArgs(*dir, p, etcdURL, *compaction, *watchCache))
	go func() {
		if err := setup(cmd.Context(), *dir, server, *manifests, *apply, *crds, *reuse); err != nil {
			fmt.Fprintln(os.Stderr, "kube-testcluster: setup:", err)
			writeFile(*dir, "failed", []byte(err.Error()+"\n"))
			os.Exit(1)
		}
	}()
	// Runs until SIGTERM/SIGINT (the command's own signal context), then etcd is closed.
	return cmd.Execute()
}

// setup waits for the API server, applies the CRDs and the shipped manifests, writes the
// controller's credentials, then the `ready` file functional/kube.sh waits for.
func setup(ctx context.Context, dir, server, manifests, apply, crds string, reuse bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, cs); err != nil {
		return err
	}
	if reuse {
		fmt.Fprintf(os.Stderr, "kube-testcluster: restarted at %s\n", server)
		return writeFile(dir, "ready", []byte(server+"\n"))
	}
	names, err := applyCRDs(ctx, cfg, crds)
	if err != nil {
		return err
	}
	objs, err := documents(shippedFiles(manifests, apply))
	if err != nil {
		return err
	}
	if err := applyAll(ctx, cfg, objs); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		return err
	}
	if err := controllerFiles(ctx, cs, dir, server, caPEM); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kube-testcluster: ready at %s: %d CRDs, %d manifests applied\n", server, len(names), len(objs))
	return writeFile(dir, "ready", []byte(server+"\n"))
}

func adminClient(dir string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func token(args []string) error {
	fs := flag.NewFlagSet("token", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory of a running serve")
	ns := fs.String("namespace", controllerNamespace, "the ServiceAccount's namespace")
	name := fs.String("name", controllerAccount, "the ServiceAccount")
	seconds := fs.Int64("seconds", 3600, "token lifetime")
	fs.Parse(args)
	cs, err := adminClient(*dir)
	if err != nil {
		return err
	}
	t, err := mintToken(context.Background(), cs, *ns, *name, *seconds)
	if err != nil {
		return err
	}
	fmt.Println(t)
	return nil
}

// compact compacts etcd at its current revision: a watch resumed from an older resourceVersion
// is then answered 410 Gone (the API server compacts every -etcd-compaction-interval on its own).
func compact(args []string) error {
	fs := flag.NewFlagSet("compact", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory of a running serve")
	fs.Parse(args)
	endpoint, err := os.ReadFile(filepath.Join(*dir, "etcd-endpoint"))
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{string(endpoint)}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, string(endpoint))
	if err != nil {
		return err
	}
	if _, err := cli.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return err
	}
	fmt.Println(st.Header.Revision)
	return nil
}

// exitWithParent exits once this process is re-parented (its parent died, even by SIGKILL).
func exitWithParent() {
	parent := os.Getppid()
	for range time.Tick(time.Second) {
		if os.Getppid() != parent {
			fmt.Fprintln(os.Stderr, "kube-testcluster: the parent process is gone: exiting")
			os.Exit(1)
		}
	}
}
