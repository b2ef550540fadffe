package main

// The control plane's key material, generated at each start (never committed, never reused across
// runs): a self-signed CA, the API server's serving certificate for 127.0.0.1, an admin client
// certificate in system:masters, and the service-account signing key.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
	der  []byte
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// sign issues tmpl with parent's key (self-signed when parent is nil).
func sign(tmpl *x509.Certificate, key crypto.Signer, parent *keyPair) (*keyPair, error) {
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(7 * 24 * time.Hour)
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, der: der}, nil
}

func certPEM(kp *keyPair) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.der})
}

func keyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func writeFile(dir, name string, data []byte) error {
	return os.WriteFile(filepath.Join(dir, name), data, 0o600)
}

func writePair(dir, name string, kp *keyPair) error {
	k, err := keyPEM(kp.key)
	if err != nil {
		return err
	}
	if err := writeFile(dir, name+".crt", certPEM(kp)); err != nil {
		return err
	}
	return writeFile(dir, name+".key", k)
}

// pki writes ca.crt, serving.{crt,key}, admin.{crt,key}, sa.{key,pub} under dir/pki and returns
// the CA and admin pair (the admin kubeconfig embeds them).
func pki(dir string) (ca, admin *keyPair, err error) {
	dir = filepath.Join(dir, "pki")
	if err = os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	caKey, err := newKey()
	if err != nil {
		return
	}
	ca, err = sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "kuryr-functional-ca"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, caKey, nil)
	if err != nil {
		return
	}
	servingKey, err := newKey()
	if err != nil {
		return
	}
	serving, err := sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, servingKey, ca)
	if err != nil {
		return
	}
	adminKey, err := newKey()
	if err != nil {
		return
	}
	admin, err = sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kuryr-functional-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, adminKey, ca)
	if err != nil {
		return
	}
	if err = writeFile(dir, "ca.crt", certPEM(ca)); err != nil {
		return
	}
	if err = writePair(dir, "serving", serving); err != nil {
		return
	}
	if err = writePair(dir, "admin", admin); err != nil {
		return
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return
	}
	saPriv, err := keyPEM(saKey)
	if err != nil {
		return
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return
	}
	if err = writeFile(dir, "sa.key", saPriv); err != nil {
		return
	}
	err = writeFile(dir, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}))
	if err != nil {
		err = fmt.Errorf("service-account key: %w", err)
	}
	return
}
