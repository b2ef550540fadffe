package main

// What the launcher does once the API server answers, the way an operator's `kubectl apply` would
// (there is no kubectl here): server-side apply of the Gateway API CRDs and of the shipped
// manifests, then a ServiceAccount token for the controller (TokenRequest) with its CA and a
// kubeconfig of its own.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const fieldManager = "kuryr-functional"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// kubeconfig writes a kubeconfig for server, authenticated by a client certificate or a token.
func kubeconfig(path, server string, caPEM []byte, user *clientcmdapi.AuthInfo) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["functional"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["functional"] = user
	cfg.Contexts["functional"] = &clientcmdapi.Context{Cluster: "functional", AuthInfo: "functional"}
	cfg.CurrentContext = "functional"
	return clientcmd.WriteToFile(*cfg, path)
}

// waitReady polls /readyz until the API server and its post-start hooks (RBAC bootstrap roles
// included) are done.
func waitReady(ctx context.Context, cs kubernetes.Interface) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("API server not ready: %v (last: %v)", err, last)
	}
	return nil
}

// documents reads every YAML document of the files (skipping empty ones and kustomize's file).
func documents(files []string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(obj) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out, nil
}

// applyAll server-side applies the objects in order (the RESTMapper is re-read when a kind is
// new, e.g. right after its CRD).
func applyAll(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			mapper.Reset()
			if mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == "namespace" {
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		_, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// yamlFiles lists dir's *.yaml files, sorted.
func yamlFiles(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(matches)
	if err == nil && len(matches) == 0 {
		err = fmt.Errorf("no *.yaml in %s", dir)
	}
	return matches, err
}

// applyCRDs applies the directory's objects (the CRDs, and the ValidatingAdmissionPolicy the
// standard install ships beside them) and waits until each CRD is Established (served).
func applyCRDs(ctx context.Context, cfg *rest.Config, dir string) ([]string, error) {
	files, err := yamlFiles(dir)
	if err != nil {
		return nil, err
	}
	objs, err := documents(files)
	if err != nil {
		return nil, err
	}
	if err := applyAll(ctx, cfg, objs); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crds := dyn.Resource(crdResource)
	var names []string
	for _, obj := range objs {
		// the directory also holds the safe-upgrades ValidatingAdmissionPolicy and its binding
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		name := obj.GetName()
		names = append(names, name)
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return nil, fmt.Errorf("CRD %s not Established: %w", name, err)
		}
	}
	return names, nil
}

// mintToken asks the API server for a token of namespace/name (TokenRequest), as the kubelet
// does for a projected service-account volume.
func mintToken(ctx context.Context, cs kubernetes.Interface, namespace, name string, seconds int64) (string, error) {
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// controllerFiles writes what a pod of the controller would see (token, ca.crt, namespace, as in
// /var/run/secrets/kubernetes.io/serviceaccount) and a kubeconfig with the same token.
func controllerFiles(ctx context.Context, cs kubernetes.Interface, dir, server string, caPEM []byte) error {
	out := filepath.Join(dir, "serviceaccount")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	token, err := mintToken(ctx, cs, controllerNamespace, controllerAccount, 48*3600)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": caPEM, "namespace": []byte(controllerNamespace)} {
		if err := writeFile(out, name, data); err != nil {
			return err
		}
	}
	return kubeconfig(filepath.Join(dir, "controller.kubeconfig"), server, caPEM, &clientcmdapi.AuthInfo{Token: token})
}

// shippedFiles resolves the comma-separated manifest names under dir.
func shippedFiles(dir, names string) []string {
	var out []string
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}
